package sql

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

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
	Scan(ctx context.Context, cols []string, fn func(arrow.RecordBatch) error) error
	// Close releases the snapshot; Run calls it once it is done.
	Close()
}

// Resolver opens the table a query names, resolving a missing project or
// dataset from the job's defaults. Its errors are returned as they are
// (the API layer maps "not found" to BigQuery's notFound).
type Resolver func(ctx context.Context, name TableName) (Table, error)

// Options configure a query.
type Options struct {
	// MaxRows bounds the rows of a result held in memory; beyond it the
	// query fails with "not supported yet" rather than exhausting memory.
	MaxRows int
}

// DefaultMaxRows is the default Options.MaxRows.
const DefaultMaxRows = 1_000_000

// Result is the answer to a query.
type Result struct {
	Schema *schema.Schema
	// Rows are the result's rows; each cell is a value as
	// filter.Scalar.Values returns it, typed by the schema.
	Rows [][]any
	// BytesProcessed is the logical size of the columns the query read,
	// as BigQuery bills it: per non-NULL value 8 bytes for INT64, FLOAT64,
	// DATE, DATETIME, TIME and TIMESTAMP, 1 for BOOL, 16 for NUMERIC, 32
	// for BIGNUMERIC, 2 + length for STRING, BYTES, JSON and GEOGRAPHY.
	BytesProcessed int64
	// Table is the table read, nil for a query without FROM.
	Table *TableName
}

// Run parses and runs a query. Errors in the query (syntax, names, types,
// unsupported features, runtime errors such as division by zero) are
// *filter.Error with a position; others come from the resolver or the
// scan.
func Run(ctx context.Context, src string, resolve Resolver, opts Options) (*Result, error) {
	sel, err := Parse(src)
	if err != nil {
		return nil, err
	}
	if opts.MaxRows <= 0 {
		opts.MaxRows = DefaultMaxRows
	}
	q := &query{sel: sel, src: src, opts: opts}
	return q.run(ctx, resolve)
}

type query struct {
	sel  *Select
	src  string
	opts Options

	table  Table
	schema *schema.Schema // the table's, or empty

	bytes int64
}

// text returns the statement with everything outside [from, to) blanked
// (each character a space, newlines kept), so that the expression layer's
// error positions are positions in the statement.
func (q *query) text(from, to int) string {
	var b strings.Builder
	b.Grow(to)
	for _, r := range q.src[:from] {
		if r == '\n' {
			b.WriteByte('\n')
		} else {
			b.WriteByte(' ')
		}
	}
	b.WriteString(q.src[from:to])
	return b.String()
}

func (q *query) errf(pos int, format string, args ...any) error {
	return filter.NewError(q.src, pos, format, args...)
}

// compile compiles a span against s.
func (q *query) compile(sp Span, s *schema.Schema) (*filter.Scalar, error) {
	x, err := filter.CompileScalar(q.text(sp.pos(), sp.end()), s)
	var fe *filter.Error
	if errors.As(err, &fe) {
		// The expression layer speaks of row_restriction here.
		if rest, ok := strings.CutPrefix(fe.Msg, "row_restriction cannot reference REPEATED field "); ok {
			name, _, _ := strings.Cut(rest, ":")
			fe.Msg = "not supported yet by bqstore: REPEATED (ARRAY) columns in queries: " + name
		}
	}
	return x, err
}

func (q *query) run(ctx context.Context, resolve Resolver) (*Result, error) {
	sel := q.sel
	q.schema = &schema.Schema{}
	if sel.From != nil {
		t, err := resolve(ctx, *sel.From)
		if err != nil {
			return nil, err
		}
		defer t.Close()
		q.table, q.schema = t, t.Schema()
	}
	// Expand SELECT *.
	var items []Item
	for _, it := range sel.Items {
		if !it.Star {
			items = append(items, it)
			continue
		}
		if sel.From == nil {
			return nil, q.errf(it.pos, "SELECT * must have a FROM clause")
		}
		for _, f := range q.schema.Fields {
			items = append(items, Item{Star: true, Alias: f.Name, pos: it.pos})
		}
	}
	names, err := q.columnNames(items)
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
	for _, o := range sel.OrderBy {
		spans = append(spans, o.Expr)
	}
	for _, sp := range spans {
		for i, t := range sp.toks {
			if isCall(sp.toks, i) && knownAggs[strings.ToUpper(t.Text)] {
				return nil, notSupported(q.src, t.Pos, "aggregate or analytic function "+strings.ToUpper(t.Text))
			}
		}
	}
	var where *filter.Scalar
	if sel.Where != nil {
		if at, ok := findAgg(sel.Where.toks); ok {
			return nil, q.errf(at, "Aggregate function %s not allowed in WHERE clause", strings.ToUpper(sel.Where.toks[indexAt(sel.Where.toks, at)].Text))
		}
		if where, err = q.compile(*sel.Where, q.schema); err != nil {
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
	for _, o := range sel.OrderBy {
		if _, ok := findAgg(o.Expr.toks); ok {
			aggregate = true
		}
	}
	var out *output
	if aggregate {
		out, err = q.runAggregate(ctx, items, where)
	} else {
		out, err = q.runPlain(ctx, items, where)
	}
	if err != nil {
		return nil, err
	}
	rows := out.rows
	if sel.Distinct {
		rows = distinct(rows, len(items))
	}
	if len(out.order) > 0 {
		sortRows(rows, out.order)
	}
	if sel.Offset > 0 {
		rows = rows[min(int64(len(rows)), sel.Offset):]
	}
	if sel.Limit >= 0 && int64(len(rows)) > sel.Limit {
		rows = rows[:sel.Limit]
	}
	res := &Result{Schema: &schema.Schema{}, BytesProcessed: q.bytes, Table: sel.From}
	for i := range items {
		res.Schema.Fields = append(res.Schema.Fields, &schema.Field{Name: names[i], Type: bqType(out.types[i]), Mode: schema.Nullable})
	}
	res.Rows = make([][]any, len(rows))
	for i, r := range rows {
		res.Rows[i] = r[:len(items)]
	}
	return res, nil
}

// columnNames names the result's columns: the alias, or f0_, f1_, ... for
// anonymous ones. Duplicates are an error, as for BigQuery's anonymous
// result tables.
func (q *query) columnNames(items []Item) ([]string, error) {
	names := make([]string, len(items))
	seen := map[string]bool{}
	var dups []string
	anon := 0
	for i, it := range items {
		n := it.Alias
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
func (q *query) resolveOrder(o OrderItem, items []Item) (int, error) {
	toks := o.Expr.toks
	if len(toks) == 1 && !toks[0].Ident && !toks[0].QIdent && !toks[0].Op {
		var n int
		if _, err := fmt.Sscanf(toks[0].Text, "%d", &n); err == nil && toks[0].Text == fmt.Sprint(n) {
			if n < 1 || n > len(items) {
				return 0, q.errf(toks[0].Pos, "ORDER BY column number exceeds number of SELECT columns: %d", n)
			}
			return n - 1, nil
		}
	}
	if name, ok := o.Expr.singleName(); ok {
		for i, it := range items {
			if strings.EqualFold(it.Alias, name) && (!it.Star || q.sel.From != nil) {
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

// runPlain runs a query without aggregation: the select list and ORDER BY
// keys evaluated over the rows WHERE keeps.
func (q *query) runPlain(ctx context.Context, items []Item, where *filter.Scalar) (*output, error) {
	var exprs []*filter.Scalar
	out := &output{}
	for _, it := range items {
		var x *filter.Scalar
		var err error
		if it.Star {
			x, err = filter.CompileScalar(quoteIdent(it.Alias), q.schema)
		} else {
			x, err = q.compile(it.Expr, q.schema)
		}
		if err != nil {
			return nil, err
		}
		exprs = append(exprs, x)
		out.types = append(out.types, x.Type())
	}
	for _, o := range q.sel.OrderBy {
		col, err := q.resolveOrder(o, items)
		if err != nil {
			return nil, err
		}
		if col < 0 {
			if q.sel.Distinct {
				return nil, q.errf(o.Expr.pos(), "ORDER BY clause expression references columns that are not visible after SELECT DISTINCT")
			}
			x, err := q.compile(o.Expr, q.schema)
			if err != nil {
				return nil, err
			}
			col = len(exprs)
			exprs = append(exprs, x)
		}
		t := exprs[col].Type()
		if err := checkOrderable(q, o.Expr, items, col, t); err != nil {
			return nil, err
		}
		out.order = append(out.order, orderKey{col: col, typ: t, desc: o.Desc, nullsLast: o.NullsLast})
	}
	all := append([]*filter.Scalar{where}, exprs...)
	err := q.scan(ctx, all, func(rec arrow.RecordBatch, n int) error {
		keep := make([]bool, n)
		for i := range keep {
			keep[i] = true
		}
		if where != nil {
			vals, err := where.Values(ctx, rec, n)
			if err != nil {
				return err
			}
			for i, v := range vals {
				keep[i] = v == true
			}
		}
		cols := make([][]any, len(exprs))
		for j, x := range exprs {
			vals, err := x.Values(ctx, rec, n)
			if err != nil {
				return err
			}
			cols[j] = vals
		}
		for i := 0; i < n; i++ {
			if !keep[i] {
				continue
			}
			if len(out.rows) >= q.opts.MaxRows {
				return q.tooLarge()
			}
			row := make([]any, len(exprs))
			for j := range exprs {
				row[j] = cols[j][i]
			}
			out.rows = append(out.rows, row)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (q *query) tooLarge() error {
	return &filter.Error{Line: 1, Column: 1, Msg: fmt.Sprintf("not supported yet by bqstore: results larger than %d rows (results are held in memory)", q.opts.MaxRows)}
}

func checkOrderable(q *query, sp Span, items []Item, col int, t string) error {
	switch t {
	case "GEOGRAPHY", "JSON":
		pos := 0
		if len(sp.toks) > 0 {
			pos = sp.pos()
		}
		return q.errf(pos, "ORDER BY does not support expressions of type %s", t)
	}
	return nil
}

// scan reads the table (or, without FROM, one row of no columns) with the
// columns the expressions reference, and counts the bytes read.
func (q *query) scan(ctx context.Context, exprs []*filter.Scalar, fn func(rec arrow.RecordBatch, n int) error) error {
	if q.table == nil {
		return fn(nil, 1)
	}
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
	return q.table.Scan(ctx, cols, func(rec arrow.RecordBatch) error {
		q.bytes += logicalBytes(rec)
		if len(cols) == 0 {
			// The expressions read no column: evaluate them without a record.
			return fn(nil, int(rec.NumRows()))
		}
		return fn(rec, int(rec.NumRows()))
	})
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

var _ = utf8.RuneLen
