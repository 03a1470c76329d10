package rows

import (
	"bytes"
	"math"
	"math/big"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
)

// Bounds of BigQuery's TIMESTAMP, in microseconds since the Unix epoch:
// 0001-01-01 00:00:00 and 9999-12-31 23:59:59.999999 UTC.
const (
	minMicros = -62135596800000000
	maxMicros = 253402300799999999
)

// daysFromCivil returns the days since 1970-01-01 of a proleptic Gregorian date
// (Howard Hinnant's algorithm).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

func daysIn(y, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// digits parses exactly n decimal digits at s[i:].
func digits(s []byte, i, n int) (int, bool) {
	if i+n > len(s) {
		return 0, false
	}
	v := 0
	for _, c := range s[i : i+n] {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

// parseDate parses YYYY-MM-DD (the month and day may have one digit, as
// BigQuery accepts) and returns the rest of s.
func parseDate(s []byte) (y, m, d int, rest []byte, ok bool) {
	y, ok = digits(s, 0, 4)
	if !ok || len(s) < 5 || s[4] != '-' || y < 1 {
		return 0, 0, 0, nil, false
	}
	i := 5
	m, i, ok = oneOrTwo(s, i)
	if !ok || i >= len(s) || s[i] != '-' || m < 1 || m > 12 {
		return 0, 0, 0, nil, false
	}
	d, i, ok = oneOrTwo(s, i+1)
	if !ok || d < 1 || d > daysIn(y, m) {
		return 0, 0, 0, nil, false
	}
	return y, m, d, s[i:], true
}

func oneOrTwo(s []byte, i int) (int, int, bool) {
	if v, ok := digits(s, i, 2); ok {
		return v, i + 2, true
	}
	if v, ok := digits(s, i, 1); ok {
		return v, i + 1, true
	}
	return 0, i, false
}

// parseClock parses HH:MM:SS[.f{1,9}] and returns micros of the day and the
// rest of s. More than 6 fractional digits are accepted only as zeros.
func parseClock(s []byte) (micros int64, rest []byte, reason string) {
	h, i, ok := oneOrTwo(s, 0)
	if !ok || i >= len(s) || s[i] != ':' || h > 23 {
		return 0, nil, "invalid time of day"
	}
	mi, ok := digits(s, i+1, 2)
	if !ok || mi > 59 {
		return 0, nil, "invalid time of day"
	}
	i += 3
	sec := 0
	if i < len(s) && s[i] == ':' {
		sec, ok = digits(s, i+1, 2)
		if !ok || sec > 59 {
			return 0, nil, "invalid time of day"
		}
		i += 3
	}
	var frac int64
	if i < len(s) && s[i] == '.' {
		i++
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			if n < 6 {
				frac = frac*10 + int64(s[i]-'0')
			} else if s[i] != '0' {
				return 0, nil, "sub-microsecond precision is not supported"
			}
			n++
			i++
		}
		if n == 0 || n > 12 {
			return 0, nil, "invalid fractional seconds"
		}
		for ; n < 6; n++ {
			frac *= 10
		}
	}
	return ((int64(h)*60+int64(mi))*60+int64(sec))*1e6 + frac, s[i:], ""
}

func parseDateOnly(s []byte) (int32, string) {
	y, m, d, rest, ok := parseDate(s)
	if !ok || len(rest) != 0 {
		return 0, "invalid DATE " + quote(s) + " (want YYYY-MM-DD)"
	}
	return int32(daysFromCivil(y, m, d)), ""
}

func parseTimeOnly(s []byte) (int64, string) {
	us, rest, reason := parseClock(s)
	if reason != "" || len(rest) != 0 {
		return 0, "invalid TIME " + quote(s) + " (want HH:MM:SS[.ffffff])"
	}
	return packTime(us), ""
}

// packTime is CivilTimeEncoder's TIME layout: hour<<32 | min<<26 | sec<<20 | micros.
func packTime(us int64) int64 {
	sec := us / 1e6
	return (sec/3600)<<32 | (sec/60%60)<<26 | (sec%60)<<20 | us%1e6
}

func parseDatetime(s []byte) (int64, string) {
	y, m, d, rest, ok := parseDate(s)
	if !ok || (len(rest) > 0 && rest[0] != 'T' && rest[0] != 't' && rest[0] != ' ') {
		return 0, "invalid DATETIME " + quote(s) + " (want YYYY-MM-DD[ T]HH:MM:SS[.ffffff])"
	}
	var us int64
	if len(rest) > 0 {
		var reason string
		us, rest, reason = parseClock(rest[1:])
		if reason != "" || len(rest) != 0 {
			return 0, "invalid DATETIME " + quote(s) + " (want YYYY-MM-DD[ T]HH:MM:SS[.ffffff])"
		}
	}
	return int64(y)<<46 | int64(m)<<42 | int64(d)<<37 | packTime(us), ""
}

// parseTimestamp parses a TIMESTAMP: an integer of epoch microseconds (a
// JSON number, or a string of digits), or a civil date-time with an optional
// zone (Z, UTC, +HH[:MM]); no zone means UTC.
func parseTimestamp(s []byte, isNum bool) (int64, string) {
	if isNum || isInteger(s) {
		v, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil {
			return 0, "invalid TIMESTAMP " + quote(s) + " (a number is epoch microseconds and must be an integer)"
		}
		if v < minMicros || v > maxMicros {
			return 0, "TIMESTAMP out of range " + quote(s)
		}
		return v, ""
	}
	const want = " (want RFC 3339 or YYYY-MM-DD HH:MM:SS[.ffffff][+HH:MM])"
	y, m, d, rest, ok := parseDate(s)
	if !ok {
		return 0, "invalid TIMESTAMP " + quote(s) + want
	}
	var us int64
	if len(rest) > 0 && (rest[0] == 'T' || rest[0] == 't' || rest[0] == ' ') && len(rest) > 1 && rest[1] >= '0' && rest[1] <= '9' {
		var reason string
		us, rest, reason = parseClock(rest[1:])
		if reason != "" {
			return 0, "invalid TIMESTAMP " + quote(s) + want
		}
	}
	if len(rest) > 0 && rest[0] == ' ' {
		rest = rest[1:]
	}
	var offset int64 // seconds east of UTC
	switch {
	case len(rest) == 0:
	case string(rest) == "Z" || string(rest) == "z" || string(rest) == "UTC":
	case rest[0] == '+' || rest[0] == '-':
		h, ok := digits(rest, 1, 2)
		if !ok || h > 14 {
			return 0, "invalid TIMESTAMP " + quote(s) + want
		}
		mi := 0
		switch tail := rest[3:]; {
		case len(tail) == 0:
		case len(tail) == 3 && tail[0] == ':':
			mi, ok = digits(tail, 1, 2)
		case len(tail) == 2:
			mi, ok = digits(tail, 0, 2)
		default:
			ok = false
		}
		if !ok || mi > 59 {
			return 0, "invalid TIMESTAMP " + quote(s) + want
		}
		offset = int64(h*3600 + mi*60)
		if rest[0] == '-' {
			offset = -offset
		}
	default:
		return 0, "invalid TIMESTAMP " + quote(s) + want
	}
	v := daysFromCivil(y, m, d)*86400e6 + us - offset*1e6
	if v < minMicros || v > maxMicros {
		return 0, "TIMESTAMP out of range " + quote(s)
	}
	return v, ""
}

func isInteger(s []byte) bool {
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	if len(s) == 0 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

var (
	numericMax    = new(big.Int).Sub(new(big.Int).Exp(big.NewInt(10), big.NewInt(38), nil), big.NewInt(1)) // 10^38-1 at scale 9
	bigNumericMax = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 255), big.NewInt(1))                  // 2^255-1 at scale 38
	bigNumericMin = new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), 255))
)

// appendDecimal appends a NUMERIC (scale 9) or BIGNUMERIC (scale 38) value
// as a length-delimited two's-complement little-endian integer of
// value×10^scale, as BigDecimalByteStringEncoder does.
func appendDecimal(dst, s []byte, bignum bool, fail func(string) error) ([]byte, error) {
	typ, scale := "NUMERIC", 9
	if bignum {
		typ, scale = "BIGNUMERIC", 38
	}
	bad := func(why string) ([]byte, error) { return dst, fail("invalid " + typ + " " + quote(s) + why) }
	i := 0
	neg := false
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		neg = s[i] == '-'
		i++
	}
	coeff := make([]byte, 0, 40)
	nd, frac := 0, 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		coeff = append(coeff, s[i])
		nd++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			coeff = append(coeff, s[i])
			nd++
			frac++
		}
	}
	if nd == 0 {
		return bad("")
	}
	exp := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		j := i
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			i++
		}
		k := i
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		}
		if i == k || i-k > 4 {
			return bad("")
		}
		e, _ := strconv.Atoi(string(s[j:i]))
		exp = e
	}
	if i != len(s) {
		return bad("")
	}
	// Strip leading zeros.
	for len(coeff) > 1 && coeff[0] == '0' {
		coeff = coeff[1:]
	}
	shift := exp - frac + scale // scaled = coeff * 10^shift
	for shift < 0 {
		if coeff[len(coeff)-1] != '0' {
			return bad(" (more fractional digits than scale " + strconv.Itoa(scale) + ")")
		}
		coeff = coeff[:len(coeff)-1]
		shift++
		if len(coeff) == 0 {
			coeff = append(coeff, '0')
			shift = 0
		}
	}
	if coeff[0] != '0' && len(coeff)+shift > 78 {
		return bad(" (out of range)")
	}
	if coeff[0] == '0' {
		shift = 0
	}
	if len(coeff)+shift <= 18 { // fits int64
		var v int64
		for _, c := range coeff {
			v = v*10 + int64(c-'0')
		}
		for range shift {
			v *= 10
		}
		if neg {
			v = -v
		}
		return appendTwosInt64(dst, v), nil
	}
	v, _ := new(big.Int).SetString(string(coeff), 10)
	if shift > 0 {
		v.Mul(v, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(shift)), nil))
	}
	if neg {
		v.Neg(v)
	}
	if bignum {
		if v.Cmp(bigNumericMax) > 0 || v.Cmp(bigNumericMin) < 0 {
			return bad(" (out of range)")
		}
	} else if v.CmpAbs(numericMax) > 0 {
		return bad(" (out of range)")
	}
	return appendTwosBig(dst, v), nil
}

// appendTwosInt64 appends v as minimal two's-complement little-endian bytes.
func appendTwosInt64(dst []byte, v int64) []byte {
	var b [8]byte
	n := 8
	for i := range 8 {
		b[i] = byte(v >> (8 * i))
	}
	for n > 1 {
		top, next := b[n-1], b[n-2]
		if (top == 0 && next&0x80 == 0) || (top == 0xff && next&0x80 != 0) {
			n--
			continue
		}
		break
	}
	return protowire.AppendBytes(dst, b[:n])
}

func appendTwosBig(dst []byte, v *big.Int) []byte {
	var be []byte
	if v.Sign() >= 0 {
		be = v.Bytes()
		if len(be) == 0 || be[0]&0x80 != 0 {
			be = append([]byte{0}, be...)
		}
	} else {
		abs := new(big.Int).Neg(v)
		abs.Sub(abs, big.NewInt(1))
		n := abs.BitLen()/8 + 1
		t := new(big.Int).Lsh(big.NewInt(1), uint(8*n))
		t.Add(t, v)
		be = t.FillBytes(make([]byte, n))
	}
	le := make([]byte, len(be))
	for i, c := range be {
		le[len(be)-1-i] = c
	}
	return protowire.AppendBytes(dst, le)
}

// isDecimal reports whether s is an optionally signed decimal number with
// an optional fraction and exponent ("1700000000", "-1.5", "1.7e9").
func isDecimal(s []byte) bool {
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	digits, dot, exp := 0, false, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' && !dot && !exp:
			dot = true
		case (c == 'e' || c == 'E') && !exp && digits > 0:
			exp = true
			if i+1 < len(s) && (s[i+1] == '-' || s[i+1] == '+') {
				i++
			}
			if i+1 >= len(s) {
				return false
			}
		default:
			return false
		}
	}
	return digits > 0
}

// parseEpochSeconds parses a decimal number of seconds since the Unix epoch
// (tabledata.insertAll's TIMESTAMP number) to microseconds; digits past the
// microsecond are dropped. Without an exponent the conversion is exact.
func parseEpochSeconds(s []byte) (int64, string) {
	bad := "invalid TIMESTAMP " + quote(s) + " (a number is seconds since the epoch)"
	if !isDecimal(s) {
		return 0, bad
	}
	for _, c := range s {
		if c == 'e' || c == 'E' {
			f, err := strconv.ParseFloat(string(s), 64)
			if err != nil || math.IsInf(f, 0) || math.Abs(f) > 1e12 {
				return 0, "TIMESTAMP out of range " + quote(s)
			}
			return checkMicros(int64(math.Round(f*1e6)), s)
		}
	}
	orig, neg := s, false
	if s[0] == '-' || s[0] == '+' {
		neg = s[0] == '-'
		s = s[1:]
	}
	intPart, frac, _ := strings.Cut(string(s), ".")
	if len(intPart) > 12 {
		return 0, "TIMESTAMP out of range " + quote(orig)
	}
	var sec int64
	for _, c := range []byte(intPart) {
		sec = sec*10 + int64(c-'0')
	}
	var us int64
	for i := 0; i < 6; i++ {
		us *= 10
		if i < len(frac) {
			us += int64(frac[i] - '0')
		}
	}
	v := sec*1e6 + us
	if neg {
		v = -v
	}
	return checkMicros(v, orig)
}

func checkMicros(v int64, s []byte) (int64, string) {
	if v < minMicros || v > maxMicros {
		return 0, "TIMESTAMP out of range " + quote(s)
	}
	return v, ""
}

// truncateFraction drops the fraction digits of a time string past the
// sixth ("12:00:00.123456789Z" -> "12:00:00.123456Z"); s is not modified.
func truncateFraction(s []byte) []byte {
	dot := bytes.IndexByte(s, '.')
	if dot < 0 {
		return s
	}
	n := 0
	for dot+1+n < len(s) && s[dot+1+n] >= '0' && s[dot+1+n] <= '9' {
		n++
	}
	if n <= 6 {
		return s
	}
	out := make([]byte, 0, len(s)-(n-6))
	out = append(out, s[:dot+7]...)
	return append(out, s[dot+1+n:]...)
}
