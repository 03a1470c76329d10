// Smaller families: RAND, BIT_COUNT, PARSE_NUMERIC/PARSE_BIGNUMERIC,
// NORMALIZE and NORMALIZE_AND_CASEFOLD.

package filter

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"strings"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

var normForms = map[string]norm.Form{"NFC": norm.NFC, "NFKC": norm.NFKC, "NFD": norm.NFD, "NFKD": norm.NFKD}

func registerMisc() {
	builtins["RAND"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 0, 0); err != nil {
			return nil, err
		}
		// Not folded: every row draws its own value in [0, 1).
		return &callNode{name: e.Name, t: tFloat, impl: func([]value) (value, error) { return value{f: rand.Float64()}, nil }, p: e.P}, nil
	}
	builtins["BIT_COUNT"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 1, 1); err != nil {
			return nil, err
		}
		t := args[0].typ()
		switch t {
		case tNull:
			t = tInt
		case tInt, tBytes:
		default:
			return nil, c.noSig(e, args)
		}
		return c.sig(e, args, []typ{t}, tInt, func(a []value) (value, error) {
			if t == tInt {
				return value{i: int64(bits.OnesCount64(uint64(a[0].i)))}, nil
			}
			n := 0
			for i := 0; i < len(a[0].s); i++ {
				n += bits.OnesCount8(a[0].s[i])
			}
			return value{i: int64(n)}, nil
		})
	}
	parseNum := func(t typ) builtin {
		return func(c *checker, e *Call, args []node) (node, error) {
			return c.sig(e, args, []typ{tString}, t, func(a []value) (value, error) {
				// PARSE_NUMERIC also takes a sign after the digits and
				// spaces between the sign and the digits.
				x := strings.TrimSpace(a[0].s)
				neg := false
				switch {
				case strings.HasPrefix(x, "-") || strings.HasPrefix(x, "+"):
					neg, x = x[0] == '-', strings.TrimSpace(x[1:])
				case strings.HasSuffix(x, "-") || strings.HasSuffix(x, "+"):
					neg, x = x[len(x)-1] == '-', strings.TrimSpace(x[:len(x)-1])
				}
				if x == "" || strings.ContainsAny(x, "+- ") {
					return value{}, fmt.Errorf("Invalid %s value: %s", t, a[0].s)
				}
				v, err := castFromString(t, x, nil)
				if err != nil {
					return value{}, fmt.Errorf("Invalid %s value: %s", t, a[0].s)
				}
				if neg {
					v.r.Neg(v.r)
				}
				return v, nil
			})
		}
	}
	builtins["PARSE_NUMERIC"] = parseNum(tNumeric)
	builtins["PARSE_BIGNUMERIC"] = parseNum(tBigNumeric)
	normalize := func(fold bool) builtin {
		return func(c *checker, e *Call, args []node) (node, error) {
			if len(e.Args) < 1 || len(e.Args) > 2 {
				return nil, c.errf(e.P, "Number of arguments does not match for function %s. Expected 1 to 2 arguments but got %d", e.Name, len(e.Args))
			}
			form := norm.NFC
			if len(e.Args) == 2 {
				name, ok := datePartArg(e.Args[1])
				f, known := normForms[name]
				if !ok || !known {
					return nil, c.errf(e.Args[1].Pos(), "%s expects a normalization mode (NFC, NFKC, NFD, NFKD) as its second argument", e.Name)
				}
				form = f
			}
			return c.sig(e, args[:1], []typ{tString}, tString, func(a []value) (value, error) {
				s := a[0].s
				if fold {
					s = cases.Fold().String(s)
				}
				return value{s: form.String(s)}, nil
			})
		}
	}
	builtins["NORMALIZE"] = normalize(false)
	builtins["NORMALIZE_AND_CASEFOLD"] = normalize(true)
}
