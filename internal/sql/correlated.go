package sql

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
)

// Correlated subqueries (scalar and EXISTS) in the select list, WHERE,
// GROUP BY, ORDER BY and aggregate arguments of a SELECT block: a name a
// subquery cannot resolve in its own FROM resolves in the enclosing
// block's input (a correlation frame) to a constant. A first run binds
// every such column to NULL, to learn whether the subquery is correlated
// at all and its type; a correlated one becomes a column __s<i> of the
// enclosing block's input, computed per row by running the subquery once
// per distinct combination of the values it references.

// corrFrame is an enclosing block's input, seen from inside one of its
// subqueries.
type corrFrame struct {
	rel  *relation
	bind map[int]any  // column -> its value for this run (nil: probing, NULL)
	refs map[int]bool // columns the subquery referenced
}

// outerName is the constant's name for column i of frame k.
func outerName(k, i int) string { return fmt.Sprintf("__o%d_%d", k, i) }

// outerResolve resolves a path no FROM item of the block knows in the
// enclosing blocks' inputs, innermost first.
func (r *runner) outerResolve(parts []string, pos int) (string, int, bool, error) {
	for k := len(r.corr) - 1; k >= 0; k-- {
		f := r.corr[k]
		i, used, err := f.rel.resolve(r.src, parts, pos)
		if err != nil {
			continue
		}
		fd := f.rel.field(i)
		if fd.EffectiveMode() == schema.Repeated || canonical(fd.Type) == schema.Record || used != len(parts) {
			return "", 0, true, notSupported(r.src, pos, "correlated references to ARRAY or STRUCT columns")
		}
		f.refs[i] = true
		return outerName(k, i), used, true, nil
	}
	return "", 0, false, nil
}

// outerConsts are the constants of every column of the correlation
// frames (their bound values, or NULL).
func (r *runner) outerConsts() map[string]filter.Const {
	if len(r.corr) == 0 {
		return nil
	}
	out := map[string]filter.Const{}
	for k, f := range r.corr {
		for i := range f.rel.cols {
			fd := f.rel.field(i)
			if fd.EffectiveMode() == schema.Repeated || canonical(fd.Type) == schema.Record {
				continue
			}
			out[outerName(k, i)] = filter.Const{Type: typeName(fd), Values: []any{f.bind[i]}}
		}
	}
	return out
}

// correlatedColumn adds to q's input a column holding the value of the
// correlated subquery sub for each row, and returns its name.
func (q *selectQuery) correlatedColumn(sub *Query, e *env, kind, typ string, refs map[int]bool) string {
	in := q.in
	q.nsub++
	name := fmt.Sprintf("__s%d", q.nsub)
	out := &relation{schema: &schema.Schema{}, vars: in.vars}
	out.cols = append(append(out.cols, in.cols...), relCol{internal: name, name: name, unq: true})
	out.schema.Fields = append(append(out.schema.Fields, in.schema.Fields...), resultField(name, typ))
	var refIdx []int
	for i := range in.cols {
		if refs[i] {
			refIdx = append(refIdx, i)
		}
	}
	cache := map[string]any{}
	out.scan = func(ctx context.Context, cols []string, fn func(arrow.RecordBatch, int) error) error {
		need := map[string]bool{}
		var in2 []string
		for _, i := range refIdx {
			c := in.cols[i].internal
			if !need[strings.ToLower(c)] {
				need[strings.ToLower(c)] = true
				in2 = append(in2, c)
			}
		}
		for _, c := range cols {
			if !strings.EqualFold(c, name) && !need[strings.ToLower(c)] {
				need[strings.ToLower(c)] = true
				in2 = append(in2, c)
			}
		}
		refX := make([]*filter.Scalar, len(refIdx))
		for k, i := range refIdx {
			x, err := q.compileText(quoteIdent(in.cols[i].internal), in.schema, nil)
			if err != nil {
				return err
			}
			refX[k] = x
		}
		return in.scan(ctx, in2, func(rec arrow.RecordBatch, n int) error {
			refVals := make([][]any, len(refX))
			for k, x := range refX {
				v, err := x.Values(ctx, rec, n)
				if err != nil {
					return err
				}
				refVals[k] = v
			}
			vals := make([]any, n)
			var kb []byte
			for row := 0; row < n; row++ {
				kb = kb[:0]
				bind := map[int]any{}
				for k, i := range refIdx {
					kb = appendKey(kb, refVals[k][row])
					bind[i] = refVals[k][row]
				}
				v, ok := cache[string(kb)]
				if !ok {
					var err error
					if v, err = q.runCorrelated(ctx, sub, e, kind, in, bind); err != nil {
						return err
					}
					cache[string(kb)] = v
				}
				vals[row] = v
			}
			// The batch asked for: the input's columns and this one.
			var fields []arrow.Field
			var arrs []arrow.Array
			for _, c := range cols {
				if strings.EqualFold(c, name) {
					sub := &schema.Schema{Fields: []*schema.Field{out.field(out.index(name))}}
					vr, err := buildRecord(sub, n, func(_, r int) any { return vals[r] })
					if err != nil {
						return err
					}
					a := vr.Column(0)
					a.Retain()
					vr.Release()
					arrs = append(arrs, a)
					fields = append(fields, arrow.Field{Name: c, Type: a.DataType(), Nullable: true})
					continue
				}
				for k, nc := range in2 {
					if strings.EqualFold(nc, c) {
						a := rec.Column(k)
						a.Retain()
						arrs = append(arrs, a)
						fields = append(fields, rec.Schema().Field(k))
					}
				}
			}
			if len(cols) == 0 {
				return fn(nil, n)
			}
			orec := array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, int64(n))
			for _, a := range arrs {
				a.Release()
			}
			defer orec.Release()
			return fn(orec, n)
		})
	}
	q.in = out
	return name
}

// runCorrelated runs a correlated subquery for one row's values.
func (q *selectQuery) runCorrelated(ctx context.Context, sub *Query, e *env, kind string, in *relation, bind map[int]any) (any, error) {
	q.corr = append(q.corr, &corrFrame{rel: in, bind: bind, refs: map[int]bool{}})
	q.exprSub++
	rs, err := q.query(ctx, sub, e)
	q.exprSub--
	q.corr = q.corr[:len(q.corr)-1]
	if err != nil {
		return nil, err
	}
	if kind == "EXISTS" {
		return len(rs.rows) > 0, nil
	}
	switch len(rs.rows) {
	case 0:
		return nil, nil
	case 1:
		return rs.rows[0][0], nil
	}
	return nil, q.errf(sub.Pos, "Scalar subquery produced more than one element")
}
