package sql

import (
	"context"
	"fmt"
	"math/big"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/bqstore/bqstore/internal/filter"
)

// setOp runs UNION / INTERSECT / EXCEPT. Columns are matched by position
// and named by the first input; each column's type is the inputs' common
// supertype (INT64 -> NUMERIC -> BIGNUMERIC -> FLOAT64, NULL to
// anything, literals coerced: setop_types.go). DISTINCT compares rows as GROUP BY does (NULLs equal, -0 =
// +0, NaN = NaN).
func (r *runner) setOp(ctx context.Context, op *SetOp, e *env) (*rowset, error) {
	// The chain a UNION ALL b UNION ALL c is left-deep: run it flat so
	// that the error names "query 3" as BigQuery does.
	var inputs []queryBody
	var walk func(b queryBody)
	walk = func(b queryBody) {
		if o, ok := b.(*SetOp); ok && o.Op == op.Op && o.Distinct == op.Distinct {
			walk(o.Left)
			inputs = append(inputs, o.Right)
			return
		}
		inputs = append(inputs, b)
	}
	walk(op)
	name := op.Op + " ALL"
	if op.Distinct {
		name = op.Op + " DISTINCT"
	}
	start := firstPos(inputs[0])
	var sets []*rowset
	for _, in := range inputs {
		rs, err := r.body(ctx, in, e)
		if err != nil {
			return nil, err
		}
		sets = append(sets, rs)
	}
	out := &rowset{names: sets[0].names, types: append([]string(nil), sets[0].types...)}
	for k, rs := range sets[1:] {
		if len(rs.types) != len(out.types) {
			return nil, r.errf(start, "Queries in %s have mismatched column count; query 1 has %d column%s, query %d has %d column%s",
				name, len(out.types), plural(len(out.types)), k+2, len(rs.types), plural(len(rs.types)))
		}
	}
	// The columns' supertypes (setop_types.go), literals coerced as
	// GoogleSQL coerces them.
	args := setArgs(inputs, sets)
	for c := range out.types {
		t, ok := setSupertype(args[c])
		if !ok {
			var all []string
			for _, s := range sets {
				all = append(all, s.types[c])
			}
			return nil, r.errf(start, "Column %d in %s has incompatible types: %s", c+1, name, strings.Join(all, ", "))
		}
		out.types[c] = t
	}
	for i, rs := range sets {
		for c, to := range out.types {
			from := rs.types[c]
			if simpleCoercion(from, to) {
				continue // coerce, below
			}
			if a := args[c][i]; a.lit != "" {
				x, err := r.compileText(exprText{text: "CAST(" + a.lit + " AS " + to + ")"}, nil, nil)
				var v []any
				if err == nil {
					v, err = x.Values(ctx, nil, 1)
				}
				if err != nil {
					return nil, r.errf(a.at, "Could not cast literal %s to type %s", a.lit, to)
				}
				for _, row := range rs.rows {
					row[c] = v[0]
				}
			} else if err := r.castColumn(ctx, rs, c, from, to); err != nil {
				return nil, err
			}
			rs.types[c] = to
		}
	}
	for c := range out.types {
		switch k := typeKind(out.types[c]); k {
		case "GEOGRAPHY", "JSON", "ARRAY":
			if op.Distinct {
				return nil, r.errf(start, "Column %d of type %s cannot be used in %s", c+1, k, name)
			}
		}
	}
	for _, rs := range sets {
		for _, row := range rs.rows {
			for c, v := range row {
				row[c] = coerce(v, rs.types[c], out.types[c])
			}
		}
	}
	switch op.Op {
	case "UNION":
		for _, rs := range sets {
			out.rows = append(out.rows, rs.rows...)
		}
		if op.Distinct {
			out.rows = distinct(out.rows, len(out.types))
		}
	case "INTERSECT", "EXCEPT":
		if !op.Distinct {
			out.rows = multisetOp(op.Op, sets)
			break
		}
		rows := distinct(sets[0].rows, len(out.types))
		for _, rs := range sets[1:] {
			in := map[string]bool{}
			for _, row := range rs.rows {
				in[rowKey(row)] = true
			}
			kept := rows[:0]
			for _, row := range rows {
				if in[rowKey(row)] == (op.Op == "INTERSECT") {
					kept = append(kept, row)
				}
			}
			rows = kept
		}
		out.rows = rows
	}
	return out, nil
}

// multisetOp is INTERSECT ALL / EXCEPT ALL, left to right: a row m times
// on the left and n times on the right is kept min(m, n) times by
// INTERSECT ALL, max(m-n, 0) times by EXCEPT ALL. Rows keep the left
// input's order.
func multisetOp(op string, sets []*rowset) [][]any {
	rows := sets[0].rows
	for _, rs := range sets[1:] {
		count := map[string]int{}
		for _, row := range rs.rows {
			count[rowKey(row)]++
		}
		var kept [][]any
		for _, row := range rows {
			k := rowKey(row)
			matched := count[k] > 0
			if matched {
				count[k]--
			}
			if matched == (op == "INTERSECT") {
				kept = append(kept, row)
			}
		}
		rows = kept
	}
	return rows
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func rowKey(row []any) string {
	var kb []byte
	for _, v := range row {
		kb = appendKey(kb, v)
	}
	return string(kb)
}

// firstPos is the position of the first SELECT of a query body.
func firstPos(b queryBody) int {
	switch b := b.(type) {
	case *SetOp:
		return firstPos(b.Left)
	case *Query:
		return b.Pos
	}
	return b.bodyPos()
}

var numericRank = map[string]int{"INT64": 1, "NUMERIC": 2, "BIGNUMERIC": 3, "FLOAT64": 4}

// supertype is the common type of two set operation inputs' columns.
func supertype(a, b string) (string, bool) {
	switch {
	case a == b:
		return a, true
	case a == "NULL":
		return b, true
	case b == "NULL":
		return a, true
	case numericRank[a] > 0 && numericRank[b] > 0:
		if numericRank[a] > numericRank[b] {
			return a, true
		}
		return b, true
	case a == "DATE" && b == "DATETIME", a == "DATETIME" && b == "DATE":
		return "DATETIME", true
	}
	return "", false
}

// coerce converts a value of type from to type to (a supertype).
func coerce(v any, from, to string) any {
	if v == nil || from == to {
		return v
	}
	switch to {
	case "FLOAT64":
		switch x := v.(type) {
		case int64:
			return float64(x)
		case *big.Rat:
			f, _ := x.Float64()
			return f
		}
	case "NUMERIC", "BIGNUMERIC":
		if x, ok := v.(int64); ok {
			return new(big.Rat).SetInt64(x)
		}
	case "DATETIME":
		if x, ok := v.(int64); ok && from == "DATE" {
			return x * 86400 * 1_000_000
		}
	}
	return v
}

// finish applies a query's ORDER BY and LIMIT to the result of a set
// operation or a parenthesised query: ORDER BY names output columns (by
// ordinal, name, or an expression over them).
func (r *runner) finish(ctx context.Context, rs *rowset, q *Query, e *env) (*rowset, error) {
	if len(q.OrderBy) > 0 {
		rel := rowsRelation(rs, "")
		var keys []orderKey
		var extra [][]any
		for _, o := range q.OrderBy {
			col, ok, err := ordinal(r, o.Expr, len(rs.types), "ORDER BY")
			if err != nil {
				return nil, err
			}
			if !ok {
				x, err := r.compileText(r.text(o.Expr.pos(), o.Expr.end()), rel.schema, &scope{env: e, outer: rel}, filter.WithNames(rel.names(r.src)))
				if err != nil {
					return nil, err
				}
				var vals []any
				err = rel.scan(ctx, x.Columns(), func(rec arrow.RecordBatch, n int) error {
					v, err := x.Values(ctx, rec, n)
					vals = append(vals, v...)
					return err
				})
				if err != nil {
					return nil, err
				}
				if len(vals) != len(rs.rows) {
					return nil, fmt.Errorf("sql: ORDER BY evaluated %d values for %d rows", len(vals), len(rs.rows))
				}
				col = len(rs.types) + len(extra)
				extra = append(extra, vals)
				if err := checkOrderable(r, o.Expr, x.Type()); err != nil {
					return nil, err
				}
			} else if err := checkOrderable(r, o.Expr, rs.types[col]); err != nil {
				return nil, err
			}
			keys = append(keys, orderKey{col: col, desc: o.Desc, nullsLast: o.NullsLast})
		}
		if len(extra) > 0 {
			for i, row := range rs.rows {
				for _, vals := range extra {
					row = append(row, vals[i])
				}
				rs.rows[i] = row
			}
		}
		sortRows(rs.rows, keys)
		for i, row := range rs.rows {
			rs.rows[i] = row[:len(rs.types)]
		}
	}
	rs.rows = limit(rs.rows, q)
	return rs, nil
}
