package filter

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// callNode applies a scalar function row by row over the argument vectors.
type callNode struct {
	name   string
	args   []node
	t      typ
	strict bool // NULL if any argument is NULL, without calling impl
	impl   func(args []value) (value, error)
	p      int
}

func (n *callNode) typ() typ { return n.t }
func (n *callNode) pos() int { return n.p }

func (n *callNode) eval(ctx *evalCtx) (*vec, error) {
	args := make([]*vec, len(n.args))
	for i, a := range n.args {
		v, err := a.eval(ctx)
		if err != nil {
			return nil, err
		}
		args[i] = v
	}
	out := newVec(n.t, ctx.n)
	if n.strict {
		out.nulls = orNulls(ctx.n, args...)
	}
	vals := make([]value, len(args))
	for i := 0; i < ctx.n; i++ {
		if i%checkEvery == 0 {
			if err := ctx.check(); err != nil {
				return nil, err
			}
		}
		if out.nulls != nil && out.nulls[i] {
			continue
		}
		for j, a := range args {
			vals[j] = a.get(i)
		}
		v, err := n.impl(vals)
		if err != nil {
			return nil, ctx.errf(n.p, "%s", err.Error())
		}
		out.set(i, v)
	}
	return out, nil
}

type builtin func(c *checker, e *Call, args []node) (node, error)

var builtins map[string]builtin

func (c *checker) call(e *Call) (node, error) {
	b, ok := builtins[e.Name]
	if !ok {
		if isAggregate[e.Name] {
			return nil, c.errf(e.P, "Aggregate function %s not allowed in row_restriction", e.Name)
		}
		return nil, c.errf(e.P, "Function not found: %s", strings.ToLower(e.Name))
	}
	// Arguments that are not expressions: INTERVAL and date parts.
	args := make([]node, len(e.Args))
	for i, a := range e.Args {
		switch a.(type) {
		case *Interval:
			continue
		case *Ident:
			if (isDiffFunc[e.Name] && i == 2) || (isTruncFunc[e.Name] && i == 1) {
				continue
			}
		}
		n, err := c.check(a)
		if err != nil {
			return nil, err
		}
		args[i] = n
	}
	return b(c, e, args)
}

// callNodes builds a call from already checked arguments (|| is CONCAT).
func (c *checker) callNodes(e *Call, args []node) (node, error) {
	return builtins[e.Name](c, e, args)
}

var isAggregate = map[string]bool{"COUNT": true, "SUM": true, "AVG": true, "MIN": true, "MAX": true,
	"ARRAY_AGG": true, "STRING_AGG": true, "ANY_VALUE": true, "COUNTIF": true, "LOGICAL_AND": true, "LOGICAL_OR": true}

var isDiffFunc = map[string]bool{"DATE_DIFF": true, "DATETIME_DIFF": true, "TIMESTAMP_DIFF": true}

var isTruncFunc = map[string]bool{"DATE_TRUNC": true, "TIMESTAMP_TRUNC": true, "DATETIME_TRUNC": true}

func (c *checker) noSig(e *Call, args []node) *Error {
	ts := make([]string, len(args))
	for i, a := range args {
		if a == nil {
			ts[i] = "INTERVAL"
			if id, ok := e.Args[i].(*Ident); ok {
				ts[i] = strings.Join(id.Parts, ".")
			}
			continue
		}
		ts[i] = a.typ().String()
	}
	return c.errf(e.P, "No matching signature for function %s for argument types: %s", e.Name, strings.Join(ts, ", "))
}

func (c *checker) arity(e *Call, args []node, min, max int) error {
	if len(args) < min || (max >= 0 && len(args) > max) {
		want := fmt.Sprint(min)
		if max < 0 {
			want = fmt.Sprintf("at least %d", min)
		} else if max != min {
			want = fmt.Sprintf("%d to %d", min, max)
		}
		return c.errf(e.P, "Number of arguments does not match for function %s. Expected %s arguments but got %d", e.Name, want, len(args))
	}
	for i, a := range args {
		if a == nil {
			return c.errf(e.Args[i].Pos(), "Unexpected %s argument to %s", e.Args[i].String(), e.Name)
		}
	}
	return nil
}

// sig checks a fixed signature: arity, coercion of each argument to want
// (tNull: any type, kept), and builds a strict call returning ret.
func (c *checker) sig(e *Call, args []node, want []typ, ret typ, impl func([]value) (value, error)) (node, error) {
	if err := c.arity(e, args, len(want), len(want)); err != nil {
		return nil, err
	}
	return c.sigStrict(e, args, want, ret, true, impl)
}

func (c *checker) sigStrict(e *Call, args []node, want []typ, ret typ, strict bool, impl func([]value) (value, error)) (node, error) {
	for i := range args {
		w := want[min(i, len(want)-1)]
		if w == tNull {
			continue
		}
		a, err := c.coerce(args[i], w, "function "+e.Name)
		if err != nil {
			return nil, c.noSig(e, args)
		}
		args[i] = a
	}
	return c.fold(&callNode{name: e.Name, args: args, t: ret, strict: strict, impl: impl, p: e.P}, args...)
}

// numericOf returns the common numeric type of args (NULLs become INT64).
func numericOf(args []node) (typ, bool) {
	t := tInt
	for _, a := range args {
		at := a.typ()
		if at == tNull {
			continue
		}
		if !isNumeric(at) {
			return 0, false
		}
		if numRank(at) > numRank(t) {
			t = at
		}
	}
	return t, true
}

func stringOrBytes(args []node) (typ, bool) {
	t := tNull
	for _, a := range args {
		switch at := a.typ(); {
		case at == tNull:
		case at != tString && at != tBytes:
			return 0, false
		case t == tNull:
			t = at
		case t != at:
			return 0, false
		}
	}
	if t == tNull {
		t = tString
	}
	return t, true
}

func repeatT(t typ, n int) []typ {
	out := make([]typ, n)
	for i := range out {
		out[i] = t
	}
	return out
}

func init() {
	builtins = map[string]builtin{}
	builtins["LOWER"] = caseFn(strings.ToLower, asciiLower)
	builtins["UPPER"] = caseFn(strings.ToUpper, asciiUpper)
	builtins["LENGTH"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 1, 1); err != nil {
			return nil, err
		}
		t, ok := stringOrBytes(args)
		if !ok {
			return nil, c.noSig(e, args)
		}
		return c.sig(e, args, []typ{t}, tInt, func(a []value) (value, error) {
			if t == tBytes {
				return value{i: int64(len(a[0].s))}, nil
			}
			return value{i: int64(utf8.RuneCountInString(a[0].s))}, nil
		})
	}
	charLen := func(c *checker, e *Call, args []node) (node, error) {
		return c.sig(e, args, []typ{tString}, tInt, func(a []value) (value, error) {
			return value{i: int64(utf8.RuneCountInString(a[0].s))}, nil
		})
	}
	builtins["CHAR_LENGTH"] = charLen
	builtins["CHARACTER_LENGTH"] = charLen
	builtins["BYTE_LENGTH"] = func(c *checker, e *Call, args []node) (node, error) {
		t, ok := stringOrBytes(args)
		if !ok {
			return nil, c.noSig(e, args)
		}
		return c.sig(e, args, []typ{t}, tInt, func(a []value) (value, error) { return value{i: int64(len(a[0].s))}, nil })
	}
	twoStr := func(f func(a, b string) bool) builtin {
		return func(c *checker, e *Call, args []node) (node, error) {
			if err := c.arity(e, args, 2, 2); err != nil {
				return nil, err
			}
			t, ok := stringOrBytes(args)
			if !ok {
				return nil, c.noSig(e, args)
			}
			return c.sig(e, args, []typ{t, t}, tBool, func(a []value) (value, error) { return value{b: f(a[0].s, a[1].s)}, nil })
		}
	}
	builtins["STARTS_WITH"] = twoStr(strings.HasPrefix)
	builtins["ENDS_WITH"] = twoStr(strings.HasSuffix)
	builtins["CONCAT"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 1, -1); err != nil {
			return nil, err
		}
		t, ok := stringOrBytes(args)
		if !ok {
			return nil, c.noSig(e, args)
		}
		return c.sigStrict(e, args, repeatT(t, len(args)), t, true, func(a []value) (value, error) {
			var b strings.Builder
			for _, v := range a {
				b.WriteString(v.s)
			}
			return value{s: b.String()}, nil
		})
	}
	substr := func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 2, 3); err != nil {
			return nil, err
		}
		t, ok := stringOrBytes(args[:1])
		if !ok {
			return nil, c.noSig(e, args)
		}
		return c.sig(e, args, append([]typ{t}, repeatT(tInt, len(args)-1)...), t, func(a []value) (value, error) {
			return substrImpl(t, a)
		})
	}
	builtins["SUBSTR"] = substr
	builtins["SUBSTRING"] = substr
	trim := func(left, right bool) builtin {
		return func(c *checker, e *Call, args []node) (node, error) {
			if err := c.arity(e, args, 1, 2); err != nil {
				return nil, err
			}
			t, ok := stringOrBytes(args)
			if !ok {
				return nil, c.noSig(e, args)
			}
			return c.sig(e, args, repeatT(t, len(args)), t, func(a []value) (value, error) {
				s := a[0].s
				if len(a) == 1 {
					if t == tBytes {
						return value{s: trimSet(s, " ", left, right, true)}, nil
					}
					if left {
						s = strings.TrimLeftFunc(s, unicode.IsSpace)
					}
					if right {
						s = strings.TrimRightFunc(s, unicode.IsSpace)
					}
					return value{s: s}, nil
				}
				return value{s: trimSet(s, a[1].s, left, right, t == tBytes)}, nil
			})
		}
	}
	builtins["TRIM"] = trim(true, true)
	builtins["LTRIM"] = trim(true, false)
	builtins["RTRIM"] = trim(false, true)
	builtins["REGEXP_CONTAINS"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 2, 2); err != nil {
			return nil, err
		}
		t, ok := stringOrBytes(args)
		if !ok {
			return nil, c.noSig(e, args)
		}
		var fixed *regexp.Regexp
		if v, ok := constValue(args[1]); ok && !v.null {
			re, err := regexp.Compile(v.s)
			if err != nil {
				return nil, c.errf(e.Args[1].Pos(), "Cannot parse regular expression: %v", err)
			}
			fixed = re
		}
		return c.sig(e, args, []typ{t, t}, tBool, func(a []value) (value, error) {
			re := fixed
			if re == nil {
				var err error
				if re, err = regexp.Compile(a[1].s); err != nil {
					return value{}, fmt.Errorf("Cannot parse regular expression: %v", err)
				}
			}
			return value{b: re.MatchString(a[0].s)}, nil
		})
	}
	builtins["STRPOS"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 2, 2); err != nil {
			return nil, err
		}
		t, ok := stringOrBytes(args)
		if !ok {
			return nil, c.noSig(e, args)
		}
		return c.sig(e, args, []typ{t, t}, tInt, func(a []value) (value, error) {
			i := strings.Index(a[0].s, a[1].s)
			if i < 0 {
				return value{i: 0}, nil
			}
			if t == tBytes {
				return value{i: int64(i + 1)}, nil
			}
			return value{i: int64(utf8.RuneCountInString(a[0].s[:i]) + 1)}, nil
		})
	}
	builtins["REPLACE"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 3, 3); err != nil {
			return nil, err
		}
		t, ok := stringOrBytes(args)
		if !ok {
			return nil, c.noSig(e, args)
		}
		return c.sig(e, args, []typ{t, t, t}, t, func(a []value) (value, error) {
			if a[1].s == "" {
				return a[0], nil
			}
			return value{s: strings.ReplaceAll(a[0].s, a[1].s, a[2].s)}, nil
		})
	}
	builtins["REVERSE"] = func(c *checker, e *Call, args []node) (node, error) {
		return c.sig(e, args, []typ{tString}, tString, func(a []value) (value, error) {
			r := []rune(a[0].s)
			for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
				r[i], r[j] = r[j], r[i]
			}
			return value{s: string(r)}, nil
		})
	}
	builtins["TO_JSON_STRING"] = func(c *checker, e *Call, args []node) (node, error) {
		return c.sig(e, args, []typ{tJSON}, tString, func(a []value) (value, error) { return value{s: a[0].s}, nil })
	}
	registerMath()
	registerConditional()
	registerTime()
	registerGeo()
	registerMore()
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 32
		}
	}
	return string(b)
}

func asciiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 32
		}
	}
	return string(b)
}

func caseFn(str, bytes func(string) string) builtin {
	return func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 1, 1); err != nil {
			return nil, err
		}
		t, ok := stringOrBytes(args)
		if !ok {
			return nil, c.noSig(e, args)
		}
		f := str
		if t == tBytes {
			f = bytes
		}
		return c.sig(e, args, []typ{t}, t, func(a []value) (value, error) { return value{s: f(a[0].s)}, nil })
	}
}

func trimSet(s, set string, left, right, bytes bool) string {
	if bytes {
		in := func(c byte) bool { return strings.IndexByte(set, c) >= 0 }
		i, j := 0, len(s)
		if left {
			for i < j && in(s[i]) {
				i++
			}
		}
		if right {
			for j > i && in(s[j-1]) {
				j--
			}
		}
		return s[i:j]
	}
	if left {
		s = strings.TrimLeft(s, set)
	}
	if right {
		s = strings.TrimRight(s, set)
	}
	return s
}

func substrImpl(t typ, a []value) (value, error) {
	s := a[0].s
	n := len(s)
	var idx []int // byte offset of each unit, plus len(s)
	if t == tString {
		for i := range s {
			idx = append(idx, i)
		}
		n = len(idx)
		idx = append(idx, len(s))
	}
	off := func(k int) int {
		if t == tString {
			return idx[k]
		}
		return k
	}
	pos := a[1].i
	var start int64
	switch {
	case pos > 0:
		start = pos - 1
	case pos == 0:
		start = 0
	default:
		start = int64(n) + pos
		if start < 0 {
			start = 0
		}
	}
	if start > int64(n) {
		start = int64(n)
	}
	end := int64(n)
	if len(a) == 3 {
		if a[2].i < 0 {
			return value{}, fmt.Errorf("Third argument in SUBSTR() cannot be negative")
		}
		if a[2].i < end-start {
			end = start + a[2].i
		}
	}
	return value{s: s[off(int(start)):off(int(end))]}, nil
}

func registerMath() {
	// sameNumeric: f(x) returning x's numeric type; float-only kernels are
	// applied to FLOAT64, decimal ones to NUMERIC/BIGNUMERIC.
	builtins["ABS"] = func(c *checker, e *Call, args []node) (node, error) {
		t, ok := numericOf(args)
		if !ok {
			return nil, c.noSig(e, args)
		}
		return c.sig(e, args, []typ{t}, t, func(a []value) (value, error) {
			switch t {
			case tInt:
				if a[0].i == math.MinInt64 {
					return value{}, fmt.Errorf("int64 overflow: ABS(%d)", a[0].i)
				}
				if a[0].i < 0 {
					return value{i: -a[0].i}, nil
				}
				return a[0], nil
			case tFloat:
				return value{f: math.Abs(a[0].f)}, nil
			}
			return value{r: new(big.Rat).Abs(a[0].r)}, nil
		})
	}
	builtins["SIGN"] = func(c *checker, e *Call, args []node) (node, error) {
		t, ok := numericOf(args)
		if !ok {
			return nil, c.noSig(e, args)
		}
		return c.sig(e, args, []typ{t}, t, func(a []value) (value, error) {
			switch t {
			case tInt:
				return value{i: int64(cmpInt(a[0].i, 0))}, nil
			case tFloat:
				f := a[0].f
				switch {
				case math.IsNaN(f) || f == 0:
					return value{f: f}, nil
				case f > 0:
					return value{f: 1}, nil
				}
				return value{f: -1}, nil
			}
			return value{r: big.NewRat(int64(a[0].r.Sign()), 1)}, nil
		})
	}
	builtins["MOD"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 2, 2); err != nil {
			return nil, err
		}
		t, ok := numericOf(args)
		if !ok || t == tFloat {
			return nil, c.noSig(e, args)
		}
		return c.sig(e, args, []typ{t, t}, t, func(a []value) (value, error) {
			if t == tInt {
				if a[1].i == 0 {
					return value{}, fmt.Errorf("division by zero: MOD(%d, 0)", a[0].i)
				}
				if a[1].i == -1 {
					return value{i: 0}, nil
				}
				return value{i: a[0].i % a[1].i}, nil
			}
			if a[1].r.Sign() == 0 {
				return value{}, fmt.Errorf("division by zero: MOD(%s, 0)", fmtDecimal(t, a[0].r))
			}
			q := new(big.Rat).Quo(a[0].r, a[1].r)
			qi := new(big.Int).Quo(q.Num(), q.Denom()) // truncated
			r := new(big.Rat).Sub(a[0].r, new(big.Rat).Mul(new(big.Rat).SetInt(qi), a[1].r))
			return value{r: r}, nil
		})
	}
	// Rounding: INT64 input yields FLOAT64; NUMERIC stays NUMERIC.
	roundLike := func(name string, f func(float64) float64, mode int) {
		builtins[name] = func(c *checker, e *Call, args []node) (node, error) {
			max := 1
			if name == "ROUND" || name == "TRUNC" {
				max = 2
			}
			if err := c.arity(e, args, 1, max); err != nil {
				return nil, err
			}
			t, ok := numericOf(args[:1])
			if !ok {
				return nil, c.noSig(e, args)
			}
			if t == tInt {
				t = tFloat
			}
			want := []typ{t, tInt}[:len(args)]
			return c.sig(e, args, want, t, func(a []value) (value, error) {
				digits := int64(0)
				if len(a) == 2 {
					digits = a[1].i
				}
				if t == tFloat {
					x := a[0].f
					if digits == 0 {
						return value{f: f(x)}, nil
					}
					if digits > 308 || digits < -308 {
						if digits > 0 {
							return value{f: x}, nil
						}
						return value{f: 0}, nil
					}
					p := math.Pow(10, float64(digits))
					return value{f: f(x*p) / p}, nil
				}
				r, err := roundRat(a[0].r, digits, mode)
				if err != nil {
					return value{}, err
				}
				r, err = roundDecimal(t, r)
				return value{r: r}, err
			})
		}
	}
	roundLike("ROUND", roundHalfAway, 0)
	roundLike("TRUNC", math.Trunc, 1)
	roundLike("FLOOR", math.Floor, 2)
	roundLike("CEIL", math.Ceil, 3)
	roundLike("CEILING", math.Ceil, 3)
	floatFn := func(name string, arity int, f func(a []float64) (float64, error)) {
		builtins[name] = func(c *checker, e *Call, args []node) (node, error) {
			if err := c.arity(e, args, arity, arity); err != nil {
				return nil, err
			}
			if _, ok := numericOf(args); !ok {
				return nil, c.noSig(e, args)
			}
			return c.sig(e, args, repeatT(tFloat, arity), tFloat, func(a []value) (value, error) {
				xs := make([]float64, len(a))
				for i, v := range a {
					xs[i] = v.f
				}
				r, err := f(xs)
				return value{f: r}, err
			})
		}
	}
	finite := func(xs ...float64) bool {
		for _, x := range xs {
			if math.IsInf(x, 0) || math.IsNaN(x) {
				return false
			}
		}
		return true
	}
	floatFn("SQRT", 1, func(a []float64) (float64, error) {
		if a[0] < 0 {
			return 0, fmt.Errorf("Argument to SQRT cannot be negative: %s", fmtFloat(a[0]))
		}
		return math.Sqrt(a[0]), nil
	})
	pow := func(a []float64) (float64, error) {
		r := math.Pow(a[0], a[1])
		if finite(a...) && !finite(r) {
			if math.IsNaN(r) {
				return 0, fmt.Errorf("Floating point error in function: POW(%s, %s)", fmtFloat(a[0]), fmtFloat(a[1]))
			}
			return 0, fmt.Errorf("Floating point overflow in function: POW(%s, %s)", fmtFloat(a[0]), fmtFloat(a[1]))
		}
		return r, nil
	}
	floatFn("POW", 2, pow)
	floatFn("POWER", 2, pow)
	floatFn("EXP", 1, func(a []float64) (float64, error) {
		r := math.Exp(a[0])
		if finite(a...) && !finite(r) {
			return 0, fmt.Errorf("Floating point overflow in function: EXP(%s)", fmtFloat(a[0]))
		}
		return r, nil
	})
	floatFn("LN", 1, func(a []float64) (float64, error) {
		if a[0] <= 0 && finite(a...) {
			return 0, fmt.Errorf("Argument to LN cannot be zero or negative: %s", fmtFloat(a[0]))
		}
		return math.Log(a[0]), nil
	})
	builtins["LOG"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 1, 2); err != nil {
			return nil, err
		}
		if _, ok := numericOf(args); !ok {
			return nil, c.noSig(e, args)
		}
		return c.sig(e, args, repeatT(tFloat, len(args)), tFloat, func(a []value) (value, error) {
			x := a[0].f
			if x <= 0 {
				return value{}, fmt.Errorf("Argument to LOG cannot be zero or negative: %s", fmtFloat(x))
			}
			if len(a) == 1 {
				return value{f: math.Log(x)}, nil
			}
			b := a[1].f
			if b <= 0 || b == 1 {
				return value{}, fmt.Errorf("Base of LOG must be positive and not 1: %s", fmtFloat(b))
			}
			return value{f: math.Log(x) / math.Log(b)}, nil
		})
	}
	floatFn("LOG10", 1, func(a []float64) (float64, error) {
		if a[0] <= 0 {
			return 0, fmt.Errorf("Argument to LOG10 cannot be zero or negative: %s", fmtFloat(a[0]))
		}
		return math.Log10(a[0]), nil
	})
	floatFn("IEEE_DIVIDE", 2, func(a []float64) (float64, error) { return a[0] / a[1], nil })
	builtins["SAFE_DIVIDE"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 2, 2); err != nil {
			return nil, err
		}
		t, ok := numericOf(args)
		if !ok {
			return nil, c.noSig(e, args)
		}
		if t == tInt {
			t = tFloat
		}
		return c.sig(e, args, []typ{t, t}, t, func(a []value) (value, error) {
			v, err := arith('/', t, a[0], a[1])
			if err != nil {
				return nullValue, nil
			}
			return v, nil
		})
	}
	extreme := func(greatest bool) builtin {
		return func(c *checker, e *Call, args []node) (node, error) {
			if err := c.arity(e, args, 1, -1); err != nil {
				return nil, err
			}
			t := tNull
			for _, a := range args {
				st, ok := c.supertype(&constNode{v: constVec(t, nullValue)}, a)
				if !ok {
					return nil, c.noSig(e, args)
				}
				t = st
			}
			if t == tNull {
				t = tInt
			}
			switch t {
			case tGeo, tJSON, tStruct, tArray, tRange, tInterval:
				return nil, c.noSig(e, args)
			}
			return c.sigStrict(e, args, repeatT(t, len(args)), t, true, func(a []value) (value, error) {
				best := a[0]
				for _, v := range a[1:] {
					if t == tFloat && (math.IsNaN(v.f) || math.IsNaN(best.f)) {
						return value{f: math.NaN()}, nil
					}
					c := compareValues(t, v, best)
					if (greatest && c > 0) || (!greatest && c < 0) {
						best = v
					}
				}
				return best, nil
			})
		}
	}
	builtins["GREATEST"] = extreme(true)
	builtins["LEAST"] = extreme(false)
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func roundHalfAway(x float64) float64 { return math.Round(x) }

// roundRat rounds r to digits decimal places: mode 0 half away from zero,
// 1 toward zero, 2 floor, 3 ceiling.
func roundRat(r *big.Rat, digits int64, mode int) (*big.Rat, error) {
	if digits > 76 {
		return r, nil
	}
	if digits < -76 {
		return new(big.Rat), nil
	}
	scale := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(abs64(digits)), nil))
	x := new(big.Rat).Set(r)
	if digits >= 0 {
		x.Mul(x, scale)
	} else {
		x.Quo(x, scale)
	}
	q, m := new(big.Int).QuoRem(x.Num(), x.Denom(), new(big.Int))
	if m.Sign() != 0 {
		neg := x.Sign() < 0
		switch mode {
		case 0:
			m2 := new(big.Int).Abs(m)
			m2.Lsh(m2, 1)
			if m2.Cmp(x.Denom()) >= 0 {
				if neg {
					q.Sub(q, big.NewInt(1))
				} else {
					q.Add(q, big.NewInt(1))
				}
			}
		case 2:
			if neg {
				q.Sub(q, big.NewInt(1))
			}
		case 3:
			if !neg {
				q.Add(q, big.NewInt(1))
			}
		}
	}
	out := new(big.Rat).SetInt(q)
	if digits >= 0 {
		out.Quo(out, scale)
	} else {
		out.Mul(out, scale)
	}
	return out, nil
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func registerConditional() {
	builtins["IF"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 3, 3); err != nil {
			return nil, err
		}
		cond, err := c.coerce(args[0], tBool, "function IF")
		if err != nil {
			return nil, err
		}
		return c.cond(e.P, []node{cond}, []node{args[1]}, args[2], func() *Error { return c.noSig(e, args) })
	}
	coalesce := func(name string, min, max int) builtin {
		return func(c *checker, e *Call, args []node) (node, error) {
			if err := c.arity(e, args, min, max); err != nil {
				return nil, err
			}
			t := tNull
			for _, a := range args {
				st, ok := c.supertype(&constNode{v: constVec(t, nullValue)}, a)
				if !ok {
					return nil, c.noSig(e, args)
				}
				t = st
			}
			return c.sigStrict(e, args, repeatT(t, len(args)), t, false, func(a []value) (value, error) {
				for _, v := range a {
					if !v.null {
						return v, nil
					}
				}
				return nullValue, nil
			})
		}
	}
	builtins["IFNULL"] = coalesce("IFNULL", 2, 2)
	builtins["COALESCE"] = coalesce("COALESCE", 1, -1)
	builtins["NULLIF"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 2, 2); err != nil {
			return nil, err
		}
		t, ok := c.supertype(args[0], args[1])
		if !ok {
			return nil, c.noSig(e, args)
		}
		return c.sigStrict(e, args, []typ{t, t}, t, false, func(a []value) (value, error) {
			if a[0].null || a[1].null {
				return a[0], nil
			}
			if compareValues(t, a[0], a[1]) == 0 && !(t == tFloat && math.IsNaN(a[0].f)) {
				return nullValue, nil
			}
			return a[0], nil
		})
	}
}

// ---- date and time ----

type extractNode struct {
	x    node
	part string
	t    typ
	p    int
}

func (n *extractNode) typ() typ { return n.t }
func (n *extractNode) pos() int { return n.p }

func (n *extractNode) eval(ctx *evalCtx) (*vec, error) {
	x, err := n.x.eval(ctx)
	if err != nil {
		return nil, err
	}
	out := newVec(n.t, x.n)
	out.konst = x.konst
	if x.nulls != nil {
		out.nulls = append([]bool(nil), x.nulls...)
	}
	for i := 0; i < x.n; i++ {
		if x.isNull(i) {
			continue
		}
		out.i[i] = extractValue(x.t, x.i[i], n.part)
	}
	return out, nil
}

func extractValue(t typ, v int64, part string) int64 {
	var days, tod int64
	switch t {
	case tDate:
		days = v
	case tTime:
		tod = v
	default:
		days, tod = floorDiv(v, microsPerDay), floorMod(v, microsPerDay)
	}
	switch part {
	case "DATE":
		return days
	case "TIME":
		return tod
	case "HOUR":
		return tod / (3600 * microsPerSecond)
	case "MINUTE":
		return tod / (60 * microsPerSecond) % 60
	case "SECOND":
		return tod / microsPerSecond % 60
	case "MILLISECOND":
		return tod / 1000 % 1000
	case "MICROSECOND":
		return tod % microsPerSecond
	}
	r, _ := extractDatePart(days, part)
	return r
}

// dateAddNode is DATE_ADD / DATETIME_ADD / TIMESTAMP_ADD (sign -1: _SUB)
// and DATE +/- INT64.
type dateAddNode struct {
	x, n node
	sign int64
	part string
	p    int
}

func (n *dateAddNode) typ() typ { return n.x.typ() }
func (n *dateAddNode) pos() int { return n.p }

func (n *dateAddNode) eval(ctx *evalCtx) (*vec, error) {
	x, err := n.x.eval(ctx)
	if err != nil {
		return nil, err
	}
	k, err := n.n.eval(ctx)
	if err != nil {
		return nil, err
	}
	out := newVec(x.t, ctx.n)
	out.nulls = orNulls(ctx.n, x, k)
	for i := 0; i < ctx.n; i++ {
		if out.nulls != nil && out.nulls[i] {
			continue
		}
		v, ok := addPart(x.t, x.i[x.idx(i)], n.sign*k.i[k.idx(i)], n.part)
		if !ok {
			return nil, ctx.errf(n.p, "%s overflow: %s + INTERVAL %d %s", x.t, formatValue(x.t, x.get(i)), n.sign*k.i[k.idx(i)], n.part)
		}
		out.i[i] = v
	}
	return out, nil
}

func addPart(t typ, v, k int64, part string) (int64, bool) {
	if k == math.MinInt64 {
		return 0, false
	}
	if t == tDate {
		if abs64(k) > 4*(maxDate-minDate) {
			return 0, false // beyond the DATE range whatever the part
		}
		var d int64
		switch part {
		case "DAY":
			d = v + k
		case "WEEK":
			d = v + 7*k
		case "MONTH", "QUARTER", "YEAR":
			m := map[string]int64{"MONTH": 1, "QUARTER": 3, "YEAR": 12}[part]
			if abs64(k) > 120000 {
				return 0, false
			}
			var ok bool
			if d, ok = addMonths(v, k*m); !ok {
				return 0, false
			}
		}
		return d, d >= minDate && d <= maxDate
	}
	var r int64
	if unit, ok := partMicros[part]; ok {
		if abs64(k) > (maxMicros-minMicros)/unit {
			return 0, false
		}
		r = v + k*unit
	} else {
		days, tod := floorDiv(v, microsPerDay), floorMod(v, microsPerDay)
		d, ok := addPart(tDate, days, k, part)
		if !ok {
			return 0, false
		}
		r = d*microsPerDay + tod
	}
	return r, r >= minMicros && r <= maxMicros
}

var dateAddParts = map[string]map[string]bool{
	"DATE":      {"DAY": true, "WEEK": true, "MONTH": true, "QUARTER": true, "YEAR": true},
	"DATETIME":  {"MICROSECOND": true, "MILLISECOND": true, "SECOND": true, "MINUTE": true, "HOUR": true, "DAY": true, "WEEK": true, "MONTH": true, "QUARTER": true, "YEAR": true},
	"TIMESTAMP": {"MICROSECOND": true, "MILLISECOND": true, "SECOND": true, "MINUTE": true, "HOUR": true, "DAY": true},
}

func registerTime() {
	addFn := func(kind string, t typ, sign int64) builtin {
		return func(c *checker, e *Call, args []node) (node, error) {
			if len(e.Args) != 2 {
				return nil, c.errf(e.P, "Number of arguments does not match for function %s. Expected 2 arguments but got %d", e.Name, len(e.Args))
			}
			iv, ok := e.Args[1].(*Interval)
			if !ok {
				return nil, c.errf(e.Args[1].Pos(), "%s expects an INTERVAL as its second argument", e.Name)
			}
			if !dateAddParts[kind][iv.Part] {
				return nil, c.errf(iv.P, "Unsupported date part %s in function %s", iv.Part, e.Name)
			}
			if args[0] == nil {
				return nil, c.noSig(e, args)
			}
			x, err := c.coerce(args[0], t, "function "+e.Name)
			if err != nil {
				return nil, c.noSig(e, args)
			}
			k, err := c.check(iv.X)
			if err != nil {
				return nil, err
			}
			if k, err = c.coerce(k, tInt, "INTERVAL"); err != nil {
				return nil, err
			}
			return c.fold(&dateAddNode{x: x, n: k, sign: sign, part: iv.Part, p: e.P}, x, k)
		}
	}
	builtins["DATE_ADD"] = addFn("DATE", tDate, 1)
	builtins["DATE_SUB"] = addFn("DATE", tDate, -1)
	builtins["DATETIME_ADD"] = addFn("DATETIME", tDatetime, 1)
	builtins["DATETIME_SUB"] = addFn("DATETIME", tDatetime, -1)
	builtins["TIMESTAMP_ADD"] = addFn("TIMESTAMP", tTimestamp, 1)
	builtins["TIMESTAMP_SUB"] = addFn("TIMESTAMP", tTimestamp, -1)
	diffFn := func(t typ) builtin {
		return func(c *checker, e *Call, args []node) (node, error) {
			if len(e.Args) != 3 {
				return nil, c.errf(e.P, "Number of arguments does not match for function %s. Expected 3 arguments but got %d", e.Name, len(e.Args))
			}
			id, ok := e.Args[2].(*Ident)
			if !ok || len(id.Parts) != 1 {
				return nil, c.errf(e.Args[2].Pos(), "%s expects a date part as its third argument", e.Name)
			}
			part := strings.ToUpper(id.Parts[0])
			valid := dateAddParts[map[typ]string{tDate: "DATE", tDatetime: "DATETIME", tTimestamp: "TIMESTAMP"}[t]][part]
			if part == "ISOWEEK" || part == "ISOYEAR" {
				valid = t != tTimestamp
			}
			if !valid {
				return nil, c.errf(id.P, "Unsupported date part %s in function %s", part, e.Name)
			}
			return c.sig(e, args[:2], []typ{t, t}, tInt, func(a []value) (value, error) {
				return value{i: diffValue(t, a[0].i, a[1].i, part)}, nil
			})
		}
	}
	builtins["DATE_DIFF"] = diffFn(tDate)
	builtins["DATETIME_DIFF"] = diffFn(tDatetime)
	builtins["TIMESTAMP_DIFF"] = diffFn(tTimestamp)

	builtins["DATE"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 1, 3); err != nil {
			return nil, err
		}
		switch {
		case len(args) == 3:
			return c.sig(e, args, []typ{tInt, tInt, tInt}, tDate, func(a []value) (value, error) {
				y, m, d := a[0].i, a[1].i, a[2].i
				if y < 1 || y > 9999 || m < 1 || m > 12 || d < 1 || d > daysIn(y, m) {
					return value{}, fmt.Errorf("Input calculates to invalid date: %04d-%02d-%02d", y, m, d)
				}
				return value{i: daysFromCivil(y, m, d)}, nil
			})
		case args[0].typ() == tDatetime && len(args) == 1:
			return c.sig(e, args, []typ{tDatetime}, tDate, func(a []value) (value, error) {
				return value{i: floorDiv(a[0].i, microsPerDay)}, nil
			})
		case args[0].typ() == tDate && len(args) == 1:
			return args[0], nil
		case args[0].typ() == tString && len(args) == 1:
			return c.sig(e, args, []typ{tString}, tDate, func(a []value) (value, error) {
				d, err := parseDate(a[0].s)
				return value{i: d}, err
			})
		case args[0].typ() == tString && len(args) == 2:
			// Only a string literal coerces to TIMESTAMP here.
			if k, ok := args[0].(*constNode); !ok || !k.lit {
				return nil, c.noSig(e, args)
			}
			return c.sig(e, args, []typ{tTimestamp, tString}, tDate, func(a []value) (value, error) {
				loc, err := zoneArg(a, 1)
				if err != nil {
					return value{}, err
				}
				return value{i: floorDiv(utcToLocal(a[0].i, loc), microsPerDay)}, nil
			})
		case args[0].typ() == tTimestamp || args[0].typ() == tNull:
			return c.sig(e, args, append([]typ{tTimestamp}, repeatT(tString, len(args)-1)...), tDate, func(a []value) (value, error) {
				loc, err := zoneArg(a, 1)
				if err != nil {
					return value{}, err
				}
				return value{i: floorDiv(utcToLocal(a[0].i, loc), microsPerDay)}, nil
			})
		}
		return nil, c.noSig(e, args)
	}
	builtins["TIMESTAMP"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 1, 2); err != nil {
			return nil, err
		}
		t := args[0].typ()
		switch t {
		case tString, tDate, tDatetime, tNull:
		case tTimestamp:
			if len(args) == 1 {
				return args[0], nil
			}
			return nil, c.noSig(e, args)
		default:
			return nil, c.noSig(e, args)
		}
		if t == tNull {
			t = tString
		}
		return c.sig(e, args, append([]typ{t}, repeatT(tString, len(args)-1)...), tTimestamp, func(a []value) (value, error) {
			loc, err := zoneArg(a, 1)
			if err != nil {
				return value{}, err
			}
			switch t {
			case tString:
				v, err := parseTimestamp(a[0].s, loc)
				return value{i: v}, err
			case tDate:
				v, err := localToUTC(a[0].i*microsPerDay, loc)
				return value{i: v}, err
			}
			v, err := localToUTC(a[0].i, loc)
			return value{i: v}, err
		})
	}
	builtins["DATETIME"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 1, 2); err != nil {
			return nil, err
		}
		switch args[0].typ() {
		case tDate:
			if len(args) == 1 {
				return c.sig(e, args, []typ{tDate}, tDatetime, func(a []value) (value, error) { return value{i: a[0].i * microsPerDay}, nil })
			}
			return c.sig(e, args, []typ{tDate, tTime}, tDatetime, func(a []value) (value, error) {
				return value{i: a[0].i*microsPerDay + a[1].i}, nil
			})
		case tTimestamp:
			return c.sig(e, args, append([]typ{tTimestamp}, repeatT(tString, len(args)-1)...), tDatetime, func(a []value) (value, error) {
				loc, err := zoneArg(a, 1)
				if err != nil {
					return value{}, err
				}
				return value{i: utcToLocal(a[0].i, loc)}, nil
			})
		}
		return nil, c.noSig(e, args)
	}
	current := func(t typ) builtin {
		return func(c *checker, e *Call, args []node) (node, error) {
			max := 1
			if t == tTimestamp {
				max = 0
			}
			if err := c.arity(e, args, 0, max); err != nil {
				return nil, err
			}
			us := c.now.UnixMicro()
			return c.sigStrict(e, args, []typ{tString}, t, true, func(a []value) (value, error) {
				loc, err := zoneArg(a, 0)
				if err != nil {
					return value{}, err
				}
				local := utcToLocal(us, loc)
				switch t {
				case tDate:
					return value{i: floorDiv(local, microsPerDay)}, nil
				case tTime:
					return value{i: floorMod(local, microsPerDay)}, nil
				case tDatetime:
					return value{i: local}, nil
				}
				return value{i: us}, nil
			})
		}
	}
	builtins["CURRENT_DATE"] = current(tDate)
	builtins["CURRENT_DATETIME"] = current(tDatetime)
	builtins["CURRENT_TIME"] = current(tTime)
	builtins["CURRENT_TIMESTAMP"] = current(tTimestamp)
	unix := func(div int64) builtin {
		return func(c *checker, e *Call, args []node) (node, error) {
			return c.sig(e, args, []typ{tTimestamp}, tInt, func(a []value) (value, error) {
				return value{i: floorDiv(a[0].i, div)}, nil
			})
		}
	}
	builtins["UNIX_SECONDS"] = unix(microsPerSecond)
	builtins["UNIX_MILLIS"] = unix(1000)
	builtins["UNIX_MICROS"] = unix(1)
	builtins["UNIX_DATE"] = func(c *checker, e *Call, args []node) (node, error) {
		return c.sig(e, args, []typ{tDate}, tInt, func(a []value) (value, error) { return a[0], nil })
	}
	fromUnix := func(mul int64) builtin {
		return func(c *checker, e *Call, args []node) (node, error) {
			return c.sig(e, args, []typ{tInt}, tTimestamp, func(a []value) (value, error) {
				x := a[0].i
				if x > maxMicros/mul || x < minMicros/mul {
					return value{}, fmt.Errorf("Timestamp value is out of allowed range: %d", x)
				}
				return value{i: x * mul}, nil
			})
		}
	}
	builtins["TIMESTAMP_SECONDS"] = fromUnix(microsPerSecond)
	builtins["TIMESTAMP_MILLIS"] = fromUnix(1000)
	builtins["TIMESTAMP_MICROS"] = fromUnix(1)
	builtins["DATE_FROM_UNIX_DATE"] = func(c *checker, e *Call, args []node) (node, error) {
		return c.sig(e, args, []typ{tInt}, tDate, func(a []value) (value, error) {
			if a[0].i < minDate || a[0].i > maxDate {
				return value{}, fmt.Errorf("DATE value is out of allowed range: %d", a[0].i)
			}
			return a[0], nil
		})
	}
}

func zoneArg(a []value, i int) (*time.Location, error) {
	if len(a) <= i {
		return time.UTC, nil
	}
	loc, err := parseZone(strings.TrimSpace(a[i].s))
	if err != nil {
		return nil, fmt.Errorf("Invalid time zone: %s", a[i].s)
	}
	return loc, nil
}

func diffValue(t typ, a, b int64, part string) int64 {
	if t == tTimestamp {
		return (a - b) / partMicros[part]
	}
	if unit, ok := partMicros[part]; ok && t == tDatetime && part != "DAY" {
		return floorDiv(a, unit) - floorDiv(b, unit)
	}
	da, db := a, b
	if t == tDatetime {
		da, db = floorDiv(a, microsPerDay), floorDiv(b, microsPerDay)
	}
	switch part {
	case "DAY":
		return da - db
	case "WEEK":
		// Weeks start on Sunday: count Sundays crossed.
		return (da - floorMod(da+4, 7) - (db - floorMod(db+4, 7))) / 7
	case "ISOWEEK":
		return (da - floorMod(da+3, 7) - (db - floorMod(db+3, 7))) / 7
	case "MONTH", "QUARTER", "YEAR":
		ya, ma, _ := civilFromDays(da)
		yb, mb, _ := civilFromDays(db)
		switch part {
		case "MONTH":
			return (ya*12 + ma) - (yb*12 + mb)
		case "QUARTER":
			return (ya*4 + (ma-1)/3) - (yb*4 + (mb-1)/3)
		}
		return ya - yb
	case "ISOYEAR":
		ia, _ := extractDatePart(da, "ISOYEAR")
		ib, _ := extractDatePart(db, "ISOYEAR")
		return ia - ib
	}
	return 0
}

// ---- geography ----

func geomOf(v value) (*geometry, error) {
	if v.g != nil {
		return v.g, nil
	}
	return parseWKT(v.s)
}

func registerGeo() {
	builtins["ST_GEOGFROMTEXT"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 1, 3); err != nil {
			return nil, err
		}
		want := []typ{tString, tBool, tBool}[:len(args)]
		return c.sig(e, args, want, tGeo, func(a []value) (value, error) {
			g, err := parseWKT(a[0].s)
			if err != nil {
				return value{}, err
			}
			return value{s: g.wkt(), g: g}, nil
		})
	}
	builtins["ST_GEOGFROMWKT"] = builtins["ST_GEOGFROMTEXT"]
	// The Read API reference's own example spells it st_geofromtext.
	builtins["ST_GEOFROMTEXT"] = builtins["ST_GEOGFROMTEXT"]
	builtins["ST_GEOGPOINT"] = func(c *checker, e *Call, args []node) (node, error) {
		return c.sig(e, args, []typ{tFloat, tFloat}, tGeo, func(a []value) (value, error) {
			q, err := newPoint(a[0].f, a[1].f)
			if err != nil {
				return value{}, fmt.Errorf("ST_GEOGPOINT: %v", err)
			}
			g := &geometry{points: []pt{q}}
			return value{s: g.wkt(), g: g}, nil
		})
	}
	geo2 := func(ret typ, extra []typ, f func(a, b *geometry, rest []value) (value, error)) builtin {
		return func(c *checker, e *Call, args []node) (node, error) {
			return c.sig(e, args, append([]typ{tGeo, tGeo}, extra...), ret, func(a []value) (value, error) {
				g1, err := geomOf(a[0])
				if err != nil {
					return value{}, err
				}
				g2, err := geomOf(a[1])
				if err != nil {
					return value{}, err
				}
				return f(g1, g2, a[2:])
			})
		}
	}
	builtins["ST_EQUALS"] = geo2(tBool, nil, func(a, b *geometry, _ []value) (value, error) {
		return value{b: geoEquals(a, b)}, nil
	})
	builtins["ST_DISTANCE"] = func(c *checker, e *Call, args []node) (node, error) {
		if len(args) == 3 {
			return geo2(tFloat, []typ{tBool}, geoDist)(c, e, args)
		}
		return geo2(tFloat, nil, geoDist)(c, e, args)
	}
	builtins["ST_DWITHIN"] = func(c *checker, e *Call, args []node) (node, error) {
		extra := []typ{tFloat}
		if len(args) == 4 {
			extra = append(extra, tBool)
		}
		return geo2(tBool, extra, func(a, b *geometry, rest []value) (value, error) {
			d, ok := geoDistance(a, b)
			if !ok {
				return value{b: false}, nil
			}
			return value{b: d <= rest[0].f}, nil
		})(c, e, args)
	}
	builtins["ST_INTERSECTS"] = geo2(tBool, nil, func(a, b *geometry, _ []value) (value, error) {
		d, ok := geoDistance(a, b)
		return value{b: ok && d == 0}, nil
	})
	coord := func(x bool) builtin {
		return func(c *checker, e *Call, args []node) (node, error) {
			return c.sig(e, args, []typ{tGeo}, tFloat, func(a []value) (value, error) {
				g, err := geomOf(a[0])
				if err != nil {
					return value{}, err
				}
				if g.empty() {
					return nullValue, nil
				}
				if len(g.points) != 1 || len(g.lines) > 0 || len(g.polys) > 0 {
					return value{}, fmt.Errorf("%s: input must be a point", e.Name)
				}
				if x {
					return value{f: g.points[0].lng}, nil
				}
				return value{f: g.points[0].lat}, nil
			})
		}
	}
	builtins["ST_X"] = coord(true)
	builtins["ST_Y"] = coord(false)
	builtins["ST_ASTEXT"] = func(c *checker, e *Call, args []node) (node, error) {
		return c.sig(e, args, []typ{tGeo}, tString, func(a []value) (value, error) {
			g, err := geomOf(a[0])
			if err != nil {
				return value{}, err
			}
			return value{s: g.wkt()}, nil
		})
	}
}

func geoDist(a, b *geometry, _ []value) (value, error) {
	d, ok := geoDistance(a, b)
	if !ok {
		return nullValue, nil
	}
	return value{f: d}, nil
}
