package protorows

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // IANA zones in TIMESTAMP literals, whatever the host has

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
)

// This file holds the value conversions shared by the proto and Arrow row
// decoders and the default-value evaluator: BigQuery's literal formats and
// the Write API's binary encodings (CivilTimeEncoder, BigDecimalByteString-
// Encoder), each to the engine's Arrow representation.

// The DATE range BigQuery accepts, in days since 1970-01-01: 0001-01-01 and
// 9999-12-31.
const (
	MinDate = -719162
	MaxDate = 2932896
)

// The TIMESTAMP and DATETIME range in microseconds since the epoch:
// 0001-01-01 00:00:00 and 9999-12-31 23:59:59.999999.
const (
	MinMicros = -62135596800000000
	MaxMicros = 253402300799999999
)

// microsPerDay is the number of microseconds in a day.
const microsPerDay = 86400 * 1000000

// daysFromCivil returns the days since 1970-01-01 of a proleptic Gregorian
// date (Howard Hinnant's algorithm).
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

func isLeap(y int64) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

func daysIn(y, m int64) int64 {
	switch m {
	case 2:
		if isLeap(y) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

func validDate(y, m, d int64) bool {
	return y >= 1 && y <= 9999 && m >= 1 && m <= 12 && d >= 1 && d <= daysIn(y, m)
}

func validTime(h, mi, s, us int64) bool {
	return h >= 0 && h < 24 && mi >= 0 && mi < 60 && s >= 0 && s < 60 && us >= 0 && us < 1000000
}

// DecodePackedTime decodes CivilTimeEncoder's packed TIME:
// hour<<32 | minute<<26 | second<<20 | micros. It returns microseconds
// since midnight.
func DecodePackedTime(v int64) (int64, error) {
	if v < 0 || v>>37 != 0 {
		return 0, fmt.Errorf("invalid packed TIME %d", v)
	}
	us, s, mi, h := v&0xFFFFF, (v>>20)&0x3F, (v>>26)&0x3F, (v>>32)&0x1F
	if !validTime(h, mi, s, us) {
		return 0, fmt.Errorf("invalid packed TIME %d", v)
	}
	return ((h*60+mi)*60+s)*1000000 + us, nil
}

// DecodePackedDatetime decodes CivilTimeEncoder's packed DATETIME:
// year<<46 | month<<42 | day<<37 | hour<<32 | minute<<26 | second<<20 |
// micros. It returns microseconds since 1970-01-01T00:00:00 (as if UTC).
func DecodePackedDatetime(v int64) (int64, error) {
	if v < 0 || v>>60 != 0 {
		return 0, fmt.Errorf("invalid packed DATETIME %d", v)
	}
	t, err := DecodePackedTime(v & (1<<37 - 1))
	if err != nil {
		return 0, fmt.Errorf("invalid packed DATETIME %d", v)
	}
	d, m, y := (v>>37)&0x1F, (v>>42)&0xF, (v>>46)&0x3FFF
	if !validDate(y, m, d) {
		return 0, fmt.Errorf("invalid packed DATETIME %d", v)
	}
	return daysFromCivil(y, m, d)*microsPerDay + t, nil
}

// EncodePackedDatetime is the inverse of DecodePackedDatetime (for tests and
// tools): micros since the epoch to the packed form.
func EncodePackedDatetime(micros int64) int64 {
	t := time.UnixMicro(micros).UTC()
	return int64(t.Year())<<46 | int64(t.Month())<<42 | int64(t.Day())<<37 |
		int64(t.Hour())<<32 | int64(t.Minute())<<26 | int64(t.Second())<<20 | int64(t.Nanosecond()/1000)
}

// EncodePackedTime is the inverse of DecodePackedTime.
func EncodePackedTime(micros int64) int64 {
	us := micros % 1000000
	s := micros / 1000000
	return (s/3600)<<32 | (s/60%60)<<26 | (s%60)<<20 | us
}

// scanner is a tiny cursor over a literal.
type scanner struct {
	s string
	i int
}

// digits reads between min and max decimal digits.
func (p *scanner) digits(min, max int) (int64, bool) {
	start := p.i
	var v int64
	for p.i < len(p.s) && p.i-start < max && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		v = v*10 + int64(p.s[p.i]-'0')
		p.i++
	}
	return v, p.i-start >= min
}

func (p *scanner) eat(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *scanner) done() bool { return p.i == len(p.s) }

func (p *scanner) date() (int64, bool) {
	y, ok := p.digits(1, 4)
	if !ok || !p.eat('-') {
		return 0, false
	}
	m, ok := p.digits(1, 2)
	if !ok || !p.eat('-') {
		return 0, false
	}
	d, ok := p.digits(1, 2)
	if !ok || !validDate(y, m, d) {
		return 0, false
	}
	return daysFromCivil(y, m, d), true
}

// time reads [H]H:[M]M:[S]S[.F{1,6}] (a fraction longer than microseconds
// is an error: BigQuery does not silently truncate on input).
func (p *scanner) time() (int64, bool) {
	h, ok := p.digits(1, 2)
	if !ok || !p.eat(':') {
		return 0, false
	}
	mi, ok := p.digits(1, 2)
	if !ok || !p.eat(':') {
		return 0, false
	}
	s, ok := p.digits(1, 2)
	if !ok {
		return 0, false
	}
	var us int64
	if p.eat('.') {
		start := p.i
		f, ok := p.digits(1, 6)
		if !ok {
			return 0, false
		}
		for n := p.i - start; n < 6; n++ {
			f *= 10
		}
		us = f
	}
	if !validTime(h, mi, s, us) {
		return 0, false
	}
	return ((h*60+mi)*60+s)*1000000 + us, true
}

// ParseDate parses a DATE literal (YYYY-[M]M-[D]D) to days since the epoch.
func ParseDate(s string) (int32, error) {
	p := scanner{s: strings.TrimSpace(s)}
	d, ok := p.date()
	if !ok || !p.done() {
		return 0, fmt.Errorf("invalid DATE %q", s)
	}
	return int32(d), nil
}

// ParseTime parses a TIME literal ([H]H:[M]M:[S]S[.DDDDDD]) to microseconds
// since midnight.
func ParseTime(s string) (int64, error) {
	p := scanner{s: strings.TrimSpace(s)}
	t, ok := p.time()
	if !ok || !p.done() {
		return 0, fmt.Errorf("invalid TIME %q", s)
	}
	return t, nil
}

// ParseDatetime parses a DATETIME literal (YYYY-[M]M-[D]D[( |T)[H]H:[M]M:
// [S]S[.DDDDDD]]) to microseconds since the epoch.
func ParseDatetime(s string) (int64, error) {
	p := scanner{s: strings.TrimSpace(s)}
	us, ok := p.datetime()
	if !ok || !p.done() {
		return 0, fmt.Errorf("invalid DATETIME %q", s)
	}
	return us, nil
}

func (p *scanner) datetime() (int64, bool) {
	d, ok := p.date()
	if !ok {
		return 0, false
	}
	us := d * microsPerDay
	if p.eat('T') || p.eat('t') || p.eat(' ') {
		t, ok := p.time()
		if !ok {
			return 0, false
		}
		us += t
	}
	return us, true
}

// ParseTimestamp parses a TIMESTAMP literal: a DATETIME literal followed by
// an optional time zone (Z, UTC, +HH[:MM], -HH[:MM], or an IANA name after a
// space); without a zone the time is UTC. It returns microseconds since the
// epoch, range-checked.
func ParseTimestamp(s string) (int64, error) {
	t := strings.TrimSpace(s)
	p := scanner{s: t}
	us, ok := p.datetime()
	if !ok {
		return 0, fmt.Errorf("invalid TIMESTAMP %q", s)
	}
	rest := strings.TrimLeft(t[p.i:], " ")
	switch {
	case rest == "" || rest == "Z" || rest == "z" || strings.EqualFold(rest, "UTC"):
	case rest[0] == '+' || rest[0] == '-':
		q := scanner{s: rest, i: 1}
		h, ok := q.digits(1, 2)
		if !ok {
			return 0, fmt.Errorf("invalid TIMESTAMP %q: bad time zone offset", s)
		}
		var m int64
		if q.eat(':') || q.i == 3 && len(rest) == 5 { // +HH:MM or +HHMM
			if m, ok = q.digits(2, 2); !ok {
				return 0, fmt.Errorf("invalid TIMESTAMP %q: bad time zone offset", s)
			}
		}
		if !q.done() || h > 14 || m > 59 {
			return 0, fmt.Errorf("invalid TIMESTAMP %q: bad time zone offset", s)
		}
		off := (h*60 + m) * 60 * 1000000
		if rest[0] == '+' {
			us -= off
		} else {
			us += off
		}
	default:
		loc, err := time.LoadLocation(rest)
		if err != nil || rest == "Local" {
			return 0, fmt.Errorf("invalid TIMESTAMP %q: unknown time zone %q", s, rest)
		}
		wall := time.UnixMicro(us).UTC()
		local := time.Date(wall.Year(), wall.Month(), wall.Day(), wall.Hour(), wall.Minute(), wall.Second(), wall.Nanosecond(), loc)
		us = local.UnixMicro()
	}
	if us < MinMicros || us > MaxMicros {
		return 0, fmt.Errorf("TIMESTAMP %q out of range", s)
	}
	return us, nil
}

// Decimal parameters of NUMERIC and BIGNUMERIC.
const (
	NumericScale    = 9
	BigNumericScale = 38
)

var (
	bigTen       = big.NewInt(10)
	numericLimit = new(big.Int).Exp(bigTen, big.NewInt(38), nil) // |scaled| < 10^38
	bigNumMax    = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 255), big.NewInt(1))
	bigNumMin    = new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), 255))
)

// ErrDecimalRange is wrapped by decimal conversions that overflow the type.
var ErrDecimalRange = errors.New("out of range")

// parseScaled parses a decimal literal ([+-]digits[.digits][e[+-]digits])
// into value×10^scale. More fractional digits than scale is an error.
func parseScaled(s string, scale int) (*big.Int, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return nil, errors.New("empty")
	}
	neg := false
	if t[0] == '+' || t[0] == '-' {
		neg = t[0] == '-'
		t = t[1:]
	}
	exp := 0
	if i := strings.IndexAny(t, "eE"); i >= 0 {
		e, err := strconv.Atoi(t[i+1:])
		if err != nil || e > 1000 || e < -1000 {
			return nil, errors.New("bad exponent")
		}
		exp = e
		t = t[:i]
	}
	intPart, frac, _ := strings.Cut(t, ".")
	if intPart == "" && frac == "" {
		return nil, errors.New("no digits")
	}
	for _, part := range []string{intPart, frac} {
		for i := 0; i < len(part); i++ {
			if part[i] < '0' || part[i] > '9' {
				return nil, errors.New("not a number")
			}
		}
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	// value = digits × 10^(exp - len(frac)); scaled = value × 10^scale.
	shift := exp - len(frac) + scale
	if digits == "" {
		return new(big.Int), nil
	}
	if shift < 0 {
		// Only trailing zeros may be dropped.
		cut := len(digits) + shift
		if cut < 0 {
			cut = 0
		}
		if strings.TrimRight(digits[cut:], "0") != "" {
			return nil, fmt.Errorf("more than %d digits after the decimal point", scale)
		}
		digits = digits[:cut]
		shift = 0
	}
	if len(digits)+shift > 80 {
		return nil, ErrDecimalRange
	}
	v, ok := new(big.Int).SetString(digits, 10)
	if !ok {
		return nil, errors.New("not a number")
	}
	if shift > 0 {
		v.Mul(v, new(big.Int).Exp(bigTen, big.NewInt(int64(shift)), nil))
	}
	if neg {
		v.Neg(v)
	}
	return v, nil
}

// ParseNumeric parses a NUMERIC literal, checking range and scale.
func ParseNumeric(s string) (decimal128.Num, error) {
	v, err := parseScaled(s, NumericScale)
	if err == nil {
		return numericFromScaled(v)
	}
	return decimal128.Num{}, fmt.Errorf("invalid NUMERIC %q: %w", s, err)
}

// ParseBigNumeric parses a BIGNUMERIC literal, checking range and scale.
func ParseBigNumeric(s string) (decimal256.Num, error) {
	v, err := parseScaled(s, BigNumericScale)
	if err == nil {
		return bigNumericFromScaled(v)
	}
	return decimal256.Num{}, fmt.Errorf("invalid BIGNUMERIC %q: %w", s, err)
}

func numericFromScaled(v *big.Int) (decimal128.Num, error) {
	if new(big.Int).Abs(v).Cmp(numericLimit) >= 0 {
		return decimal128.Num{}, fmt.Errorf("NUMERIC %s: %w", scaledString(v, NumericScale), ErrDecimalRange)
	}
	return decimal128.FromBigInt(v), nil
}

func bigNumericFromScaled(v *big.Int) (decimal256.Num, error) {
	if v.Cmp(bigNumMax) > 0 || v.Cmp(bigNumMin) < 0 {
		return decimal256.Num{}, fmt.Errorf("BIGNUMERIC %s: %w", scaledString(v, BigNumericScale), ErrDecimalRange)
	}
	// decimal256.FromBigInt cannot take -2^255: build the two's complement
	// words directly.
	m := new(big.Int).Set(v)
	if m.Sign() < 0 {
		m.Add(m, two256)
	}
	var buf [32]byte
	m.FillBytes(buf[:])
	return decimal256.New(binary.BigEndian.Uint64(buf[0:]), binary.BigEndian.Uint64(buf[8:]),
		binary.BigEndian.Uint64(buf[16:]), binary.BigEndian.Uint64(buf[24:])), nil
}

var two256 = new(big.Int).Lsh(big.NewInt(1), 256)

// scaledString formats value×10^-scale for messages.
func scaledString(v *big.Int, scale int) string {
	s := new(big.Int).Abs(v).String()
	for len(s) <= scale {
		s = "0" + s
	}
	out := s[:len(s)-scale] + "." + s[len(s)-scale:]
	out = strings.TrimRight(strings.TrimRight(out, "0"), ".")
	if v.Sign() < 0 {
		out = "-" + out
	}
	return out
}

// NumericFromInt converts an integer to NUMERIC (always in range).
func NumericFromInt(v int64) decimal128.Num {
	return decimal128.FromI64(v).Mul(decimal128.GetScaleMultiplier(NumericScale))
}

// NumericFromUint converts an unsigned integer to NUMERIC.
func NumericFromUint(v uint64) decimal128.Num {
	return decimal128.FromU64(v).Mul(decimal128.GetScaleMultiplier(NumericScale))
}

// BigNumericFromInt converts an integer to BIGNUMERIC.
func BigNumericFromInt(v int64) decimal256.Num {
	return decimal256.FromI64(v).Mul(decimal256.GetScaleMultiplier(BigNumericScale))
}

// BigNumericFromUint converts an unsigned integer to BIGNUMERIC.
func BigNumericFromUint(v uint64) decimal256.Num {
	return decimal256.FromU64(v).Mul(decimal256.GetScaleMultiplier(BigNumericScale))
}

// floatScaled converts a double to value×10^scale: the shortest decimal
// that round-trips (so 0.1 is 0.1, not 0.1000000000000000055511151231257827),
// rounded half away from zero to the scale when it has more digits (a double
// has no exact decimal value, so rounding rather than rejecting is the
// useful reading).
func floatScaled(f float64, scale int) (*big.Int, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("%v is not a number BigQuery can store", f)
	}
	if v, err := parseScaled(strconv.FormatFloat(f, 'f', -1, 64), scale); err == nil {
		return v, nil
	}
	bf := new(big.Float).SetPrec(1024).SetFloat64(f)
	bf.Mul(bf, new(big.Float).SetPrec(1024).SetInt(new(big.Int).Exp(bigTen, big.NewInt(int64(scale)), nil)))
	half := big.NewFloat(0.5)
	if f < 0 {
		half.Neg(half)
	}
	bf.Add(bf, half)
	v, _ := bf.Int(nil) // truncates toward zero: with ±0.5 added, rounds half away
	return v, nil
}

// NumericFromFloat converts a double to NUMERIC.
func NumericFromFloat(f float64) (decimal128.Num, error) {
	v, err := floatScaled(f, NumericScale)
	if err != nil {
		return decimal128.Num{}, fmt.Errorf("invalid NUMERIC: %w", err)
	}
	return numericFromScaled(v)
}

// BigNumericFromFloat converts a double to BIGNUMERIC.
func BigNumericFromFloat(f float64) (decimal256.Num, error) {
	v, err := floatScaled(f, BigNumericScale)
	if err != nil {
		return decimal256.Num{}, fmt.Errorf("invalid BIGNUMERIC: %w", err)
	}
	return bigNumericFromScaled(v)
}

// leBytesToBig reads BigDecimalByteStringEncoder's two's-complement
// little-endian integer.
func leBytesToBig(b []byte) *big.Int {
	be := make([]byte, len(b))
	for i := range b {
		be[len(b)-1-i] = b[i]
	}
	v := new(big.Int).SetBytes(be)
	if len(b) > 0 && b[len(b)-1]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return v
}

// NumericFromBytes decodes the byte encoding of NUMERIC (value×10^9 as a
// two's-complement little-endian integer), checking range.
func NumericFromBytes(b []byte) (decimal128.Num, error) {
	if len(b) == 0 {
		return decimal128.Num{}, nil
	}
	if len(b) <= 8 {
		var u uint64
		for i := len(b) - 1; i >= 0; i-- {
			u = u<<8 | uint64(b[i])
		}
		shift := 64 - 8*uint(len(b))
		return decimal128.FromI64(int64(u<<shift) >> shift), nil // |v| < 2^63 < 10^38
	}
	return numericFromScaled(leBytesToBig(b))
}

// BigNumericFromBytes decodes the byte encoding of BIGNUMERIC (value×10^38).
func BigNumericFromBytes(b []byte) (decimal256.Num, error) {
	if len(b) > 64 {
		return decimal256.Num{}, fmt.Errorf("BIGNUMERIC encoding of %d bytes: %w", len(b), ErrDecimalRange)
	}
	return bigNumericFromScaled(leBytesToBig(b))
}

// NumericBytes encodes a NUMERIC as BigDecimalByteStringEncoder does (for
// tests and tools).
func NumericBytes(v *big.Int) []byte { return bigToLE(v) }

func bigToLE(v *big.Int) []byte {
	n := v.BitLen()/8 + 1
	m := new(big.Int).Set(v)
	if v.Sign() < 0 {
		m.Add(m, new(big.Int).Lsh(big.NewInt(1), uint(8*n)))
	}
	be := m.FillBytes(make([]byte, n))
	out := make([]byte, n)
	for i := range be {
		out[n-1-i] = be[i]
	}
	return out
}

// ParseInterval parses an INTERVAL value: BigQuery's canonical format
// '[-]Y-M [-]D [-]H:M:S[.F]' (any leading part may be omitted from the
// left: 'D H:M:S', 'H:M:S') or ISO 8601 'P[nY][nM][nD][T[nH][nM][n[.f]S]]'.
func ParseInterval(s string) (arrow.MonthDayNanoInterval, error) {
	t := strings.TrimSpace(s)
	var iv arrow.MonthDayNanoInterval
	var err error
	if strings.HasPrefix(t, "P") || strings.HasPrefix(t, "-P") {
		iv, err = parseISOInterval(t)
	} else {
		iv, err = parseCanonicalInterval(t)
	}
	if err != nil {
		return iv, fmt.Errorf("invalid INTERVAL %q", s)
	}
	return iv, nil
}

func parseCanonicalInterval(t string) (arrow.MonthDayNanoInterval, error) {
	var iv arrow.MonthDayNanoInterval
	parts := strings.Fields(t)
	if len(parts) == 0 || len(parts) > 3 {
		return iv, errors.New("bad")
	}
	signed := func(s string) (bool, string) {
		if strings.HasPrefix(s, "-") {
			return true, s[1:]
		}
		return false, strings.TrimPrefix(s, "+")
	}
	var ym, d, hms string
	switch {
	case len(parts) == 3:
		ym, d, hms = parts[0], parts[1], parts[2]
	case len(parts) == 2 && strings.Contains(parts[1], ":"):
		d, hms = parts[0], parts[1]
	case len(parts) == 2:
		ym, d = parts[0], parts[1]
	case strings.Contains(parts[0], ":"):
		hms = parts[0]
	default:
		ym = parts[0]
	}
	if ym != "" {
		neg, ym := signed(ym)
		y, m, ok := strings.Cut(ym, "-")
		if !ok {
			return iv, errors.New("bad")
		}
		yy, err1 := strconv.ParseInt(y, 10, 32)
		mm, err2 := strconv.ParseInt(m, 10, 32)
		if err1 != nil || err2 != nil || yy < 0 || mm < 0 || yy > 10000 || mm > 120000 {
			return iv, errors.New("bad")
		}
		months := yy*12 + mm
		if neg {
			months = -months
		}
		iv.Months = int32(months)
	}
	if d != "" {
		neg, d := signed(d)
		dd, err := strconv.ParseInt(d, 10, 32)
		if err != nil || dd < 0 || dd > 3660000 {
			return iv, errors.New("bad")
		}
		if neg {
			dd = -dd
		}
		iv.Days = int32(dd)
	}
	rest := []string{}
	if hms != "" {
		rest = append(rest, hms)
	}
	if len(rest) == 1 {
		neg, hms := signed(rest[0])
		hs := strings.Split(hms, ":")
		if len(hs) != 3 {
			return iv, errors.New("bad")
		}
		h, err1 := strconv.ParseInt(hs[0], 10, 64)
		m, err2 := strconv.ParseInt(hs[1], 10, 64)
		secStr, frac, _ := strings.Cut(hs[2], ".")
		sec, err3 := strconv.ParseInt(secStr, 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || h < 0 || m < 0 || sec < 0 || h > 87840000 || m > 59 || sec > 59 || len(frac) > 9 {
			return iv, errors.New("bad")
		}
		var nanos int64
		for k := 0; k < 9; k++ {
			nanos *= 10
			if k < len(frac) {
				if frac[k] < '0' || frac[k] > '9' {
					return iv, errors.New("bad")
				}
				nanos += int64(frac[k] - '0')
			}
		}
		total := ((h*60+m)*60+sec)*1e9 + nanos
		if neg {
			total = -total
		}
		iv.Nanoseconds = total
	}
	return iv, nil
}

func parseISOInterval(t string) (arrow.MonthDayNanoInterval, error) {
	var iv arrow.MonthDayNanoInterval
	neg := strings.HasPrefix(t, "-")
	t = strings.TrimPrefix(strings.TrimPrefix(t, "-"), "P")
	if t == "" {
		return iv, errors.New("bad")
	}
	inTime := false
	var months, days, nanos int64
	for len(t) > 0 {
		if t[0] == 'T' {
			if inTime {
				return iv, errors.New("bad")
			}
			inTime = true
			t = t[1:]
			continue
		}
		j := 0
		for j < len(t) && (t[j] == '-' || t[j] == '.' || (t[j] >= '0' && t[j] <= '9')) {
			j++
		}
		if j == 0 || j == len(t) {
			return iv, errors.New("bad")
		}
		num, unit := t[:j], t[j]
		t = t[j+1:]
		if unit == 'S' && inTime {
			f, err := strconv.ParseFloat(num, 64)
			if err != nil || math.Abs(f) > 1e12 {
				return iv, errors.New("bad")
			}
			nanos += int64(math.Round(f * 1e9))
			continue
		}
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || n > 1e9 || n < -1e9 {
			return iv, errors.New("bad")
		}
		switch {
		case !inTime && unit == 'Y':
			months += 12 * n
		case !inTime && unit == 'M':
			months += n
		case !inTime && unit == 'W':
			days += 7 * n
		case !inTime && unit == 'D':
			days += n
		case inTime && unit == 'H':
			nanos += n * 3600e9
		case inTime && unit == 'M':
			nanos += n * 60e9
		default:
			return iv, errors.New("bad")
		}
	}
	if neg {
		months, days, nanos = -months, -days, -nanos
	}
	if months > math.MaxInt32 || months < math.MinInt32 || days > math.MaxInt32 || days < math.MinInt32 {
		return iv, errors.New("bad")
	}
	iv.Months, iv.Days, iv.Nanoseconds = int32(months), int32(days), nanos
	return iv, nil
}

// constrainScaled applies a parameterized NUMERIC(P, S) / BIGNUMERIC(P, S)
// column's precision and scale to a value scaled by 10^typeScale: the value
// is rounded half away from zero to S digits after the point (as BigQuery
// does when it assigns to a parameterized type), and more than P-S digits
// before the point is an error.
func constrainScaled(v *big.Int, typeScale, prec, scale int) (*big.Int, error) {
	if scale < typeScale {
		div := new(big.Int).Exp(bigTen, big.NewInt(int64(typeScale-scale)), nil)
		q, r := new(big.Int).QuoRem(v, div, new(big.Int))
		r2 := new(big.Int).Mul(new(big.Int).Abs(r), big.NewInt(2))
		if r2.Cmp(div) >= 0 {
			if v.Sign() < 0 {
				q.Sub(q, big.NewInt(1))
			} else {
				q.Add(q, big.NewInt(1))
			}
		}
		v = q.Mul(q, div)
	}
	if prec > 0 {
		limit := new(big.Int).Exp(bigTen, big.NewInt(int64(prec-scale+typeScale)), nil)
		if new(big.Int).Abs(v).Cmp(limit) >= 0 {
			return nil, fmt.Errorf("value %s does not fit precision %d and scale %d", scaledString(v, typeScale), prec, scale)
		}
	}
	return v, nil
}

// ConstrainNumeric applies a NUMERIC(P, S) column's parameters (P = 0:
// none).
func ConstrainNumeric(v decimal128.Num, prec, scale int) (decimal128.Num, error) {
	if prec == 0 && scale == 0 {
		return v, nil
	}
	b, err := constrainScaled(v.BigInt(), NumericScale, prec, scale)
	if err != nil {
		return decimal128.Num{}, err
	}
	return numericFromScaled(b)
}

// ConstrainBigNumeric applies a BIGNUMERIC(P, S) column's parameters.
func ConstrainBigNumeric(v decimal256.Num, prec, scale int) (decimal256.Num, error) {
	if prec == 0 && scale == 0 {
		return v, nil
	}
	b, err := constrainScaled(v.BigInt(), BigNumericScale, prec, scale)
	if err != nil {
		return decimal256.Num{}, err
	}
	return bigNumericFromScaled(b)
}
