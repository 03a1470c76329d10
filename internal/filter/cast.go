package filter

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// castable reports whether CAST(from AS to) has a signature in GoogleSQL.
func castable(from, to typ) bool {
	if from == to || from == tNull {
		return true
	}
	if from.isRange() {
		return to == tString
	}
	switch from {
	case tInt:
		return isNumeric(to) || to == tBool || to == tString
	case tFloat, tNumeric, tBigNumeric:
		return isNumeric(to) || to == tString
	case tBool:
		return to == tInt || to == tString
	case tString:
		switch to {
		case tInt, tFloat, tNumeric, tBigNumeric, tBool, tBytes, tDate, tDatetime, tTime, tTimestamp:
			return true
		}
	case tBytes:
		return to == tString
	case tDate:
		return to == tString || to == tDatetime || to == tTimestamp
	case tDatetime, tTimestamp:
		return to == tString || to == tDate || to == tDatetime || to == tTime || to == tTimestamp
	case tTime:
		return to == tString
	case tInterval:
		return to == tString
	}
	if to == tInterval {
		return from == tString
	}
	return false
}

type castNode struct {
	x    node
	to   typ
	safe bool
	p    int
}

func (n *castNode) typ() typ { return n.to }
func (n *castNode) pos() int { return n.p }

func (n *castNode) eval(ctx *evalCtx) (*vec, error) {
	x, err := n.x.eval(ctx)
	if err != nil {
		return nil, err
	}
	from := x.t
	if from == n.to {
		return x, nil
	}
	out := newVec(n.to, x.n)
	out.konst = x.konst
	if x.nulls != nil {
		out.nulls = append([]bool(nil), x.nulls...)
	}
	// Widening fast paths.
	if from == tInt && n.to == tFloat {
		for i, v := range x.i[:x.n] {
			out.f[i] = float64(v)
		}
		return out, nil
	}
	if x.d128 != nil && n.to == tFloat {
		// |v| < 2^53 and 10^scale are exact doubles, so one IEEE division
		// is correctly rounded, as big.Rat.Float64 is.
		p10 := math.Pow10(int(x.dscale))
		ok := x.dscale <= 22
		for i, d := range x.d128 {
			hi, lo := d.HighBits(), d.LowBits()
			v := int64(lo)
			if !ok || hi != v>>63 || v > 1<<53 || v < -(1<<53) {
				if x.isNull(i) {
					continue
				}
				f, _ := x.rats()[i].Float64()
				out.f[i] = f
				continue
			}
			out.f[i] = float64(v) / p10
		}
		return out, nil
	}
	if from == tDate && n.to == tDatetime {
		for i, v := range x.i[:x.n] {
			out.i[i] = v * microsPerDay
		}
		return out, nil
	}
	for i := 0; i < x.n; i++ {
		if x.isNull(i) {
			continue
		}
		v, err := castValue(from, n.to, x.get(i))
		if err != nil {
			if n.safe {
				out.set(i, nullValue)
				continue
			}
			return nil, ctx.errf(n.p, "%s", err.Error())
		}
		out.set(i, v)
	}
	return out, nil
}

// castValue converts a non-NULL value.
func castValue(from, to typ, v value) (value, error) {
	if from == to {
		return v, nil
	}
	switch to {
	case tString:
		s, err := castToString(from, v)
		return value{s: s}, err
	case tBytes:
		return value{s: v.s}, nil
	}
	switch from {
	case tString:
		return castFromString(to, v.s, nil)
	case tInt:
		switch to {
		case tFloat:
			return value{f: float64(v.i)}, nil
		case tNumeric, tBigNumeric:
			r, err := roundDecimal(to, new(big.Rat).SetInt64(v.i))
			return value{r: r}, err
		case tBool:
			return value{b: v.i != 0}, nil
		}
	case tBool:
		if v.b {
			return value{i: 1}, nil
		}
		return value{i: 0}, nil
	case tFloat:
		switch to {
		case tInt:
			if math.IsNaN(v.f) || math.IsInf(v.f, 0) {
				return value{}, fmt.Errorf("Illegal conversion of non-finite floating point number to an integer: %s", fmtFloat(v.f))
			}
			r := math.Round(v.f)
			if r < -9.223372036854775808e18 || r >= 9.223372036854775808e18 {
				return value{}, fmt.Errorf("int64 out of range: %s", fmtFloat(v.f))
			}
			return value{i: int64(r)}, nil
		case tNumeric, tBigNumeric:
			if math.IsNaN(v.f) || math.IsInf(v.f, 0) {
				return value{}, fmt.Errorf("Illegal conversion of non-finite floating point number to %s: %s", to, fmtFloat(v.f))
			}
			r, err := roundDecimal(to, new(big.Rat).SetFloat64(v.f))
			if err != nil {
				return value{}, fmt.Errorf("%s out of range: %s", to, fmtFloat(v.f))
			}
			return value{r: r}, nil
		}
	case tNumeric, tBigNumeric:
		switch to {
		case tFloat:
			f, _ := v.r.Float64()
			return value{f: f}, nil
		case tNumeric, tBigNumeric:
			r, err := roundDecimal(to, v.r)
			if err != nil {
				return value{}, fmt.Errorf("%s out of range: %s", to, fmtDecimal(from, v.r))
			}
			return value{r: r}, nil
		case tInt:
			num, den := v.r.Num(), v.r.Denom()
			q, m := new(big.Int).QuoRem(num, den, new(big.Int))
			m.Abs(m).Lsh(m, 1)
			if m.Cmp(den) >= 0 {
				if v.r.Sign() < 0 {
					q.Sub(q, big.NewInt(1))
				} else {
					q.Add(q, big.NewInt(1))
				}
			}
			if !q.IsInt64() {
				return value{}, fmt.Errorf("int64 out of range: %s", fmtDecimal(from, v.r))
			}
			return value{i: q.Int64()}, nil
		}
	case tDate:
		switch to {
		case tDatetime, tTimestamp:
			return value{i: v.i * microsPerDay}, nil
		}
	case tDatetime, tTimestamp:
		switch to {
		case tDate:
			return value{i: floorDiv(v.i, microsPerDay)}, nil
		case tTime:
			return value{i: floorMod(v.i, microsPerDay)}, nil
		case tDatetime, tTimestamp:
			return value{i: v.i}, nil
		}
	}
	return value{}, fmt.Errorf("Invalid cast from %s to %s", from, to)
}

// castFromString parses s as type t; zone is the default time zone of
// TIMESTAMP strings (nil: UTC).
func castFromString(t typ, s string, zone *time.Location) (value, error) {
	if t.isRange() {
		return parseRange(t.elem(), s)
	}
	switch t {
	case tInterval:
		iv, err := ParseInterval(s)
		return value{iv: iv}, err
	case tString:
		return value{s: s}, nil
	case tBytes:
		return value{s: s}, nil
	case tInt:
		x := strings.TrimSpace(s)
		v, err := parseIntLiteral(strings.TrimPrefix(x, "+"))
		if err != nil {
			return value{}, fmt.Errorf("Bad int64 value: %s", s)
		}
		return value{i: v}, nil
	case tFloat:
		x := strings.TrimSpace(s)
		f, err := strconv.ParseFloat(x, 64)
		if err != nil && !isRangeErr(err) || strings.ContainsAny(x, "_xXpP") {
			return value{}, fmt.Errorf("Bad double value: %s", s)
		}
		return value{f: f}, nil
	case tNumeric, tBigNumeric:
		x := strings.TrimSpace(s)
		if x == "" || strings.ContainsAny(x, "/_xXpP") || strings.EqualFold(x, "inf") || strings.EqualFold(x, "nan") {
			return value{}, fmt.Errorf("Invalid %s value: %s", t, s)
		}
		r, ok := parseDecimal(x)
		if !ok {
			return value{}, fmt.Errorf("Invalid %s value: %s", t, s)
		}
		r, err := roundDecimal(t, r)
		if err != nil {
			return value{}, fmt.Errorf("Invalid %s value: %s", t, s)
		}
		return value{r: r}, nil
	case tBool:
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "true":
			return value{b: true}, nil
		case "false":
			return value{b: false}, nil
		}
		return value{}, fmt.Errorf("Bad bool value: %s", s)
	case tDate:
		d, err := parseDate(s)
		return value{i: d}, err
	case tDatetime:
		d, err := parseDatetime(s)
		return value{i: d}, err
	case tTime:
		d, err := parseTime(s)
		return value{i: d}, err
	case tTimestamp:
		d, err := parseTimestamp(s, zone)
		return value{i: d}, err
	case tJSON:
		// A JSON value is kept normalized, as PARSE_JSON makes it (keys
		// sorted, no insignificant whitespace): JSON '{"b": 2, "a": 1}'
		// prints {"a":1,"b":2}, as BigQuery stores it.
		if !json.Valid([]byte(s)) {
			return value{}, fmt.Errorf("Invalid JSON: %s", s)
		}
		c, err := canonicalJSONMode(s, true)
		if err != nil {
			return value{}, fmt.Errorf("Invalid JSON: %v", err)
		}
		return value{s: c}, nil
	case tGeo:
		g, err := parseWKT(s)
		if err != nil {
			return value{}, err
		}
		return value{s: g.wkt(), g: g}, nil
	}
	return value{}, fmt.Errorf("Invalid cast from STRING to %s", t)
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// castToString renders v as CAST(v AS STRING) does.
func castToString(t typ, v value) (string, error) {
	if v.null {
		return "NULL", nil
	}
	if t.isRange() {
		return formatRange(t.elem(), v)
	}
	switch t {
	case tString, tJSON:
		return v.s, nil
	case tInterval:
		return v.iv.String(), nil
	case tBytes:
		if !utf8.ValidString(v.s) {
			return "", fmt.Errorf("Invalid cast of BYTES to STRING: not valid UTF-8")
		}
		return v.s, nil
	case tInt:
		return strconv.FormatInt(v.i, 10), nil
	case tBool:
		if v.b {
			return "true", nil
		}
		return "false", nil
	case tFloat:
		f := v.f
		switch {
		case math.IsNaN(f):
			return "nan", nil
		case math.IsInf(f, 1):
			return "inf", nil
		case math.IsInf(f, -1):
			return "-inf", nil
		}
		if a := math.Abs(f); a != 0 && (a < 1e-4 || a >= 1e15) {
			return strconv.FormatFloat(f, 'g', -1, 64), nil
		}
		return strconv.FormatFloat(f, 'f', -1, 64), nil
	case tNumeric, tBigNumeric:
		scale := 9
		if t == tBigNumeric {
			scale = 38
		}
		s := v.r.FloatString(scale)
		if strings.Contains(s, ".") {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
		if s == "-0" {
			s = "0"
		}
		return s, nil
	case tDate:
		return formatDate(v.i), nil
	case tDatetime:
		return formatDatetime(v.i), nil
	case tTime:
		return formatTime(v.i), nil
	case tTimestamp:
		return formatTimestamp(v.i), nil
	case tGeo:
		if v.g != nil {
			return v.g.wkt(), nil
		}
		return v.s, nil
	}
	return "", fmt.Errorf("Invalid cast from %s to STRING", t)
}

// parseDecimal parses a decimal number with an optional exponent. Exponents
// beyond any NUMERIC/BIGNUMERIC range are cut short before big.Rat would
// build a huge power of ten: large ones overflow, small ones round to 0.
func parseDecimal(x string) (*big.Rat, bool) {
	mant, exp := x, int64(0)
	if i := strings.IndexAny(x, "eE"); i >= 0 {
		mant = x[:i]
		e, err := strconv.ParseInt(strings.TrimPrefix(x[i+1:], "+"), 10, 64)
		if err != nil && !isRangeErr(err) {
			return nil, false
		}
		exp = e
		if err != nil {
			exp = 1 << 20
			if strings.HasPrefix(x[i+1:], "-") {
				exp = -exp
			}
		}
	}
	r, ok := new(big.Rat).SetString(mant)
	if !ok || strings.ContainsAny(mant, "eE") {
		return nil, false
	}
	switch {
	case r.Sign() == 0 || exp == 0:
		return r, true
	case exp > 200:
		return nil, false
	case exp < -200:
		return new(big.Rat), true
	}
	p := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(abs64(exp)), nil))
	if exp > 0 {
		return r.Mul(r, p), true
	}
	return r.Quo(r, p), true
}
