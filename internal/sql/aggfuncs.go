package sql

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/hll"
)

// aggFuncs are the aggregate functions served; knownAggs the other
// aggregate (and analytic) functions of GoogleSQL, answered "not
// supported yet" rather than "Function not found".
var (
	aggFuncs = map[string]bool{"COUNT": true, "COUNTIF": true, "SUM": true, "AVG": true, "MIN": true, "MAX": true,
		"ANY_VALUE": true, "LOGICAL_AND": true, "LOGICAL_OR": true, "BIT_AND": true, "BIT_OR": true, "BIT_XOR": true,
		"STDDEV": true, "STDDEV_POP": true, "STDDEV_SAMP": true, "VARIANCE": true, "VAR_POP": true, "VAR_SAMP": true,
		"CORR": true, "COVAR_POP": true, "COVAR_SAMP": true, "STRING_AGG": true, "APPROX_COUNT_DISTINCT": true,
		"ARRAY_AGG": true, "ARRAY_CONCAT_AGG": true, "APPROX_QUANTILES": true, "APPROX_TOP_COUNT": true, "APPROX_TOP_SUM": true,
		"MAX_BY": true, "MIN_BY": true, "HLL_COUNT.INIT": true, "HLL_COUNT.MERGE": true, "HLL_COUNT.MERGE_PARTIAL": true}
	knownAggs = map[string]bool{
		"GROUPING": true, "ROW_NUMBER": true, "RANK": true, "DENSE_RANK": true, "PERCENT_RANK": true,
		"CUME_DIST": true, "NTILE": true, "LAG": true, "LEAD": true, "FIRST_VALUE": true, "LAST_VALUE": true,
		"NTH_VALUE": true}
)

// agg is one aggregate call of the query.
type agg struct {
	name     string // upper case
	pos      int
	star     bool // COUNT(*)
	distinct bool
	args     []*filter.Scalar
	argType  string // of the first argument
	typ      string // result type
	key      string // the call's normalised text: equal calls share a column
	// STRING_AGG, ARRAY_AGG, ARRAY_CONCAT_AGG: the delimiter, ORDER BY
	// keys (evaluated with the arguments) and LIMIT (-1 none).
	delim string
	order []*filter.Scalar
	desc  []bool
	limit int64
	// orderText: the ORDER BY keys' normalised text (DISTINCT may only
	// order by the argument).
	orderText []string
	orderPos  []int
	// ARRAY_AGG: IGNORE NULLS; APPROX_QUANTILES: RESPECT NULLS.
	ignoreNulls, respectNulls bool
	// ANY_VALUE(x HAVING MAX|MIN y): "MAX" or "MIN", y being the last
	// of args.
	having    string
	havingPos int
	havingBy  *filter.Scalar
	// APPROX_QUANTILES, APPROX_TOP_COUNT/SUM: the number argument.
	buckets int64
}

// acc accumulates one aggregate of one group.
type acc struct {
	count int64
	sumF  float64
	sumR  *big.Rat
	// SUM(INT64), AVG(INT64): the exact sum (intAvg set once AVG adds an
	// INT64).
	sumW   int128
	intAvg bool
	ext    any // MIN/MAX/ANY_VALUE; MAX_BY/MIN_BY: the x
	by     any // MAX_BY/MIN_BY: the extreme y
	nan    bool
	seen   map[string]bool
	b      bool // LOGICAL_AND/OR
	bits   int64
	// Welford's running means and co-moments (variance, covariance).
	mx, my, m2x, m2y, cxy float64
	vals                  []aggVal // STRING_AGG, ARRAY_AGG, ARRAY_CONCAT_AGG
	// APPROX_COUNT_DISTINCT's HyperLogLog++ sketch and the bytes it has
	// grown to (what the memory budget is charged).
	sketch      *hll.Sketch
	sketchType  byte // HLL_COUNT: the type code of the values counted
	sketchBytes int64
	tops        map[string]int // APPROX_TOP_COUNT/SUM: value key -> index in vals

	// SUM, AVG of INTERVAL: the months and days summed (the time part
	// in sumW).
	ivMonths, ivDays int64

	// HAVING MAX|MIN y (but in ANY_VALUE): the extreme y so far, whose
	// rows the state holds.
	hy any
}

type aggVal struct {
	v    string // STRING_AGG
	x    any    // ARRAY_AGG: the element; ARRAY_CONCAT_AGG: the array
	w    any    // APPROX_TOP_COUNT: the count; APPROX_TOP_SUM: the weights' sum
	keys []any
}

// newAgg checks one aggregate call.
func (q *selectQuery) newAgg(call Span, clause string) (*agg, error) {
	toks := call.toks
	a := &agg{name: strings.ToUpper(toks[0].Text), pos: toks[0].Pos, key: call.key(), limit: -1, delim: ","}
	inner := toks[2 : len(toks)-1]
	if len(inner) == 0 {
		return nil, q.errf(toks[len(toks)-1].Pos, "No matching signature for aggregate function %s with no arguments", a.name)
	}
	if inner[0].Ident && strings.EqualFold(inner[0].Text, "DISTINCT") {
		switch a.name {
		case "ANY_VALUE", "CORR", "COVAR_POP", "COVAR_SAMP", "APPROX_COUNT_DISTINCT", "MAX_BY", "MIN_BY",
			"HLL_COUNT.MERGE", "HLL_COUNT.MERGE_PARTIAL":
			return nil, q.errf(inner[0].Pos, "Aggregate function %s does not support DISTINCT", a.name)
		}
		a.distinct = true
		inner = inner[1:]
		if len(inner) == 0 {
			return nil, q.errf(toks[len(toks)-1].Pos, "Syntax error: Unexpected \")\"")
		}
	}
	if len(inner) == 1 && inner[0].Op && inner[0].Text == "*" {
		if a.name != "COUNT" || a.distinct {
			return nil, q.errf(inner[0].Pos, "Syntax error: Unexpected \"*\"")
		}
		a.star, a.typ = true, "INT64"
		return a, nil
	}
	if at, ok := findAgg(inner); ok && q.winCompile == nil {
		return nil, q.errf(at, "Aggregations of aggregations are not allowed")
	}
	for i, t := range toks {
		if t.Ident && strings.EqualFold(t.Text, "OVER") && i > 0 {
			return nil, notSupported(q.src, t.Pos, "analytic functions (OVER)")
		}
	}
	// Arguments up to the first clause (ORDER BY, LIMIT, ...) at depth 0.
	args, rest := splitArgs(inner)
	if len(rest) > 0 {
		if err := q.aggClauses(a, rest); err != nil {
			return nil, err
		}
	}
	for _, sp := range args {
		if len(sp) == 0 {
			return nil, q.errf(toks[len(toks)-1].Pos, "Syntax error: Unexpected \")\"")
		}
		x, err := q.compileArg(Span{toks: sp})
		if err != nil {
			return nil, err
		}
		a.args = append(a.args, x)
	}
	var types []string
	for _, x := range a.args {
		types = append(types, x.Type())
	}
	a.argType = types[0]
	switch typeKind(a.argType) {
	case "JSON", "GEOGRAPHY", "ARRAY", "STRUCT":
		if a.distinct {
			// BigQuery's data types reference, "Groupable data types":
			// JSON and GEOGRAPHY do not group; an ARRAY or a STRUCT
			// groups only in GROUP BY and SELECT DISTINCT.
			return nil, q.errf(args[0][0].Pos, "Aggregate functions with DISTINCT cannot be used with arguments of type %s", a.argType)
		}
	}
	sig := func(supported string) error {
		return q.errf(a.pos, "No matching signature for aggregate function %s for argument types: %s. Supported signatures: %s", a.name, strings.Join(types, ", "), supported)
	}
	nargs := func(n int, supported string) error {
		if len(a.args) != n {
			return sig(supported)
		}
		return nil
	}
	numeric := func(t string) bool {
		return t == "INT64" || t == "FLOAT64" || t == "NUMERIC" || t == "BIGNUMERIC" || t == "NULL"
	}
	switch a.name {
	case "COUNT", "APPROX_COUNT_DISTINCT":
		if err := nargs(1, a.name+"(ANY)"); err != nil {
			return nil, err
		}
		a.typ = "INT64"
	case "COUNTIF":
		if len(a.args) != 1 || a.argType != "BOOL" && a.argType != "NULL" {
			return nil, sig("COUNTIF(BOOL)")
		}
		a.typ = "INT64"
	case "SUM":
		const s = "SUM(INT64); SUM(NUMERIC); SUM(BIGNUMERIC); SUM(FLOAT64); SUM(INTERVAL)"
		if err := nargs(1, s); err != nil {
			return nil, err
		}
		switch a.argType {
		case "INT64", "NULL":
			a.typ = "INT64"
		case "FLOAT64", "NUMERIC", "BIGNUMERIC", "INTERVAL":
			a.typ = a.argType
		default:
			return nil, sig(s)
		}
	case "AVG":
		const s = "AVG(INT64); AVG(NUMERIC); AVG(BIGNUMERIC); AVG(FLOAT64); AVG(INTERVAL)"
		if err := nargs(1, s); err != nil {
			return nil, err
		}
		switch a.argType {
		case "INT64", "FLOAT64", "NULL":
			a.typ = "FLOAT64"
		case "NUMERIC", "BIGNUMERIC", "INTERVAL":
			a.typ = a.argType
		default:
			return nil, sig(s)
		}
	case "MIN", "MAX", "ANY_VALUE":
		if err := nargs(1, a.name+"(ANY)"); err != nil {
			return nil, err
		}
		switch typeKind(a.argType) {
		case "GEOGRAPHY", "JSON", "ARRAY", "STRUCT": // not orderable
			if a.name != "ANY_VALUE" {
				return nil, sig(a.name + "(ANY)")
			}
			a.typ = a.argType
		case "NULL":
			a.typ = "INT64"
		default:
			a.typ = a.argType
		}
	case "LOGICAL_AND", "LOGICAL_OR":
		if len(a.args) != 1 || a.argType != "BOOL" && a.argType != "NULL" {
			return nil, sig(a.name + "(BOOL)")
		}
		a.typ = "BOOL"
	case "BIT_AND", "BIT_OR", "BIT_XOR":
		if len(a.args) != 1 || a.argType != "INT64" && a.argType != "NULL" {
			return nil, sig(a.name + "(INT64)")
		}
		a.typ = "INT64"
	case "STDDEV", "STDDEV_POP", "STDDEV_SAMP", "VARIANCE", "VAR_POP", "VAR_SAMP":
		if len(a.args) != 1 || !numeric(a.argType) {
			return nil, sig(a.name + "(FLOAT64)")
		}
		a.typ = "FLOAT64"
	case "CORR", "COVAR_POP", "COVAR_SAMP":
		if len(a.args) != 2 || !numeric(types[0]) || !numeric(types[1]) {
			return nil, sig(a.name + "(FLOAT64, FLOAT64)")
		}
		a.typ = "FLOAT64"
	case "STRING_AGG":
		const s = "STRING_AGG(STRING); STRING_AGG(STRING, STRING); STRING_AGG(BYTES); STRING_AGG(BYTES, BYTES)"
		if len(a.args) > 2 {
			return nil, sig(s)
		}
		switch a.argType {
		case "STRING", "BYTES":
			a.typ = a.argType
		case "NULL":
			a.typ = "STRING"
		default:
			return nil, sig(s)
		}
		if len(a.args) == 2 {
			d := a.args[1]
			if len(d.Columns()) > 0 || d.Type() != a.typ && d.Type() != "NULL" {
				if len(d.Columns()) > 0 {
					return nil, notSupported(q.src, args[1][0].Pos, "a STRING_AGG delimiter that is not a constant")
				}
				return nil, sig(s)
			}
			v, err := d.Values(context.Background(), nil, 1)
			if err != nil {
				return nil, err
			}
			ds, _ := v[0].(string)
			a.delim = ds
			a.args = a.args[:1]
		}
	case "ARRAY_AGG":
		if err := nargs(1, "ARRAY_AGG(ANY)"); err != nil {
			return nil, err
		}
		switch typeKind(a.argType) {
		case "ARRAY":
			return nil, q.errf(a.pos, "Cannot construct array with element type %s because nested arrays are not supported", a.argType)
		case "NULL":
			a.typ = "ARRAY<INT64>"
		default:
			a.typ = "ARRAY<" + a.argType + ">"
		}
	case "APPROX_QUANTILES", "APPROX_TOP_COUNT", "APPROX_TOP_SUM":
		if err := q.checkApprox(a, types, sig); err != nil {
			return nil, err
		}
	case "MAX_BY", "MIN_BY":
		if err := q.checkBy(a, types, sig); err != nil {
			return nil, err
		}
	case "HLL_COUNT.INIT", "HLL_COUNT.MERGE", "HLL_COUNT.MERGE_PARTIAL":
		if err := q.checkHLL(a, types, sig); err != nil {
			return nil, err
		}
	case "ARRAY_CONCAT_AGG":
		if len(a.args) != 1 || typeKind(a.argType) != "ARRAY" && a.argType != "NULL" {
			return nil, sig("ARRAY_CONCAT_AGG(ARRAY)")
		}
		a.typ = a.argType
		if a.typ == "NULL" {
			a.typ = "ARRAY<INT64>"
		}
	}
	if a.ignoreNulls && a.name != "ARRAY_AGG" && a.name != "APPROX_QUANTILES" || a.respectNulls && a.name != "ARRAY_AGG" && a.name != "APPROX_QUANTILES" {
		return nil, notSupported(q.src, rest[0].Pos, "IGNORE NULLS in "+a.name)
	}
	if (len(a.order) > 0 || a.limit >= 0) && a.name != "STRING_AGG" && a.name != "ARRAY_AGG" && a.name != "ARRAY_CONCAT_AGG" {
		return nil, notSupported(q.src, rest[0].Pos, "ORDER BY or LIMIT in "+a.name)
	}
	if a.distinct && len(a.order) > 0 {
		// ZetaSQL: each ORDER BY key must be one of the arguments; the
		// distinct values are then ordered by themselves.
		for k, t := range a.orderText {
			if t != (Span{toks: args[0]}).key() {
				return nil, q.errf(a.orderPos[k], "An aggregate function that has both DISTINCT and ORDER BY arguments can only ORDER BY expressions that are arguments to the function")
			}
		}
	}
	if a.having != "" {
		switch {
		case !havingAggs[a.name]:
			return nil, notSupported(q.src, a.havingPos, "HAVING "+a.having+" in "+a.name)
		case a.distinct:
			return nil, notSupported(q.src, a.havingPos, "HAVING "+a.having+" with DISTINCT in "+a.name)
		}
		if err := q.checkHaving(a); err != nil {
			return nil, err
		}
	}
	_ = clause
	return a, nil
}

// splitArgs splits the inside of a call into its arguments and the
// clauses after them (ORDER BY, LIMIT, IGNORE/RESPECT NULLS, HAVING).
func splitArgs(inner []filter.Token) ([][]filter.Token, []filter.Token) {
	var args [][]filter.Token
	depth, start := 0, 0
	for i, t := range inner {
		switch {
		case t.Op && (t.Text == "(" || t.Text == "["):
			depth++
		case t.Op && (t.Text == ")" || t.Text == "]"):
			depth--
		case t.Ident && strings.EqualFold(t.Text, "CASE"):
			depth++
		case t.Ident && strings.EqualFold(t.Text, "END"):
			depth--
		case depth == 0 && t.Op && t.Text == ",":
			args = append(args, inner[start:i])
			start = i + 1
		case depth == 0 && t.Ident && (strings.EqualFold(t.Text, "ORDER") || strings.EqualFold(t.Text, "LIMIT") ||
			strings.EqualFold(t.Text, "IGNORE") || strings.EqualFold(t.Text, "RESPECT") || strings.EqualFold(t.Text, "HAVING")):
			return append(args, inner[start:i]), inner[i:]
		}
	}
	return append(args, inner[start:]), nil
}

// aggClauses reads ORDER BY and LIMIT inside an aggregate call.
func (q *selectQuery) aggClauses(a *agg, rest []filter.Token) error {
	i := 0
	kw := func(w string) bool { return i < len(rest) && rest[i].Ident && strings.EqualFold(rest[i].Text, w) }
	if kw("IGNORE") || kw("RESPECT") {
		ignore := kw("IGNORE")
		i++
		if !kw("NULLS") {
			if i < len(rest) {
				return q.errf(rest[i].Pos, "Syntax error: Expected keyword NULLS")
			}
			return q.errf(rest[i-1].End, "Syntax error: Expected keyword NULLS")
		}
		i++
		a.ignoreNulls, a.respectNulls = ignore, !ignore
	}
	if kw("HAVING") {
		a.havingPos = rest[i].Pos
		i++
		if !kw("MAX") && !kw("MIN") {
			if i < len(rest) {
				return q.errf(rest[i].Pos, "Syntax error: Expected keyword MAX or keyword MIN but got %s", describe(rest[i]))
			}
			return q.errf(rest[i-1].End, "Syntax error: Expected keyword MAX or keyword MIN but got \")\"")
		}
		a.having = strings.ToUpper(rest[i].Text)
		i++
		start, depth := i, 0
		for ; i < len(rest); i++ {
			t := rest[i]
			if t.Op && (t.Text == "(" || t.Text == "[") {
				depth++
			} else if t.Op && (t.Text == ")" || t.Text == "]") {
				depth--
			} else if depth == 0 && t.Ident && (strings.EqualFold(t.Text, "ORDER") || strings.EqualFold(t.Text, "LIMIT")) {
				break
			}
		}
		if i == start {
			return q.errf(rest[i-1].End, "Syntax error: Unexpected \")\"")
		}
		x, err := q.compileArg(Span{toks: rest[start:i]})
		if err != nil {
			return err
		}
		a.havingBy = x
	}
	if kw("ORDER") {
		i++
		if !kw("BY") {
			if i < len(rest) {
				return q.errf(rest[i].Pos, "Syntax error: Expected keyword BY")
			}
			return q.errf(rest[i-1].End, "Syntax error: Expected keyword BY")
		}
		i++
		for {
			start, depth := i, 0
			for i < len(rest) {
				t := rest[i]
				if t.Op && (t.Text == "(" || t.Text == "[") {
					depth++
				} else if t.Op && (t.Text == ")" || t.Text == "]") {
					depth--
				} else if depth == 0 && (t.Op && t.Text == "," || t.Ident && (strings.EqualFold(t.Text, "LIMIT") ||
					strings.EqualFold(t.Text, "ASC") || strings.EqualFold(t.Text, "DESC"))) {
					break
				}
				i++
			}
			if i == start {
				if i < len(rest) {
					return q.errf(rest[i].Pos, "Syntax error: Unexpected %s", describe(rest[i]))
				}
				return q.errf(rest[i-1].End, "Syntax error: Unexpected \")\"")
			}
			x, err := q.compileArg(Span{toks: rest[start:i]})
			if err != nil {
				return err
			}
			a.orderText = append(a.orderText, (Span{toks: rest[start:i]}).key())
			a.orderPos = append(a.orderPos, rest[start].Pos)
			desc := false
			if kw("DESC") {
				desc = true
				i++
			} else if kw("ASC") {
				i++
			}
			a.order, a.desc = append(a.order, x), append(a.desc, desc)
			if i < len(rest) && rest[i].Op && rest[i].Text == "," {
				i++
				continue
			}
			break
		}
	}
	if kw("LIMIT") {
		i++
		if i >= len(rest) {
			return q.errf(rest[i-1].End, "Syntax error: Unexpected \")\"")
		}
		n, err := strconv.ParseInt(rest[i].Text, 10, 64)
		if err != nil || n < 0 || rest[i].Ident || rest[i].Op {
			return q.errf(rest[i].Pos, "LIMIT expects a non-negative integer literal or parameter")
		}
		a.limit = n
		i++
	}
	if i < len(rest) {
		return notSupported(q.src, rest[i].Pos, "this form of "+a.name)
	}
	return nil
}

// add accumulates row i of the arguments' values (vals[k] for argument
// k, then the ORDER BY keys) into s.
func (a *agg) add(s *acc, vals [][]any, i int, q *selectQuery) error {
	if a.star {
		s.count++
		return nil
	}
	v := vals[0][i]
	if a.having != "" && a.name != "ANY_VALUE" && !a.atExtreme(s, vals[len(a.args)-1][i]) {
		return nil
	}
	if a.name == "ARRAY_AGG" && v == nil && !a.ignoreNulls {
		return a.addValue(s, v, vals, i)
	}
	if a.name == "MAX_BY" || a.name == "MIN_BY" || a.having != "" && a.name == "ANY_VALUE" {
		a.addBy(s, vals, i) // a NULL x is a value here
		return nil
	}
	if v == nil && (a.name == "APPROX_TOP_COUNT" || a.name == "APPROX_TOP_SUM" || a.name == "APPROX_QUANTILES" && a.respectNulls) {
		return a.addApprox(s, v, vals, i, q) // NULL is a value here
	}
	if v == nil {
		return nil
	}
	if a.distinct {
		if s.seen == nil {
			s.seen = map[string]bool{}
		}
		k := string(appendKey(nil, v))
		if s.seen[k] {
			return nil
		}
		s.seen[k] = true
	}
	switch a.name {
	case "COUNT":
		s.count++
	case "APPROX_COUNT_DISTINCT":
		if s.sketch == nil {
			s.sketch = &hll.Sketch{}
		}
		s.sketchBytes += s.sketch.Add(filter.Fingerprint64(appendKey(nil, v)))
	case "COUNTIF":
		if v == true {
			s.count++
		}
	case "SUM", "AVG":
		s.count++
		switch x := v.(type) {
		case int64:
			if a.name == "AVG" {
				s.sumW.add(x)
				s.intAvg = true
				return nil
			}
			s.sumW.add(x)
		case float64:
			s.sumF += x
		case filter.IntervalValue:
			s.ivMonths += int64(x.Months)
			s.ivDays += int64(x.Days)
			s.sumW.add(x.Micros)
		case *big.Rat:
			if s.sumR == nil {
				s.sumR = new(big.Rat)
			}
			s.sumR.Add(s.sumR, x)
			// A sum beyond the type's range is an error, as an INT64
			// one is (and the Arrow decimal would not hold it).
			if a.name == "SUM" && !filter.DecimalInRange(a.typ, s.sumR) {
				return q.errf(a.pos, "%s overflow in SUM", a.typ)
			}
		}
	case "MIN", "MAX":
		if f, ok := v.(float64); ok && math.IsNaN(f) {
			s.nan = true
		}
		if s.ext == nil {
			s.ext = v
			return nil
		}
		c := compareValues(v, s.ext)
		if a.name == "MIN" && c < 0 || a.name == "MAX" && c > 0 {
			s.ext = v
		}
	case "ANY_VALUE":
		if s.ext == nil {
			s.ext = v
		}
	case "LOGICAL_AND", "LOGICAL_OR":
		b := v.(bool)
		if s.count == 0 {
			s.b = b
		} else if a.name == "LOGICAL_AND" {
			s.b = s.b && b
		} else {
			s.b = s.b || b
		}
		s.count++
	case "BIT_AND", "BIT_OR", "BIT_XOR":
		x := v.(int64)
		switch {
		case s.count == 0:
			s.bits = x
		case a.name == "BIT_AND":
			s.bits &= x
		case a.name == "BIT_OR":
			s.bits |= x
		default:
			s.bits ^= x
		}
		s.count++
	case "STDDEV", "STDDEV_POP", "STDDEV_SAMP", "VARIANCE", "VAR_POP", "VAR_SAMP":
		x := toFloat(v)
		s.count++
		d := x - s.mx
		s.mx += d / float64(s.count)
		s.m2x += d * (x - s.mx)
	case "CORR", "COVAR_POP", "COVAR_SAMP":
		w := vals[1][i]
		if w == nil {
			return nil
		}
		x, y := toFloat(v), toFloat(w)
		s.count++
		n := float64(s.count)
		dx := x - s.mx
		s.mx += dx / n
		dy := y - s.my
		s.my += dy / n
		s.m2x += dx * (x - s.mx)
		s.m2y += dy * (y - s.my)
		s.cxy += dx * (y - s.my)
	case "ARRAY_AGG", "ARRAY_CONCAT_AGG":
		return a.addValue(s, v, vals, i)
	case "HLL_COUNT.INIT", "HLL_COUNT.MERGE", "HLL_COUNT.MERGE_PARTIAL":
		return a.addHLL(s, v, q)
	case "APPROX_QUANTILES", "APPROX_TOP_COUNT", "APPROX_TOP_SUM":
		return a.addApprox(s, v, vals, i, q)
	case "STRING_AGG":
		if a.limit >= 0 && len(a.order) == 0 && int64(len(s.vals)) >= a.limit {
			return nil
		}
		av := aggVal{v: v.(string)}
		for k := range a.order {
			av.keys = append(av.keys, vals[len(a.args)+k][i])
		}
		s.vals = append(s.vals, av)
	}
	return nil
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case float64:
		return x
	case *big.Rat:
		f, _ := x.Float64()
		return f
	}
	return math.NaN()
}

// result is the aggregate's value for the group.
func (a *agg) result(s *acc) any {
	n := float64(s.count)
	switch a.name {
	case "COUNT", "COUNTIF":
		return s.count
	case "APPROX_COUNT_DISTINCT":
		if s.sketch == nil {
			return int64(0)
		}
		return s.sketch.Estimate()
	case "SUM":
		if s.count == 0 {
			return nil
		}
		switch a.typ {
		case "INT64":
			return s.sumW.sumResult(a)
		case "FLOAT64":
			return s.sumF
		case "INTERVAL":
			return a.intervalResult(s, 1)
		}
		return s.sumR
	case "AVG":
		if s.count == 0 {
			return nil
		}
		if s.intAvg {
			return s.sumW.avg(s.count)
		}
		if a.typ == "INTERVAL" {
			return a.intervalResult(s, s.count)
		}
		if a.typ == "FLOAT64" {
			return s.sumF / float64(s.count)
		}
		return new(big.Rat).Quo(s.sumR, new(big.Rat).SetInt64(s.count))
	case "MIN", "MAX":
		if s.nan {
			return math.NaN()
		}
		return s.ext
	case "ANY_VALUE", "MAX_BY", "MIN_BY":
		return s.ext
	case "LOGICAL_AND", "LOGICAL_OR":
		if s.count == 0 {
			return nil
		}
		return s.b
	case "BIT_AND", "BIT_OR", "BIT_XOR":
		if s.count == 0 {
			return nil
		}
		return s.bits
	case "VAR_POP", "STDDEV_POP":
		if s.count == 0 {
			return nil
		}
		v := s.m2x / n
		if a.name == "STDDEV_POP" {
			return math.Sqrt(v)
		}
		return v
	case "VARIANCE", "VAR_SAMP", "STDDEV", "STDDEV_SAMP":
		if s.count < 2 {
			return nil
		}
		v := s.m2x / (n - 1)
		if strings.HasPrefix(a.name, "STDDEV") {
			return math.Sqrt(v)
		}
		return v
	case "COVAR_POP":
		if s.count == 0 {
			return nil
		}
		return s.cxy / n
	case "COVAR_SAMP":
		if s.count < 2 {
			return nil
		}
		return s.cxy / (n - 1)
	case "CORR":
		if s.count < 2 {
			return nil
		}
		if s.m2x == 0 || s.m2y == 0 {
			return math.NaN()
		}
		return s.cxy / math.Sqrt(s.m2x*s.m2y)
	case "APPROX_QUANTILES", "APPROX_TOP_COUNT", "APPROX_TOP_SUM":
		return a.approxResult(s)
	case "HLL_COUNT.INIT", "HLL_COUNT.MERGE", "HLL_COUNT.MERGE_PARTIAL":
		return a.hllResult(s)
	case "ARRAY_AGG", "ARRAY_CONCAT_AGG":
		vals := a.sorted(s.vals)
		if a.limit >= 0 && int64(len(vals)) > a.limit {
			vals = vals[:a.limit]
		}
		if len(vals) == 0 {
			return nil // no input rows: NULL
		}
		out := []any{}
		for _, v := range vals {
			if a.name == "ARRAY_AGG" {
				out = append(out, v.x)
			} else {
				out = append(out, v.x.([]any)...)
			}
		}
		return out
	case "STRING_AGG":
		if len(s.vals) == 0 {
			return nil
		}
		vals := a.sorted(s.vals)
		if a.limit >= 0 && int64(len(vals)) > a.limit {
			vals = vals[:a.limit]
		}
		var b strings.Builder
		for i, v := range vals {
			if i > 0 {
				b.WriteString(a.delim)
			}
			b.WriteString(v.v)
		}
		return b.String()
	}
	return nil
}

// compileArg compiles an aggregate's argument: over the input, or over
// the groups for an aggregate OVER a window in a query with GROUP BY.
func (q *selectQuery) compileArg(sp Span) (*filter.Scalar, error) {
	if q.winCompile != nil {
		return q.winCompile(sp)
	}
	return q.compile(sp)
}

// addValue keeps v (ARRAY_AGG's element, ARRAY_CONCAT_AGG's array) with
// its ORDER BY keys; without ORDER BY, LIMIT stops it early.
func (a *agg) addValue(s *acc, v any, vals [][]any, i int) error {
	if a.limit >= 0 && len(a.order) == 0 && int64(len(s.vals)) >= a.limit {
		return nil
	}
	av := aggVal{x: v}
	for k := range a.order {
		av.keys = append(av.keys, vals[len(a.args)+k][i])
	}
	s.vals = append(s.vals, av)
	return nil
}

// sorted returns vals ordered by the aggregate's ORDER BY (a copy: an
// analytic aggregate reads its running values again).
func (a *agg) sorted(vals []aggVal) []aggVal {
	if len(a.order) == 0 {
		return vals
	}
	vals = append([]aggVal(nil), vals...)
	sort.SliceStable(vals, func(i, j int) bool {
		for k, desc := range a.desc {
			x, y := vals[i].keys[k], vals[j].keys[k]
			var c int
			switch {
			case x == nil && y == nil:
			case x == nil:
				c = -1
			case y == nil:
				c = 1
			default:
				c = compareValues(x, y)
			}
			if desc {
				c = -c
			}
			if c != 0 {
				return c < 0
			}
		}
		return false
	})
	return vals
}

// intervalResult is the sum of INTERVAL values divided by n (1 for SUM),
// as ZetaSQL's interval sum aggregator divides: the months, their
// remainder carried into the days (30 a month), the days' into the time
// part, each quotient truncated; then the INTERVAL range is checked.
func (a *agg) intervalResult(s *acc, n int64) any {
	micros := new(big.Int).Lsh(big.NewInt(s.sumW.hi), 64)
	micros.Add(micros, new(big.Int).SetUint64(s.sumW.lo))
	months, days := s.ivMonths/n, s.ivDays+s.ivMonths%n*30
	micros.Add(micros, new(big.Int).Mul(big.NewInt(days%n), big.NewInt(86400_000_000)))
	micros.Quo(micros, big.NewInt(n))
	days /= n
	if !micros.IsInt64() {
		return aggFail{a, fmt.Errorf("Interval overflow during %s operation", map[bool]string{true: "Sum", false: "Avg"}[n == 1])}
	}
	iv, err := filter.MakeInterval(months, days, micros.Int64())
	if err != nil {
		return aggFail{a, err}
	}
	return iv
}
