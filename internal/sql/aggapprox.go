package sql

import (
	"context"
	"math/big"
	"sort"

	"github.com/bqstore/bqstore/internal/filter"
)

// APPROX_QUANTILES, APPROX_TOP_COUNT and APPROX_TOP_SUM. They keep the
// group's values (charged to the memory budget as ARRAY_AGG's are) and
// answer exactly, which is within any approximation's error bound:
// APPROX_QUANTILES(x, n)[k] is the value at rank ceil(k*N/n) of the N
// sorted inputs (BigQuery's documented [1, 5, 10] and percentile_90 = 9),
// the TOP functions the values with the largest counts or weight sums,
// ties in order of first appearance.

// approxNumber reads the constant INT64 argument i of an APPROX_ call.
func (q *selectQuery) approxNumber(a *agg, i int) (int64, error) {
	x := a.args[i]
	if len(x.Columns()) > 0 || x.Type() != "INT64" {
		return 0, q.errf(a.pos, "%s requires the number argument to be an INT64 literal or query parameter", a.name)
	}
	v, err := x.Values(context.Background(), nil, 1)
	if err != nil {
		return 0, err
	}
	n, ok := v[0].(int64)
	if !ok || n < 1 || n > 100000 {
		return 0, q.errf(a.pos, "%s requires the number argument to be between 1 and 100000", a.name)
	}
	return n, nil
}

// checkApprox checks the arguments of an APPROX_ aggregate and sets its
// result type.
func (q *selectQuery) checkApprox(a *agg, types []string, sig func(string) error) error {
	elem := a.argType
	switch typeKind(elem) {
	case "ARRAY", "STRUCT":
		return q.errf(a.pos, "%s does not support arguments of type %s", a.name, elem)
	case "NULL":
		elem = "INT64"
	}
	var err error
	switch a.name {
	case "APPROX_QUANTILES":
		if len(a.args) != 2 {
			return sig("APPROX_QUANTILES(ANY, INT64)")
		}
		if a.buckets, err = q.approxNumber(a, 1); err != nil {
			return err
		}
		a.typ = "ARRAY<" + elem + ">"
	case "APPROX_TOP_COUNT":
		if len(a.args) != 2 {
			return sig("APPROX_TOP_COUNT(ANY, INT64)")
		}
		if a.buckets, err = q.approxNumber(a, 1); err != nil {
			return err
		}
		a.typ = "ARRAY<STRUCT<value " + elem + ", count INT64>>"
	case "APPROX_TOP_SUM":
		if len(a.args) != 3 {
			return sig("APPROX_TOP_SUM(ANY, INT64|NUMERIC|BIGNUMERIC|FLOAT64, INT64)")
		}
		w := types[1]
		switch w {
		case "INT64", "NUMERIC", "BIGNUMERIC", "FLOAT64":
		case "NULL":
			w = "INT64"
		default:
			return sig("APPROX_TOP_SUM(ANY, INT64|NUMERIC|BIGNUMERIC|FLOAT64, INT64)")
		}
		if a.buckets, err = q.approxNumber(a, 2); err != nil {
			return err
		}
		a.typ = "ARRAY<STRUCT<value " + elem + ", sum " + w + ">>"
		a.args = a.args[:2]
		return nil
	}
	a.args = a.args[:1]
	return nil
}

// addApprox accumulates row i; v is the value (NULL included).
func (a *agg) addApprox(s *acc, v any, vals [][]any, i int, q *selectQuery) error {
	if a.name == "APPROX_QUANTILES" {
		if v == nil && !a.respectNulls {
			return nil
		}
		s.vals = append(s.vals, aggVal{x: v})
		return nil
	}
	k := string(appendKey(nil, v))
	j, ok := s.tops[k]
	if !ok {
		if s.tops == nil {
			s.tops = map[string]int{}
		}
		j = len(s.vals)
		s.tops[k] = j
		s.vals = append(s.vals, aggVal{x: v})
	}
	e := &s.vals[j]
	if a.name == "APPROX_TOP_COUNT" {
		n, _ := e.w.(int64)
		e.w = n + 1
		return nil
	}
	w := vals[1][i]
	if w == nil {
		return nil
	}
	if e.w == nil {
		if r, ok := w.(*big.Rat); ok {
			w = new(big.Rat).Set(r)
		}
		e.w = w
		return nil
	}
	switch x := w.(type) {
	case int64:
		sum := e.w.(int64) + x
		if (sum > e.w.(int64)) != (x > 0) {
			return q.errf(a.pos, "Int64 overflow: %d + %d", e.w.(int64), x)
		}
		e.w = sum
	case float64:
		e.w = e.w.(float64) + x
	case *big.Rat:
		r := e.w.(*big.Rat)
		r.Add(r, x)
	}
	return nil
}

// approxResult is the aggregate's value for the group (NULL for no rows).
func (a *agg) approxResult(s *acc) any {
	if len(s.vals) == 0 {
		return nil
	}
	if a.name == "APPROX_QUANTILES" {
		sorted := make([]any, len(s.vals))
		for i, v := range s.vals {
			sorted[i] = v.x
		}
		sort.SliceStable(sorted, func(i, j int) bool {
			x, y := sorted[i], sorted[j]
			switch {
			case x == nil:
				return y != nil
			case y == nil:
				return false
			}
			return compareValues(x, y) < 0
		})
		n := int64(len(sorted))
		out := make([]any, a.buckets+1)
		for k := range out {
			r := (int64(k)*n+a.buckets-1)/a.buckets - 1 // ceil(k*N/n) - 1
			out[k] = sorted[min(max(r, 0), n-1)]
		}
		return out
	}
	entries := append([]aggVal(nil), s.vals...)
	sort.SliceStable(entries, func(i, j int) bool {
		x, y := entries[i].w, entries[j].w
		switch {
		case x == nil:
			return false
		case y == nil:
			return true
		}
		return compareValues(x, y) > 0
	})
	if int64(len(entries)) > a.buckets {
		entries = entries[:a.buckets]
	}
	out := make([]any, len(entries))
	for i, e := range entries {
		out[i] = filter.Struct{e.x, e.w}
	}
	return out
}
