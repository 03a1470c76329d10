package rowjson

import (
	"math"
	"math/big"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// The text forms of BigQuery values, as the REST API writes them in
// tabledata.list cells and as the Read API's Avro format carries DATETIME and
// INTERVAL. Each Append function appends to dst and returns the extended
// slice; none escapes for JSON (none of the forms needs escaping).

// AppendDate appends a DATE given as days since 1970-01-01: YYYY-MM-DD.
func AppendDate(dst []byte, days int32) []byte {
	t := time.Unix(int64(days)*86400, 0).UTC()
	return appendYMD(dst, t)
}

// AppendTime appends a TIME given as microseconds since midnight:
// HH:MM:SS, followed by .ffffff when the microseconds are not zero.
func AppendTime(dst []byte, micros int64) []byte {
	sec := micros / 1e6
	dst = append2(dst, int(sec/3600))
	dst = append(dst, ':')
	dst = append2(dst, int(sec/60%60))
	dst = append(dst, ':')
	dst = append2(dst, int(sec%60))
	return appendMicros(dst, micros%1e6)
}

// AppendDatetime appends a DATETIME given as microseconds since
// 1970-01-01T00:00:00 (no time zone): YYYY-MM-DDTHH:MM:SS, followed by
// .ffffff when the microseconds are not zero.
func AppendDatetime(dst []byte, micros int64) []byte {
	t := time.UnixMicro(micros).UTC()
	dst = appendYMD(dst, t)
	dst = append(dst, 'T')
	dst = append2(dst, t.Hour())
	dst = append(dst, ':')
	dst = append2(dst, t.Minute())
	dst = append(dst, ':')
	dst = append2(dst, t.Second())
	return appendMicros(dst, int64(t.Nanosecond()/1000))
}

// AppendTimestampISO appends a TIMESTAMP as RFC 3339 in UTC with
// microseconds when not zero: 2006-01-02T15:04:05.999999Z. (RANGE<TIMESTAMP>
// and people-facing output use it; tabledata.list cells use
// AppendTimestampCell.)
func AppendTimestampISO(dst []byte, micros int64) []byte {
	dst = AppendDatetime(dst, micros)
	return append(dst, 'Z')
}

// AppendTimestampCell appends a TIMESTAMP as a tabledata.list cell carries
// it. With int64 set (formatOptions.useInt64Timestamp=true, which the Go
// client always sends) it is the microseconds since the epoch in decimal.
// Otherwise it is the legacy form: seconds since the epoch as a
// floating-point number in Java's Double.toString notation ("1.7E9",
// "1.234567891234E9", "0.0"), exact to the microsecond.
func AppendTimestampCell(dst []byte, micros int64, int64Form bool) []byte {
	if int64Form {
		return strconv.AppendInt(dst, micros, 10)
	}
	return appendJavaDecimal(dst, micros, 6)
}

// AppendFloat appends a FLOAT64 as BigQuery's REST API writes it: the
// shortest decimal that reads back to the same float64, laid out as Java's
// Double.toString does ("1.5", "100.0", "1.0E20", "1.0E-5"), and "NaN",
// "Infinity", "-Infinity".
func AppendFloat(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	case f == 0:
		if math.Signbit(f) {
			return append(dst, "-0.0"...)
		}
		return append(dst, "0.0"...)
	}
	// Shortest round-trip digits: d.ddddde±xx.
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
	neg := e[0] == '-'
	if neg {
		e = e[1:]
	}
	i := 0
	for i < len(e) && e[i] != 'e' {
		i++
	}
	digits := make([]byte, 0, 20)
	for _, c := range e[:i] {
		if c != '.' {
			digits = append(digits, c)
		}
	}
	exp, _ := strconv.Atoi(string(e[i+1:]))
	return appendJavaLayout(dst, neg, digits, exp)
}

// AppendDecimal appends the decimal value unscaled×10^-scale in plain
// notation without trailing fractional zeros ("1.5", "-0.000000001",
// "123"), as BigQuery writes NUMERIC and BIGNUMERIC.
func AppendDecimal(dst []byte, unscaled *big.Int, scale int) []byte {
	if unscaled.Sign() == 0 {
		return append(dst, '0')
	}
	start := len(dst)
	dst = unscaled.Append(dst, 10)
	digits := dst[start:]
	neg := digits[0] == '-'
	if neg {
		digits = digits[1:]
		start++
	}
	// Trim trailing zeros of the fraction.
	frac := scale
	for frac > 0 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		frac--
	}
	dst = dst[:start+len(digits)]
	if frac == 0 {
		return dst
	}
	if len(digits) > frac {
		// Insert the point.
		dst = append(dst, 0)
		pos := start + len(digits) - frac
		copy(dst[pos+1:], dst[pos:])
		dst[pos] = '.'
		return dst
	}
	// 0.000ddd
	pad := frac - len(digits)
	tmp := append([]byte(nil), digits...)
	dst = dst[:start]
	dst = append(dst, '0', '.')
	for range pad {
		dst = append(dst, '0')
	}
	return append(dst, tmp...)
}

// AppendInterval appends an INTERVAL in BigQuery's canonical form
// "Y-M D H:M:S[.F]": years and months share one sign, days have their own,
// and the time part shares one sign; the fraction has no trailing zeros.
// Months are reduced to years; hours are not reduced to days.
func AppendInterval(dst []byte, iv arrow.MonthDayNanoInterval) []byte {
	months := int64(iv.Months)
	if months < 0 {
		dst = append(dst, '-')
		months = -months
	}
	dst = strconv.AppendInt(dst, months/12, 10)
	dst = append(dst, '-')
	dst = strconv.AppendInt(dst, months%12, 10)
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, int64(iv.Days), 10)
	dst = append(dst, ' ')
	ns := iv.Nanoseconds
	// |math.MinInt64| does not fit; compute on unsigned magnitudes.
	mag := uint64(ns)
	if ns < 0 {
		dst = append(dst, '-')
		mag = uint64(-(ns + 1)) + 1
	}
	secs := mag / 1e9
	dst = strconv.AppendUint(dst, secs/3600, 10)
	dst = append(dst, ':')
	dst = strconv.AppendUint(dst, secs/60%60, 10)
	dst = append(dst, ':')
	dst = strconv.AppendUint(dst, secs%60, 10)
	if sub := mag % 1e9; sub != 0 {
		var buf [9]byte
		for i := 8; i >= 0; i-- {
			buf[i] = byte('0' + sub%10)
			sub /= 10
		}
		n := 9
		for buf[n-1] == '0' {
			n--
		}
		dst = append(dst, '.')
		dst = append(dst, buf[:n]...)
	}
	return dst
}

func appendYMD(dst []byte, t time.Time) []byte {
	y := t.Year()
	dst = append(dst, byte('0'+y/1000%10), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-')
	dst = append2(dst, int(t.Month()))
	dst = append(dst, '-')
	return append2(dst, t.Day())
}

func append2(dst []byte, v int) []byte {
	return append(dst, byte('0'+v/10%10), byte('0'+v%10))
}

func appendMicros(dst []byte, us int64) []byte {
	if us == 0 {
		return dst
	}
	return append(dst, '.', byte('0'+us/100000), byte('0'+us/10000%10), byte('0'+us/1000%10),
		byte('0'+us/100%10), byte('0'+us/10%10), byte('0'+us%10))
}

// appendJavaDecimal appends v×10^-scale the way Java's Double.toString
// lays a double out, using the exact decimal digits of the value rather than
// a rounded double.
func appendJavaDecimal(dst []byte, v int64, scale int) []byte {
	if v == 0 {
		return append(dst, "0.0"...)
	}
	mag := uint64(v)
	if v < 0 {
		mag = uint64(-(v + 1)) + 1
	}
	digits := strconv.AppendUint(nil, mag, 10)
	return appendJavaLayout(dst, v < 0, digits, len(digits)-scale-1)
}

// appendJavaLayout appends the non-zero number d1.d2d3...×10^exp (digits
// are its significant decimal digits, d1 != 0) as Java's Double.toString
// does: plain notation with at least one fractional digit for
// 10^-3 <= |x| < 10^7, otherwise d.dddE±n.
func appendJavaLayout(dst []byte, neg bool, digits []byte, exp int) []byte {
	if neg {
		dst = append(dst, '-')
	}
	// Trailing zeros carry no precision in either layout.
	sig := digits
	for len(sig) > 1 && sig[len(sig)-1] == '0' {
		sig = sig[:len(sig)-1]
	}
	if exp >= -3 && exp < 7 {
		if exp >= 0 {
			intPart := exp + 1
			for len(sig) < intPart {
				sig = append(sig, '0')
			}
			dst = append(dst, sig[:intPart]...)
			dst = append(dst, '.')
			if len(sig) == intPart {
				return append(dst, '0')
			}
			return append(dst, sig[intPart:]...)
		}
		dst = append(dst, '0', '.')
		for i := -1; i > exp; i-- {
			dst = append(dst, '0')
		}
		return append(dst, sig...)
	}
	dst = append(dst, sig[0], '.')
	if len(sig) == 1 {
		dst = append(dst, '0')
	} else {
		dst = append(dst, sig[1:]...)
	}
	dst = append(dst, 'E')
	return strconv.AppendInt(dst, int64(exp), 10)
}
