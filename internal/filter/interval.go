package filter

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/bqstore/bqstore/internal/schema/protorows"
)

// INTERVAL values (queries only).
//
// GoogleSQL's INTERVAL has three independent parts: months (years and
// months), days, and a time part; none is normalized into another (1
// MONTH and 30 DAY are different values) but they compare, group and
// order as if a month were 30 days and a day 24 hours (the reference
// implementation's rule: "INTERVAL 1 MONTH = INTERVAL 30 DAY" is TRUE).
// The time part is held in microseconds, BigQuery's precision for
// TIMESTAMP and for EXTRACT(MICROSECOND FROM interval); stored columns
// (Arrow month_day_nano_interval) are read truncating sub-microsecond
// digits.
//
// A vec of INTERVALs holds its rows boxed in c, as composite types do:
// value.iv is the value.

// IntervalValue is an INTERVAL value as Scalar.Values returns it.
type IntervalValue struct {
	Months int32 // years*12 + months
	Days   int32
	Micros int64 // the H:M:S.F part
}

// BigQuery's bounds of each part: ±10000 years, ±3660000 days,
// ±87840000 hours.
const (
	maxIntervalMonths = 10000 * 12
	maxIntervalDays   = 3660000
	maxIntervalMicros = 87840000 * 3600 * microsPerSecond
)

// check returns BigQuery's out of range error for a part beyond its
// bounds (computed in int64: callers pass unclamped parts).
func intervalOf(months, days, micros int64) (IntervalValue, error) {
	switch {
	case months > maxIntervalMonths || months < -maxIntervalMonths:
		return IntervalValue{}, fmt.Errorf("Interval field months '%d' is out of range -%d to %d", months, maxIntervalMonths, maxIntervalMonths)
	case days > maxIntervalDays || days < -maxIntervalDays:
		return IntervalValue{}, fmt.Errorf("Interval field days '%d' is out of range -%d to %d", days, maxIntervalDays, maxIntervalDays)
	case micros > maxIntervalMicros || micros < -maxIntervalMicros:
		return IntervalValue{}, fmt.Errorf("Interval field microseconds '%d' is out of range -%d to %d", micros, maxIntervalMicros, maxIntervalMicros)
	}
	return IntervalValue{Months: int32(months), Days: int32(days), Micros: micros}, nil
}

// Total is the interval in microseconds with a month of 30 days and a day
// of 24 hours: how intervals compare, group and order. It fits an int64
// for every valid interval (under 10^18).
func (iv IntervalValue) Total() int64 {
	return (int64(iv.Months)*30+int64(iv.Days))*microsPerDay + iv.Micros
}

// String is BigQuery's canonical form [-]Y-M [-]D [-]H:M:S[.F]: years and
// months share one sign, days have their own, the time part its own;
// hours are not reduced to days nor days to months; the fraction has no
// trailing zeros.
func (iv IntervalValue) String() string {
	return string(appendInterval(nil, iv))
}

func appendInterval(dst []byte, iv IntervalValue) []byte {
	m := int64(iv.Months)
	if m < 0 {
		dst = append(dst, '-')
		m = -m
	}
	dst = strconv.AppendInt(dst, m/12, 10)
	dst = append(dst, '-')
	dst = strconv.AppendInt(dst, m%12, 10)
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, int64(iv.Days), 10)
	dst = append(dst, ' ')
	us := iv.Micros
	if us < 0 {
		dst = append(dst, '-')
		us = -us
	}
	secs := us / microsPerSecond
	dst = strconv.AppendInt(dst, secs/3600, 10)
	dst = append(dst, ':')
	dst = strconv.AppendInt(dst, secs/60%60, 10)
	dst = append(dst, ':')
	dst = strconv.AppendInt(dst, secs%60, 10)
	if f := us % microsPerSecond; f != 0 {
		frac := strings.TrimRight(fmt.Sprintf("%06d", f), "0")
		dst = append(dst, '.')
		dst = append(dst, frac...)
	}
	return dst
}

// ParseInterval reads an INTERVAL as CAST(string AS INTERVAL) does:
// the canonical form (leading parts may be left out: 'D H:M:S',
// 'H:M:S') or ISO 8601 'P[nY][nM][nD][T[nH][nM][n[.f]S]]'.
func ParseInterval(s string) (IntervalValue, error) {
	mdn, err := protorows.ParseInterval(s)
	if err != nil {
		return IntervalValue{}, fmt.Errorf("Invalid INTERVAL value: %s", s)
	}
	return intervalOfMDN(mdn)
}

// maxStoredIntervalMicros is the largest time part a stored INTERVAL can
// hold: columns are month_day_nano_interval, whose int64 nanoseconds end
// at about ±2,562,047 hours, short of GoogleSQL's ±87,840,000.
const maxStoredIntervalMicros = math.MaxInt64 / 1000

// MonthDayNano is the interval as Arrow's month_day_nano_interval (how
// columns store it). A time part beyond what that holds is an error (it
// used to wrap around: INTERVAL 3000000 HOUR came back as
// -2124095:34:33.709551616).
func (iv IntervalValue) MonthDayNano() (arrow.MonthDayNanoInterval, error) {
	if iv.Micros > maxStoredIntervalMicros || iv.Micros < -maxStoredIntervalMicros {
		return arrow.MonthDayNanoInterval{}, &Error{Bare: true, Msg: fmt.Sprintf("not supported yet by bqstore: an INTERVAL whose time part exceeds ±%d hours in a result or a table (%s)", maxStoredIntervalMicros/(3600*microsPerSecond), iv)}
	}
	return arrow.MonthDayNanoInterval{Months: iv.Months, Days: iv.Days, Nanoseconds: iv.Micros * 1000}, nil
}

func intervalOfMDN(v arrow.MonthDayNanoInterval) (IntervalValue, error) {
	return intervalOf(int64(v.Months), int64(v.Days), v.Nanoseconds/1000)
}

// intervalPartMicros are the time parts of INTERVAL n part and
// MAKE_INTERVAL, in microseconds.
var intervalPartMicros = map[string]int64{"HOUR": 3600 * microsPerSecond, "MINUTE": 60 * microsPerSecond,
	"SECOND": microsPerSecond, "MILLISECOND": 1000, "MICROSECOND": 1}

// intervalFromPart is INTERVAL n part.
func intervalFromPart(n int64, part string) (IntervalValue, error) {
	var months, days, micros *big64
	z := func() *big64 { return &big64{} }
	months, days, micros = z(), z(), z()
	switch part {
	case "YEAR":
		months.mul(n, 12)
	case "QUARTER":
		months.mul(n, 3)
	case "MONTH":
		months.mul(n, 1)
	case "WEEK":
		days.mul(n, 7)
	case "DAY":
		days.mul(n, 1)
	default:
		unit, ok := intervalPartMicros[part]
		if !ok {
			return IntervalValue{}, fmt.Errorf("Unsupported date part %s in INTERVAL", part)
		}
		micros.mul(n, unit)
	}
	if months.over || days.over || micros.over {
		return IntervalValue{}, fmt.Errorf("Interval value %d %s is out of range", n, part)
	}
	return intervalOf(months.v, days.v, micros.v)
}

// big64 is an int64 that remembers an overflow.
type big64 struct {
	v    int64
	over bool
}

func (b *big64) mul(x, y int64) {
	if x != 0 && (y > math.MaxInt64/abs64(x) || x == math.MinInt64) {
		b.over = true
		return
	}
	b.v = x * y
}

// intervalParts are the parts a string INTERVAL literal may name, in
// order (YEAR TO SECOND spans them all).
var intervalParts = []string{"YEAR", "MONTH", "DAY", "HOUR", "MINUTE", "SECOND"}

// parseIntervalLiteral reads INTERVAL 'text' from [TO to]: the text has
// the fields from..to of the canonical form, each but the first within
// its natural range.
func parseIntervalLiteral(text, from, to string) (IntervalValue, error) {
	bad := func() (IntervalValue, error) {
		if to == "" {
			return IntervalValue{}, fmt.Errorf("Invalid interval literal '%s'", text)
		}
		return IntervalValue{}, fmt.Errorf("Invalid interval literal '%s' for %s TO %s", text, from, to)
	}
	s := strings.TrimSpace(text)
	if to == "" {
		// One part: a (signed) number; SECOND may have a fraction.
		switch from {
		case "SECOND":
			return parseSecondsInterval(s)
		case "MILLISECOND", "MICROSECOND":
			return bad()
		}
		n, err := strconv.ParseInt(strings.TrimPrefix(s, "+"), 10, 64)
		if err != nil {
			return bad()
		}
		return intervalFromPart(n, from)
	}
	fi, ti := indexOf(intervalParts, from), indexOf(intervalParts, to)
	if fi < 0 || ti <= fi {
		return IntervalValue{}, fmt.Errorf("Unsupported interval datetime parts %s TO %s", from, to)
	}
	// Split the text into its fields: Y-M, D, H:M:S, each group with an
	// optional sign.
	groups := strings.Fields(s)
	var ym, d, hms string
	var want []*string
	if fi <= 1 && ti >= 0 {
		want = append(want, &ym)
	}
	if fi <= 2 && ti >= 2 {
		want = append(want, &d)
	}
	if ti >= 3 {
		want = append(want, &hms)
	}
	if len(groups) != len(want) {
		return bad()
	}
	for i, g := range groups {
		*want[i] = g
	}
	var months, days, micros int64
	if fi <= 1 {
		neg, t := cutSign(ym)
		var y, m int64
		var err1, err2 error
		switch {
		case fi == 0 && ti == 0:
			return bad()
		case fi == 0:
			// The fields after the first may exceed their natural
			// range ('0-13 370 48:61:61' YEAR TO SECOND is 1-1 370
			// 49:2:1 in GoogleSQL's documentation).
			ys, ms, ok := strings.Cut(t, "-")
			if !ok {
				return bad()
			}
			y, err1 = strconv.ParseInt(ys, 10, 64)
			m, err2 = strconv.ParseInt(ms, 10, 64)
		default: // MONTH TO ...
			m, err1 = strconv.ParseInt(t, 10, 64)
		}
		if err1 != nil || err2 != nil || y > 10000 || m > maxIntervalMonths {
			return bad()
		}
		months = y*12 + m
		if neg {
			months = -months
		}
	}
	if d != "" {
		neg, t := cutSign(d)
		v, err := strconv.ParseInt(t, 10, 64)
		if err != nil || v > maxIntervalDays {
			return bad()
		}
		days = v
		if neg {
			days = -days
		}
	}
	if hms != "" {
		neg, t := cutSign(hms)
		// The fields from max(from, HOUR) to to, colon-separated.
		first := max(fi, 3)
		fields := strings.Split(t, ":")
		if len(fields) != ti-first+1 {
			return bad()
		}
		for k, f := range fields {
			part := intervalParts[first+k]
			var v, frac int64
			if part == "SECOND" {
				secs, fr, ok := parseSecondsField(f)
				if !ok {
					return bad()
				}
				v, frac = secs, fr
			} else {
				x, err := strconv.ParseInt(f, 10, 64)
				if err != nil || x < 0 {
					return bad()
				}
				v = x
			}
			if v > maxIntervalMicros/intervalPartMicros[part] {
				return bad()
			}
			micros += v*intervalPartMicros[part] + frac
		}
		if neg {
			micros = -micros
		}
	}
	return intervalOf(months, days, micros)
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

func cutSign(s string) (bool, string) {
	if strings.HasPrefix(s, "-") {
		return true, s[1:]
	}
	return false, strings.TrimPrefix(s, "+")
}

// parseSecondsField reads S[.F] (F up to 6 digits; more are truncated
// past the microsecond, as TIMESTAMP strings are).
func parseSecondsField(f string) (secs, frac int64, ok bool) {
	is, fs, _ := strings.Cut(f, ".")
	if is == "" && fs == "" {
		return 0, 0, false
	}
	if is != "" {
		v, err := strconv.ParseInt(is, 10, 64)
		if err != nil || v < 0 {
			return 0, 0, false
		}
		secs = v
	}
	if len(fs) > 9 {
		return 0, 0, false
	}
	for k := 0; k < 6; k++ {
		frac *= 10
		if k < len(fs) {
			if fs[k] < '0' || fs[k] > '9' {
				return 0, 0, false
			}
			frac += int64(fs[k] - '0')
		}
	}
	for k := 6; k < len(fs); k++ {
		if fs[k] < '0' || fs[k] > '9' {
			return 0, 0, false
		}
	}
	return secs, frac, true
}

func parseSecondsInterval(s string) (IntervalValue, error) {
	neg, t := cutSign(s)
	secs, frac, ok := parseSecondsField(t)
	if !ok || secs > maxIntervalMicros/microsPerSecond {
		return IntervalValue{}, fmt.Errorf("Invalid interval literal '%s'", s)
	}
	us := secs*microsPerSecond + frac
	if neg {
		us = -us
	}
	return intervalOf(0, 0, us)
}

// ---- arithmetic ----

func (iv IntervalValue) neg() IntervalValue {
	return IntervalValue{Months: -iv.Months, Days: -iv.Days, Micros: -iv.Micros}
}

func addIntervals(a, b IntervalValue) (IntervalValue, error) {
	return intervalOf(int64(a.Months)+int64(b.Months), int64(a.Days)+int64(b.Days), a.Micros+b.Micros)
}

func mulInterval(a IntervalValue, k int64) (IntervalValue, error) {
	var m, d, u big64
	m.mul(int64(a.Months), k)
	d.mul(int64(a.Days), k)
	u.mul(a.Micros, k)
	if m.over || d.over || u.over {
		return IntervalValue{}, fmt.Errorf("Interval overflow in multiplication: %s * %d", a, k)
	}
	return intervalOf(m.v, d.v, u.v)
}

// divInterval is INTERVAL / INT64: each part divided, the remainder of
// months carried into days (a month is 30 days) and that of days into
// the time part, truncating toward zero ("INTERVAL 1 MONTH / 12" is
// 0-0 2 12:0:0 in GoogleSQL's documentation).
func divInterval(a IntervalValue, k int64) (IntervalValue, error) {
	if k == 0 {
		return IntervalValue{}, fmt.Errorf("division by zero: %s / 0", a)
	}
	m := int64(a.Months)
	d := int64(a.Days) + m%k*30
	u := a.Micros + d%k*microsPerDay
	return intervalOf(m/k, d/k, u/k)
}

// addInterval adds iv to a DATETIME or TIMESTAMP in microseconds (a DATE
// becomes a DATETIME first): months as DATE_ADD(MONTH) does (the last
// day of a shorter month), then days, then the time part. ok is false
// outside the type's range.
func addInterval(t typ, v int64, iv IntervalValue) (int64, bool) {
	r := v
	var ok bool
	if iv.Months != 0 {
		if r, ok = addPart(t, r, int64(iv.Months), "MONTH"); !ok {
			return 0, false
		}
	}
	if iv.Days != 0 {
		if r, ok = addPart(t, r, int64(iv.Days), "DAY"); !ok {
			return 0, false
		}
	}
	r += iv.Micros
	return r, r >= minMicros && r <= maxMicros
}

// intervalArithNode is an operator with an INTERVAL operand or result.
type intervalArithNode struct {
	op   string // "dt+iv", "dt-iv", "iv+iv", "iv-iv", "iv*k", "iv/k", "dt-dt", "d-d", "-iv"
	l, r node   // r nil for "-iv"
	t    typ
	p    int
}

func (n *intervalArithNode) typ() typ { return n.t }
func (n *intervalArithNode) pos() int { return n.p }

func (n *intervalArithNode) eval(ctx *evalCtx) (*vec, error) {
	l, err := n.l.eval(ctx)
	if err != nil {
		return nil, err
	}
	r := l
	if n.r != nil {
		if r, err = n.r.eval(ctx); err != nil {
			return nil, err
		}
	}
	out := newVec(n.t, ctx.n)
	for i := 0; i < ctx.n; i++ {
		a, b := l.get(i), r.get(i)
		if a.null || b.null {
			out.set(i, nullValue)
			continue
		}
		var x value
		var err error
		switch n.op {
		case "dt+iv", "dt-iv":
			iv := b.iv
			if n.op == "dt-iv" {
				iv = iv.neg()
			}
			v, ok := addInterval(n.t, a.i, iv)
			if !ok {
				return nil, ctx.errf(n.p, "%s overflow: %s + INTERVAL %s", n.t, formatValue(n.t, a), iv)
			}
			x.i = v
		case "iv+iv":
			x.iv, err = addIntervals(a.iv, b.iv)
		case "iv-iv":
			x.iv, err = addIntervals(a.iv, b.iv.neg())
		case "iv*k":
			x.iv, err = mulInterval(a.iv, b.i)
		case "iv/k":
			x.iv, err = divInterval(a.iv, b.i)
		case "-iv":
			x.iv = a.iv.neg()
		case "d-d":
			x.iv, err = intervalOf(0, a.i-b.i, 0)
		case "ts-ts":
			x.iv, err = intervalOf(0, 0, a.i-b.i)
		case "dt-dt":
			// The civil dates' difference in days, the times' in the
			// time part.
			days := floorDiv(a.i, microsPerDay) - floorDiv(b.i, microsPerDay)
			x.iv, err = intervalOf(0, days, floorMod(a.i, microsPerDay)-floorMod(b.i, microsPerDay))
		}
		if err != nil {
			return nil, ctx.errf(n.p, "%v", err)
		}
		out.set(i, x)
	}
	return out, nil
}

// intervalArith checks an arithmetic operator one of whose operands is
// an INTERVAL, or a subtraction of two dates, datetimes or timestamps;
// ok is false when the operator is not of that kind.
func (c *checker) intervalArith(op string, l, r node, p int) (node, bool, error) {
	tl, tr := l.typ(), r.typ()
	isTime := func(t typ) bool { return t == tDate || t == tDatetime || t == tTimestamp }
	mk := func(code string, l, r node, t typ) (node, bool, error) {
		n, err := c.fold(&intervalArithNode{op: code, l: l, r: r, t: t, p: p}, l, r)
		return n, true, err
	}
	dtOf := func(n node) (node, typ, error) {
		t := n.typ()
		if t == tDate {
			n2, err := c.coerce(n, tDatetime, "operator "+op)
			return n2, tDatetime, err
		}
		return n, t, nil
	}
	switch {
	case op == "-" && tl == tr && isTime(tl):
		code := map[typ]string{tDate: "d-d", tDatetime: "dt-dt", tTimestamp: "ts-ts"}[tl]
		return mk(code, l, r, tInterval)
	case tl == tInterval && tr == tInterval && (op == "+" || op == "-"):
		return mk("iv"+op+"iv", l, r, tInterval)
	case isTime(tl) && tr == tInterval && (op == "+" || op == "-"):
		x, t, err := dtOf(l)
		if err != nil {
			return nil, true, err
		}
		return mk("dt"+op+"iv", x, r, t)
	case tl == tInterval && isTime(tr) && op == "+":
		x, t, err := dtOf(r)
		if err != nil {
			return nil, true, err
		}
		return mk("dt+iv", x, l, t)
	case tl == tInterval && (tr == tInt || tr == tNull) && (op == "*" || op == "/"):
		k, err := c.coerce(r, tInt, "operator "+op)
		if err != nil {
			return nil, true, err
		}
		return mk("iv"+op+"k", l, k, tInterval)
	case tr == tInterval && (tl == tInt || tl == tNull) && op == "*":
		k, err := c.coerce(l, tInt, "operator "+op)
		if err != nil {
			return nil, true, err
		}
		return mk("iv*k", r, k, tInterval)
	case tl == tInterval && tr == tNull && (op == "+" || op == "-"):
		return mk("iv"+op+"iv", l, &constNode{v: constVec(tInterval, nullValue), p: r.pos()}, tInterval)
	case tr == tInterval && tl == tNull && (op == "+" || op == "-"):
		return mk("iv"+op+"iv", &constNode{v: constVec(tInterval, nullValue), p: l.pos()}, r, tInterval)
	case tl == tInterval || tr == tInterval:
		return nil, true, c.errf(p, "No matching signature for operator %s for argument types: %s, %s", op, tl, tr)
	}
	return nil, false, nil
}

// ---- INTERVAL expressions ----

// interval checks INTERVAL x part [TO part]: an INT64 count of one part,
// or a string literal of the fields from part to the TO part.
func (c *checker) interval(e *Interval) (node, error) {
	if e.To != "" {
		lit, ok := e.X.(*Literal)
		if !ok || lit.Kind != LitString {
			return nil, c.errf(e.X.Pos(), "Syntax error: INTERVAL %s TO %s expects a string literal", e.Part, e.To)
		}
		iv, err := parseIntervalLiteral(lit.Text, e.Part, e.To)
		if err != nil {
			return nil, c.errf(e.X.Pos(), "%v", err)
		}
		return &constNode{v: constVec(tInterval, value{iv: iv}), p: e.P}, nil
	}
	if _, ok := intervalPartMicros[e.Part]; !ok {
		switch e.Part {
		case "YEAR", "QUARTER", "MONTH", "WEEK", "DAY":
		default:
			return nil, c.errf(e.P, "Unsupported date part %s in INTERVAL", e.Part)
		}
	}
	if lit, ok := e.X.(*Literal); ok && lit.Kind == LitString {
		iv, err := parseIntervalLiteral(lit.Text, e.Part, "")
		if err != nil {
			return nil, c.errf(e.X.Pos(), "%v", err)
		}
		return &constNode{v: constVec(tInterval, value{iv: iv}), p: e.P}, nil
	}
	x, err := c.check(e.X)
	if err != nil {
		return nil, err
	}
	if x, err = c.coerce(x, tInt, "INTERVAL"); err != nil {
		return nil, err
	}
	part := e.Part
	return c.fold(&callNode{name: "INTERVAL", args: []node{x}, t: tInterval, strict: true, p: e.P,
		impl: func(a []value) (value, error) {
			iv, err := intervalFromPart(a[0].i, part)
			return value{iv: iv}, err
		}}, x)
}

// extractInterval is EXTRACT(part FROM interval): YEAR and MONTH from
// the months, DAY from the days, HOUR ... MICROSECOND from the time
// part, each with the sign of its part.
func (c *checker) extractInterval(e *Extract, x node) (node, error) {
	part := e.Part
	switch part {
	case "YEAR", "MONTH", "DAY", "HOUR", "MINUTE", "SECOND", "MILLISECOND", "MICROSECOND":
	default:
		return nil, c.errf(e.P, "Unsupported date part %s for INTERVAL", part)
	}
	return c.fold(&callNode{name: "EXTRACT", args: []node{x}, t: tInt, strict: true, p: e.P,
		impl: func(a []value) (value, error) {
			iv := a[0].iv
			var r int64
			switch part {
			case "YEAR":
				r = int64(iv.Months) / 12
			case "MONTH":
				r = int64(iv.Months) % 12
			case "DAY":
				r = int64(iv.Days)
			case "HOUR":
				r = iv.Micros / (3600 * microsPerSecond)
			case "MINUTE":
				r = iv.Micros / (60 * microsPerSecond) % 60
			case "SECOND":
				r = iv.Micros / microsPerSecond % 60
			case "MILLISECOND":
				r = iv.Micros / 1000 % 1000
			case "MICROSECOND":
				r = iv.Micros % microsPerSecond
			}
			return value{i: r}, nil
		}}, x)
}

// makeIntervalParts are MAKE_INTERVAL's parameters, each given by
// position or by name (MAKE_INTERVAL(1, minute => 5, day => 2)).
var makeIntervalParts = []string{"year", "month", "day", "hour", "minute", "second"}

// omittedPart is the default of a MAKE_INTERVAL parameter the call does
// not name (a value no valid call gives: it overflows every part).
const omittedPart = math.MinInt64

func registerInterval() {
	var params []namedParam
	for _, p := range makeIntervalParts {
		params = append(params, namedParam{name: p, t: tInt, def: value{i: omittedPart}})
	}
	namedParams["MAKE_INTERVAL"] = params
	builtins["MAKE_INTERVAL"] = func(c *checker, e *Call, args []node) (node, error) {
		pos, named := namedTail(e.Name, args)
		if err := c.arity(e, pos, 0, 6); err != nil {
			return nil, err
		}
		// Each part from its position or its name, 0 when neither.
		args = make([]node, 6)
		for k := range args {
			given := true
			if n, ok := named[k].(*constNode); ok && !n.v.isNull(0) && n.v.i[0] == omittedPart {
				given = false
			}
			switch {
			case k < len(pos) && given:
				return nil, c.errf(e.P, "MAKE_INTERVAL: argument %s is given both by position and by name", makeIntervalParts[k])
			case k < len(pos):
				args[k] = pos[k]
			case given:
				args[k] = named[k]
			default:
				args[k] = &constNode{v: constVec(tInt, value{i: 0}), p: e.P}
			}
		}
		want := make([]typ, max(len(args), 1))
		for i := range want {
			want[i] = tInt
		}
		return c.sigStrict(e, args, want, tInterval, true, func(a []value) (value, error) {
			var p [6]int64
			for i, v := range a {
				p[i] = v.i
			}
			var u big64
			var total int64
			for k, unit := range []int64{3600 * microsPerSecond, 60 * microsPerSecond, microsPerSecond} {
				u.mul(p[3+k], unit)
				if u.over || (total > 0 && u.v > math.MaxInt64-total) || (total < 0 && u.v < math.MinInt64-total) {
					return value{}, fmt.Errorf("Interval overflow in MAKE_INTERVAL")
				}
				total += u.v
			}
			var m big64
			m.mul(p[0], 12)
			if m.over || abs64(p[1]) > math.MaxInt64/2 || abs64(m.v) > math.MaxInt64/2 {
				return value{}, fmt.Errorf("Interval overflow in MAKE_INTERVAL")
			}
			iv, err := intervalOf(m.v+p[1], p[2], total)
			return value{iv: iv}, err
		})
	}
	justify := func(name string, days, hours bool) {
		builtins[name] = func(c *checker, e *Call, args []node) (node, error) {
			return c.sig(e, args, []typ{tInterval}, tInterval, func(a []value) (value, error) {
				iv := a[0].iv
				m, d, u := int64(iv.Months), int64(iv.Days), iv.Micros
				if hours {
					d += u / microsPerDay
					u %= microsPerDay
				}
				if days {
					m += d / 30
					d %= 30
				}
				if days && hours {
					// One sign for the whole (PostgreSQL's justify_interval,
					// which GoogleSQL's follows).
					switch {
					case m > 0 && (d < 0 || d == 0 && u < 0):
						m--
						d += 30
					case m < 0 && (d > 0 || d == 0 && u > 0):
						m++
						d -= 30
					}
					switch {
					case d > 0 && u < 0:
						d--
						u += microsPerDay
					case d < 0 && u > 0:
						d++
						u -= microsPerDay
					}
				}
				out, err := intervalOf(m, d, u)
				return value{iv: out}, err
			})
		}
	}
	justify("JUSTIFY_DAYS", true, false)
	justify("JUSTIFY_HOURS", false, true)
	justify("JUSTIFY_INTERVAL", true, true)
}

// MakeInterval is the INTERVAL of months, days and microseconds, or the
// range error of the first part out of range (the query engine's
// SUM/AVG of INTERVAL build their results with it).
func MakeInterval(months, days, micros int64) (IntervalValue, error) {
	return intervalOf(months, days, micros)
}
