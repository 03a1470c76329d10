package sql

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/bqstore/bqstore/internal/schema"
)

// Correlated subqueries over the groups of an aggregation: in the select
// list, HAVING, QUALIFY and ORDER BY of a block with GROUP BY or
// aggregates, a subquery sees one row per group, so it may name the
// input's grouped columns only (a GROUP BY key that is a column), as
// GoogleSQL resolves it: any other column of the block's input is
// "... neither grouped nor aggregated". Its value is a column __p<k> of
// the groups' record, computed per group by running the subquery once
// per distinct combination of the key values it references (as
// correlatedColumn does per input row); x [NOT] IN (subquery) is
// x [NOT] IN UNNEST(__p<k>), the column the subquery's values as an
// ARRAY. Aggregates inside the subquery
// are the subquery's own: SUM(t.x) in its WHERE is GoogleSQL's
// "Aggregate function SUM not allowed in WHERE clause".

// groupCorr is the correlated subqueries over the groups of one block.
type groupCorr struct {
	q       *selectQuery
	grouped map[string]bool // the grouped input columns' internal names (lower case)
	keys    *schema.Schema  // the groups' record schema, holding the grouped columns
	cols    []*groupCorrCol
	// clause is the clause being compiled (for errors).
	clause string
	// target is the schema the expression being compiled is checked
	// against: a new column is added to it.
	target *schema.Schema
}

type groupCorrCol struct {
	name  string
	sub   *Query
	env   *env
	kind  string
	field *schema.Field
	refs  []int // columns of q.in
	cache map[string]any
	// having: the subquery is HAVING's, computed for every group.
	having bool
}

// schemaFor returns s with the columns of the subqueries so far, the
// schema an expression over the groups compiles against; a subquery of
// that expression adds its column to it.
func (g *groupCorr) schemaFor(s *schema.Schema, clause string) *schema.Schema {
	out := &schema.Schema{Fields: append([]*schema.Field(nil), s.Fields...)}
	for _, c := range g.cols {
		out.Fields = append(out.Fields, c.field)
	}
	g.target, g.clause = out, clause
	return out
}

// add registers the correlated subquery sub (kind and value type typ),
// which referenced frame.refs of the block's input, and returns its
// column's name.
func (g *groupCorr) add(sub *Query, e *env, kind, typ string, frame *corrFrame, pos int) (string, error) {
	c := &groupCorrCol{name: fmt.Sprintf("__p%d", len(g.cols)), sub: sub, env: e, kind: kind, cache: map[string]any{}}
	for i := range g.q.in.cols {
		if !frame.refs[i] {
			continue
		}
		col := g.q.in.cols[i]
		if !g.grouped[strings.ToLower(col.internal)] {
			at := pos
			if p, ok := frame.pos[i]; ok {
				at = p
			}
			return "", g.q.errf(at, "%s expression references column %s which is neither grouped nor aggregated", g.clause, col.name)
		}
		c.refs = append(c.refs, i)
	}
	c.field = resultField(c.name, typ)
	c.having = g.clause == "HAVING clause"
	g.cols = append(g.cols, c)
	if g.target != nil {
		g.target.Fields = append(g.target.Fields, c.field)
	}
	return c.name, nil
}

// with returns rec (the groups' record, n rows) with the subqueries'
// columns it lacks added (HAVING's only, with havingOnly); rec itself
// when none is; release frees what it made.
func (g *groupCorr) with(ctx context.Context, rec arrow.RecordBatch, n int, havingOnly bool) (arrow.RecordBatch, func(), error) {
	noop := func() {}
	var cols []*groupCorrCol
	for _, c := range g.cols {
		if (c.having || !havingOnly) && len(rec.Schema().FieldIndices(c.name)) == 0 {
			cols = append(cols, c)
		}
	}
	if len(cols) == 0 {
		return rec, noop, nil
	}
	vals := make([][]any, len(cols))
	out := &schema.Schema{}
	for k, c := range cols {
		refVals := make([][]any, len(c.refs))
		for j, i := range c.refs {
			x, err := g.q.compileText(colText(g.q.in.cols[i].internal), g.keys, nil)
			if err != nil {
				return nil, noop, err
			}
			if refVals[j], err = x.Values(ctx, rec, n); err != nil {
				return nil, noop, err
			}
		}
		vals[k] = make([]any, n)
		var kb []byte
		for row := 0; row < n; row++ {
			kb = kb[:0]
			bind := map[int]any{}
			for j, i := range c.refs {
				kb = appendKey(kb, refVals[j][row])
				bind[i] = refVals[j][row]
			}
			v, ok := c.cache[string(kb)]
			if !ok {
				var err error
				if v, err = g.q.runCorrelated(ctx, c.sub, c.env, c.kind, g.q.in, bind); err != nil {
					return nil, noop, err
				}
				if set, ok := v.(inSet); ok {
					v = set.vals // x IN UNNEST(column): an ARRAY
				}
				c.cache[string(kb)] = v
			}
			vals[k][row] = v
		}
		out.Fields = append(out.Fields, c.field)
	}
	prec, err := buildRecord(out, n, func(col, row int) any { return vals[col][row] })
	if err != nil {
		return nil, noop, err
	}
	joined := joinRecords(rec, prec)
	prec.Release()
	return joined, joined.Release, nil
}

// keepRows is rec (n rows) cut to the rows keep marks (rec itself when it
// keeps all); release frees what it made.
func keepRows(ctx context.Context, rec arrow.RecordBatch, keep []bool) (arrow.RecordBatch, int, func(), error) {
	noop := func() {}
	idx := make([]int32, 0, len(keep))
	for i, k := range keep {
		if k {
			idx = append(idx, int32(i))
		}
	}
	if len(idx) == len(keep) {
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
		var err error
		if cols[c], err = takeArray(ctx, rec.Column(c), ia); err != nil {
			release()
			return nil, 0, noop, err
		}
	}
	out := array.NewRecordBatch(rec.Schema(), cols, int64(len(idx)))
	release()
	return out, len(idx), out.Release, nil
}
