// CAST(x AS type FORMAT format [AT TIME ZONE zone]) between STRING and
// DATE, DATETIME, TIME and TIMESTAMP, with GoogleSQL's CAST format
// elements (YYYY, MM, MON, MONTH, DD, DDD, D, DAY, DY, HH, HH12, HH24, MI,
// SS, SSSSS, FF1-FF9, AM/PM, A.M./P.M., TZH, TZM). BYTES formats are
// cast_format_bytes.go's, numeric ones cast_format_num.go's.

package filter

import (
	"fmt"
	"strings"
	"time"
)

// castElems are the format elements, longest first so that a prefix
// never shadows a longer element.
var castElems = []string{"SSSSS", "MONTH", "HH24", "HH12", "YYYY", "RRRR", "A.M.", "P.M.",
	"TZH", "TZM", "MON", "DAY", "DDD", "YYY", "FF1", "FF2", "FF3", "FF4", "FF5", "FF6", "FF7", "FF8", "FF9",
	"HH", "MI", "SS", "MM", "DD", "DY", "YY", "RR", "AM", "PM", "Y", "D"}

var dateElems = map[string]bool{"YYYY": true, "RRRR": true, "YYY": true, "YY": true, "RR": true, "Y": true,
	"MM": true, "MON": true, "MONTH": true, "DD": true, "DDD": true, "D": true, "DAY": true, "DY": true}

// castToken is one piece of a CAST format: an element (upper case, with
// the case it was written in) or literal text.
type castToken struct {
	elem    string
	written string
	lit     string
}

func lexCastFormat(f string) ([]castToken, error) {
	var out []castToken
	for i := 0; i < len(f); {
		c := f[i]
		if c == '"' {
			end := strings.IndexByte(f[i+1:], '"')
			if end < 0 {
				return nil, fmt.Errorf("Cannot find matching \" in the format string: %s", f)
			}
			out = append(out, castToken{lit: f[i+1 : i+1+end]})
			i += end + 2
			continue
		}
		if strings.IndexByte("-./,';: ", c) >= 0 {
			out = append(out, castToken{lit: string(c)})
			i++
			continue
		}
		found := false
		for _, e := range castElems {
			if len(f)-i >= len(e) && strings.EqualFold(f[i:i+len(e)], e) {
				out = append(out, castToken{elem: e, written: f[i : i+len(e)]})
				i += len(e)
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("Cannot find matching format element at %q in the format string", f[i:])
		}
	}
	return out, nil
}

// caseLike writes word (upper case) in the case the element was written:
// MON -> JAN, Mon -> Jan, mon -> jan.
func caseLike(word, written string) string {
	switch {
	case written == strings.ToLower(written):
		return strings.ToLower(word)
	case len(written) > 1 && written[1:] == strings.ToLower(written[1:]):
		return word[:1] + strings.ToLower(word[1:])
	}
	return word
}

// castFormatOut formats wall-clock µs (off: the zone's offset in
// seconds) of type t by the CAST format tokens.
func castFormatOut(t typ, toks []castToken, us int64, off int) (string, error) {
	days, tod := floorDiv(us, microsPerDay), floorMod(us, microsPerDay)
	y, m, d := civilFromDays(days)
	hh, mi, ss, frac := tod/3600e6, tod/60e6%60, tod/1e6%60, tod%1e6
	var b strings.Builder
	for _, tk := range toks {
		if tk.elem == "" {
			b.WriteString(tk.lit)
			continue
		}
		e := tk.elem
		if t == tTime && dateElems[e] || t == tDate && !dateElems[e] || t != tTimestamp && (e == "TZH" || e == "TZM") {
			return "", fmt.Errorf("Unsupported format element %s for %s", tk.written, t)
		}
		switch e {
		case "YYYY", "RRRR":
			fmt.Fprintf(&b, "%04d", y)
		case "YYY":
			fmt.Fprintf(&b, "%03d", y%1000)
		case "YY", "RR":
			fmt.Fprintf(&b, "%02d", y%100)
		case "Y":
			fmt.Fprintf(&b, "%d", y%10)
		case "MM":
			fmt.Fprintf(&b, "%02d", m)
		case "MON":
			b.WriteString(caseLike(strings.ToUpper(monthNames[m-1][:3]), tk.written))
		case "MONTH":
			b.WriteString(caseLike(strings.ToUpper(monthNames[m-1]), tk.written))
		case "DD":
			fmt.Fprintf(&b, "%02d", d)
		case "DDD":
			fmt.Fprintf(&b, "%03d", days-daysFromCivil(y, 1, 1)+1)
		case "D":
			fmt.Fprintf(&b, "%d", floorMod(days+4, 7)+1)
		case "DAY":
			b.WriteString(caseLike(strings.ToUpper(weekdayNames[floorMod(days+4, 7)]), tk.written))
		case "DY":
			b.WriteString(caseLike(strings.ToUpper(weekdayNames[floorMod(days+4, 7)][:3]), tk.written))
		case "HH", "HH12":
			fmt.Fprintf(&b, "%02d", (hh+11)%12+1)
		case "HH24":
			fmt.Fprintf(&b, "%02d", hh)
		case "MI":
			fmt.Fprintf(&b, "%02d", mi)
		case "SS":
			fmt.Fprintf(&b, "%02d", ss)
		case "SSSSS":
			fmt.Fprintf(&b, "%05d", tod/1e6)
		case "AM", "PM", "A.M.", "P.M.":
			w := "AM"
			if hh >= 12 {
				w = "PM"
			}
			if strings.Contains(e, ".") {
				w = w[:1] + "." + w[1:] + "."
			}
			b.WriteString(caseLike(w, tk.written))
		case "TZH":
			sign, o := '+', off
			if o < 0 {
				sign, o = '-', -o
			}
			fmt.Fprintf(&b, "%c%02d", sign, o/3600)
		case "TZM":
			o := off
			if o < 0 {
				o = -o
			}
			fmt.Fprintf(&b, "%02d", o/60%60)
		default: // FF1..FF9
			n := int(e[2] - '0')
			b.WriteString(fmt.Sprintf("%06d000", frac)[:n])
		}
	}
	return b.String(), nil
}

// castFormatIn parses s by the CAST format tokens into wall-clock µs and
// the zone offset it names (ok false: none).
func castFormatIn(t typ, toks []castToken, s string) (us int64, off int, hasOff bool, err error) {
	bad := fmt.Errorf("Failed to parse input string %q", s)
	y, m, d, hh, mi, ss, fr := int64(-1), int64(1), int64(1), int64(0), int64(0), int64(0), int64(0)
	pm, h12 := -1, false
	tzSign, tzh, tzm := 1, int64(0), int64(0)
	i := 0
	num := func(max int) (int64, bool) {
		start := i
		for i < len(s) && i-start < max && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return 0, false
		}
		var v int64
		for _, c := range s[start:i] {
			v = v*10 + int64(c-'0')
		}
		return v, true
	}
	word := func(names []string, n int) (int64, bool) {
		for k, name := range names {
			w := name
			if n > 0 {
				w = name[:n]
			}
			if len(s)-i >= len(w) && strings.EqualFold(s[i:i+len(w)], w) {
				i += len(w)
				return int64(k), true
			}
		}
		return 0, false
	}
	for _, tk := range toks {
		if tk.elem == "" {
			if !strings.HasPrefix(s[i:], tk.lit) {
				return 0, 0, false, bad
			}
			i += len(tk.lit)
			continue
		}
		e := tk.elem
		if t == tTime && dateElems[e] || t == tDate && !dateElems[e] || t != tTimestamp && (e == "TZH" || e == "TZM") {
			return 0, 0, false, fmt.Errorf("Unsupported format element %s for %s", tk.written, t)
		}
		ok := true
		switch e {
		case "YYYY", "RRRR":
			y, ok = num(4)
		case "YY", "RR":
			var v int64
			v, ok = num(2)
			y = 2000 + v
		case "MM":
			m, ok = num(2)
		case "MON":
			m, ok = word(monthNames, 3)
			m++
		case "MONTH":
			m, ok = word(monthNames, 0)
			m++
		case "DD":
			d, ok = num(2)
		case "DAY":
			_, ok = word(weekdayNames, 0)
		case "DY":
			_, ok = word(weekdayNames, 3)
		case "HH", "HH12":
			hh, ok = num(2)
			h12 = true
		case "HH24":
			hh, ok = num(2)
		case "MI":
			mi, ok = num(2)
		case "SS":
			ss, ok = num(2)
		case "AM", "PM", "A.M.", "P.M.":
			var k int64
			k, ok = word([]string{"AM", "PM", "A.M.", "P.M."}, 0)
			pm = int(k % 2)
		case "TZH":
			if i < len(s) && (s[i] == '+' || s[i] == '-') {
				if s[i] == '-' {
					tzSign = -1
				}
				i++
			}
			tzh, ok = num(2)
			hasOff = true
		case "TZM":
			tzm, ok = num(2)
			hasOff = true
		case "FF1", "FF2", "FF3", "FF4", "FF5", "FF6", "FF7", "FF8", "FF9":
			start := i
			var v int64
			v, ok = num(int(e[2] - '0'))
			digits := i - start
			for ; digits < 6; digits++ {
				v *= 10
			}
			for ; digits > 6; digits-- {
				v /= 10
			}
			fr = v
		default: // YYY, Y, DDD, D, SSSSS
			return 0, 0, false, fmt.Errorf("not supported yet by bqstore: parsing the format element %s", tk.written)
		}
		if !ok {
			return 0, 0, false, bad
		}
	}
	if i != len(s) {
		return 0, 0, false, bad
	}
	if t != tTime && y < 0 {
		return 0, 0, false, fmt.Errorf("not supported yet by bqstore: a CAST format without a year element")
	}
	if t == tTime {
		y = 1970
	}
	if h12 {
		if hh < 1 || hh > 12 {
			return 0, 0, false, bad
		}
		hh %= 12
		if pm == 1 {
			hh += 12
		}
	}
	if y < 1 || y > 9999 || m < 1 || m > 12 || d < 1 || d > daysIn(y, m) || hh > 23 || mi > 59 || ss > 59 || tzh > 14 || tzm > 59 {
		return 0, 0, false, bad
	}
	us = daysFromCivil(y, m, d)*microsPerDay + ((hh*60+mi)*60+ss)*microsPerSecond + fr
	return us, tzSign * int(tzh*3600+tzm*60), hasOff, nil
}

// castFormat checks CAST(x AS to FORMAT f [AT TIME ZONE z]).
func (c *checker) castFormat(e *Cast, x node, to typ) (node, error) {
	from := x.typ()
	isTime := func(t typ) bool { return t == tDate || t == tDatetime || t == tTime || t == tTimestamp }
	switch {
	case from == tNull && (isTime(to) || to == tString):
		return &constNode{v: constVec(to, nullValue), p: e.P}, nil
	case isTime(from) && to == tString, from == tString && isTime(to):
	case from == tBytes && to == tString, from == tString && to == tBytes:
		return c.castFormatBytes(e, x, to)
	case isNumeric(from) && to == tString:
		return c.castFormatNumber(e, x)
	case from == tNull && to == tBytes:
		return &constNode{v: constVec(to, nullValue), p: e.P}, nil
	default:
		return nil, c.errf(e.P, "not supported yet by bqstore: CAST from %s to %s with FORMAT", from, to)
	}
	f, err := c.check(e.Format)
	if err != nil {
		return nil, err
	}
	args := []node{x, f}
	if e.Zone != nil {
		z, err := c.check(e.Zone)
		if err != nil {
			return nil, err
		}
		args = append(args, z)
	}
	want := append([]typ{from}, repeatT(tString, len(args)-1)...)
	call := &Call{Name: "CAST", P: e.P}
	c.safeCall = e.Safe
	defer func() { c.safeCall = false }()
	return c.sigStrict(call, args, want, to, true, func(a []value) (value, error) {
		toks, err := lexCastFormat(a[1].s)
		if err != nil {
			return value{}, err
		}
		loc, err := zoneArg(a, 2)
		if err != nil {
			return value{}, err
		}
		if to == tString {
			us, off := a[0].i, 0
			switch from {
			case tDate:
				us *= microsPerDay
			case tTimestamp:
				_, off = time.UnixMicro(us).In(loc).Zone()
				us += int64(off) * microsPerSecond
			}
			s, err := castFormatOut(from, toks, us, off)
			return value{s: s}, err
		}
		us, off, hasOff, err := castFormatIn(to, toks, a[0].s)
		if err != nil {
			return value{}, err
		}
		switch to {
		case tDate:
			return value{i: floorDiv(us, microsPerDay)}, nil
		case tTime:
			return value{i: floorMod(us, microsPerDay)}, nil
		case tDatetime:
			return value{i: us}, nil
		}
		if hasOff {
			return value{i: us - int64(off)*microsPerSecond}, nil
		}
		v, err := localToUTC(us, loc)
		return value{i: v}, err
	})
}
