package filter

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

const (
	microsPerSecond = int64(1_000_000)
	microsPerDay    = 86_400 * microsPerSecond
	// minDate and maxDate bound DATE: 0001-01-01 and 9999-12-31.
	minDate = int64(-719162)
	maxDate = int64(2932896)
	// minMicros and maxMicros bound TIMESTAMP and DATETIME.
	minMicros = minDate * microsPerDay
	maxMicros = (maxDate+1)*microsPerDay - 1
)

// daysFromCivil returns days since 1970-01-01 of the proleptic Gregorian
// date y-m-d (Howard Hinnant's algorithm).
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := floorDiv(y, 400)
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// civilFromDays is the inverse of daysFromCivil.
func civilFromDays(z int64) (y, m, d int64) {
	z += 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	if mp < 10 {
		m = mp + 3
	} else {
		m = mp - 9
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

func daysIn(y, m int64) int64 {
	switch m {
	case 2:
		if (y%4 == 0 && y%100 != 0) || y%400 == 0 {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

var errBadFormat = errors.New("bad format")

// scanInt reads 1..maxDigits decimal digits at s[*p].
func scanInt(s string, p *int, maxDigits int) (int64, bool) {
	start := *p
	var v int64
	for *p < len(s) && *p-start < maxDigits && isDigit(s[*p]) {
		v = v*10 + int64(s[*p]-'0')
		*p++
	}
	return v, *p > start
}

// parseDatePart parses YYYY-[M]M-[D]D at s[*p].
func parseDatePart(s string, p *int) (int64, error) {
	y, ok := scanInt(s, p, 4)
	if !ok || *p >= len(s) || s[*p] != '-' {
		return 0, errBadFormat
	}
	*p++
	m, ok := scanInt(s, p, 2)
	if !ok || *p >= len(s) || s[*p] != '-' {
		return 0, errBadFormat
	}
	*p++
	d, ok := scanInt(s, p, 2)
	if !ok || y < 1 || m < 1 || m > 12 || d < 1 || d > daysIn(y, m) {
		return 0, errBadFormat
	}
	return daysFromCivil(y, m, d), nil
}

// parseTimePart parses [H]H:[M]M:[S]S[.F...] at s[*p], in µs.
func parseTimePart(s string, p *int) (int64, error) {
	h, ok := scanInt(s, p, 2)
	if !ok || *p >= len(s) || s[*p] != ':' {
		return 0, errBadFormat
	}
	*p++
	mi, ok := scanInt(s, p, 2)
	if !ok {
		return 0, errBadFormat
	}
	var sec int64
	if *p < len(s) && s[*p] == ':' {
		*p++
		if sec, ok = scanInt(s, p, 2); !ok {
			return 0, errBadFormat
		}
	}
	var frac int64
	if *p < len(s) && s[*p] == '.' {
		*p++
		start := *p
		digits := 0
		for *p < len(s) && isDigit(s[*p]) {
			if digits < 6 {
				frac = frac*10 + int64(s[*p]-'0')
			} else if s[*p] != '0' && digits >= 9 {
				return 0, errBadFormat
			}
			digits++
			*p++
		}
		if *p == start || digits > 9 {
			return 0, errBadFormat
		}
		for ; digits < 6; digits++ {
			frac *= 10
		}
	}
	if h > 23 || mi > 59 || sec > 59 {
		return 0, errBadFormat
	}
	return ((h*60+mi)*60+sec)*microsPerSecond + frac, nil
}

func parseDate(s string) (int64, error) {
	s = strings.TrimSpace(s)
	p := 0
	d, err := parseDatePart(s, &p)
	if err != nil || p != len(s) {
		return 0, fmt.Errorf("Invalid date: '%s'", s)
	}
	return d, nil
}

func parseTime(s string) (int64, error) {
	s = strings.TrimSpace(s)
	p := 0
	t, err := parseTimePart(s, &p)
	if err != nil || p != len(s) {
		return 0, fmt.Errorf("Invalid time: '%s'", s)
	}
	return t, nil
}

// parseDatetimeAt parses date[( |T)time] and returns µs and the offset
// after it.
func parseDatetimeAt(s string) (int64, int, error) {
	p := 0
	d, err := parseDatePart(s, &p)
	if err != nil {
		return 0, 0, err
	}
	us := d * microsPerDay
	if p < len(s) && (s[p] == ' ' || s[p] == 'T' || s[p] == 't') && p+1 < len(s) && isDigit(s[p+1]) {
		p++
		t, err := parseTimePart(s, &p)
		if err != nil {
			return 0, 0, err
		}
		us += t
	}
	return us, p, nil
}

func parseDatetime(s string) (int64, error) {
	s = strings.TrimSpace(s)
	us, p, err := parseDatetimeAt(s)
	if err != nil || p != len(s) {
		return 0, fmt.Errorf("Invalid datetime string \"%s\"", s)
	}
	return us, nil
}

// parseTimestamp parses a timestamp string with an optional time zone;
// without one, zone (nil: UTC) applies.
func parseTimestamp(s string, zone *time.Location) (int64, error) {
	s = strings.TrimSpace(s)
	bad := fmt.Errorf("Invalid timestamp: '%s'", s)
	us, p, err := parseDatetimeAt(s)
	if err != nil {
		return 0, bad
	}
	rest := strings.TrimSpace(s[p:])
	loc := zone
	if rest != "" {
		if loc, err = parseZone(rest); err != nil {
			return 0, bad
		}
	}
	out, err := localToUTC(us, loc)
	if err != nil || out < minMicros || out > maxMicros {
		return 0, bad
	}
	return out, nil
}

// parseZone accepts Z, UTC, ±H[H][:MM] and IANA names.
func parseZone(z string) (*time.Location, error) {
	if z == "" || z == "Local" || strings.Contains(z, "..") {
		return nil, errBadFormat
	}
	if z == "Z" || z == "z" || strings.EqualFold(z, "UTC") {
		return time.UTC, nil
	}
	if z[0] == '+' || z[0] == '-' {
		p := 1
		h, ok := scanInt(z, &p, 2)
		if !ok {
			return nil, errBadFormat
		}
		var m int64
		if p < len(z) && z[p] == ':' {
			p++
			if m, ok = scanInt(z, &p, 2); !ok {
				return nil, errBadFormat
			}
		} else if p+2 == len(z) {
			m, _ = scanInt(z, &p, 2)
		}
		if p != len(z) || h > 14 || m > 59 {
			return nil, errBadFormat
		}
		off := int(h*3600 + m*60)
		if z[0] == '-' {
			off = -off
		}
		return time.FixedZone(z, off), nil
	}
	return time.LoadLocation(z)
}

// localToUTC converts wall-clock µs in loc to UTC µs as GoogleSQL does
// (absl's TimeZone::At(civil).pre): a wall clock that exists once is that
// instant; one repeated by a transition (DST ends) is the earlier; one
// skipped (DST starts) is read with the offset before the transition, so
// 02:30 on a spring-forward day in New York is 02:30 EST = 03:30 EDT.
// (time.Date picks either offset in a gap.)
func localToUTC(us int64, loc *time.Location) (int64, error) {
	if loc == nil || loc == time.UTC {
		return us, nil
	}
	offAt := func(utc int64) int64 {
		_, off := time.UnixMicro(utc).In(loc).Zone()
		return int64(off) * microsPerSecond
	}
	// The offsets a day before and after the wall clock (read as UTC)
	// bracket any one transition near it.
	pre, post := offAt(us-microsPerDay), offAt(us+microsPerDay)
	if t := us - pre; offAt(t) == pre {
		return t, nil // unique, or the earlier of a repeated wall clock
	}
	if t := us - post; offAt(t) == post {
		return t, nil
	}
	return us - pre, nil // skipped
}

// utcToLocal converts UTC µs to wall-clock µs in loc.
func utcToLocal(us int64, loc *time.Location) int64 {
	if loc == nil || loc == time.UTC {
		return us
	}
	_, off := time.UnixMicro(us).In(loc).Zone()
	return us + int64(off)*microsPerSecond
}

func formatDate(d int64) string {
	y, m, dd := civilFromDays(d)
	return fmt.Sprintf("%04d-%02d-%02d", y, m, dd)
}

func formatTime(us int64) string {
	sec := us / microsPerSecond
	s := fmt.Sprintf("%02d:%02d:%02d", sec/3600, sec/60%60, sec%60)
	if f := us % microsPerSecond; f != 0 {
		s += strings.TrimRight(fmt.Sprintf(".%06d", f), "0")
	}
	return s
}

func formatDatetime(us int64) string {
	d := floorDiv(us, microsPerDay)
	return formatDate(d) + " " + formatTime(us-d*microsPerDay)
}

func formatTimestamp(us int64) string { return formatDatetime(us) + "+00" }

// Date parts for EXTRACT, DATE_ADD, DATE_DIFF and friends.
var partMicros = map[string]int64{
	"MICROSECOND": 1, "MILLISECOND": 1000, "SECOND": microsPerSecond,
	"MINUTE": 60 * microsPerSecond, "HOUR": 3600 * microsPerSecond, "DAY": microsPerDay,
}

// addMonths adds n months to a date, clamping the day to the month's end
// as BigQuery's DATE_ADD does.
func addMonths(days, n int64) (int64, bool) {
	y, m, d := civilFromDays(days)
	total := y*12 + (m - 1) + n
	ny, nm := floorDiv(total, 12), floorMod(total, 12)+1
	if ny < 1 || ny > 9999 {
		return 0, false
	}
	if dim := daysIn(ny, nm); d > dim {
		d = dim
	}
	return daysFromCivil(ny, nm, d), true
}

// extractDatePart returns EXTRACT(part FROM date).
func extractDatePart(days int64, part string) (int64, bool) {
	y, m, d := civilFromDays(days)
	switch part {
	case "YEAR":
		return y, true
	case "MONTH":
		return m, true
	case "DAY":
		return d, true
	case "QUARTER":
		return (m-1)/3 + 1, true
	case "DAYOFYEAR":
		return days - daysFromCivil(y, 1, 1) + 1, true
	case "DAYOFWEEK":
		// 1970-01-01 was a Thursday; Sunday is 1.
		return floorMod(days+4, 7) + 1, true
	case "WEEK", "WEEK(SUNDAY)", "WEEK(MONDAY)", "WEEK(TUESDAY)", "WEEK(WEDNESDAY)", "WEEK(THURSDAY)", "WEEK(FRIDAY)", "WEEK(SATURDAY)":
		// Weeks start on Sunday (or the named weekday); days before the
		// year's first such day are in week 0.
		w, _ := weekStart(part)
		jan1 := daysFromCivil(y, 1, 1)
		first := jan1 + floorMod(w-floorMod(jan1+4, 7), 7)
		if days < first {
			return 0, true
		}
		return (days-first)/7 + 1, true
	case "ISOWEEK", "ISOYEAR":
		t := time.Date(int(y), time.Month(m), int(d), 0, 0, 0, 0, time.UTC)
		iy, iw := t.ISOWeek()
		if part == "ISOYEAR" {
			return int64(iy), true
		}
		return int64(iw), true
	}
	return 0, false
}

func parseIntLiteral(text string) (int64, error) {
	if strings.HasPrefix(text, "0x") || strings.HasPrefix(text, "0X") || strings.HasPrefix(text, "-0x") || strings.HasPrefix(text, "-0X") {
		neg := text[0] == '-'
		h := strings.TrimLeft(text, "-")[2:]
		u, err := strconv.ParseUint(h, 16, 64)
		if err != nil {
			return 0, err
		}
		if neg {
			if u > 1<<63 {
				return 0, strconv.ErrRange
			}
			return -int64(u), nil
		}
		if u > 1<<63-1 {
			return 0, strconv.ErrRange
		}
		return int64(u), nil
	}
	return strconv.ParseInt(text, 10, 64)
}
