// FORMAT(format_string, ...): GoogleSQL's printf.

package filter

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
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

// fmtMaxOutput is GoogleSQL's limit on FORMAT's output, and on a width
// or a non-float precision: 1 MiB (zetasql's
// --zetasql_format_max_output_width, format_max_output_width.cc).
const fmtMaxOutput = 1 << 20

// fmtMaxFloatPrecision caps the precision of %e %E %f %F: 1074 digits
// print any float64 exactly (zetasql string_format.cc,
// kMaxPrecisionForFloatingPoint); %g takes any precision, capped there.
const fmtMaxFloatPrecision = 1074

var errFmtTooLong = fmt.Errorf("Output string too long while evaluating FORMAT; limit %d", fmtMaxOutput)

// sqlFormat formats vals (of types ts) by f: %[flags][width][.precision]
// with d i o x X f F e E g G s t T and %%; width and precision may be *,
// taken from an INT64 argument before the value (a negative width
// left-justifies, a negative precision is none, as in C). A NULL value
// gives NULL, but for %t and %T, which print NULL. Widths, precisions and
// the output are capped as in GoogleSQL (fmtMaxOutput); the padding is
// ours, as Go's fmt refuses widths above 1e6.
func sqlFormat(f string, ts []typ, vals []value) (value, error) {
	if len(f) > fmtMaxOutput {
		return value{}, errFmtTooLong
	}
	var b strings.Builder
	next := 0
	// intArg takes the INT64 argument of a * width or precision; null: the
	// result is NULL.
	intArg := func() (n int64, null bool, err error) {
		if next >= len(vals) {
			return 0, false, fmt.Errorf("Too few arguments to FORMAT for pattern %q; expected at least %d", f, next+2)
		}
		t, v := ts[next], vals[next]
		next++
		if t != tInt && t != tNull {
			return 0, false, fmt.Errorf("Invalid type for argument %d to FORMAT; Expected integer; Got %s", next+1, t)
		}
		return v.i, v.null, nil
	}
	for i := 0; i < len(f); i++ {
		if b.Len() > fmtMaxOutput {
			return value{}, errFmtTooLong
		}
		if f[i] != '%' {
			b.WriteByte(f[i])
			continue
		}
		j := i + 1
		for j < len(f) && strings.IndexByte("-+ #0'", f[j]) >= 0 {
			j++
		}
		flags := f[i+1 : j]
		width, starW := -1, false
		if j < len(f) && f[j] == '*' {
			starW = true
			j++
		} else {
			ws := j
			for j < len(f) && f[j] >= '0' && f[j] <= '9' {
				j++
			}
			if j > ws {
				w, err := strconv.Atoi(f[ws:j])
				if err != nil || w > fmtMaxOutput {
					return value{}, fmt.Errorf("Width %s exceeds the maximum supported output width of FORMAT. Limit: %d", f[ws:j], fmtMaxOutput)
				}
				width = w
			}
		}
		prec, starP := -1, false
		precText := ""
		if j < len(f) && f[j] == '.' {
			j++
			if j < len(f) && f[j] == '*' {
				starP = true
				j++
			} else {
				ps := j
				for j < len(f) && f[j] >= '0' && f[j] <= '9' {
					j++
				}
				precText = f[ps:j]
				prec = 0 // "%.f": precision 0, as in C
			}
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
		if precText != "" {
			p, err := strconv.ParseInt(precText, 10, 64)
			if err != nil {
				p = math.MaxInt64
			}
			if err := checkPrecision(p, verb); err != nil {
				return value{}, err
			}
			prec = int(min(p, fmtMaxOutput))
		}
		left := strings.Contains(flags, "-")
		null := false
		if starW {
			w, isNull, err := intArg()
			if err != nil {
				return value{}, err
			}
			if w < 0 { // C: a negative * width is the - flag
				left = true
				w = -w
			}
			if !isNull && (w < 0 || w > fmtMaxOutput) {
				return value{}, errFmtTooLong
			}
			width, null = int(w), null || isNull
		}
		if starP {
			p, isNull, err := intArg()
			if err != nil {
				return value{}, err
			}
			if !isNull {
				if err := checkPrecision(p, verb); err != nil {
					return value{}, err
				}
			}
			prec, null = -1, null || isNull
			if p >= 0 {
				prec = int(min(p, fmtMaxOutput))
			}
		}
		if next >= len(vals) {
			return value{}, fmt.Errorf("Too few arguments to FORMAT for pattern %q; expected at least %d", f, next+2)
		}
		t, v := ts[next], vals[next]
		next++
		if null {
			return nullValue, nil
		}
		if v.null {
			if verb != 't' && verb != 'T' {
				return nullValue, nil
			}
			b.WriteString(padWidth("NULL", width, left, false))
			continue
		}
		grouping := strings.Contains(flags, "'")
		zero := strings.Contains(flags, "0") && !left
		// Go's fmt gets the sign flags only; width, - and 0 are padWidth's.
		goFlags := ""
		for _, fl := range "+ #" {
			if strings.ContainsRune(flags, fl) {
				goFlags += string(fl)
			}
		}
		spec := func(c byte, p int) string {
			s := "%" + goFlags
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
			s := minDigits(strconv.FormatInt(v.i, 10), prec)
			if grouping {
				s = groupDigits(s)
			}
			if v.i >= 0 && strings.Contains(flags, "+") {
				s = "+" + s
			} else if v.i >= 0 && strings.Contains(flags, " ") {
				s = " " + s
			}
			b.WriteString(padWidth(s, width, left, zero))
		case 'o', 'x', 'X':
			if t != tInt {
				return bad("INT64")
			}
			s := fmt.Sprintf(spec(verb, -1), v.i)
			if prec >= 0 {
				k := strings.IndexFunc(s, func(r rune) bool { return r != '-' && r != '+' && r != ' ' && r != '#' })
				if h := s[k:]; strings.HasPrefix(h, "0x") || strings.HasPrefix(h, "0X") {
					k += 2
				}
				s = s[:k] + minDigits(s[k:], prec)
			}
			b.WriteString(padWidth(s, width, left, zero))
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
					b.WriteString(padWidth(s, width, left, zero))
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
				b.WriteString(padWidth(s, width, left, false))
				continue
			}
			p := prec
			if p < 0 {
				p = 6 // C's default
			}
			p = min(p, fmtMaxFloatPrecision) // %g only: larger ones are errors above
			c := verb
			if c == 'F' {
				c = 'f'
			}
			s := fmt.Sprintf(spec(c, p), x)
			if grouping && (c == 'f') {
				s = groupDigits(strings.TrimSpace(fmt.Sprintf("%."+strconv.Itoa(p)+"f", x)))
			}
			b.WriteString(padWidth(s, width, left, zero))
		case 's':
			if t != tString {
				return bad("STRING")
			}
			s := v.s
			if prec >= 0 && prec < len([]rune(s)) {
				s = string([]rune(s)[:prec])
			}
			b.WriteString(padWidth(s, width, left, false))
		case 't', 'T':
			s, err := formatLiteral(t, v, verb == 'T')
			if err != nil {
				return value{}, err
			}
			if prec >= 0 && prec < len([]rune(s)) {
				s = string([]rune(s)[:prec])
			}
			b.WriteString(padWidth(s, width, left, false))
		}
	}
	if next < len(vals) {
		return value{}, fmt.Errorf("Too many arguments to FORMAT for pattern %q; expected %d; got %d", f, next+1, len(vals)+1)
	}
	if b.Len() > fmtMaxOutput {
		return value{}, errFmtTooLong
	}
	return value{s: b.String()}, nil
}

// minDigits left-pads the digits of the integer text s (after its sign)
// with zeros to prec digits (C's precision of %d %o %x).
func minDigits(s string, prec int) string {
	k := 0
	if s != "" && s[0] == '-' {
		k = 1
	}
	if n := len(s) - k; prec > n {
		return s[:k] + strings.Repeat("0", prec-n) + s[k:]
	}
	return s
}

// checkPrecision is GoogleSQL's cap on a precision: fmtMaxFloatPrecision
// for %e %E %f %F, none for %g %G, fmtMaxOutput for the others.
func checkPrecision(p int64, verb byte) error {
	limit := int64(fmtMaxOutput)
	switch verb {
	case 'e', 'E', 'f', 'F':
		limit = fmtMaxFloatPrecision
	case 'g', 'G':
		return nil
	}
	if p > limit {
		return fmt.Errorf("Precision value is too big; limit %d", limit)
	}
	return nil
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

// padWidth pads s to width characters: spaces on the left, on the right
// when left, or zeros after the sign and any 0x prefix when zero.
func padWidth(s string, width int, left, zero bool) string {
	n := utf8.RuneCountInString(s)
	if n >= width {
		return s
	}
	fill := width - n
	switch {
	case left:
		return s + strings.Repeat(" ", fill)
	case zero:
		k := 0
		if k < len(s) && (s[k] == '-' || s[k] == '+' || s[k] == ' ') {
			k++
		}
		if strings.HasPrefix(s[k:], "0x") || strings.HasPrefix(s[k:], "0X") {
			k += 2
		}
		return s[:k] + strings.Repeat("0", fill) + s[k:]
	}
	return strings.Repeat(" ", fill) + s
}
