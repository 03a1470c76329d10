package sql

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

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
	q, err := parse(src, opts.Params)
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
	// outermost first (correlated.go).
	corr []*corrFrame
	// defining are the WITH entries whose definitions are running,
	// innermost last; exprSub counts the expression subqueries running
	// (recursive.go).
	defining []*env
	exprSub  int
	// prunable are the wildcard tables whose block's WHERE may choose
	// the tables they read (wildcard.go).
	prunable map[*TableRef]*Span
	// depth is how many queries enclose the one running: each level of
	// expression subqueries re-reads its whole text, so an unbounded
	// nesting costs time quadratic in the query's length.
	depth int
}

// maxQueryDepth bounds the nesting of queries (subqueries in FROM and in
// expressions), as filter's maxDepth bounds an expression's.
const maxQueryDepth = 200

func (r *runner) close() {
	for _, t := range r.tables {
		t.Close()
	}
}

func (r *runner) errf(pos int, format string, args ...any) error {
	return filter.NewError(r.src, pos, format, args...)
}

// text returns the statement with everything outside [from, to) blanked
// (each byte a space, newlines kept), so that the expression layer's
// byte positions are positions in the statement (compileText makes its
// error columns count the statement's characters again).
func (r *runner) text(from, to int) string {
	var b strings.Builder
	b.Grow(to)
	for i := range from {
		if r.src[i] == '\n' {
			b.WriteByte('\n')
		} else {
			b.WriteByte(' ')
		}
	}
	b.WriteString(r.src[from:to])
	return b.String()
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
		return r.tableRelation(t, qual), nil
	case *SubqueryRef:
		rs, err := r.query(ctx, f.Q, e)
		if err != nil {
			return nil, err
		}
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

// selectQuery is the state of one SELECT block.
type selectQuery struct {
	*runner
	sel   *Select
	in    *relation
	env   *env
	order []OrderItem
	// topK is LIMIT plus OFFSET when only that many of the ordered rows
	// are wanted (topk.go); -1: all.
	topK int64
	// past, set while a streamed block runs, reports that its LIMIT is
	// reached: the scan goes on only to bill (prune.go's scanPast).
	past func() bool
	// windows are the block's analytic function calls, windowAt them by
	// the position of their text.
	windows  []*window
	windowAt map[int]*window
	// With GROUP BY: the window calls' tokens (registered by rewrite, by
	// position), and while their arguments compile, the compiler over the
	// groups' columns.
	pending    [][]filter.Token
	pendingAt  map[int]bool
	winCompile func(Span) (*filter.Scalar, error)
}

func (q *selectQuery) scope() *scope { return &scope{env: q.env, outer: q.in, q: q} }

// compile compiles a span against the block's input.
func (q *selectQuery) compile(sp Span) (*filter.Scalar, error) {
	text := q.text(sp.pos(), sp.end())
	if len(q.windows) > 0 {
		text = q.windowText(sp)
	}
	// Subqueries first: a correlated one adds a column to q.in.
	text, consts, err := q.substitute(text, q.scope())
	if err != nil {
		return nil, err
	}
	return q.compileText(text, q.in.schema, nil, filter.WithConstants(consts), filter.WithNames(q.names))
}

// names resolves a name of the block: its input, then the enclosing
// blocks' inputs (correlated references).
func (q *selectQuery) names(parts []string, pos int) (string, int, error) {
	i, used, err := q.in.resolve(q.src, parts, pos)
	if err == nil {
		return q.in.cols[i].internal, used, nil
	}
	if col, u, ok, err2 := q.outerResolve(parts, pos); ok {
		return col, u, err2
	}
	return "", 0, err
}

// compileQualify compiles QUALIFY over the input and the windows' columns;
// it may name a select-list alias of a window call or of a column.
func (q *selectQuery) compileQualify(sp Span, items []Item) (*filter.Scalar, error) {
	base := q.in.names(q.src)
	names := func(parts []string, pos int) (string, int, error) {
		col, used, err := base(parts, pos)
		if err == nil || len(parts) == 0 {
			return col, used, err
		}
		for _, it := range items {
			if !strings.EqualFold(it.Alias, parts[0]) {
				continue
			}
			if it.Star {
				return it.col, 1, nil
			}
			if w, ok := q.windowAt[it.Expr.pos()]; ok && w.end == it.Expr.end() {
				return w.col, 1, nil
			}
			if p, ok := it.Expr.path(); ok && len(p) > 0 {
				if c, u, err2 := base(p, pos); err2 == nil && u == len(p) {
					return c, 1, nil
				}
			}
		}
		return col, used, err
	}
	x, err := q.compileText(q.windowText(sp), q.in.schema, q.scope(), filter.WithNames(names))
	if err != nil {
		return nil, err
	}
	if t := x.Type(); t != "BOOL" && t != "NULL" {
		return nil, q.errf(sp.pos(), "QUALIFY clause should return type BOOL, but returns %s", t)
	}
	return x, nil
}

// compileText compiles an expression (the statement's text blanked
// outside it) against s; its subqueries run in sc (nil: none allowed).
func (r *runner) compileText(text string, s *schema.Schema, sc *scope, opts ...filter.Option) (*filter.Scalar, error) {
	text, consts, err := r.substitute(text, sc)
	if err != nil {
		return nil, err
	}
	if consts != nil {
		opts = append(opts, filter.WithConstants(consts))
	}
	if oc := r.outerConsts(); oc != nil {
		opts = append(opts, filter.WithConstants(oc))
	}
	opts = append(opts, filter.WithParams(r.opts.Params))
	opts = append(opts, r.clock()...)
	x, err := filter.CompileScalar(text, s, opts...)
	var fe *filter.Error
	if errors.As(err, &fe) {
		r.statementColumn(fe, text)
		// The expression layer speaks of row_restriction here.
		if rest, ok := strings.CutPrefix(fe.Msg, "row_restriction cannot reference REPEATED field "); ok {
			name, _, _ := strings.Cut(rest, ":")
			fe.Msg = "not supported yet by bqstore: REPEATED (ARRAY) columns in queries: " + name
		}
	}
	return x, err
}

// statementColumn makes the line and column of fe, an error in text (the
// statement blanked byte for byte before the expression, as text and
// windowText make it), count the statement's characters in the blanked
// part, where text has a space for each byte of a multibyte character.
func (r *runner) statementColumn(fe *filter.Error, text string) {
	blank := len(text) - len(strings.TrimLeft(text, " \n"))
	if blank == 0 || blank > len(r.src) || fe.Pos < blank || fe.Pos > len(text) {
		return
	}
	e := filter.NewError(r.src[:blank]+text[blank:], fe.Pos, "")
	fe.Line, fe.Column = e.Line, e.Column
}

// selectBlock runs one SELECT; q (nil inside a set operation) holds the
// ORDER BY and LIMIT that apply to it.
func (r *runner) selectBlock(ctx context.Context, sel *Select, e *env, qq *Query) (*rowset, error) {
	if sel.Where != nil {
		r.markPrunable(sel.From, sel.Where)
	}
	in, err := r.from(ctx, sel.From, e)
	if err != nil {
		return nil, err
	}
	q := &selectQuery{runner: r, sel: sel, in: in, env: e, windowAt: map[int]*window{}, pendingAt: map[int]bool{}, topK: -1}
	if qq != nil {
		q.order = qq.OrderBy
	}
	items, err := q.expandStars()
	if err != nil {
		return nil, err
	}
	// Aggregate and analytic functions outside the slice.
	spans := []Span{}
	for _, it := range items {
		if !it.Star {
			spans = append(spans, it.Expr)
		}
	}
	if sel.Where != nil {
		spans = append(spans, *sel.Where)
	}
	if sel.Having != nil {
		spans = append(spans, *sel.Having)
	}
	spans = append(spans, sel.GroupBy...)
	for _, o := range q.order {
		spans = append(spans, o.Expr)
	}
	for _, sp := range spans {
		for i := 0; i < len(sp.toks); i++ {
			if end := subqueryEnd(sp.toks, i); end > 0 {
				i = end
				continue
			}
			if name := strings.ToUpper(sp.toks[i].Text); isCall(sp.toks, i) && analyticFuncs[name] {
				if o, _ := overAt(sp.toks, i); o < 0 {
					return nil, q.errf(sp.toks[i].Pos, "Analytic function %s cannot be called without an OVER clause", name)
				}
				continue
			}
			if t := sp.toks[i]; isCall(sp.toks, i) && knownAggs[strings.ToUpper(t.Text)] && !(strings.EqualFold(t.Text, "GROUPING") && len(sel.GroupBy) > 0) {
				return nil, notSupported(q.src, t.Pos, "aggregate or analytic function "+strings.ToUpper(t.Text))
			}
		}
	}
	for k, sp := range []*Span{sel.Where, sel.Having} {
		if sp != nil {
			if at, ok := hasWindow(sp.toks); ok {
				return nil, q.errf(at, "Analytic function not allowed in %s clause", []string{"WHERE", "HAVING"}[k])
			}
		}
	}
	for _, sp := range sel.GroupBy {
		if at, ok := hasWindow(sp.toks); ok {
			return nil, q.errf(at, "Analytic function not allowed in GROUP BY clause")
		}
	}
	var where *filter.Scalar
	if sel.Where != nil {
		if at, ok := findAgg(sel.Where.toks); ok {
			return nil, q.errf(at, "Aggregate function %s not allowed in WHERE clause", strings.ToUpper(sel.Where.toks[indexAt(sel.Where.toks, at)].Text))
		}
		if where, err = q.compile(*sel.Where); err != nil {
			return nil, err
		}
		if t := where.Type(); t != "BOOL" && t != "NULL" {
			return nil, q.errf(sel.Where.pos(), "WHERE clause should return type BOOL, but returns %s", t)
		}
	}
	aggregate := len(sel.GroupBy) > 0 || sel.Having != nil
	for _, it := range items {
		if !it.Star {
			if _, ok := findAgg(it.Expr.toks); ok {
				aggregate = true
			}
		}
	}
	for _, o := range q.order {
		if _, ok := findAgg(o.Expr.toks); ok {
			aggregate = true
		}
	}
	if !aggregate {
		for _, it := range items {
			if !it.Star {
				if err := q.findWindows(it.Expr); err != nil {
					return nil, err
				}
			}
		}
		for _, o := range q.order {
			if err := q.findWindows(o.Expr); err != nil {
				return nil, err
			}
		}
		if sel.Qualify != nil {
			if err := q.findWindows(*sel.Qualify); err != nil {
				return nil, err
			}
			if len(q.windows) == 0 {
				return nil, q.errf(sel.Qualify.pos(), "QUALIFY clause must be used with an analytic function in the SELECT list or the QUALIFY clause")
			}
		}
	} else if sel.Qualify != nil {
		win := false
		for _, it := range items {
			if _, ok := hasWindow(it.Expr.toks); ok && !it.Star {
				win = true
			}
		}
		if _, ok := hasWindow(sel.Qualify.toks); ok {
			win = true
		}
		if !win {
			return nil, q.errf(sel.Qualify.pos(), "QUALIFY clause must be used with an analytic function in the SELECT list or the QUALIFY clause")
		}
	}
	if len(q.windows) > 0 {
		q.in = q.windowRelation(q.in, where)
		where = nil
		if sel.Qualify != nil {
			if where, err = q.compileQualify(*sel.Qualify, items); err != nil {
				return nil, err
			}
		}
	}
	var out *output
	streaming := q.canStream(qq, aggregate)
	if q.probing && q.unionInputs[sel] && !streaming {
		return nil, errNoStream
	}
	if qq != nil && qq.Limit >= 0 && !sel.Distinct {
		q.topK = qq.Limit + min(qq.Offset, math.MaxInt64-qq.Limit)
	}
	if aggregate {
		out, err = q.runAggregate(ctx, items, where)
	} else {
		out, err = q.runPlain(ctx, items, where, streaming)
	}
	if err != nil {
		return nil, err
	}
	if streaming {
		// The rows went to the sink; LIMIT and OFFSET applied there.
		rs := &rowset{types: out.types}
		for _, it := range items {
			rs.names = append(rs.names, it.Alias)
		}
		return rs, nil
	}
	rows := out.rows
	if sel.Distinct {
		for i, it := range items {
			if typeKind(out.types[i]) == "ARRAY" {
				return nil, q.errf(it.pos, "Column %s of type ARRAY cannot be used in SELECT DISTINCT", it.Alias)
			}
		}
		rows = distinct(rows, len(items))
	}
	if len(out.order) > 0 {
		sortRows(rows, out.order)
	}
	rs := &rowset{types: out.types}
	for _, it := range items {
		rs.names = append(rs.names, it.Alias)
	}
	if qq != nil {
		rows = limit(rows, qq)
	}
	for i, row := range rows {
		rows[i] = row[:len(items)]
	}
	rs.rows = rows
	return r.asStructOrValue(sel, rs)
}

func limit(rows [][]any, q *Query) [][]any {
	if q.Offset > 0 {
		rows = rows[min(int64(len(rows)), q.Offset):]
	}
	if q.Limit >= 0 && int64(len(rows)) > q.Limit {
		rows = rows[:q.Limit]
	}
	return rows
}

// expandStars replaces * and t.* by the columns they stand for, with
// EXCEPT and REPLACE applied.
func (q *selectQuery) expandStars() ([]Item, error) {
	var items []Item
	for _, it := range q.sel.Items {
		if !it.Star {
			items = append(items, it)
			continue
		}
		if q.sel.From == nil {
			return nil, q.errf(it.pos, "SELECT * must have a FROM clause")
		}
		qual := strings.ToLower(it.Qual)
		if qual != "" && !q.in.vars[qual] {
			if q.in.has(it.Qual) {
				return nil, notSupported(q.src, it.pos, "STRUCT.* (fields of a column)")
			}
			return nil, q.errf(it.pos, "Unrecognized name: %s", it.Qual)
		}
		var cols []int
		for i, c := range q.in.cols {
			if qual == "" && c.star || qual != "" && c.qual == qual {
				cols = append(cols, i)
			}
		}
		what := "SELECT *"
		if qual != "" {
			what = "SELECT " + it.Qual + ".*"
		}
		if len(cols) == 0 {
			return nil, q.errf(it.pos, "%s would expand to zero columns", what)
		}
		except := map[string]bool{}
		for _, x := range it.Except {
			found := false
			for _, i := range cols {
				if strings.EqualFold(q.in.cols[i].name, x.name) {
					found = true
				}
			}
			if !found {
				return nil, q.errf(x.pos, "Column %s in SELECT * EXCEPT list does not exist", x.name)
			}
			except[strings.ToLower(x.name)] = true
		}
		replace := map[string]replaceItem{}
		for _, x := range it.Replace {
			found := false
			for _, i := range cols {
				if strings.EqualFold(q.in.cols[i].name, x.alias) && !except[strings.ToLower(x.alias)] {
					found = true
				}
			}
			if !found {
				return nil, q.errf(x.pos, "Column %s in SELECT * REPLACE list does not exist", x.alias)
			}
			replace[strings.ToLower(x.alias)] = x
		}
		n := 0
		for _, i := range cols {
			c := q.in.cols[i]
			if except[strings.ToLower(c.name)] {
				continue
			}
			n++
			if x, ok := replace[strings.ToLower(c.name)]; ok && c.name != "" {
				items = append(items, Item{Expr: x.expr, Alias: c.name, pos: x.expr.pos()})
				continue
			}
			items = append(items, Item{Star: true, Alias: c.name, col: c.internal, pos: it.pos})
		}
		if n == 0 {
			return nil, q.errf(it.pos, "SELECT * EXCEPT list cannot exclude all columns")
		}
	}
	return items, nil
}

// output is the rows of a query before DISTINCT, ORDER BY and LIMIT:
// each row holds the select list's values, then hidden ORDER BY keys.
type output struct {
	rows  [][]any
	types []string // of the select list
	order []orderKey
}

type orderKey struct {
	col       int
	typ       string
	desc      bool
	nullsLast bool
}

// resolveOrder maps an ORDER BY item to a column of the select list (by
// ordinal, alias, or the same expression), or -1.
func (q *selectQuery) resolveOrder(o OrderItem, items []Item) (int, error) {
	if n, ok, err := ordinal(q.runner, o.Expr, len(items), "ORDER BY"); ok || err != nil {
		return n, err
	}
	if name, ok := o.Expr.singleName(); ok {
		for i, it := range items {
			if strings.EqualFold(it.Alias, name) {
				return i, nil
			}
		}
	}
	k := o.Expr.key()
	for i, it := range items {
		if !it.Star && it.Expr.key() == k {
			return i, nil
		}
	}
	return -1, nil
}

// ordinal reads an integer literal naming a column of the select list
// (0-based result).
func ordinal(r *runner, sp Span, n int, clause string) (int, bool, error) {
	toks := sp.toks
	if len(toks) == 1 && !toks[0].Ident && !toks[0].QIdent && !toks[0].Op {
		var k int
		if _, err := fmt.Sscanf(toks[0].Text, "%d", &k); err == nil && toks[0].Text == fmt.Sprint(k) {
			if k < 1 || k > n {
				return 0, true, r.errf(toks[0].Pos, "%s column number exceeds number of SELECT columns: %d", clause, k)
			}
			return k - 1, true, nil
		}
	}
	return 0, false, nil
}

// compileItem compiles a select-list item against the input.
func (q *selectQuery) compileItem(it Item) (*filter.Scalar, error) {
	if it.Star {
		return q.compileText(quoteIdent(it.col), q.in.schema, nil)
	}
	return q.compile(it.Expr)
}

// runPlain runs a query without aggregation: the select list and ORDER BY
// keys evaluated over the rows WHERE keeps. With stream, the rows go to
// the sink batch by batch, past OFFSET and up to LIMIT, and out has none.
func (q *selectQuery) runPlain(ctx context.Context, items []Item, where *filter.Scalar, stream bool) (*output, error) {
	var exprs []*filter.Scalar
	out := &output{}
	for _, it := range items {
		x, err := q.compileItem(it)
		if err != nil {
			return nil, err
		}
		exprs = append(exprs, x)
		out.types = append(out.types, x.Type())
	}
	for _, o := range q.order {
		col, err := q.resolveOrder(o, items)
		if err != nil {
			return nil, err
		}
		if col < 0 {
			if q.sel.Distinct {
				return nil, q.errf(o.Expr.pos(), "ORDER BY clause expression references columns that are not visible after SELECT DISTINCT")
			}
			x, err := q.compile(o.Expr)
			if err != nil {
				return nil, err
			}
			col = len(exprs)
			exprs = append(exprs, x)
		}
		t := exprs[col].Type()
		if err := checkOrderable(q.runner, o.Expr, t); err != nil {
			return nil, err
		}
		out.order = append(out.order, orderKey{col: col, typ: t, desc: o.Desc, nullsLast: o.NullsLast})
	}
	if stream && q.probing {
		return out, nil // the types are what the probe wants
	}
	if stream && !q.stream.began {
		names := make([]string, len(items))
		for i, it := range items {
			names[i] = it.Alias
		}
		if err := q.begin(ctx, names, out.types); err != nil {
			return nil, err
		}
	}
	st := q.stream
	done := stream && st.left == 0
	if stream {
		q.past = func() bool { return done }
		defer func() { q.past = nil }()
	}
	var tk *topK
	if !stream && len(out.order) > 0 && q.topK >= 0 {
		tk = newTopK(q.topK, out.order)
	}
	all := append([]*filter.Scalar{where}, exprs...)
	err := q.scan(ctx, all, func(rec arrow.RecordBatch, n int) error {
		if done {
			// Past LIMIT: the scan goes on only to count the bytes of
			// the columns read, which BigQuery bills whole.
			return nil
		}
		rec, n, release, err := whereRows(ctx, where, rec, n)
		if err != nil {
			return err
		}
		defer release()
		cols := make([][]any, len(exprs))
		for j, x := range exprs {
			vals, err := x.Values(ctx, rec, n)
			if err != nil {
				return err
			}
			cols[j] = vals
		}
		var batch [][]any
		var charged int64
		for i := 0; i < n; i++ {
			if stream {
				if st.skip > 0 {
					st.skip--
					continue
				}
				if st.left == 0 {
					break
				}
				if st.left > 0 {
					st.left--
				}
			}
			row := make([]any, len(exprs))
			for j := range exprs {
				row[j] = cols[j][i]
			}
			if stream && q.unionTypes != nil {
				for j, t := range q.unionTypes {
					row[j] = coerce(row[j], out.types[j], t)
				}
			}
			b := rowBytes(row)
			if err := q.charge(b, "rows of the SELECT"); err != nil {
				return err
			}
			charged += b
			switch {
			case stream:
				batch = append(batch, row)
			case tk != nil:
				q.release(tk.offer(row, b))
			default:
				out.rows = append(out.rows, row)
			}
		}
		if stream {
			err := q.emit(ctx, batch, charged)
			if errors.Is(err, errLimitReached) {
				done = true
				return nil
			}
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if tk != nil {
		out.rows = tk.sorted()
	}
	return out, nil
}

// whereRows is the batch of rec's rows that where keeps (rec itself when
// it keeps all), and the count of them; release frees what it made. The
// select list, GROUP BY keys and aggregate arguments are evaluated on
// these rows only: as in BigQuery, `SELECT 1/x FROM t WHERE x != 0`
// never divides by zero (evaluating them over the whole batch and
// dropping rows afterwards failed such queries).
func whereRows(ctx context.Context, where *filter.Scalar, rec arrow.RecordBatch, n int) (arrow.RecordBatch, int, func(), error) {
	noop := func() {}
	if where == nil {
		return rec, n, noop, nil
	}
	keep, err := selection(ctx, where, rec, n)
	if err != nil {
		return nil, 0, noop, err
	}
	idx := make([]int32, 0, n)
	for i, k := range keep {
		if k {
			idx = append(idx, int32(i))
		}
	}
	if len(idx) == n || rec == nil { // nil: the block reads no column, only counts rows
		return rec, len(idx), noop, nil
	}
	ia := indices(idx)
	defer ia.Release()
	cols := make([]arrow.Array, rec.NumCols())
	release := func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}
	for c := range cols {
		if cols[c], err = takeArray(ctx, rec.Column(c), ia); err != nil {
			release()
			return nil, 0, noop, err
		}
	}
	out := array.NewRecordBatch(rec.Schema(), cols, int64(len(idx)))
	release()
	return out, len(idx), out.Release, nil
}

// selection evaluates a WHERE condition (nil: every row).
func selection(ctx context.Context, where *filter.Scalar, rec arrow.RecordBatch, n int) ([]bool, error) {
	keep := make([]bool, n)
	if where == nil {
		for i := range keep {
			keep[i] = true
		}
		return keep, nil
	}
	vals, err := where.Values(ctx, rec, n)
	if err != nil {
		return nil, err
	}
	for i, v := range vals {
		keep[i] = v == true
	}
	return keep, nil
}

func checkOrderable(r *runner, sp Span, t string) error {
	switch typeKind(t) {
	case "GEOGRAPHY", "JSON", "ARRAY", "STRUCT":
		pos := 0
		if len(sp.toks) > 0 {
			pos = sp.pos()
		}
		return r.errf(pos, "ORDER BY does not support expressions of type %s", t)
	}
	return nil
}

// scan reads the input with the columns the expressions reference;
// exprs[0] is the block's WHERE (nil: none), by which a base table's
// batches are pruned.
func (q *selectQuery) scan(ctx context.Context, exprs []*filter.Scalar, fn func(rec arrow.RecordBatch, n int) error) error {
	return q.in.scanPast(ctx, exprs[0], q.past, referenced(exprs), fn)
}

// referenced lists the columns the expressions read, each once.
func referenced(exprs []*filter.Scalar) []string {
	var cols []string
	seen := map[string]bool{}
	for _, x := range exprs {
		if x == nil {
			continue
		}
		for _, c := range x.Columns() {
			if k := strings.ToLower(c); !seen[k] {
				seen[k] = true
				cols = append(cols, c)
			}
		}
	}
	return cols
}

func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "\\`") + "`" }

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

func indexAt(toks []filter.Token, pos int) int {
	for i, t := range toks {
		if t.Pos == pos {
			return i
		}
	}
	return 0
}
