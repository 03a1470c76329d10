package sql

import (
	"context"
	"errors"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
)

// The simple aggregate's fast path: SELECT of COUNT(*), COUNT(col),
// SUM(col), MIN(col) and MAX(col) over plain INT64 columns (SUM also
// FLOAT64), without GROUP BY, HAVING, ORDER BY or analytic functions,
// reads the Arrow columns directly instead of boxing every value
// (filter.Scalar.Values) and going through the generic accumulators. It
// computes what the generic path does, in the same order (a FLOAT64 sum
// adds the values in row order from 0): runAggregate's answer for these
// queries. An INT64 SUM overflow, or a column that is not what the schema
// said, gives up: the generic path runs the query again and reports it.

// errFastAgg abandons the fast path.
var errFastAgg = errors.New("sql: fast aggregate path abandoned")

type fastAgg struct {
	fn   string // COUNT, SUM, MIN, MAX
	col  int    // index among the scanned columns; -1: COUNT(*)
	isF  bool   // the column is FLOAT64
	n    int64  // non-NULL values seen
	sumI int64
	sumF float64
	ext  int64 // MIN/MAX so far (valid when n > 0)
}

// fastAggregate runs the query by the fast path when it is of that
// shape; ok is false when it is not (or gave up), with nothing read or
// billed.
func (q *selectQuery) fastAggregate(ctx context.Context, items []Item, where *filter.Scalar) (out *output, ok bool, err error) {
	sel := q.sel
	if len(sel.GroupBy) > 0 || sel.Having != nil || sel.Qualify != nil || sel.Distinct || len(q.order) > 0 || len(q.windows) > 0 || len(items) == 0 {
		return nil, false, nil
	}
	var aggs []*fastAgg
	var cols []string
	colIdx := map[string]int{}
	for _, it := range items {
		toks := it.Expr.toks
		if it.Star || len(toks) != 4 || !toks[0].Ident || toks[1].Text != "(" || toks[3].Text != ")" {
			return nil, false, nil
		}
		a := &fastAgg{fn: strings.ToUpper(toks[0].Text), col: -1}
		switch {
		case a.fn == "COUNT" && toks[2].Op && toks[2].Text == "*":
		case (a.fn == "COUNT" || a.fn == "SUM" || a.fn == "MIN" || a.fn == "MAX") && (toks[2].Ident || toks[2].QIdent):
			i, used, err := q.in.resolve(q.src, []string{toks[2].Value}, toks[2].Pos)
			if err != nil || used != 1 {
				return nil, false, nil // the generic path reports it
			}
			switch q.in.field(i).Type {
			case schema.Integer, "INT64":
			case schema.Float, "FLOAT64":
				if a.fn != "COUNT" && a.fn != "SUM" {
					return nil, false, nil
				}
				a.isF = true
			default:
				if a.fn != "COUNT" {
					return nil, false, nil
				}
			}
			name := q.in.cols[i].internal
			k, seen := colIdx[strings.ToLower(name)]
			if !seen {
				k = len(cols)
				colIdx[strings.ToLower(name)] = k
				cols = append(cols, name)
			}
			a.col = k
		default:
			return nil, false, nil
		}
		aggs = append(aggs, a)
	}
	// What the generic path would read (the WHERE's columns too), so that
	// the bill is the same.
	need := referenced([]*filter.Scalar{where})
	for _, c := range need {
		if _, seen := colIdx[strings.ToLower(c)]; !seen {
			colIdx[strings.ToLower(c)] = len(cols)
			cols = append(cols, c)
		}
	}
	bytes, pruned := q.bytes, q.pruned
	err = q.in.scanWhere(ctx, where, cols, func(rec arrow.RecordBatch, n int) error {
		keep, err := selection(ctx, where, rec, n)
		if err != nil {
			return err
		}
		return fastAdd(aggs, rec, keep)
	})
	if errors.Is(err, errFastAgg) {
		q.bytes, q.pruned = bytes, pruned
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	out = &output{}
	row := make([]any, len(aggs))
	for i, a := range aggs {
		switch {
		case a.fn == "COUNT":
			row[i] = a.n
			out.types = append(out.types, "INT64")
		case a.isF:
			if a.n > 0 {
				row[i] = a.sumF
			}
			out.types = append(out.types, "FLOAT64")
		case a.fn == "SUM":
			if a.n > 0 {
				row[i] = a.sumI
			}
			out.types = append(out.types, "INT64")
		default:
			if a.n > 0 {
				row[i] = a.ext
			}
			out.types = append(out.types, "INT64")
		}
	}
	if err := q.chargeRow(row, "rows of the SELECT"); err != nil {
		return nil, true, err
	}
	out.rows = [][]any{row}
	return out, true, nil
}

// fastAdd adds the kept rows of one batch to the accumulators.
func fastAdd(aggs []*fastAgg, rec arrow.RecordBatch, keep []bool) error {
	for _, a := range aggs {
		if a.col < 0 {
			for _, k := range keep {
				if k {
					a.n++
				}
			}
			continue
		}
		arr := rec.Column(a.col)
		if a.fn == "COUNT" {
			for i, k := range keep {
				if k && arr.IsValid(i) {
					a.n++
				}
			}
			continue
		}
		nulls := arr.NullN() > 0
		if a.isF {
			f, ok := arr.(*array.Float64)
			if !ok {
				return errFastAgg
			}
			vals := f.Float64Values()
			for i, k := range keep {
				if k && (!nulls || f.IsValid(i)) {
					a.sumF += vals[i]
					a.n++
				}
			}
			continue
		}
		ia, ok := arr.(*array.Int64)
		if !ok {
			return errFastAgg
		}
		vals := ia.Int64Values()
		for i, k := range keep {
			if !k || nulls && !ia.IsValid(i) {
				continue
			}
			x := vals[i]
			switch a.fn {
			case "SUM":
				sum := a.sumI + x
				if (sum > a.sumI) != (x > 0) {
					return errFastAgg // the generic path reports the overflow
				}
				a.sumI = sum
			case "MIN":
				if a.n == 0 || x < a.ext {
					a.ext = x
				}
			case "MAX":
				if a.n == 0 || x > a.ext {
					a.ext = x
				}
			}
			a.n++
		}
	}
	return nil
}
