package sql

import (
	"context"
	"math/big"
	"strconv"
	"strings"

	"github.com/bqstore/bqstore/internal/filter"
)

// navigate sets FIRST_VALUE, LAST_VALUE or NTH_VALUE of the rows of a
// sorted partition (positions 0..len(rows)-1) over each row's frame
// [lo, hi). With IGNORE NULLS the frame's NULL values are skipped: the
// partition's non-NULL positions, and for each position the next and
// previous of them, answer each row in constant time (a scan of each
// frame would be quadratic in a partition of mostly NULLs).
func (w *window) navigate(vals []any, rows []int, bounds func(int) (int, int), out []any) {
	m := len(rows)
	var nonNull []int // positions of the non-NULL values
	var before []int  // before[i]: non-NULL values at positions < i
	if w.ignoreNulls {
		before = make([]int, m+1)
		for i, r := range rows {
			before[i+1] = before[i]
			if vals[r] != nil {
				nonNull = append(nonNull, i)
				before[i+1]++
			}
		}
	}
	for i, r := range rows {
		lo, hi := bounds(i)
		out[r] = nil
		if lo >= hi {
			continue
		}
		if !w.ignoreNulls {
			switch w.name {
			case "FIRST_VALUE":
				out[r] = vals[rows[lo]]
			case "LAST_VALUE":
				out[r] = vals[rows[hi-1]]
			default:
				if w.offset <= int64(hi-lo) {
					out[r] = vals[rows[lo+int(w.offset)-1]]
				}
			}
			continue
		}
		// The frame's non-NULL values are nonNull[before[lo]:before[hi]].
		first, end := before[lo], before[hi]
		switch {
		case first == end:
		case w.name == "FIRST_VALUE":
			out[r] = vals[rows[nonNull[first]]]
		case w.name == "LAST_VALUE":
			out[r] = vals[rows[nonNull[end-1]]]
		case w.offset <= int64(end-first):
			out[r] = vals[rows[nonNull[first+int(w.offset)-1]]]
		}
	}
}

// lagDefault checks LAG's or LEAD's default (a constant; ZetaSQL's
// signature LAG(T, INT64, T): the value and the default take their
// common supertype, a FLOAT64 literal coercing to a decimal value's
// type) and sets the window's type and default value.
func (q *selectQuery) lagDefault(w *window, toks []filter.Token, pos int) error {
	d := w.args[2]
	if len(d.Columns()) > 0 {
		return notSupported(q.src, toks[0].Pos, "a "+w.name+" default that is not a constant")
	}
	vt, dt := w.args[0].Type(), d.Type()
	v, err := d.Values(context.Background(), nil, 1)
	if err != nil {
		return err
	}
	def := v[0]
	param := false
	for _, t := range toks {
		param = param || t.Param
	}
	typ, ok := supertype(vt, dt)
	if f, isFloat := def.(float64); isFloat && !param && (vt == "NUMERIC" || vt == "BIGNUMERIC") {
		// A FLOAT64 literal coerces to the decimal type as written.
		if r, ok := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64)); ok && filter.DecimalInRange(vt, r) {
			typ, dt, def = vt, vt, r
		}
	}
	if !ok && typ == "" {
		var types []string
		for _, x := range w.args {
			types = append(types, x.Type())
		}
		return q.errf(pos, "No matching signature for analytic function %s for argument types: %s. Supported signature: %s(T, [INT64], [T])", w.name, strings.Join(types, ", "), w.name)
	}
	w.typ, w.lagDef = typ, coerce(def, dt, typ)
	return nil
}
