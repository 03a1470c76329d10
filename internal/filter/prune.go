package filter

import (
	"math"
	"math/big"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
)

// ColumnStats is the zone map of one column over a batch of rows.
//
// Min and Max bound the column's non-NULL values (for FLOAT columns, its
// non-NaN values); HasMinMax is false when they are unknown (for example
// when every value is NULL). Their Go type follows the column type:
// INTEGER int64; FLOAT float64; BOOLEAN bool; STRING, JSON, GEOGRAPHY
// string; BYTES []byte or string; NUMERIC and BIGNUMERIC *big.Rat,
// decimal128.Num (scale 9) or decimal256.Num (scale 38); DATE arrow.Date32
// or int32/int64 days since the epoch; TIMESTAMP and DATETIME
// arrow.Timestamp or int64 microseconds (or time.Time); TIME arrow.Time64
// or int64 microseconds since midnight.
type ColumnStats struct {
	RowCount  int64
	NullCount int64
	HasMinMax bool
	Min, Max  any
}

// ColumnStatsFunc returns the zone map of a column path (one element for a
// top-level column, more for a RECORD's field, in the schema's spelling);
// ok is false when the batch has no stats for it. For a RECORD's field,
// NullCount counts the rows where the field is NULL, including those
// where an enclosing RECORD is NULL.
type ColumnStatsFunc func(path []string) (ColumnStats, bool)

// MayMatch reports whether any row of a batch with these column stats can
// satisfy the filter. It returns false only when no row can (pruning is
// conservative): a batch for which it returns false never has a row that
// Eval would select.
func (f *Filter) MayMatch(stats ColumnStatsFunc) bool {
	pr := &pruner{stats: stats}
	t, _, _ := pr.poss(f.root)
	return t && !pr.empty
}

type pruner struct {
	stats ColumnStatsFunc
	empty bool // some column reported RowCount 0
}

// bound is what the stats say about an expression's values.
type bound struct {
	known         bool // lo and hi are valid
	lo, hi        value
	canNull       bool
	allNull       bool
	floatish      bool // FLOAT64: NaN rows are possible and unbounded
	t             typ
	canNonNull    bool
	nullnessKnown bool
}

func (pr *pruner) colStats(n *colNode) (ColumnStats, bool) {
	if pr.stats == nil {
		return ColumnStats{}, false
	}
	st, ok := pr.stats(n.path)
	if ok && st.RowCount == 0 {
		pr.empty = true
	}
	return st, ok
}

func (pr *pruner) bound(n node) bound {
	b := bound{t: n.typ(), canNull: true, canNonNull: true, floatish: n.typ() == tFloat}
	switch n := n.(type) {
	case *constNode:
		v := n.v.get(0)
		b.nullnessKnown = true
		if v.null {
			b.canNull, b.allNull, b.canNonNull = true, true, false
			return b
		}
		b.canNull, b.canNonNull = false, true
		if n.typ() == tFloat && math.IsNaN(v.f) {
			return b
		}
		b.known, b.lo, b.hi = true, v, v
		b.floatish = false
		return b
	case *colNode:
		st, ok := pr.colStats(n)
		if !ok {
			return b
		}
		b.nullnessKnown = true
		b.canNull = st.NullCount > 0
		b.allNull = st.NullCount >= st.RowCount
		b.canNonNull = !b.allNull
		if !st.HasMinMax || b.allNull {
			return b
		}
		lo, ok1 := statValue(n.t, st.Min)
		hi, ok2 := statValue(n.t, st.Max)
		if ok1 && ok2 {
			if n.t == tFloat && (math.IsNaN(lo.f) || math.IsNaN(hi.f)) {
				return b
			}
			b.known, b.lo, b.hi = true, lo, hi
		}
		return b
	case *castNode:
		// Monotone widenings keep the bounds.
		x := pr.bound(n.x)
		from := n.x.typ()
		widen := (numRank(from) > 0 && numRank(n.to) > numRank(from)) || (from == tDate && n.to == tDatetime)
		if !widen || n.safe {
			if x.allNull {
				return bound{t: n.to, canNull: true, allNull: true, nullnessKnown: true}
			}
			return b
		}
		out := x
		out.t = n.to
		out.floatish = x.floatish || n.to == tFloat
		if x.known {
			lo, err1 := castValue(from, n.to, x.lo)
			hi, err2 := castValue(from, n.to, x.hi)
			if err1 != nil || err2 != nil {
				out.known = false
			} else {
				out.lo, out.hi = lo, hi
			}
		}
		return out
	}
	return b
}

// poss returns whether the boolean node can be TRUE, FALSE and NULL for
// some row of the batch.
func (pr *pruner) poss(n node) (t, f, nl bool) {
	switch n := n.(type) {
	case *constNode:
		v := n.v.get(0)
		if v.null {
			return false, false, true
		}
		return v.b, !v.b, false
	case *logicNode:
		at, af, an := pr.poss(n.l)
		bt, bf, bn := pr.poss(n.r)
		if n.and {
			return at && bt, af || bf, (an && (bn || bt)) || (bn && (an || at))
		}
		return at || bt, af && bf, (an && (bn || bf)) || (bn && (an || af))
	case *notNode:
		t, f, nl := pr.poss(n.x)
		return f, t, nl
	case *isNode:
		var xt, xf, xn bool
		if n.what == "NULL" {
			b := pr.bound(n.x)
			xt, xn = b.canNonNull, b.canNull
			if !b.nullnessKnown {
				xt, xn = true, true
			}
			t, f := xn, xt
			if n.not {
				t, f = f, t
			}
			return t, f, false
		}
		xt, xf, xn = pr.poss(n.x)
		var t, f bool
		if n.what == "TRUE" {
			t, f = xt, xf || xn
		} else {
			t, f = xf, xt || xn
		}
		if n.not {
			t, f = f, t
		}
		return t, f, false
	case *cmpNode:
		return pr.cmpPoss(n.op, pr.bound(n.l), pr.bound(n.r))
	case *inNode:
		x := pr.bound(n.x)
		if x.allNull {
			return false, false, true
		}
		nl := x.canNull || n.hasNull
		if !x.known || !n.konst || x.floatish {
			return true, true, true
		}
		hit := n.anyWithin(x.t, x.lo, x.hi)
		if n.not {
			return true, hit, nl
		}
		return hit, true, nl
	case *callNode:
		if n.name != "STARTS_WITH" {
			break
		}
		x := pr.bound(n.args[0])
		p, ok := constValue(n.args[1])
		if x.allNull || (ok && p.null) {
			return false, false, true
		}
		if !ok || !x.known {
			return true, true, true
		}
		t := x.hi.s >= p.s && (x.lo.s <= p.s || strings.HasPrefix(x.lo.s, p.s))
		return t, true, x.canNull
	case *likeNode:
		x := pr.bound(n.x)
		if x.allNull {
			return false, false, true
		}
		nl := x.canNull || pr.bound(n.pat).canNull
		if n.m == nil || !x.known {
			return true, true, true
		}
		p := n.m.prefix()
		t := true
		if p != "" {
			t = x.hi.s >= p && (x.lo.s <= p || strings.HasPrefix(x.lo.s, p))
		}
		if n.not {
			return true, t, nl
		}
		return t, true, nl
	}
	return true, true, true
}

func (pr *pruner) cmpPoss(op cmpOp, a, b bound) (t, f, nl bool) {
	if a.allNull || b.allNull {
		return false, false, true
	}
	nl = a.canNull || b.canNull
	if !a.known || !b.known {
		return true, true, true
	}
	ty := a.t
	c := func(x, y value) int { return compareValues(ty, x, y) }
	overlap := c(a.lo, b.hi) <= 0 && c(b.lo, a.hi) <= 0
	single := c(a.lo, a.hi) == 0 && c(b.lo, b.hi) == 0 && c(a.lo, b.lo) == 0
	switch op {
	case opEq:
		t, f = overlap, !single
	case opNe:
		t, f = !single, overlap
	case opLt:
		t, f = c(a.lo, b.hi) < 0, c(a.hi, b.lo) >= 0
	case opLe:
		t, f = c(a.lo, b.hi) <= 0, c(a.hi, b.lo) > 0
	case opGt:
		t, f = c(a.hi, b.lo) > 0, c(a.lo, b.hi) <= 0
	case opGe:
		t, f = c(a.hi, b.lo) >= 0, c(a.lo, b.hi) < 0
	}
	if a.floatish || b.floatish {
		// NaN rows compare FALSE (and != TRUE) whatever the bounds.
		f = true
		if op == opNe {
			t = true
		}
	}
	return t, f, nl
}

// statValue converts a zone-map bound to a value of type t.
func statValue(t typ, x any) (value, bool) {
	switch v := x.(type) {
	case nil:
		return value{}, false
	case int64:
		switch {
		case isIntLike(t):
			return value{i: v}, true
		case t == tFloat:
			return value{f: float64(v)}, true
		case isDecimal(t):
			return value{r: new(big.Rat).SetInt64(v)}, true
		}
	case int:
		return statValue(t, int64(v))
	case int32:
		return statValue(t, int64(v))
	case arrow.Date32:
		return statValue(t, int64(v))
	case arrow.Timestamp:
		return statValue(t, int64(v))
	case arrow.Time64:
		return statValue(t, int64(v))
	case time.Time:
		switch t {
		case tDate:
			return value{i: floorDiv(v.UTC().UnixMicro(), microsPerDay)}, true
		case tTimestamp, tDatetime:
			return value{i: v.UTC().UnixMicro()}, true
		}
	case float64:
		if t == tFloat {
			return value{f: v}, true
		}
	case bool:
		if t == tBool {
			return value{b: v}, true
		}
	case string:
		if isStrLike(t) {
			return value{s: v}, true
		}
	case []byte:
		if isStrLike(t) {
			return value{s: string(v)}, true
		}
	case *big.Rat:
		if isDecimal(t) && v != nil {
			return value{r: v}, true
		}
	case decimal128.Num:
		if isDecimal(t) {
			return value{r: new(big.Rat).SetFrac(v.BigInt(), tenPow9)}, true
		}
	case decimal256.Num:
		if isDecimal(t) {
			return value{r: new(big.Rat).SetFrac(v.BigInt(), tenPow38)}, true
		}
	}
	return value{}, false
}
