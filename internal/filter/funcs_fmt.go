// FORMAT(format_string, ...): GoogleSQL's printf.

package filter

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

func registerFmt() {
	builtins["FORMAT"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 1, -1); err != nil {
			return nil, err
		}
		ts := make([]typ, len(args))
		for i, a := range args {
			ts[i] = a.typ()
			switch ts[i] {
			case tGeo, tStruct, tArray, tInterval, tRange:
				return nil, c.noSig(e, args)
			}
		}
		want := append([]typ{tString}, repeatT(tNull, len(args)-1)...)
		return c.sigStrict(e, args, want, tString, false, func(a []value) (value, error) {
			if a[0].null {
				return nullValue, nil
			}
			return sqlFormat(a[0].s, ts[1:], a[1:])
		})
	}
}

// sqlFormat formats vals (of types ts) by f: %[flags][width][.precision]
// with d i o x X f F e E g G s t T and %%. A NULL value gives NULL, but
// for %t and %T, which print NULL.
func sqlFormat(f string, ts []typ, vals []value) (value, error) {
	var b strings.Builder
	next := 0
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			b.WriteByte(f[i])
			continue
		}
		j := i + 1
		for j < len(f) && strings.IndexByte("-+ #0'", f[j]) >= 0 {
			j++
		}
		flags := f[i+1 : j]
		ws := j
		for j < len(f) && f[j] >= '0' && f[j] <= '9' {
			j++
		}
		width := f[ws:j]
		prec := -1
		if j < len(f) && f[j] == '.' {
			j++
			ps := j
			for j < len(f) && f[j] >= '0' && f[j] <= '9' {
				j++
			}
			prec, _ = strconv.Atoi(f[ps:j])
		}
		if j >= len(f) {
			return value{}, fmt.Errorf("Invalid format specifier at the end of the format string")
		}
		verb := f[j]
		i = j
		if verb == '%' {
			b.WriteByte('%')
			continue
		}
		if strings.IndexByte("dioxXfFeEgGstT", verb) < 0 {
			return value{}, fmt.Errorf("Invalid format specifier %%%c", verb)
		}
		if next >= len(vals) {
			return value{}, fmt.Errorf("Too few arguments to FORMAT for pattern %q; expected at least %d", f, next+2)
		}
		t, v := ts[next], vals[next]
		next++
		if v.null {
			if verb != 't' && verb != 'T' {
				return nullValue, nil
			}
			b.WriteString(pad("NULL", flags, width))
			continue
		}
		grouping := strings.Contains(flags, "'")
		goFlags := strings.ReplaceAll(flags, "'", "")
		spec := func(c byte, p int) string {
			s := "%" + goFlags + width
			if p >= 0 {
				s += "." + strconv.Itoa(p)
			}
			return s + string(c)
		}
		bad := func(want string) (value, error) {
			return value{}, fmt.Errorf("Invalid type for argument %d to FORMAT; Expected %s; Got %s", next+1, want, t)
		}
		switch verb {
		case 'd', 'i':
			if t != tInt {
				return bad("INT64")
			}
			s := strconv.FormatInt(v.i, 10)
			if grouping {
				s = groupDigits(s)
				b.WriteString(pad(s, goFlags, width))
				continue
			}
			b.WriteString(fmt.Sprintf(spec('d', -1), v.i))
		case 'o', 'x', 'X':
			if t != tInt {
				return bad("INT64")
			}
			b.WriteString(fmt.Sprintf(spec(verb, -1), v.i))
		case 'f', 'F', 'e', 'E', 'g', 'G':
			var x float64
			switch t {
			case tFloat:
				x = v.f
			case tInt:
				x = float64(v.i)
			case tNumeric, tBigNumeric:
				if verb == 'f' || verb == 'F' {
					p := prec
					if p < 0 {
						p = 6
					}
					s := v.r.FloatString(p)
					if grouping {
						s = groupDigits(s)
					}
					if v.r.Sign() >= 0 && strings.Contains(goFlags, "+") {
						s = "+" + s
					}
					b.WriteString(pad(s, goFlags, width))
					continue
				}
				x, _ = v.r.Float64()
			default:
				return bad("FLOAT64")
			}
			if math.IsNaN(x) || math.IsInf(x, 0) {
				s, _ := castToString(tFloat, value{f: x})
				if verb >= 'A' && verb <= 'Z' {
					s = strings.ToUpper(s)
				}
				b.WriteString(pad(s, strings.ReplaceAll(goFlags, "0", ""), width))
				continue
			}
			p := prec
			if p < 0 {
				p = 6 // C's default
			}
			c := verb
			if c == 'F' {
				c = 'f'
			}
			s := fmt.Sprintf(spec(c, p), x)
			if grouping && (c == 'f') {
				s = pad(groupDigits(strings.TrimSpace(fmt.Sprintf("%."+strconv.Itoa(p)+"f", x))), goFlags, width)
			}
			b.WriteString(s)
		case 's':
			if t != tString {
				return bad("STRING")
			}
			s := v.s
			if prec >= 0 && prec < len([]rune(s)) {
				s = string([]rune(s)[:prec])
			}
			b.WriteString(pad(s, goFlags, width))
		case 't', 'T':
			s, err := formatLiteral(t, v, verb == 'T')
			if err != nil {
				return value{}, err
			}
			if prec >= 0 && prec < len([]rune(s)) {
				s = string([]rune(s)[:prec])
			}
			b.WriteString(pad(s, goFlags, width))
		}
	}
	if next < len(vals) {
		return value{}, fmt.Errorf("Too many arguments to FORMAT for pattern %q; expected %d; got %d", f, next+1, len(vals)+1)
	}
	return value{s: b.String()}, nil
}

// formatLiteral is %t (the value as text) or, literal, %T (a GoogleSQL
// literal of the value).
func formatLiteral(t typ, v value, literal bool) (string, error) {
	if v.null {
		return "NULL", nil
	}
	if ct := t.comp(); ct != nil {
		// ARRAY: [e, ...]; STRUCT: (f, ...).
		parts := make([]string, len(v.a))
		for i, x := range v.a {
			et := ct.elem
			if ct.kind == tStruct {
				et = ct.fields[i].t
			}
			s, err := formatLiteral(et, x, literal)
			if err != nil {
				return "", err
			}
			parts[i] = s
		}
		if ct.kind == tStruct {
			return "(" + strings.Join(parts, ", ") + ")", nil
		}
		return "[" + strings.Join(parts, ", ") + "]", nil
	}
	switch t {
	case tString:
		if literal {
			return strconv.Quote(v.s), nil
		}
		return v.s, nil
	case tBytes:
		q := strconv.Quote(v.s)
		if literal {
			return "b" + q, nil
		}
		return q[1 : len(q)-1], nil
	case tFloat:
		s, _ := castToString(t, v)
		if literal && (math.IsNaN(v.f) || math.IsInf(v.f, 0)) {
			return `CAST("` + s + `" AS FLOAT64)`, nil
		}
		if literal && !strings.ContainsAny(s, ".e") {
			s += ".0"
		}
		return s, nil
	case tNumeric, tBigNumeric:
		s, _ := castToString(t, v)
		if literal {
			return t.String() + ` "` + s + `"`, nil
		}
		return s, nil
	case tDate, tDatetime, tTime, tTimestamp, tJSON:
		s, err := castToString(t, v)
		if err != nil {
			return "", err
		}
		if literal {
			return t.String() + " " + strconv.Quote(s), nil
		}
		return s, nil
	}
	return castToString(t, v)
}

// groupDigits puts a comma between each group of three digits of the
// integer part of a decimal number's text.
func groupDigits(s string) string {
	sign := ""
	if s != "" && (s[0] == '-' || s[0] == '+') {
		sign, s = s[:1], s[1:]
	}
	intPart, frac, hasFrac := strings.Cut(s, ".")
	var b strings.Builder
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if hasFrac {
		return sign + b.String() + "." + frac
	}
	return sign + b.String()
}

// pad pads s to width (left, or right with the - flag).
func pad(s, flags, width string) string {
	w, _ := strconv.Atoi(width)
	n := len([]rune(s))
	if n >= w {
		return s
	}
	fill := strings.Repeat(" ", w-n)
	if strings.Contains(flags, "-") {
		return s + fill
	}
	return fill + s
}
