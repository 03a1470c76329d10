package sql

import (
	"math"
	"math/big"
	"sort"
	"strconv"
)

// RANGE frames with offsets: RANGE BETWEEN n PRECEDING AND m FOLLOWING
// over one numeric ORDER BY key frames the rows whose key is within
// [key - n, key + m] (with DESC, PRECEDING is the larger keys). A row
// with a NULL key frames its peers (the other NULL keys); a non-NULL
// key's range holds no NULL key, but an UNBOUNDED bound reaches to the
// partition's end whatever the keys there.

// hasRangeOffset reports whether f is a RANGE frame with an offset
// bound (n PRECEDING or n FOLLOWING, n > 0 or not: 0 PRECEDING is the
// current row's peers for numeric keys, as CURRENT ROW).
func (f frame) hasRangeOffset() bool {
	return !f.rows && (!f.startUnb && f.start != 0 || !f.endUnb && f.end != 0)
}

// rangeBounds returns the frame [lo, hi) of position i of a partition
// sorted by keys (nulls grouped at one end), for a RANGE frame with
// offsets; peerStart and peerEnd are position i's peers.
func rangeBounds(f frame, keys []any, rows []int, desc bool, i, peerStart, peerEnd int) (int, int) {
	m := len(rows)
	lo, hi := 0, m
	k := keys[rows[i]]
	if k == nil {
		if !f.startUnb {
			lo = peerStart
		}
		if !f.endUnb {
			hi = peerEnd
		}
		return lo, hi
	}
	// The non-NULL keys are one run [ns, ne) of the sorted rows.
	ns, ne := 0, m
	for ns < m && keys[rows[ns]] == nil {
		ns++
	}
	for ne > ns && keys[rows[ne-1]] == nil {
		ne--
	}
	// c(p, off) compares the key at p less the current one, in the
	// sort's direction, with off: non-decreasing in p over [ns, ne).
	c := func(p int, off int64) int { return compareDiff(keys[rows[p]], k, desc, off) }
	if !f.startUnb {
		lo = ns + sort.Search(ne-ns, func(p int) bool { return c(ns+p, f.start) >= 0 })
	}
	if !f.endUnb {
		hi = ns + sort.Search(ne-ns, func(p int) bool { return c(ns+p, f.end) > 0 })
	}
	return lo, hi
}

// compareDiff compares a - b (b - a for desc) with off: exactly for
// INT64 and NUMERIC keys, in float64 arithmetic for FLOAT64 ones (NaN
// sorts first and is only its own peer's distance 0).
func compareDiff(a, b any, desc bool, off int64) int {
	if x, ok := a.(float64); ok {
		y := b.(float64)
		var v float64
		switch {
		case math.IsNaN(x) && math.IsNaN(y), math.IsInf(x, 0) && x == y:
			v = 0
		case math.IsNaN(x):
			v = math.Inf(-1)
		case math.IsNaN(y):
			v = math.Inf(1)
		default:
			v = x - y
		}
		if desc {
			v = -v
		}
		o := float64(off)
		switch {
		case v < o:
			return -1
		case v > o:
			return 1
		}
		return 0
	}
	var d *big.Rat
	switch x := a.(type) {
	case int64:
		d = new(big.Rat).SetInt(new(big.Int).Sub(big.NewInt(x), big.NewInt(b.(int64))))
	case *big.Rat:
		d = new(big.Rat).Sub(x, b.(*big.Rat))
	default:
		return 0
	}
	if desc {
		d.Neg(d)
	}
	return d.Cmp(new(big.Rat).SetInt64(off))
}

// parseFrame reads ROWS|RANGE [BETWEEN b AND b | b].
func (q *selectQuery) parseFrame(p *parser, w *window) error {
	rows := p.isKw("ROWS")
	kwPos := p.tok().Pos
	p.i++
	f := frame{rows: rows, explicitFrame: true}
	bound := func(isStart bool) (unb bool, off int64, err error) {
		t := p.tok()
		switch {
		case p.isKw("UNBOUNDED", "PRECEDING"):
			p.i += 2
			if !isStart {
				return false, 0, p.errf(t.Pos, "Syntax error: UNBOUNDED PRECEDING is not allowed for the end of a window frame")
			}
			return true, 0, nil
		case p.isKw("UNBOUNDED", "FOLLOWING"):
			p.i += 2
			if isStart {
				return false, 0, p.errf(t.Pos, "Syntax error: UNBOUNDED FOLLOWING is not allowed for the start of a window frame")
			}
			return true, 0, nil
		case p.isKw("CURRENT", "ROW"):
			p.i += 2
			return false, 0, nil
		}
		if t.Ident || t.QIdent || t.Op || t.EOF {
			return false, 0, p.unexpected()
		}
		n, err := strconv.ParseInt(t.Text, 0, 64)
		if err != nil || n < 0 {
			return false, 0, p.errf(t.Pos, "Window frame offset must be a non-negative integer literal or parameter")
		}
		p.i++
		switch {
		case p.isKw("PRECEDING"):
			p.i++
			return false, -n, nil
		case p.isKw("FOLLOWING"):
			p.i++
			return false, n, nil
		}
		return false, 0, p.errf(p.tok().Pos, "Syntax error: Expected keyword FOLLOWING or keyword PRECEDING but got %s", describe(p.tok()))
	}
	var err error
	if p.isKw("BETWEEN") {
		p.i++
		if f.startUnb, f.start, err = bound(true); err != nil {
			return err
		}
		if !p.isKw("AND") {
			return p.errf(p.tok().Pos, "Syntax error: Expected keyword AND but got %s", describe(p.tok()))
		}
		p.i++
		if f.endUnb, f.end, err = bound(false); err != nil {
			return err
		}
	} else if f.startUnb, f.start, err = bound(true); err != nil {
		return err
	}
	if !f.startUnb && !f.endUnb && f.start > f.end {
		return q.errf(kwPos, "Window frame end cannot precede its start")
	}
	if !rows && len(w.order) == 0 && !(f.startUnb && f.endUnb) {
		return q.errf(kwPos, "RANGE-based window frames require an ORDER BY clause")
	}
	if f.hasRangeOffset() {
		if len(w.order) != 1 {
			return q.errf(kwPos, "RANGE-based window frame with offset boundaries requires exactly one ORDER BY expression")
		}
		if numericRank[w.order[0].Type()] == 0 {
			return q.errf(kwPos, "RANGE-based window frame with offset boundaries requires a numeric ORDER BY expression, not %s", w.order[0].Type())
		}
	}
	w.frame = f
	return nil
}
