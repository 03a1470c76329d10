// CAST(number AS STRING FORMAT f): the numeric format model of GoogleSQL's
// format elements documentation, in part: digits 0 and 9, the decimal
// point (. or D), group separators (, or G), the signs S (first or last),
// MI and PR (last), the currency symbol $ and the FM flag. The output has
// a fixed width aligned on the decimal point; the first character is the
// sign ('-' or a space) unless a sign element places it; a number with
// more integer digits than the model has is all '#'. Other elements (X,
// B, EEEE, RN, V, C, L, TM) and non-finite FLOAT64 values answer "not
// supported yet".

package filter

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// numFormat is a parsed numeric format model.
type numFormat struct {
	intSlots  []byte // '9' or '0' per integer digit, left to right
	groups    []int  // group separators: number of integer slots before each
	fracSlots int    // digits after the decimal point
	point     bool
	sign      string // "", "S<" (leading S), "S>" (trailing S), "MI", "PR"
	currency  bool
	fm        bool
}

func parseNumFormat(f string) (*numFormat, error) {
	nf := &numFormat{}
	u := strings.ToUpper(f)
	for i := 0; i < len(u); {
		c := u[i]
		last := func(n int) bool { return i+n == len(u) }
		switch {
		case strings.HasPrefix(u[i:], "FM"):
			nf.fm = true
			i += 2
			continue
		case strings.HasPrefix(u[i:], "MI") && nf.sign == "" && last(2):
			nf.sign = "MI"
			i += 2
			continue
		case strings.HasPrefix(u[i:], "PR") && nf.sign == "" && last(2):
			nf.sign = "PR"
			i += 2
			continue
		}
		switch {
		case c == '9' || c == '0':
			if nf.point {
				nf.fracSlots++
			} else {
				nf.intSlots = append(nf.intSlots, c)
			}
		case (c == '.' || c == 'D') && !nf.point:
			nf.point = true
		case (c == ',' || c == 'G') && !nf.point:
			nf.groups = append(nf.groups, len(nf.intSlots))
		case c == 'S' && nf.sign == "" && (i == 0 || last(1)):
			nf.sign = "S<"
			if i > 0 {
				nf.sign = "S>"
			}
		case c == '$' && !nf.currency:
			nf.currency = true
		case strings.ContainsRune("XBEVRNCLT", rune(c)):
			return nil, fmt.Errorf("not supported yet by bqstore: the numeric format element %q in CAST to STRING", f[i:i+1])
		default:
			return nil, fmt.Errorf("Invalid numeric format %q in CAST to STRING", f)
		}
		i++
	}
	if len(nf.intSlots) == 0 && nf.fracSlots == 0 {
		return nil, fmt.Errorf("Invalid numeric format %q in CAST to STRING: no digit", f)
	}
	return nf, nil
}

// format renders r (exact) in the model.
func (nf *numFormat) format(r *big.Rat) string {
	neg := r.Sign() < 0
	digits := new(big.Rat).Abs(r).FloatString(nf.fracSlots) // rounded half away from zero
	intPart, frac, _ := strings.Cut(digits, ".")
	if strings.Trim(intPart+frac, "0") == "" {
		neg = false // zero is not signed
	}
	if intPart == "0" {
		intPart = ""
	}
	if nf.fm {
		frac = strings.TrimRight(frac, "0")
	}
	over := len(intPart) > len(nf.intSlots)
	// Integer digits right-aligned in their slots; a leading zero of a
	// '9' slot before any '0' slot is blank, as is a separator before
	// any digit.
	var b strings.Builder
	pad := len(nf.intSlots) - len(intPart)
	shown := false
	gi := 0
	for k, slot := range nf.intSlots {
		for ; gi < len(nf.groups) && nf.groups[gi] == k; gi++ {
			if over || shown {
				b.WriteByte(',')
			} else {
				b.WriteByte(' ')
			}
		}
		switch {
		case over:
			b.WriteByte('#')
		case k >= pad:
			b.WriteByte(intPart[k-pad])
			shown = true
		case slot == '0' || shown, k == len(nf.intSlots)-1 && nf.fracSlots == 0:
			b.WriteByte('0') // a '0' slot, or the one digit of zero
			shown = true
		default:
			b.WriteByte(' ')
		}
	}
	for ; gi < len(nf.groups); gi++ {
		b.WriteByte(',')
	}
	if nf.point {
		b.WriteByte('.')
		if over {
			frac = strings.Repeat("#", nf.fracSlots)
		}
		b.WriteString(frac)
	}
	body := b.String()
	// The currency symbol and a leading sign go right before the first
	// character shown.
	lead := len(body) - len(strings.TrimLeft(body, " "))
	sign := func(pos, zero string) string {
		switch {
		case neg:
			return "-"
		case r.Sign() == 0:
			return zero
		}
		return pos
	}
	prefix := ""
	switch nf.sign {
	case "":
		prefix = sign(" ", " ")
	case "S<":
		prefix = sign("+", " ")
	}
	if nf.currency {
		prefix += "$"
	}
	out := body[:lead] + prefix + body[lead:]
	switch nf.sign {
	case "S>":
		out += sign("+", " ")
	case "MI":
		out += sign(" ", " ")
	case "PR":
		if neg {
			out = body[:lead] + "<" + prefix + body[lead:] + ">"
		} else {
			out = " " + out + " "
		}
	}
	if nf.fm {
		out = strings.ReplaceAll(out, " ", "")
	}
	return out
}

// numberRat is a numeric value as an exact rational (a FLOAT64 by its
// shortest decimal form).
func numberRat(t typ, v value) (*big.Rat, error) {
	switch t {
	case tInt:
		return new(big.Rat).SetInt64(v.i), nil
	case tFloat:
		if math.IsNaN(v.f) || math.IsInf(v.f, 0) {
			return nil, fmt.Errorf("not supported yet by bqstore: CAST of %s to STRING with FORMAT", strconv.FormatFloat(v.f, 'g', -1, 64))
		}
		r, _ := new(big.Rat).SetString(strconv.FormatFloat(v.f, 'f', -1, 64))
		return r, nil
	}
	return v.r, nil
}

// castFormatNumber checks CAST(number AS STRING FORMAT f).
func (c *checker) castFormatNumber(e *Cast, x node) (node, error) {
	if e.Zone != nil {
		return nil, c.errf(e.P, "AT TIME ZONE is not allowed in CAST from %s to STRING", x.typ())
	}
	f, err := c.check(e.Format)
	if err != nil {
		return nil, err
	}
	if v, ok := constValue(f); ok && !v.null {
		if _, err := parseNumFormat(v.s); err != nil {
			return nil, c.errf(e.Format.Pos(), "%s", err.Error())
		}
	}
	from := x.typ()
	call := &Call{Name: "CAST", P: e.P}
	c.safeCall = e.Safe
	defer func() { c.safeCall = false }()
	return c.sigStrict(call, []node{x, f}, []typ{from, tString}, tString, true, func(a []value) (value, error) {
		nf, err := parseNumFormat(a[1].s)
		if err != nil {
			return value{}, err
		}
		r, err := numberRat(from, a[0])
		if err != nil {
			return value{}, err
		}
		return value{s: nf.format(r)}, nil
	})
}
