package sql

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
)

// Table is a table a query reads, at one snapshot.
type Table interface {
	// Schema is the table's schema at the snapshot.
	Schema() *schema.Schema
	// Scan calls fn with every row of the snapshot, in batches holding
	// the named top-level columns (schema spelling) in that order; with
	// no columns, batches of no columns that still count their rows.
	// fn must not keep the batch past its return without retaining it.
	// Scan may be called more than once (a table named twice in a query
	// is read at the one snapshot).
	Scan(ctx context.Context, cols []string, fn func(arrow.RecordBatch) error) error
	// Close releases the snapshot; Run calls it once it is done.
	Close()
}

// A ComputedTable is a Table whose rows are computed rather than stored:
// a logical view, whose query was run to give them. Reading it costs
// what that query read, ReadBytes, on each Scan, not the logical size of
// the rows Scan hands on (BigQuery bills a query through a view for the
// base-table columns the view's query reads).
type ComputedTable interface {
	Table
	ReadBytes() int64
}

// Resolver opens the table a query names, resolving a missing project or
// dataset from the job's defaults. Its errors are returned as they are
// (the API layer maps "not found" to BigQuery's notFound). Run calls it
// once per distinct name.
type Resolver func(ctx context.Context, name TableName) (Table, error)

// Options configure a query.
type Options struct {
	// MaxMemory bounds the memory the query's operators hold (rows,
	// groups, a join's build side, a sort's rows); beyond it the query
	// fails with a *ResourcesError. 0: DefaultMaxMemory; negative: no
	// bound.
	MaxMemory int64
	// Params are the query's parameters (nil: none), indexed over the
	// statement's full text (filter.Params.Index).
	Params *filter.Params
	// Wildcard lists the tables a wildcard table name matches (nil:
	// wildcard tables are not supported; wildcard.go).
	Wildcard WildcardLister
	// Now is the query's time: CURRENT_TIMESTAMP and its relatives, and
	// the time FOR SYSTEM_TIME AS OF CURRENT_TIMESTAMP() reads at (zero:
	// the clock when each expression compiles).
	Now time.Time
	// Sink, if set, receives the result's rows instead of Result.Rows:
	// as the scan produces them when the query streams, else once the
	// result is complete (sink.go). Nil: Result.Rows holds them.
	Sink Sink
	// Offset is where the statement starts in the text Run is given: a
	// script up to the statement's end (Statement.Text and Pos), whose
	// earlier statements Run does not read, but whose lines and columns
	// its errors' [line:column] count.
	Offset int
}

// Result is the answer to a query.
type Result struct {
	Schema *schema.Schema
	// Rows are the result's rows; each cell is a value as
	// filter.Scalar.Values returns it, typed by the schema. Nil when
	// Options.Sink took them.
	Rows [][]any
	// NumRows is the number of rows of the result.
	NumRows int64
	// PeakMemory is the most memory the query's operators held at once,
	// as the memory budget counts it (membudget.go).
	PeakMemory int64
	// PrunedBatches is the batches of base tables the zone maps ruled
	// out for the WHERE that read them (PruningTable), and those a
	// streamed LIMIT left unread (only billed).
	PrunedBatches int64
	// BytesProcessed is the logical size of the columns the query read,
	// as BigQuery bills it: per non-NULL value 8 bytes for INT64, FLOAT64,
	// DATE, DATETIME, TIME and TIMESTAMP, 1 for BOOL, 16 for NUMERIC, 32
	// for BIGNUMERIC, 2 + length for STRING, BYTES, JSON and GEOGRAPHY.
	BytesProcessed int64
	// Table is the first table read, nil for a query that reads none;
	// Tables are all of them (each once), in order of first reference.
	Table  *TableName
	Tables []TableName
}

// Run parses and runs a query. Errors in the query (syntax, names, types,
// unsupported features, runtime errors such as division by zero) are
// *filter.Error with a position; others come from the resolver or the
// scan.
func Run(ctx context.Context, src string, resolve Resolver, opts Options) (res *Result, err error) {
	// A panic here is a bug; it must fail the query, not end the server
	// (jobs run queries on goroutines of their own, which nothing else
	// recovers).
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, &PanicError{Value: p, Stack: debug.Stack()}
		}
	}()
	q, err := parse(src, opts.Offset, opts.Params)
	if err != nil {
		return nil, err
	}
	if opts.MaxMemory == 0 {
		opts.MaxMemory = DefaultMaxMemory
	}
	r := &runner{src: src, resolve: resolve, opts: opts, tables: map[string]Table{}, ctx: ctx, top: q}
	defer r.close()
	if opts.Sink != nil {
		r.stream = &streamer{sink: opts.Sink, left: q.Limit, skip: q.Offset}
	}
	var rs *rowset
	streamed := false
	if r.stream != nil {
		if rs, streamed, err = r.streamUnion(ctx, q); err != nil {
			return nil, err
		}
	}
	if !streamed {
		if rs, err = r.query(ctx, q, nil); err != nil {
			return nil, err
		}
	}
	res = &Result{Schema: &schema.Schema{}, BytesProcessed: r.bytes, Rows: rs.rows, NumRows: int64(len(rs.rows)), Tables: r.names}
	if r.stream != nil {
		if !r.stream.began {
			if err := r.drain(ctx, rs); err != nil {
				return nil, err
			}
		}
		res.Rows, res.NumRows = nil, r.stream.rows
	}
	res.PeakMemory, res.PrunedBatches = r.peak, r.pruned
	if len(r.names) > 0 {
		res.Table = &r.names[0]
	}
	names, err := columnNames(rs.names)
	if err != nil {
		return nil, err
	}
	for i, n := range names {
		res.Schema.Fields = append(res.Schema.Fields, resultField(n, rs.types[i]))
	}
	if err := checkNullElements(res.Schema, res.Rows); err != nil {
		return nil, err
	}
	return res, nil
}

// runner runs one statement: the tables it opened (one snapshot each),
// the bytes it read.
// PanicError is a panic inside Run (a bug), returned as an error.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("sql: panic (a bug): %v", e.Value) }

type runner struct {
	src     string
	resolve Resolver
	opts    Options
	tables  map[string]Table
	names   []TableName
	bytes   int64
	mem     int64 // bytes charged to the budget (membudget.go)
	peak    int64 // the most mem was
	pruned  int64 // batches the zone maps let scans skip (prune.go)
	// top is the statement's query; stream (nil without Options.Sink)
	// its path to the sink (sink.go).
	top    *Query
	stream *streamer
	// While probing, a top-level UNION ALL's inputs compile without
	// reading; then unionTypes are the union's column types, which
	// their streamed rows are coerced to.
	probing     bool
	unionInputs map[*Select]bool
	unionTypes  []string
	// ctx is Run's: subqueries inside expressions run while their
	// expression compiles.
	ctx  context.Context
	nsub int // subqueries substituted so far (their constants' names)
	// corr are the enclosing blocks' inputs of the subquery being run,
	// outermost first (correlated.go); corrScans what the runs of
	// subqueries read of each table reference (correlated_scan.go).
	corr      []*corrFrame
	corrScans map[*TableRef]*corrScan
	corrKeys  map[*Query]*corrKey
	keyBinds  map[*TableRef]*keyBind
	// defining are the WITH entries whose definitions are running,
	// innermost last; exprSub counts the expression subqueries running
	// (recursive.go).
	defining []*env
	exprSub  int
	// prunable are the wildcard tables whose block's WHERE may choose
	// the tables they read (wildcard.go).
	prunable map[*TableRef]*Span
	// holding are the queries whose result is a derived table being
	// materialized: their SELECT block appends its rows to Arrow batches
	// (derived.go).
	holding map[*Query]bool
	// held are the FROM subqueries' tables of the blocks running,
	// innermost last: each is let go when its block ends (dropHeld).
	held []*heldRows
	// depth is how many queries enclose the one running: each level of
	// expression subqueries re-reads its whole text, so an unbounded
	// nesting costs time quadratic in the query's length.
	depth int
}

// maxQueryDepth bounds the nesting of queries (subqueries in FROM and in
// expressions), as filter's maxDepth bounds an expression's.
const maxQueryDepth = 200

func (r *runner) close() {
	r.releaseCorrScans()
	for _, t := range r.tables {
		t.Close()
	}
}

func (r *runner) errf(pos int, format string, args ...any) error {
	return filter.NewError(r.src, pos, format, args...)
}

// env is the WITH entries visible at a point of the query.
type env struct {
	name   string // lower case
	cte    *CTE
	def    *env // the entries visible to the definition
	result *rowset
	parent *env
	// recursive: the entry is of a WITH RECURSIVE; busy while its
	// definition runs; working is the rows of the previous iteration
	// while its recursive term runs (recursive.go).
	recursive bool
	busy      bool
	working   *rowset
	// exprSub is the runner's exprSub when the recursive term started.
	exprSub int
}

func (e *env) lookup(name string) *env {
	for ; e != nil; e = e.parent {
		if e.name == strings.ToLower(name) {
			return e
		}
	}
	return nil
}

// query runs a query expression.
func (r *runner) query(ctx context.Context, q *Query, e *env) (*rowset, error) {
	if r.depth >= maxQueryDepth {
		return nil, r.errf(q.Pos, "Resources exceeded during query execution: Not enough resources for query planning - too many subqueries or query is too complex")
	}
	r.depth++
	defer func() { r.depth-- }()
	var entries []*env
	for _, c := range q.With {
		e = &env{name: strings.ToLower(c.Name), cte: c, def: e, parent: e}
		entries = append(entries, e)
	}
	if q.Recursive {
		for _, c := range entries {
			c.def, c.recursive = e, true
		}
	}
	if sel, ok := q.Body.(*Select); ok {
		return r.selectBlock(ctx, sel, e, q)
	}
	rs, err := r.body(ctx, q.Body, e)
	if err != nil {
		return nil, err
	}
	return r.finish(ctx, rs, q, e)
}

func (r *runner) body(ctx context.Context, b queryBody, e *env) (*rowset, error) {
	switch b := b.(type) {
	case *Select:
		return r.selectBlock(ctx, b, e, nil)
	case *Query:
		return r.query(ctx, b, e)
	case *SetOp:
		return r.setOp(ctx, b, e)
	}
	return nil, fmt.Errorf("sql: query body %T", b)
}

// from builds the relation of a FROM item.
func (r *runner) from(ctx context.Context, f FromItem, e *env) (*relation, error) {
	switch f := f.(type) {
	case nil:
		return noRows(), nil
	case *TableRef:
		if rel, ok, err := r.outerArrayPath(f, e); ok {
			return rel, err
		}
		if len(f.Path) > 3 {
			return nil, r.errf(f.Name.Pos, "Invalid table name: %s", strings.Join(f.Path, "."))
		}
		if f.Offset {
			return nil, r.errf(f.Name.Pos, "WITH OFFSET can only be used with an array: UNNEST or a path through an earlier FROM item")
		}
		qual := f.Alias
		if qual == "" {
			qual = f.Name.Table
		}
		name := f.Name
		if f.AsOf != nil {
			at, err := r.asOf(*f.AsOf)
			if err != nil {
				return nil, err
			}
			name.AsOf = at
		}
		if strings.HasSuffix(f.Name.Table, "*") {
			if f.AsOf != nil {
				return nil, notSupported(r.src, f.AsOf.pos(), "FOR SYSTEM_TIME AS OF with a wildcard table")
			}
			return r.wildcardRelation(ctx, f.Name, qual, r.prunable[f])
		}
		if f.Name.Project == "" && f.Name.Dataset == "" {
			if c := e.lookup(f.Name.Table); c != nil {
				if f.AsOf != nil {
					return nil, r.errf(f.AsOf.pos(), "FOR SYSTEM_TIME AS OF cannot be used with WITH entry %s", f.Name.Table)
				}
				rs, err := r.cteResult(ctx, c, f)
				if err != nil {
					return nil, err
				}
				return rowsRelation(rs, qual), nil
			}
		}
		t, err := r.open(ctx, name)
		if err != nil {
			return nil, err
		}
		if len(r.corr) > 0 {
			return r.corrTableRelation(f, t, qual), nil // correlated_scan.go
		}
		return r.tableRelation(t, qual), nil
	case *SubqueryRef:
		rs, err := r.derived(ctx, f.Q, e)
		if err != nil {
			return nil, err
		}
		r.held = append(r.held, rs.held) // let go when the block ends (derived.go)
		return rowsRelation(rs, f.Alias), nil
	case *JoinRef:
		return r.join(ctx, f, e)
	case *UnnestRef:
		return r.unnestLiteral(f, e)
	}
	return nil, fmt.Errorf("sql: FROM item %T", f)
}

// open opens a table once per query: a table named twice is read at the
// same snapshot.
func (r *runner) open(ctx context.Context, n TableName) (Table, error) {
	k := strings.ToLower(n.Project + "\x00" + n.Dataset + "\x00" + n.Table)
	if !n.AsOf.IsZero() {
		k += "\x00" + n.AsOf.Format(time.RFC3339Nano)
	}
	if t, ok := r.tables[k]; ok {
		return t, nil
	}
	t, err := r.resolve(ctx, n)
	if err != nil {
		return nil, err
	}
	r.tables[k] = t
	r.names = append(r.names, n)
	return t, nil
}

// columnNames names the result's columns: the alias, or f0_, f1_, ... for
// anonymous ones. Duplicates are an error, as for BigQuery's anonymous
// result tables.
func columnNames(in []string) ([]string, error) {
	names := make([]string, len(in))
	seen := map[string]bool{}
	var dups []string
	anon := 0
	for i, n := range in {
		if n == "" {
			n = fmt.Sprintf("f%d_", anon)
			anon++
		}
		names[i] = n
		k := strings.ToLower(n)
		if seen[k] {
			dups = append(dups, n)
		}
		seen[k] = true
	}
	if len(dups) > 0 {
		return nil, &filter.Error{Line: 1, Column: 1, Msg: "Duplicate column names in the result are not supported. Found duplicate(s): " + strings.Join(dups, ", ")}
	}
	return names, nil
}

// bqType maps a GoogleSQL type name to the REST schema's.
func bqType(t string) schema.Type {
	switch t {
	case "INT64", "NULL":
		return schema.Integer
	case "FLOAT64":
		return schema.Float
	case "BOOL":
		return schema.Boolean
	case "DATETIME":
		return schema.DateTime
	}
	return schema.Type(t)
}
