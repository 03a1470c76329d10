// Mathematical functions (ABS, ROUND, DIV, MOD, ...) of the expression
// language, and their numeric helpers.

package filter

import (
	"fmt"
	"math"
	"math/big"
)

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
			switch name {
			case "ROUND":
				max = 3
			case "TRUNC":
				max = 2
			}
			if err := c.arity(e, args, 1, max); err != nil {
				return nil, err
			}
			t, ok := numericOf(args[:1])
			if !ok {
				return nil, c.noSig(e, args)
			}
			mode := mode
			if len(args) == 3 {
				// ROUND(x, digits, rounding_mode): NUMERIC and
				// BIGNUMERIC only (ZetaSQL FN_ROUND_WITH_ROUNDING_MODE_*),
				// the mode a literal of the ROUNDING_MODE enum.
				m, ok := args[2].(*constNode)
				if !ok || !isDecimal(t) || !m.lit || m.typ() != tString {
					return nil, c.noSig(e, args)
				}
				switch s := m.v.s[0]; s {
				case "ROUND_HALF_AWAY_FROM_ZERO":
				case "ROUND_HALF_EVEN":
					mode = 4
				default:
					return nil, c.errf(m.pos(), "Could not cast literal %q to type ROUNDING_MODE", s)
				}
				args = args[:2]
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
	// floatFn is a function of FLOAT64 arguments; with a NUMERIC or
	// BIGNUMERIC argument (and no FLOAT64 one) the power, root, exponent
	// and logarithm functions take and return that type (GoogleSQL's
	// FN_POW_NUMERIC, FN_SQRT_NUMERIC, ...): dec computes them, exactly
	// where it can (decimalFn), else through FLOAT64, rounded.
	floatFn := func(name string, arity int, f func(a []float64) (float64, error), dec ...func(t typ, a []*big.Rat) (*big.Rat, bool, error)) {
		builtins[name] = func(c *checker, e *Call, args []node) (node, error) {
			if err := c.arity(e, args, arity, arity); err != nil {
				return nil, err
			}
			t, ok := numericOf(args)
			if !ok {
				return nil, c.noSig(e, args)
			}
			if len(dec) > 0 && isDecimal(t) {
				return decimalFn(c, e, args, t, f, dec[0])
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
	}, func(t typ, a []*big.Rat) (*big.Rat, bool, error) {
		if a[0].Sign() < 0 {
			return nil, true, fmt.Errorf("Argument to SQRT cannot be negative: %s", fmtDecimal(t, a[0]))
		}
		r, _ := new(big.Float).SetPrec(512).Sqrt(new(big.Float).SetPrec(512).SetRat(a[0])).Rat(nil)
		return r, true, nil
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
	// powDec is exact for a small integer exponent.
	powDec := func(t typ, a []*big.Rat) (*big.Rat, bool, error) {
		y := a[1]
		if !y.IsInt() || y.Num().CmpAbs(big.NewInt(64)) > 0 {
			return nil, false, nil
		}
		n := y.Num().Int64()
		if n < 0 && a[0].Sign() == 0 {
			return nil, true, fmt.Errorf("division by zero: POW(%s, %s)", fmtDecimal(t, a[0]), fmtDecimal(t, y))
		}
		r := new(big.Rat).SetInt64(1)
		for range max(n, -n) {
			r.Mul(r, a[0])
		}
		if n < 0 {
			r.Inv(r)
		}
		return r, true, nil
	}
	viaFloat := func(typ, []*big.Rat) (*big.Rat, bool, error) { return nil, false, nil }
	floatFn("POW", 2, pow, powDec)
	floatFn("POWER", 2, pow, powDec)
	floatFn("EXP", 1, func(a []float64) (float64, error) {
		r := math.Exp(a[0])
		if finite(a...) && !finite(r) {
			return 0, fmt.Errorf("Floating point overflow in function: EXP(%s)", fmtFloat(a[0]))
		}
		return r, nil
	}, viaFloat)
	floatFn("LN", 1, func(a []float64) (float64, error) {
		if a[0] <= 0 && finite(a...) {
			return 0, fmt.Errorf("Argument to LN cannot be zero or negative: %s", fmtFloat(a[0]))
		}
		return math.Log(a[0]), nil
	}, viaFloat)
	builtins["LOG"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 1, 2); err != nil {
			return nil, err
		}
		t, ok := numericOf(args)
		if !ok {
			return nil, c.noSig(e, args)
		}
		if isDecimal(t) {
			return decimalFn(c, e, args, t, func(a []float64) (float64, error) {
				if a[0] <= 0 {
					return 0, fmt.Errorf("Argument to LOG cannot be zero or negative: %s", fmtFloat(a[0]))
				}
				if len(a) == 1 {
					return math.Log(a[0]), nil
				}
				if a[1] <= 0 || a[1] == 1 {
					return 0, fmt.Errorf("Base of LOG must be positive and not 1: %s", fmtFloat(a[1]))
				}
				return math.Log(a[0]) / math.Log(a[1]), nil
			}, func(typ, []*big.Rat) (*big.Rat, bool, error) { return nil, false, nil })
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
	}, viaFloat)
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
			switch t.kind() {
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
	registerMathMore(func(name string, arity int, f func([]float64) (float64, error)) { floatFn(name, arity, f) }, finite)
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
// 1 toward zero, 2 floor, 3 ceiling, 4 half to even.
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
		case 4:
			m2 := new(big.Int).Abs(m)
			m2.Lsh(m2, 1)
			if c := m2.Cmp(x.Denom()); c > 0 || c == 0 && q.Bit(0) == 1 {
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

// registerMathMore adds DIV, IS_NAN/IS_INF, the SAFE_ arithmetic
// functions, CBRT and the trigonometric and hyperbolic families.
func registerMathMore(floatFn func(string, int, func([]float64) (float64, error)), finite func(...float64) bool) {
	builtins["DIV"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 2, 2); err != nil {
			return nil, err
		}
		t, ok := numericOf(args)
		if !ok || t == tFloat {
			return nil, c.noSig(e, args)
		}
		return c.sig(e, args, []typ{t, t}, t, func(a []value) (value, error) {
			if t == tInt {
				x, y := a[0].i, a[1].i
				if y == 0 {
					return value{}, fmt.Errorf("division by zero: DIV(%d, 0)", x)
				}
				if x == math.MinInt64 && y == -1 {
					return value{}, fmt.Errorf("int64 overflow: DIV(%d, %d)", x, y)
				}
				return value{i: x / y}, nil
			}
			if a[1].r.Sign() == 0 {
				return value{}, fmt.Errorf("division by zero: DIV(%s, 0)", fmtDecimal(t, a[0].r))
			}
			q := new(big.Rat).Quo(a[0].r, a[1].r)
			r, err := roundDecimal(t, new(big.Rat).SetInt(new(big.Int).Quo(q.Num(), q.Denom())))
			if err != nil {
				return value{}, fmt.Errorf("%s overflow: DIV(%s, %s)", t, fmtDecimal(t, a[0].r), fmtDecimal(t, a[1].r))
			}
			return value{r: r}, nil
		})
	}
	isFloat := func(f func(float64) bool) builtin {
		return func(c *checker, e *Call, args []node) (node, error) {
			if err := c.arity(e, args, 1, 1); err != nil {
				return nil, err
			}
			if _, ok := numericOf(args); !ok {
				return nil, c.noSig(e, args)
			}
			return c.sig(e, args, []typ{tFloat}, tBool, func(a []value) (value, error) { return value{b: f(a[0].f)}, nil })
		}
	}
	builtins["IS_NAN"] = isFloat(math.IsNaN)
	builtins["IS_INF"] = isFloat(func(f float64) bool { return math.IsInf(f, 0) })
	safeArith := func(op byte) builtin {
		return func(c *checker, e *Call, args []node) (node, error) {
			if err := c.arity(e, args, 2, 2); err != nil {
				return nil, err
			}
			t, ok := numericOf(args)
			if !ok {
				return nil, c.noSig(e, args)
			}
			return c.sig(e, args, []typ{t, t}, t, func(a []value) (value, error) {
				v, err := arith(op, t, a[0], a[1])
				if err != nil {
					return nullValue, nil
				}
				return v, nil
			})
		}
	}
	builtins["SAFE_ADD"] = safeArith('+')
	builtins["SAFE_SUBTRACT"] = safeArith('-')
	builtins["SAFE_MULTIPLY"] = safeArith('*')
	builtins["SAFE_NEGATE"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 1, 1); err != nil {
			return nil, err
		}
		t, ok := numericOf(args)
		if !ok {
			return nil, c.noSig(e, args)
		}
		return c.sig(e, args, []typ{t}, t, func(a []value) (value, error) {
			switch t {
			case tInt:
				if a[0].i == math.MinInt64 {
					return nullValue, nil
				}
				return value{i: -a[0].i}, nil
			case tFloat:
				return value{f: -a[0].f}, nil
			}
			return value{r: new(big.Rat).Neg(a[0].r)}, nil
		})
	}
	// Float kernels: outside the domain is an error; a finite input with
	// an infinite result is an overflow error.
	unary := func(name string, f func(float64) float64, domain func(float64) bool) {
		floatFn(name, 1, func(a []float64) (float64, error) {
			x := a[0]
			if domain != nil && !math.IsNaN(x) && !domain(x) {
				return 0, fmt.Errorf("Floating point error in function: %s(%s)", name, fmtFloat(x))
			}
			r := f(x)
			if finite(x) && !finite(r) {
				return 0, fmt.Errorf("Floating point overflow in function: %s(%s)", name, fmtFloat(x))
			}
			return r, nil
		})
	}
	unit := func(x float64) bool { return x >= -1 && x <= 1 }
	nonZero := func(x float64) bool { return x != 0 }
	unary("SIN", math.Sin, nil)
	unary("COS", math.Cos, nil)
	unary("TAN", math.Tan, nil)
	unary("ASIN", math.Asin, unit)
	unary("ACOS", math.Acos, unit)
	unary("ATAN", math.Atan, nil)
	unary("SINH", math.Sinh, nil)
	unary("COSH", math.Cosh, nil)
	unary("TANH", math.Tanh, nil)
	unary("ASINH", math.Asinh, nil)
	unary("ACOSH", math.Acosh, func(x float64) bool { return x >= 1 })
	unary("ATANH", math.Atanh, func(x float64) bool { return x > -1 && x < 1 })
	unary("COT", func(x float64) float64 { return 1 / math.Tan(x) }, nonZero)
	unary("CSC", func(x float64) float64 { return 1 / math.Sin(x) }, nonZero)
	unary("SEC", func(x float64) float64 { return 1 / math.Cos(x) }, nil)
	unary("COTH", func(x float64) float64 { return 1 / math.Tanh(x) }, nonZero)
	unary("CSCH", func(x float64) float64 { return 1 / math.Sinh(x) }, nonZero)
	unary("SECH", func(x float64) float64 { return 1 / math.Cosh(x) }, nil)
	unary("CBRT", math.Cbrt, nil)
	floatFn("ATAN2", 2, func(a []float64) (float64, error) { return math.Atan2(a[0], a[1]), nil })
}

// decimalFn checks a power, root, exponent or logarithm function whose
// arguments take the decimal type t: exact answers from dec where it has
// one (ok), else f's through FLOAT64, rounded to t's scale (so about 15
// significant digits).
func decimalFn(c *checker, e *Call, args []node, t typ, f func(a []float64) (float64, error), dec func(t typ, a []*big.Rat) (*big.Rat, bool, error)) (node, error) {
	return c.sig(e, args, repeatT(t, len(args)), t, func(a []value) (value, error) {
		rs := make([]*big.Rat, len(a))
		for i, v := range a {
			rs[i] = v.r
		}
		r, ok, err := dec(t, rs)
		if err != nil {
			return value{}, err
		}
		if !ok {
			xs := make([]float64, len(a))
			for i, v := range rs {
				xs[i], _ = v.Float64()
			}
			x, err := f(xs)
			if err != nil {
				return value{}, err
			}
			if math.IsInf(x, 0) || math.IsNaN(x) {
				return value{}, fmt.Errorf("%s overflow: %s", t, e.Name)
			}
			r = new(big.Rat).SetFloat64(x)
		}
		r, err = roundDecimal(t, r)
		return value{r: r}, err
	})
}
