package sql

import (
	"context"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/bqstore/bqstore/internal/filter"
)

// PERCENTILE_CONT(x, p [{RESPECT|IGNORE} NULLS]) and PERCENTILE_DISC:
// analytic only, OVER ([PARTITION BY ...]) with no ORDER BY and no
// frame; one value per partition. The rules follow GoogleSQL's
// navigation functions and ZetaSQL's percentile evaluator: the n values
// (NULLs only with RESPECT NULLS, sorted first; NaN sorts before the
// other numbers) are read at position p * (n - 1) for CONT, linearly
// interpolated between its neighbours (between two NULLs the result is
// NULL, between a NULL and a value the value); DISC takes the value at
// ceil(p * n) - 1 (0 at least). No non-NULL value: NULL.

// checkPercentile checks the arguments of a PERCENTILE_CONT/DISC call
// (the value, then the percentile) and sets the window's result type and
// percentile. args are the arguments' tokens.
func (q *selectQuery) checkPercentile(w *window, args [][]filter.Token, pos int) error {
	var types []string
	for _, x := range w.args {
		types = append(types, x.Type())
	}
	sig := func() error {
		s := "PERCENTILE_DISC(ANY, FLOAT64); PERCENTILE_DISC(ANY, NUMERIC); PERCENTILE_DISC(ANY, BIGNUMERIC)"
		if w.name == "PERCENTILE_CONT" {
			s = "PERCENTILE_CONT(FLOAT64, FLOAT64); PERCENTILE_CONT(NUMERIC, NUMERIC); PERCENTILE_CONT(BIGNUMERIC, BIGNUMERIC)"
		}
		return q.errf(pos, "No matching signature for analytic function %s for argument types: %s. Supported signatures: %s", w.name, strings.Join(types, ", "), s)
	}
	if len(w.args) != 2 {
		return sig()
	}
	pt := types[1]
	switch pt {
	case "FLOAT64", "NUMERIC", "BIGNUMERIC", "INT64", "NULL":
	default:
		return sig()
	}
	param := false
	for _, t := range args[1] {
		param = param || t.Param
	}
	vt := types[0]
	if w.name == "PERCENTILE_DISC" {
		switch typeKind(vt) {
		case "GEOGRAPHY", "JSON", "ARRAY", "STRUCT":
			return q.errf(args[0][0].Pos, "Argument 1 to PERCENTILE_DISC must support ordering; Type %s does not", vt)
		case "NULL":
			w.typ = "INT64"
		default:
			w.typ = vt
		}
	} else {
		// The signature: FLOAT64 for INT64 or FLOAT64 values or a FLOAT64
		// parameter; else the decimal type of the value and percentile
		// (a FLOAT64 literal coerces to the value's).
		switch {
		case vt != "NUMERIC" && vt != "BIGNUMERIC" && vt != "INT64" && vt != "FLOAT64" && vt != "NULL":
			return sig()
		case vt == "NUMERIC" || vt == "BIGNUMERIC":
			w.typ = vt
			if pt == "BIGNUMERIC" {
				w.typ = pt
			}
			if pt == "FLOAT64" && param {
				w.typ = "FLOAT64"
			}
		default:
			w.typ = "FLOAT64"
		}
	}
	// The percentile: a literal or a query parameter (ZetaSQL's argument
	// options: non-NULL, not an aggregate, between 0 and 1).
	ppos := args[1][0].Pos
	prefix := "Argument 2 to " + w.name
	p := w.args[1]
	if len(p.Columns()) > 0 {
		return q.errf(ppos, "%s must be a literal or query parameter", prefix)
	}
	v, err := p.Values(context.Background(), nil, 1)
	if err != nil {
		return err
	}
	if v[0] == nil {
		return q.errf(ppos, "%s must be non-NULL", prefix)
	}
	var r *big.Rat
	switch x := v[0].(type) {
	case float64:
		switch {
		case math.IsNaN(x) || math.IsInf(x, 0):
		case w.name == "PERCENTILE_CONT" && (w.typ == "NUMERIC" || w.typ == "BIGNUMERIC"):
			// A FLOAT64 literal coerces to the decimal type as
			// written: 0.3 is 0.3, not the binary float's value.
			r, _ = new(big.Rat).SetString(strconv.FormatFloat(x, 'g', -1, 64))
		default:
			r = new(big.Rat).SetFloat64(x)
		}
	case int64:
		r = new(big.Rat).SetInt64(x)
	case *big.Rat:
		r = x
		if w.name == "PERCENTILE_CONT" && w.typ == "FLOAT64" {
			f, _ := x.Float64() // the FLOAT64 signature
			r = new(big.Rat).SetFloat64(f)
		}
	}
	if r == nil || r.Sign() < 0 || r.Cmp(big.NewRat(1, 1)) > 0 {
		if param {
			return q.errf(ppos, "Percentile argument must be in [0, 1]; got %s", pctText(v[0]))
		}
		return q.errf(ppos, "%s must be between 0 and 1", prefix)
	}
	w.pct = r
	return nil
}

// percentile computes the window's PERCENTILE_CONT or PERCENTILE_DISC
// over the values of a partition's rows.
func (w *window) percentile(vals []any, rows []int) any {
	var nonNull []any
	nulls := 0
	for _, r := range rows {
		v := vals[r]
		switch {
		case v != nil:
			nonNull = append(nonNull, v)
		case w.respectNulls:
			nulls++
		}
	}
	if len(nonNull) == 0 {
		return nil
	}
	sort.SliceStable(nonNull, func(i, j int) bool { return compareValues(nonNull[i], nonNull[j]) < 0 })
	n := int64(len(nonNull) + nulls)
	if w.name == "PERCENTILE_DISC" {
		idx, frac := splitPos(w.pct, n)
		if idx > 0 && frac.Sign() == 0 {
			idx--
		}
		if idx < int64(nulls) {
			return nil
		}
		return nonNull[idx-int64(nulls)]
	}
	idx, frac := splitPos(w.pct, n-1)
	switch {
	case idx >= int64(nulls):
		i := idx - int64(nulls)
		if frac.Sign() == 0 {
			return w.percentileValue(nonNull[i])
		}
		return w.interpolate(nonNull[i], nonNull[i+1], frac)
	case idx == int64(nulls)-1 && frac.Sign() != 0:
		// Between the last NULL and the least value: the value.
		return w.percentileValue(nonNull[0])
	}
	return nil
}

// splitPos returns the integer and fractional parts of p * m, exactly.
func splitPos(p *big.Rat, m int64) (int64, *big.Rat) {
	x := new(big.Rat).Mul(p, new(big.Rat).SetInt64(m))
	i := new(big.Int).Quo(x.Num(), x.Denom()) // x >= 0: truncation is floor
	frac := new(big.Rat).Sub(x, new(big.Rat).SetInt(i))
	return i.Int64(), frac
}

// percentileValue is v as the result type (INT64 values of
// PERCENTILE_CONT are FLOAT64, and NUMERIC ones with a FLOAT64
// parameter).
func (w *window) percentileValue(v any) any {
	if w.typ == "FLOAT64" {
		return toFloat(v)
	}
	return v
}

// interpolate returns a * (1 - frac) + b * frac: exact, then rounded to
// the result type (FLOAT64 to nearest; NUMERIC and BIGNUMERIC half away
// from zero at their scale), as ZetaSQL weighs the two neighbours.
func (w *window) interpolate(a, b any, frac *big.Rat) any {
	left := new(big.Rat).Sub(big.NewRat(1, 1), frac)
	if w.typ == "FLOAT64" {
		x, y := toFloat(a), toFloat(b)
		if math.IsNaN(x) || math.IsNaN(y) || math.IsInf(x, 0) || math.IsInf(y, 0) {
			lf, _ := left.Float64()
			rf, _ := frac.Float64()
			return x*lf + y*rf
		}
		r := new(big.Rat).Mul(new(big.Rat).SetFloat64(x), left)
		r.Add(r, new(big.Rat).Mul(new(big.Rat).SetFloat64(y), frac))
		f, _ := r.Float64()
		return f
	}
	r := new(big.Rat).Mul(a.(*big.Rat), left)
	r.Add(r, new(big.Rat).Mul(b.(*big.Rat), frac))
	scale := int32(9)
	if w.typ == "BIGNUMERIC" {
		scale = 38
	}
	return new(big.Rat).SetFrac(scaled(r, scale), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil))
}

// pctText is a percentile as an error message shows it.
func pctText(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case int64:
		return strconv.FormatInt(x, 10)
	case *big.Rat:
		t := x.FloatString(38)
		if strings.Contains(t, ".") {
			t = strings.TrimRight(strings.TrimRight(t, "0"), ".")
		}
		return t
	}
	return ""
}

// orderRefused are the analytic functions whose window may not have an
// ORDER BY (ZetaSQL registers them ORDER_UNSUPPORTED).
var orderRefused = map[string]bool{"PERCENTILE_CONT": true, "PERCENTILE_DISC": true}

// nullsAllowed are the analytic functions that take IGNORE NULLS or
// RESPECT NULLS.
var nullsAllowed = map[string]bool{"PERCENTILE_CONT": true, "PERCENTILE_DISC": true,
	"FIRST_VALUE": true, "LAST_VALUE": true, "NTH_VALUE": true}

// nullHandling reads the clause after an analytic call's arguments:
// IGNORE NULLS or RESPECT NULLS, where the function takes it.
func (q *selectQuery) nullHandling(w *window, rest []filter.Token) error {
	kw := func(i int, word string) bool {
		return i < len(rest) && rest[i].Ident && strings.EqualFold(rest[i].Text, word)
	}
	if len(rest) != 2 || !(kw(0, "IGNORE") || kw(0, "RESPECT")) || !kw(1, "NULLS") || !nullsAllowed[w.name] {
		return notSupported(q.src, rest[0].Pos, "this form of "+w.name)
	}
	w.ignoreNulls, w.respectNulls = kw(0, "IGNORE"), kw(0, "RESPECT")
	return nil
}
