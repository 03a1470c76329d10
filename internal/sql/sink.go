package sql

import (
	"context"
	"errors"
	"strings"

	"github.com/bqstore/bqstore/internal/schema"
)

// Streaming results.
//
// A query whose top-level block is a plain scan (FROM, WHERE, the select
// list, LIMIT/OFFSET; no aggregation, analytic functions, DISTINCT or
// ORDER BY) hands its rows to Options.Sink batch by batch as the scan
// produces them: the memory it holds is one batch, whatever the size of
// the result. Any other query materializes its result (each operator that
// keeps rows charges them to the memory budget) and Run then hands the
// rows to the sink in slices, dropping them as they go.

// Sink receives a query's result as it is produced (Options.Sink).
type Sink interface {
	// Begin is called once, before any rows, with the result's schema.
	Begin(ctx context.Context, s *schema.Schema) error
	// Write receives the next rows of the result, in order; each cell is
	// a value as Result.Rows holds it. Write must not keep rows past its
	// return (their memory is released to the budget then).
	Write(ctx context.Context, rows [][]any) error
}

// sinkRows is how many rows Run hands a sink at a time from a
// materialized result.
const sinkRows = 4096

// errLimitReached stops a streaming scan once LIMIT rows went out.
var errLimitReached = errors.New("sql: limit reached")

// streamer is the top-level block's path to the sink: the LIMIT/OFFSET
// still to apply and what went out.
type streamer struct {
	sink  Sink
	skip  int64 // rows of OFFSET still to skip
	left  int64 // rows LIMIT still allows; -1: no LIMIT
	began bool
	rows  int64 // rows written
	// schema is what Begin got; each batch is checked against it for
	// what BigQuery refuses to write (an ARRAY with a NULL element).
	schema *schema.Schema
}

// canStream reports whether the block is the query's top level and
// produces its rows in scan order with nothing to hold back: then
// runPlain writes them to the sink as it goes.
func (q *selectQuery) canStream(qq *Query, aggregate bool) bool {
	if q.stream == nil {
		return false
	}
	// The top-level block, or an input of a top-level UNION ALL
	// (streamUnion; qq is nil there).
	top := qq == q.top && !q.stream.began || q.unionInputs[q.sel]
	return top && !aggregate && len(q.windows) == 0 && !q.sel.Distinct && len(q.order) == 0
}

// begin names the result's columns and opens the sink.
func (r *runner) begin(ctx context.Context, names, types []string) error {
	cols, err := columnNames(names)
	if err != nil {
		return err
	}
	s := &schema.Schema{}
	for i, n := range cols {
		s.Fields = append(s.Fields, resultField(n, types[i]))
	}
	r.stream.began, r.stream.schema = true, s
	return r.stream.sink.Begin(ctx, s)
}

// emit writes one batch of the streaming block's rows (already past
// OFFSET and within LIMIT) and releases their memory; errLimitReached
// once LIMIT is reached.
func (r *runner) emit(ctx context.Context, rows [][]any, charged int64) error {
	defer r.release(charged)
	if len(rows) > 0 {
		if err := checkNullElements(r.stream.schema, rows); err != nil {
			return err
		}
		if err := r.stream.sink.Write(ctx, rows); err != nil {
			return err
		}
		r.stream.rows += int64(len(rows))
	}
	if r.stream.left == 0 {
		return errLimitReached
	}
	return nil
}

// drain hands a materialized result to the sink, dropping its rows as
// they go.
func (r *runner) drain(ctx context.Context, rs *rowset) error {
	if err := r.begin(ctx, rs.names, rs.types); err != nil {
		return err
	}
	for lo := 0; lo < len(rs.rows); lo += sinkRows {
		hi := min(len(rs.rows), lo+sinkRows)
		if err := checkNullElements(r.stream.schema, rs.rows[lo:hi]); err != nil {
			return err
		}
		if err := r.stream.sink.Write(ctx, rs.rows[lo:hi]); err != nil {
			return err
		}
		clear(rs.rows[lo:hi])
	}
	r.stream.rows += int64(len(rs.rows))
	return nil
}

// errNoStream is a probed UNION ALL input that cannot stream.
var errNoStream = errors.New("sql: the input does not stream")

// streamUnion runs a top-level UNION ALL of plain scans (each input a
// SELECT over a table, a WITH entry or nothing, without aggregation,
// analytic functions or DISTINCT; no ORDER BY over the union) as one
// stream: each input's rows go to the sink in turn, coerced to the
// union's column types. Those types need every input's, so the inputs
// are first compiled without reading (a probe: an expression subquery
// runs twice). ok is false when the query is not of that shape; Run then
// runs it as any other (which also reports its errors as setOp does).
func (r *runner) streamUnion(ctx context.Context, q *Query) (rs *rowset, ok bool, err error) {
	op, isOp := q.Body.(*SetOp)
	if !isOp || op.Op != "UNION" || op.Distinct || len(q.OrderBy) > 0 {
		return nil, false, nil
	}
	var inputs []*Select
	var walk func(b queryBody) bool
	walk = func(b queryBody) bool {
		if o, isOp := b.(*SetOp); isOp && o.Op == "UNION" && !o.Distinct {
			return walk(o.Left) && walk(o.Right)
		}
		sel, isSel := b.(*Select)
		if !isSel || !plainScan(sel) {
			return false
		}
		inputs = append(inputs, sel)
		return true
	}
	if !walk(op) {
		return nil, false, nil
	}
	r.unionInputs = map[*Select]bool{}
	for _, sel := range inputs {
		r.unionInputs[sel] = true
	}
	var e *env
	for _, c := range q.With {
		e = &env{name: strings.ToLower(c.Name), cte: c, def: e, parent: e}
	}
	r.probing = true
	var sets []*rowset
	for _, sel := range inputs {
		in, err := r.selectBlock(ctx, sel, e, nil)
		if err != nil {
			r.probing = false
			if errors.Is(err, errNoStream) {
				return nil, false, nil
			}
			return nil, false, err
		}
		sets = append(sets, in)
	}
	r.probing = false
	out := &rowset{names: sets[0].names, types: append([]string(nil), sets[0].types...)}
	bodies := make([]queryBody, len(inputs))
	for i, in := range inputs {
		bodies[i] = in
		if len(sets[i].types) != len(out.types) {
			return nil, false, nil // setOp reports it
		}
	}
	for c, args := range setArgs(bodies, sets) {
		t, ok := setSupertype(args)
		if !ok {
			return nil, false, nil
		}
		out.types[c] = t
		for _, in := range sets {
			if !simpleCoercion(in.types[c], t) {
				return nil, false, nil // a literal or a STRUCT converted: setOp does it
			}
		}
	}
	if err := r.begin(ctx, out.names, out.types); err != nil {
		return nil, false, err
	}
	r.unionTypes = out.types
	for _, sel := range inputs {
		if _, err := r.selectBlock(ctx, sel, e, nil); err != nil {
			return nil, false, err
		}
	}
	return out, true, nil
}

// plainScan reports whether a SELECT reads one table (or a WITH entry,
// or nothing) and keeps no rows: it can stream.
func plainScan(sel *Select) bool {
	switch sel.From.(type) {
	case nil, *TableRef:
	default:
		return false
	}
	if sel.Distinct || len(sel.GroupBy) > 0 || sel.Having != nil || sel.Qualify != nil {
		return false
	}
	for _, it := range sel.Items {
		if it.Star {
			continue
		}
		if _, agg := findAgg(it.Expr.toks); agg {
			return false
		}
		if _, win := hasWindow(it.Expr.toks); win {
			return false
		}
	}
	return true
}
