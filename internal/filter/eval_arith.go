package filter

// Arithmetic nodes (unary minus, binary operators) and their value helpers.

import (
	"fmt"
	"math"
	"math/big"
)

// ---- arithmetic ----

type negNode struct {
	x node
	p int
}

func (n *negNode) typ() typ { return n.x.typ() }
func (n *negNode) pos() int { return n.p }

func (n *negNode) eval(ctx *evalCtx) (*vec, error) {
	x, err := n.x.eval(ctx)
	if err != nil {
		return nil, err
	}
	out := newVec(x.t, x.n)
	out.konst = x.konst
	if x.nulls != nil {
		out.nulls = append([]bool(nil), x.nulls...)
	}
	for i := 0; i < x.n; i++ {
		if x.isNull(i) {
			continue
		}
		switch x.t {
		case tInt:
			if x.i[i] == math.MinInt64 {
				return nil, ctx.errf(n.p, "int64 overflow: -(%d)", x.i[i])
			}
			out.i[i] = -x.i[i]
		case tFloat:
			out.f[i] = -x.f[i]
		default:
			out.r[i] = new(big.Rat).Neg(x.rats()[i])
		}
	}
	return out, nil
}

type arithNode struct {
	op   byte // + - * /
	l, r node
	t    typ
	p    int
}

func (n *arithNode) typ() typ { return n.t }
func (n *arithNode) pos() int { return n.p }

func (n *arithNode) eval(ctx *evalCtx) (*vec, error) {
	l, err := n.l.eval(ctx)
	if err != nil {
		return nil, err
	}
	r, err := n.r.eval(ctx)
	if err != nil {
		return nil, err
	}
	out := newVec(n.t, ctx.n)
	out.nulls = orNulls(ctx.n, l, r)
	if n.t == tInt || n.t == tFloat {
		if fastArith(n.op, l, r, out) {
			return out, nil
		}
		// Some row overflowed or divided by zero: find the first non-NULL
		// one below for the message.
	}
	for i := 0; i < ctx.n; i++ {
		if out.nulls != nil && out.nulls[i] {
			continue
		}
		v, err := arith(n.op, n.t, l.get(i), r.get(i))
		if err != nil {
			return nil, ctx.errf(n.p, "%s", err.Error())
		}
		out.set(i, v)
	}
	return out, nil
}

func arith(op byte, t typ, a, b value) (value, error) {
	switch t {
	case tInt:
		x, y := a.i, b.i
		var z int64
		ok := true
		switch op {
		case '+':
			z = x + y
			ok = (z > x) == (y > 0)
		case '-':
			z = x - y
			ok = (z < x) == (y > 0)
		case '*':
			z = x * y
			ok = x == 0 || (z/x == y && !(x == -1 && y == math.MinInt64) && !(y == -1 && x == math.MinInt64))
		}
		if !ok {
			return value{}, fmt.Errorf("int64 overflow: %d %c %d", x, op, y)
		}
		return value{i: z}, nil
	case tFloat:
		x, y := a.f, b.f
		var z float64
		switch op {
		case '+':
			z = x + y
		case '-':
			z = x - y
		case '*':
			z = x * y
		case '/':
			if y == 0 {
				return value{}, fmt.Errorf("division by zero: %s / %s", fmtFloat(x), fmtFloat(y))
			}
			z = x / y
		}
		if (math.IsInf(z, 0) || math.IsNaN(z)) && !math.IsInf(x, 0) && !math.IsNaN(x) && !math.IsInf(y, 0) && !math.IsNaN(y) {
			return value{}, fmt.Errorf("floating point overflow: %s %c %s", fmtFloat(x), op, fmtFloat(y))
		}
		return value{f: z}, nil
	}
	x, y := a.r, b.r
	z := new(big.Rat)
	switch op {
	case '+':
		z.Add(x, y)
	case '-':
		z.Sub(x, y)
	case '*':
		z.Mul(x, y)
	case '/':
		if y.Sign() == 0 {
			return value{}, fmt.Errorf("division by zero: %s / %s", fmtDecimal(t, x), fmtDecimal(t, y))
		}
		z.Quo(x, y)
	}
	z, err := roundDecimal(t, z)
	if err != nil {
		return value{}, fmt.Errorf("%s overflow: %s %c %s", t, fmtDecimal(t, x), op, fmtDecimal(t, y))
	}
	return value{r: z}, nil
}

func fmtFloat(f float64) string {
	s, _ := castToString(tFloat, value{f: f})
	return s
}

func fmtDecimal(t typ, r *big.Rat) string {
	s, _ := castToString(t, value{r: r})
	return s
}

// decimal limits: NUMERIC is 38 digits with scale 9, BIGNUMERIC 76.76
// digits with scale 38.
var (
	maxNumeric    = mustRat("99999999999999999999999999999.999999999")
	maxBigNumeric = mustRat("578960446186580977117854925043439539266.34992332820282019728792003956564819967")
	minBigNumeric = mustRat("-578960446186580977117854925043439539266.34992332820282019728792003956564819968")
)

func mustRat(s string) *big.Rat {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		panic("bad constant " + s)
	}
	return r
}

// DecimalInRange reports whether r lies in the range of the decimal type
// t ("NUMERIC" or "BIGNUMERIC"); the query engine checks sums with it.
func DecimalInRange(t string, r *big.Rat) bool {
	if t == "NUMERIC" {
		return new(big.Rat).Abs(r).Cmp(maxNumeric) <= 0
	}
	return r.Cmp(maxBigNumeric) <= 0 && r.Cmp(minBigNumeric) >= 0
}

// roundDecimal rounds r half away from zero to t's scale and checks its
// range.
func roundDecimal(t typ, r *big.Rat) (*big.Rat, error) {
	scale := tenPow9
	if t == tBigNumeric {
		scale = tenPow38
	}
	{
		num := new(big.Int).Mul(r.Num(), scale)
		q, m := new(big.Int).QuoRem(num, r.Denom(), new(big.Int))
		// |2m| >= denom rounds away from zero.
		m.Abs(m).Lsh(m, 1)
		if m.Cmp(r.Denom()) >= 0 {
			if r.Sign() < 0 {
				q.Sub(q, big.NewInt(1))
			} else {
				q.Add(q, big.NewInt(1))
			}
		}
		r = new(big.Rat).SetFrac(q, scale)
	}
	if t == tNumeric {
		if new(big.Rat).Abs(r).Cmp(maxNumeric) > 0 {
			return nil, fmt.Errorf("NUMERIC out of range")
		}
	} else if r.Cmp(maxBigNumeric) > 0 || r.Cmp(minBigNumeric) < 0 {
		return nil, fmt.Errorf("BIGNUMERIC out of range")
	}
	return r, nil
}
