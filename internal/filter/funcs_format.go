// FORMAT_DATE/DATETIME/TIME/TIMESTAMP and PARSE_DATE/DATETIME/TIME/
// TIMESTAMP: GoogleSQL's format elements for date and time parts.

package filter

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

var (
	weekdayNames = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
	monthNames   = []string{"January", "February", "March", "April", "May", "June", "July", "August",
		"September", "October", "November", "December"}
)

// strftime formats the wall-clock microseconds us (days since the epoch
// times microsPerDay plus the time of day) by GoogleSQL's format elements;
// off is the zone's offset in seconds (%z, %s) and zone its name (%Z).
func strftime(f string, us int64, off int, zone string) string {
	var b strings.Builder
	days, tod := floorDiv(us, microsPerDay), floorMod(us, microsPerDay)
	y, m, d := civilFromDays(days)
	hh, mi, ss, frac := tod/3600e6, tod/60e6%60, tod/1e6%60, tod%1e6
	wd := floorMod(days+4, 7) // 0 = Sunday
	yday := days - daysFromCivil(y, 1, 1)
	num := func(v int64, width int) { fmt.Fprintf(&b, "%0*d", width, v) }
	pad := func(v int64) { fmt.Fprintf(&b, "%2d", v) }
	var one func(c byte)
	one = func(c byte) {
		switch c {
		case 'A':
			b.WriteString(weekdayNames[wd])
		case 'a':
			b.WriteString(weekdayNames[wd][:3])
		case 'B':
			b.WriteString(monthNames[m-1])
		case 'b', 'h':
			b.WriteString(monthNames[m-1][:3])
		case 'C':
			num(y/100, 2)
		case 'c':
			for _, c := range []byte("a b e H:M:S Y") {
				if c == ' ' || c == ':' {
					b.WriteByte(c)
				} else {
					one(c)
				}
			}
		case 'D':
			one('m')
			b.WriteByte('/')
			one('d')
			b.WriteByte('/')
			one('y')
		case 'd':
			num(d, 2)
		case 'e':
			pad(d)
		case 'F':
			one('Y')
			b.WriteByte('-')
			one('m')
			b.WriteByte('-')
			one('d')
		case 'G', 'g':
			iy, _ := extractDatePart(days, "ISOYEAR")
			if c == 'G' {
				num(iy, 1)
			} else {
				num(iy%100, 2)
			}
		case 'H':
			num(hh, 2)
		case 'I':
			num((hh+11)%12+1, 2)
		case 'j':
			num(yday+1, 3)
		case 'k':
			pad(hh)
		case 'l':
			pad((hh+11)%12 + 1)
		case 'M':
			num(mi, 2)
		case 'm':
			num(m, 2)
		case 'n':
			b.WriteByte('\n')
		case 'P':
			b.WriteString([]string{"am", "pm"}[hh/12])
		case 'p':
			b.WriteString([]string{"AM", "PM"}[hh/12])
		case 'Q':
			num((m-1)/3+1, 1)
		case 'R':
			one('H')
			b.WriteByte(':')
			one('M')
		case 'S':
			num(ss, 2)
		case 's':
			num(floorDiv(us-int64(off)*microsPerSecond, microsPerSecond), 1)
		case 'T', 'X':
			one('H')
			b.WriteByte(':')
			one('M')
			b.WriteByte(':')
			one('S')
		case 't':
			b.WriteByte('\t')
		case 'U':
			num((yday+7-wd)/7, 2)
		case 'u':
			num((wd+6)%7+1, 1)
		case 'V':
			w, _ := extractDatePart(days, "ISOWEEK")
			num(w, 2)
		case 'W':
			num((yday+7-(wd+6)%7)/7, 2)
		case 'w':
			num(wd, 1)
		case 'x':
			one('D')
		case 'Y':
			num(y, 1)
		case 'y':
			num(y%100, 2)
		case 'Z':
			b.WriteString(zone)
		case 'z':
			sign, o := '+', off
			if o < 0 {
				sign, o = '-', -o
			}
			fmt.Fprintf(&b, "%c%02d%02d", sign, o/3600, o/60%60)
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(c)
		}
	}
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 == len(f) {
			b.WriteByte(f[i])
			continue
		}
		i++
		switch c := f[i]; {
		case c == 'E' && i+1 < len(f):
			// %Ez, %E4Y, %E<n>S, %E*S, %Ey, %EC...
			rest := f[i+1:]
			switch {
			case rest[0] == 'z':
				sign, o := '+', off
				if o < 0 {
					sign, o = '-', -o
				}
				fmt.Fprintf(&b, "%c%02d:%02d", sign, o/3600, o/60%60)
				i++
			case strings.HasPrefix(rest, "4Y"):
				num(y, 4)
				i += 2
			case strings.HasPrefix(rest, "*S"):
				num(ss, 2)
				if frac != 0 {
					b.WriteString(strings.TrimRight(fmt.Sprintf(".%06d", frac), "0"))
				}
				i += 2
			case rest[0] >= '0' && rest[0] <= '9' && len(rest) >= 2 && rest[1] == 'S':
				num(ss, 2)
				if n := int(rest[0] - '0'); n > 0 {
					digits := fmt.Sprintf("%06d000", frac)
					b.WriteString("." + digits[:n])
				}
				i += 2
			default:
				i++
				one(f[i]) // %Ec, %EC, %Ex, %EX, %Ey, %EY: the plain element
			}
		case c == 'O' && i+1 < len(f):
			i++
			one(f[i]) // %Od, %OH, ...: the plain element
		default:
			one(c)
		}
	}
	return b.String()
}

// parsed is what strptime read; fields not read keep 1970-01-01 00:00:00.
type parsed struct {
	y, m, d, hh, mi, ss, us int64
	pm, hour12              int // pm: 0 unset, 1 AM, 2 PM; hour12: %I/%l read
	yday                    int64
	epoch                   *int64 // %s
	century, yy             int64  // %C, %y: -1 unset
	zone                    *time.Location
}

var errParse = fmt.Errorf("parse")

// strptime reads s by the format f (GoogleSQL's PARSE_* rules: whitespace
// in the format matches any whitespace, including none; the whole input
// must be read).
func strptime(f, s string) (*parsed, error) {
	p := &parsed{y: 1970, m: 1, d: 1, yday: -1, century: -1, yy: -1}
	i := 0
	skipSpace := func() {
		for i < len(s) && isSpaceByte(s[i]) {
			i++
		}
	}
	digits := func(max int, signed bool) (int64, bool) {
		start := i
		neg := false
		if signed && i < len(s) && (s[i] == '-' || s[i] == '+') {
			neg = s[i] == '-'
			i++
		}
		ds := i
		for i < len(s) && i-ds < max && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == ds {
			i = start
			return 0, false
		}
		v, _ := strconv.ParseInt(s[ds:i], 10, 64)
		if neg {
			v = -v
		}
		return v, true
	}
	name := func(names []string) (int64, bool) {
		for k, n := range names {
			for _, cand := range []string{n, n[:3]} {
				if len(s)-i >= len(cand) && strings.EqualFold(s[i:i+len(cand)], cand) {
					i += len(cand)
					return int64(k), true
				}
			}
		}
		return 0, false
	}
	zoneOff := func(colon bool) bool {
		if i < len(s) && (s[i] == 'Z' || s[i] == 'z') {
			i++
			p.zone = time.UTC
			return true
		}
		if i >= len(s) || (s[i] != '+' && s[i] != '-') {
			return false
		}
		neg := s[i] == '-'
		i++
		h, ok := digits(2, false)
		if !ok {
			return false
		}
		var mm int64
		if i < len(s) && s[i] == ':' {
			i++
			if mm, ok = digits(2, false); !ok {
				return false
			}
		} else if !colon {
			mm, _ = digits(2, false)
		}
		off := int(h*3600 + mm*60)
		if neg {
			off = -off
		}
		p.zone = time.FixedZone("", off)
		return h <= 14 && mm <= 59
	}
	var one func(c byte) bool
	seq := func(elems string) bool {
		for k := 0; k < len(elems); k++ {
			c := elems[k]
			if c == '%' {
				k++
				if !one(elems[k]) {
					return false
				}
				continue
			}
			if c == ' ' {
				skipSpace()
				continue
			}
			if i >= len(s) || s[i] != c {
				return false
			}
			i++
		}
		return true
	}
	one = func(c byte) bool {
		var ok bool
		var v int64
		switch c {
		case 'Y':
			skipSpace()
			p.y, ok = digits(4, false) // at most 4 digits: %Y%m%d reads 20081225
		case 'm':
			skipSpace()
			p.m, ok = digits(2, false)
		case 'd', 'e':
			skipSpace()
			p.d, ok = digits(2, false)
		case 'H', 'k':
			skipSpace()
			p.hh, ok = digits(2, false)
		case 'I', 'l':
			skipSpace()
			p.hh, ok = digits(2, false)
			p.hour12 = 1
		case 'M':
			skipSpace()
			p.mi, ok = digits(2, false)
		case 'S':
			skipSpace()
			p.ss, ok = digits(2, false)
		case 'j':
			skipSpace()
			p.yday, ok = digits(3, false)
		case 'C':
			skipSpace()
			p.century, ok = digits(2, false)
		case 'y':
			skipSpace()
			p.yy, ok = digits(2, false)
		case 'G':
			skipSpace()
			_, ok = digits(4, false)
		case 'g', 'U', 'W', 'V':
			skipSpace()
			_, ok = digits(2, false)
		case 'u', 'w', 'Q':
			skipSpace()
			_, ok = digits(1, false)
		case 's':
			skipSpace()
			if v, ok = digits(19, true); ok {
				p.epoch = &v
			}
		case 'B', 'b', 'h':
			skipSpace()
			if v, ok = name(monthNames); ok {
				p.m = v + 1
			}
		case 'A', 'a':
			skipSpace()
			_, ok = name(weekdayNames)
		case 'p', 'P':
			skipSpace()
			switch {
			case len(s)-i >= 2 && strings.EqualFold(s[i:i+2], "AM"):
				p.pm, ok = 1, true
			case len(s)-i >= 2 && strings.EqualFold(s[i:i+2], "PM"):
				p.pm, ok = 2, true
			}
			if ok {
				i += 2
			}
		case 'z':
			skipSpace()
			ok = zoneOff(false)
		case 'Z':
			skipSpace()
			start := i
			for i < len(s) && (isLetterByte(s[i]) || strings.IndexByte("/_+-0123456789:", s[i]) >= 0) {
				i++
			}
			if loc, err := parseZone(s[start:i]); err == nil && i > start {
				p.zone, ok = loc, true
			}
		case 'n', 't':
			skipSpace()
			ok = true
		case '%':
			ok = i < len(s) && s[i] == '%'
			if ok {
				i++
			}
		case 'c':
			ok = seq("%a %b %e %H:%M:%S %Y")
		case 'D', 'x':
			ok = seq("%m/%d/%y")
		case 'F':
			ok = seq("%Y-%m-%d")
		case 'R':
			ok = seq("%H:%M")
		case 'T', 'X':
			ok = seq("%H:%M:%S")
		}
		return ok
	}
	for k := 0; k < len(f); k++ {
		c := f[k]
		switch {
		case isSpaceByte(c):
			skipSpace()
			continue
		case c != '%':
			if i >= len(s) || s[i] != c {
				return nil, errParse
			}
			i++
			continue
		case k+1 == len(f):
			return nil, errParse
		}
		k++
		c = f[k]
		if (c == 'E' || c == 'O') && k+1 < len(f) {
			rest := f[k+1:]
			switch {
			case c == 'E' && rest[0] == 'z':
				k++
				skipSpace()
				if !zoneOff(true) {
					return nil, errParse
				}
				continue
			case c == 'E' && strings.HasPrefix(rest, "4Y"):
				k += 2
				skipSpace()
				var ok bool
				if p.y, ok = digits(4, false); !ok {
					return nil, errParse
				}
				continue
			case c == 'E' && len(rest) >= 2 && rest[1] == 'S' && (rest[0] == '*' || rest[0] >= '0' && rest[0] <= '9'):
				k += 2
				skipSpace()
				var ok bool
				if p.ss, ok = digits(2, false); !ok {
					return nil, errParse
				}
				if i < len(s) && s[i] == '.' {
					i++
					start := i
					for i < len(s) && s[i] >= '0' && s[i] <= '9' {
						i++
					}
					if i == start || i-start > 9 {
						return nil, errParse
					}
					frac := (s[start:i] + "000000")[:6]
					p.us, _ = strconv.ParseInt(frac, 10, 64)
				}
				continue
			}
			k++
			c = f[k]
		}
		if !one(c) {
			return nil, errParse
		}
	}
	skipSpace()
	if i != len(s) {
		return nil, errParse
	}
	return p, nil
}

func isSpaceByte(c byte) bool  { return c == ' ' || (c >= '\t' && c <= '\r') }
func isLetterByte(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// wall resolves what strptime read into wall-clock microseconds.
func (p *parsed) wall() (int64, bool) {
	if p.epoch != nil {
		e := *p.epoch
		if e > maxMicros/microsPerSecond || e < minMicros/microsPerSecond {
			return 0, false
		}
		return e * microsPerSecond, true
	}
	y := p.y
	switch {
	case p.century >= 0 && p.yy >= 0:
		y = p.century*100 + p.yy
	case p.century >= 0:
		y = p.century * 100
	case p.yy >= 0:
		y = p.yy + 1900
		if p.yy < 69 {
			y = p.yy + 2000
		}
	}
	hh := p.hh
	if p.hour12 != 0 {
		if hh < 1 || hh > 12 {
			return 0, false
		}
		hh %= 12
	}
	if p.pm == 2 {
		if p.hour12 == 0 && hh >= 12 {
			hh -= 12
		}
		hh += 12
	}
	if y < 1 || y > 9999 || p.m < 1 || p.m > 12 || p.d < 1 || p.d > daysIn(y, p.m) ||
		hh > 23 || p.mi > 59 || p.ss > 59 {
		return 0, false
	}
	days := daysFromCivil(y, p.m, p.d)
	if p.yday >= 0 {
		if p.yday < 1 || p.yday > 365+boolInt(daysIn(y, 2) == 29) {
			return 0, false
		}
		days = daysFromCivil(y, 1, 1) + p.yday - 1
	}
	return days*microsPerDay + ((hh*60+p.mi)*60+p.ss)*microsPerSecond + p.us, true
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func registerFormat() {
	// FORMAT_<T>(format, value [, zone]) and PARSE_<T>(format, text [, zone]).
	for _, t := range []typ{tDate, tDatetime, tTime, tTimestamp} {
		t := t
		name := t.String()
		maxArgs := 2
		if t == tTimestamp {
			maxArgs = 3
		}
		builtins["FORMAT_"+name] = func(c *checker, e *Call, args []node) (node, error) {
			if err := c.arity(e, args, 2, maxArgs); err != nil {
				return nil, err
			}
			want := []typ{tString, t, tString}[:len(args)]
			return c.sig(e, args, want, tString, func(a []value) (value, error) {
				switch t {
				case tDate:
					return value{s: strftime(a[0].s, a[1].i*microsPerDay, 0, "UTC")}, nil
				case tDatetime, tTime:
					return value{s: strftime(a[0].s, a[1].i, 0, "UTC")}, nil
				}
				loc, err := zoneArg(a, 2)
				if err != nil {
					return value{}, err
				}
				_, off := time.UnixMicro(a[1].i).In(loc).Zone()
				zone := loc.String()
				if zone == "" {
					zone = "UTC" + strftime("%Ez", 0, off, "")
				}
				return value{s: strftime(a[0].s, a[1].i+int64(off)*microsPerSecond, off, zone)}, nil
			})
		}
		builtins["PARSE_"+name] = func(c *checker, e *Call, args []node) (node, error) {
			if err := c.arity(e, args, 2, maxArgs); err != nil {
				return nil, err
			}
			return c.sig(e, args, repeatT(tString, len(args)), t, func(a []value) (value, error) {
				p, err := strptime(a[0].s, a[1].s)
				if err != nil {
					return value{}, fmt.Errorf("Failed to parse input string %q", a[1].s)
				}
				w, ok := p.wall()
				if !ok {
					return value{}, fmt.Errorf("Failed to parse input string %q", a[1].s)
				}
				switch t {
				case tDate:
					return value{i: floorDiv(w, microsPerDay)}, nil
				case tTime:
					return value{i: floorMod(w, microsPerDay)}, nil
				case tDatetime:
					return value{i: w}, nil
				}
				if p.epoch != nil {
					return value{i: w}, nil
				}
				loc := p.zone
				if loc == nil {
					if loc, err = zoneArg(a, 2); err != nil {
						return value{}, err
					}
				}
				v, err := localToUTC(w, loc)
				if err == nil && (v < minMicros || v > maxMicros) {
					err = fmt.Errorf("Failed to parse input string %q", a[1].s)
				}
				return value{i: v}, err
			})
		}
	}
}
