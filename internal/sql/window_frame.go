package sql

import (
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
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
	nonzero := func(unb bool, off *big.Rat) bool { return !unb && off != nil && off.Sign() != 0 }
	return !f.rows && (nonzero(f.startUnb, f.startOff) || nonzero(f.endUnb, f.endOff))
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
	c := func(p int, off *big.Rat) int { return compareDiff(keys[rows[p]], k, desc, off) }
	zero := new(big.Rat)
	if !f.startUnb {
		off := f.startOff
		if off == nil {
			off = zero
		}
		lo = ns + sort.Search(ne-ns, func(p int) bool { return c(ns+p, off) >= 0 })
	}
	if !f.endUnb {
		off := f.endOff
		if off == nil {
			off = zero
		}
		hi = ns + sort.Search(ne-ns, func(p int) bool { return c(ns+p, off) > 0 })
	}
	return lo, hi
}

// compareDiff compares a - b (b - a for desc) with off: exactly for
// INT64 and NUMERIC keys, in float64 arithmetic for FLOAT64 ones (NaN
// sorts first and is only its own peer's distance 0).
func compareDiff(a, b any, desc bool, off *big.Rat) int {
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
		o, _ := off.Float64()
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
	return d.Cmp(off)
}

// parseFrame reads ROWS|RANGE [BETWEEN b AND b | b].
func (q *selectQuery) parseFrame(p *parser, w *window) error {
	rows := p.isKw("ROWS")
	kwPos := p.tok().Pos
	p.i++
	f := frame{rows: rows, explicitFrame: true}
	// offs: each offset bound's value (negative: preceding), type and
	// position, checked against the ORDER BY key once the frame is read.
	var offs []frameOff
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
		o, err := p.frameOffset()
		if err != nil {
			return false, 0, err
		}
		n := int64(0) // the offset for ROWS
		if o.typ == "INT64" {
			n = o.v.Num().Int64()
		}
		switch {
		case p.isKw("PRECEDING"):
			p.i++
			offs = append(offs, frameOff{new(big.Rat).Neg(o.v), o.typ, t.Pos})
			return false, -n, nil
		case p.isKw("FOLLOWING"):
			p.i++
			offs = append(offs, frameOff{o.v, o.typ, t.Pos})
			return false, n, nil
		}
		return false, 0, p.errf(p.tok().Pos, "Syntax error: Expected keyword FOLLOWING or keyword PRECEDING but got %s", describe(p.tok()))
	}
	var err error
	// each bound's offset (nil: CURRENT ROW or UNBOUNDED)
	boundOff := func(n int) *big.Rat {
		if len(offs) > n {
			return offs[n].v
		}
		return nil
	}
	if p.isKw("BETWEEN") {
		p.i++
		if f.startUnb, f.start, err = bound(true); err != nil {
			return err
		}
		startOffs := len(offs)
		if startOffs == 1 {
			f.startOff = boundOff(0)
		}
		if !p.isKw("AND") {
			return p.errf(p.tok().Pos, "Syntax error: Expected keyword AND but got %s", describe(p.tok()))
		}
		p.i++
		if f.endUnb, f.end, err = bound(false); err != nil {
			return err
		}
		if len(offs) > startOffs {
			f.endOff = boundOff(startOffs)
		}
	} else if f.startUnb, f.start, err = bound(true); err != nil {
		return err
	} else {
		f.startOff = boundOff(0)
	}
	for _, o := range offs {
		if rows && o.typ != "INT64" {
			return q.errf(o.pos, "Window framing expression for ROWS can only be of integer type, but has type %s", o.typ)
		}
	}
	if rows && !f.startUnb && !f.endUnb && f.start > f.end ||
		!rows && !f.startUnb && !f.endUnb && ratOrZero(f.startOff).Cmp(ratOrZero(f.endOff)) > 0 {
		return q.errf(kwPos, "Window frame end cannot precede its start")
	}
	if !rows && len(w.order) == 0 && !(f.startUnb && f.endUnb) {
		return q.errf(kwPos, "RANGE-based window frames require an ORDER BY clause")
	}
	if f.hasRangeOffset() {
		if len(w.order) != 1 {
			return q.errf(kwPos, "RANGE-based window frame with offset boundaries requires exactly one ORDER BY expression")
		}
		kt := w.order[0].Type()
		if numericRank[kt] == 0 {
			return q.errf(kwPos, "RANGE-based window frame with offset boundaries requires a numeric ORDER BY expression, not %s", kt)
		}
		for _, o := range offs {
			// The offset coerces to the key's type: a literal INT64 to
			// any numeric type, a FLOAT64 literal to NUMERIC and
			// BIGNUMERIC too (literal coercion), NUMERIC to BIGNUMERIC
			// and FLOAT64, BIGNUMERIC to FLOAT64.
			if numericRank[o.typ] > numericRank[kt] && !(o.typ == "FLOAT64" && (kt == "NUMERIC" || kt == "BIGNUMERIC")) {
				return q.errf(o.pos, "Window framing expression has type %s that cannot coerce to the type of the ORDER BY expression, which is %s", o.typ, kt)
			}
		}
	}
	w.frame = f
	return nil
}

// frameOff is a window frame's offset: its value, GoogleSQL type (INT64,
// FLOAT64, NUMERIC or BIGNUMERIC) and position.
type frameOff struct {
	v   *big.Rat
	typ string
	pos int
}

func ratOrZero(r *big.Rat) *big.Rat {
	if r == nil {
		return new(big.Rat)
	}
	return r
}

// frameOffset reads a window frame's offset (p.tok is its first token):
// an INT64 or FLOAT64 literal, or NUMERIC|BIGNUMERIC 'text'. GoogleSQL
// takes a literal or a parameter there; NULL and negative values are
// errors (zetasql analyzer testdata analytic_function_window_frame.test).
func (p *parser) frameOffset() (frameOff, error) {
	var o frameOff
	t := p.tok()
	switch {
	case p.isKw("NULL"):
		return o, p.errf(t.Pos, "Window framing expression cannot be NULL")
	case t.Op && t.Text == "-":
		return o, p.errf(t.Pos, "Window framing expression cannot evaluate to a negative value")
	case t.Ident && (p.isKw("NUMERIC") || p.isKw("BIGNUMERIC") || p.isKw("DECIMAL") || p.isKw("BIGDECIMAL")):
		next := p.toks[p.i+1]
		if !strings.HasPrefix(next.Text, "'") && !strings.HasPrefix(next.Text, "\"") {
			return o, p.unexpected()
		}
		o.typ = "NUMERIC"
		if p.isKw("BIGNUMERIC") || p.isKw("BIGDECIMAL") {
			o.typ = "BIGNUMERIC"
		}
		v, ok := new(big.Rat).SetString(strings.TrimSpace(next.Value))
		if !ok {
			return o, p.errf(next.Pos, "Invalid %s literal: %s", o.typ, next.Text)
		}
		if v.Sign() < 0 {
			return o, p.errf(t.Pos, "Window framing expression cannot evaluate to a negative value")
		}
		o.v = v
		p.i += 2
		return o, nil
	case t.Ident || t.QIdent || t.Op || t.EOF || t.Param:
		return o, p.unexpected()
	}
	if n, err := strconv.ParseInt(t.Text, 0, 64); err == nil {
		o.v, o.typ = new(big.Rat).SetInt64(n), "INT64"
	} else if v, ok := new(big.Rat).SetString(t.Text); ok && !strings.HasPrefix(t.Text, "0x") && !strings.HasPrefix(t.Text, "0X") &&
		strings.ContainsAny(t.Text, ".eE") {
		o.v, o.typ = v, "FLOAT64"
	} else {
		return o, p.errf(t.Pos, "Window frame offset must be a non-negative integer literal or parameter")
	}
	p.i++
	return o, nil
}
