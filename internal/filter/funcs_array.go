package filter

import (
	"fmt"
	"math"
	"math/big"
	"sort"
	"strings"
)

// Array functions of GoogleSQL for BigQuery: ARRAY_LENGTH, ARRAY_CONCAT,
// ARRAY_REVERSE, ARRAY_TO_STRING, ARRAY_FIRST, ARRAY_LAST, ARRAY_SLICE,
// RANGE_BUCKET, GENERATE_ARRAY, GENERATE_DATE_ARRAY and
// GENERATE_TIMESTAMP_ARRAY.
// (ARRAY_INCLUDES and its relatives are GoogleSQL functions BigQuery
// does not have: Function not found, as there.)

// maxGenerated bounds the elements GENERATE_ARRAY and
// GENERATE_DATE_ARRAY produce per call.
const maxGenerated = 1 << 20

func registerArray() {
	builtins["ARRAY_LENGTH"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 1, 1); err != nil {
			return nil, err
		}
		t := args[0].typ()
		if !t.isArray() {
			return nil, c.noSig(e, args)
		}
		return c.sig(e, args, []typ{t}, tInt, func(a []value) (value, error) {
			return value{i: int64(len(a[0].a))}, nil
		})
	}
	builtins["ARRAY_REVERSE"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 1, 1); err != nil {
			return nil, err
		}
		t := args[0].typ()
		if !t.isArray() {
			return nil, c.noSig(e, args)
		}
		return c.sig(e, args, []typ{t}, t, func(a []value) (value, error) {
			out := make([]value, len(a[0].a))
			for i, x := range a[0].a {
				out[len(out)-1-i] = x
			}
			return value{a: out}, nil
		})
	}
	builtins["ARRAY_CONCAT"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 1, -1); err != nil {
			return nil, err
		}
		t := tNull
		for _, a := range args {
			switch at := a.typ(); {
			case at == tNull:
			case !at.isArray():
				return nil, c.noSig(e, args)
			case t == tNull:
				t = at
			case t != at:
				return nil, c.noSig(e, args)
			}
		}
		if t == tNull {
			return nil, c.noSig(e, args)
		}
		return c.sig(e, args, repeatT(t, len(args)), t, func(a []value) (value, error) {
			out := []value{}
			for _, x := range a {
				out = append(out, x.a...)
			}
			return value{a: out}, nil
		})
	}
	builtins["ARRAY_TO_STRING"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 2, 3); err != nil {
			return nil, err
		}
		t := args[0].typ()
		if !t.isArray() || (t.elem() != tString && t.elem() != tBytes) {
			return nil, c.noSig(e, args)
		}
		want := []typ{t, t.elem(), t.elem()}[:len(args)]
		return c.sig(e, args, want, t.elem(), func(a []value) (value, error) {
			var b strings.Builder
			first := true
			for _, x := range a[0].a {
				s := x.s
				if x.null {
					if len(a) < 3 {
						continue
					}
					s = a[2].s
				}
				if !first {
					b.WriteString(a[1].s)
				}
				first = false
				b.WriteString(s)
			}
			return value{s: b.String()}, nil
		})
	}
	// ARRAY_FIRST and ARRAY_LAST: NULL for a NULL array, an error for an
	// empty one (the messages of GoogleSQL's reference rewrite).
	firstLast := func(first bool) builtin {
		return func(c *checker, e *Call, args []node) (node, error) {
			if err := c.arity(e, args, 1, 1); err != nil {
				return nil, err
			}
			t := args[0].typ()
			if !t.isArray() {
				return nil, c.noSig(e, args)
			}
			return c.sig(e, args, []typ{t}, t.elem(), func(a []value) (value, error) {
				xs := a[0].a
				switch {
				case len(xs) == 0 && first:
					return value{}, fmt.Errorf("ARRAY_FIRST cannot get the first element of an empty array")
				case len(xs) == 0:
					return value{}, fmt.Errorf("ARRAY_LAST cannot get the last element of an empty array")
				case first:
					return xs[0], nil
				}
				return xs[len(xs)-1], nil
			})
		}
	}
	builtins["ARRAY_FIRST"] = firstLast(true)
	builtins["ARRAY_LAST"] = firstLast(false)
	// ARRAY_SLICE(array, start, end): the elements at offsets start..end,
	// both included; a negative offset counts from the end (-1 is the
	// last); offsets beyond the array are clamped (GoogleSQL's reference
	// rewrite: WHERE offset BETWEEN start AND end).
	builtins["ARRAY_SLICE"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 3, 3); err != nil {
			return nil, err
		}
		t := args[0].typ()
		if !t.isArray() {
			return nil, c.noSig(e, args)
		}
		return c.sig(e, args, []typ{t, tInt, tInt}, t, func(a []value) (value, error) {
			xs, n := a[0].a, int64(len(a[0].a))
			from, to := a[1].i, a[2].i
			if from < 0 {
				from += n
			}
			if to < 0 {
				to += n
			}
			from, to = max(from, 0), min(to, n-1)
			if from > to {
				return value{a: []value{}}, nil
			}
			return value{a: append([]value{}, xs[from:to+1]...)}, nil
		})
	}
	// RANGE_BUCKET(point, boundaries): how many of the ascending
	// boundaries are <= point (0 below the first, the array's length at
	// or past the last; duplicates all count). A NULL element or an
	// array not in ascending order is an error.
	builtins["RANGE_BUCKET"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 2, 2); err != nil {
			return nil, err
		}
		at := args[1].typ()
		if !at.isArray() {
			return nil, c.noSig(e, args)
		}
		t, ok := numericOf([]node{args[0], &constNode{v: constVec(at.elem(), nullValue)}})
		if !ok {
			return nil, c.noSig(e, args)
		}
		want, err := arrayOf(t)
		if err != nil {
			return nil, c.noSig(e, args)
		}
		return c.sig(e, args, []typ{t, want}, tInt, func(a []value) (value, error) {
			xs := a[1].a
			for i, x := range xs {
				if x.null {
					return value{}, fmt.Errorf("Elements in input array to RANGE_BUCKET cannot be null.")
				}
				if i > 0 && compareValues(t, xs[i-1], x) > 0 {
					return value{}, fmt.Errorf("Elements in input array to RANGE_BUCKET are not sorted in ascending order.")
				}
			}
			p := a[0]
			if t == tFloat && math.IsNaN(p.f) {
				return nullValue, nil
			}
			n := sort.Search(len(xs), func(i int) bool { return compareValues(t, xs[i], p) > 0 })
			return value{i: int64(n)}, nil
		})
	}
	builtins["GENERATE_ARRAY"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 2, 3); err != nil {
			return nil, err
		}
		t, ok := numericOf(args)
		if !ok {
			return nil, c.noSig(e, args)
		}
		at, err := arrayOf(t)
		if err != nil {
			return nil, c.errf(e.P, "%v", err)
		}
		return c.sig(e, args, repeatT(t, len(args)), at, func(a []value) (value, error) {
			step := value{i: 1, f: 1, r: big.NewRat(1, 1)}
			if len(a) == 3 {
				step = a[2]
			}
			return generateArray(t, a[0], a[1], step)
		})
	}
	builtins["GENERATE_DATE_ARRAY"] = func(c *checker, e *Call, args []node) (node, error) {
		if len(e.Args) < 2 || len(e.Args) > 3 {
			return nil, c.errf(e.P, "Number of arguments does not match for function %s. Expected 2 to 3 arguments but got %d", e.Name, len(e.Args))
		}
		step, part := node(&constNode{v: constVec(tInt, value{i: 1})}), "DAY"
		if len(e.Args) == 3 {
			iv, ok := e.Args[2].(*Interval)
			if !ok {
				return nil, c.errf(e.Args[2].Pos(), "No matching signature for function GENERATE_DATE_ARRAY: the third argument must be an INTERVAL")
			}
			switch iv.Part {
			case "DAY", "WEEK", "MONTH", "QUARTER", "YEAR":
			default:
				return nil, c.errf(iv.P, "Invalid date part %s for GENERATE_DATE_ARRAY", iv.Part)
			}
			k, err := c.check(iv.X)
			if err != nil {
				return nil, err
			}
			if step, err = c.coerce(k, tInt, "INTERVAL"); err != nil {
				return nil, err
			}
			part = iv.Part
		}
		at, _ := arrayOf(tDate)
		args = append(args[:2:2], step)
		return c.sigStrict(e, args, []typ{tDate, tDate, tInt}, at, true, func(a []value) (value, error) {
			start, end, k := a[0].i, a[1].i, a[2].i
			if k == 0 {
				return value{}, fmt.Errorf("Sequence step cannot be 0.")
			}
			out := []value{}
			for i := int64(0); ; i++ {
				if len(out) >= maxGenerated {
					return value{}, fmt.Errorf("GENERATE_DATE_ARRAY would produce more than %d elements", maxGenerated)
				}
				d, ok := addPart(tDate, start, i*k, part)
				if !ok || (k > 0 && d > end) || (k < 0 && d < end) {
					break
				}
				out = append(out, value{i: d})
			}
			return value{a: out}, nil
		})
	}
	// GENERATE_TIMESTAMP_ARRAY(start, end, INTERVAL n part): part one of
	// MICROSECOND .. DAY (fixed lengths: a DAY is 24 hours).
	builtins["GENERATE_TIMESTAMP_ARRAY"] = func(c *checker, e *Call, args []node) (node, error) {
		if len(e.Args) != 3 {
			return nil, c.errf(e.P, "Number of arguments does not match for function %s. Expected 3 arguments but got %d", e.Name, len(e.Args))
		}
		iv, ok := e.Args[2].(*Interval)
		if !ok {
			return nil, c.errf(e.Args[2].Pos(), "No matching signature for function GENERATE_TIMESTAMP_ARRAY: the third argument must be an INTERVAL")
		}
		if _, ok := partMicros[iv.Part]; !ok {
			return nil, c.errf(iv.P, "Invalid date part %s for GENERATE_TIMESTAMP_ARRAY", iv.Part)
		}
		k, err := c.check(iv.X)
		if err != nil {
			return nil, err
		}
		step, err := c.coerce(k, tInt, "INTERVAL")
		if err != nil {
			return nil, err
		}
		at, _ := arrayOf(tTimestamp)
		args = append(args[:2:2], step)
		return c.sigStrict(e, args, []typ{tTimestamp, tTimestamp, tInt}, at, true, func(a []value) (value, error) {
			start, end, k := a[0].i, a[1].i, a[2].i
			if k == 0 {
				return value{}, fmt.Errorf("Sequence step cannot be 0.")
			}
			out := []value{}
			for i := int64(0); ; i++ {
				if len(out) >= maxGenerated {
					return value{}, fmt.Errorf("GENERATE_TIMESTAMP_ARRAY would produce more than %d elements", maxGenerated)
				}
				n := i * k
				if n/k != i { // past any timestamp
					break
				}
				ts, ok := addPart(tTimestamp, start, n, iv.Part)
				if !ok || (k > 0 && ts > end) || (k < 0 && ts < end) {
					break
				}
				out = append(out, value{i: ts})
			}
			return value{a: out}, nil
		})
	}
}

// generateArray is GENERATE_ARRAY(start, end, step) over type t.
func generateArray(t typ, start, end, step value) (value, error) {
	out := []value{}
	tooMany := func() (value, error) {
		return value{}, fmt.Errorf("GENERATE_ARRAY would produce more than %d elements", maxGenerated)
	}
	switch t {
	case tInt:
		if step.i == 0 {
			return value{}, fmt.Errorf("Sequence step cannot be 0.")
		}
		for x := start.i; step.i > 0 && x <= end.i || step.i < 0 && x >= end.i; {
			if len(out) >= maxGenerated {
				return tooMany()
			}
			out = append(out, value{i: x})
			nx := x + step.i
			if (nx > x) != (step.i > 0) { // overflow: the end is reached
				break
			}
			x = nx
		}
	case tFloat:
		if step.f == 0 {
			return value{}, fmt.Errorf("Sequence step cannot be 0.")
		}
		if math.IsNaN(start.f) || math.IsNaN(end.f) || math.IsNaN(step.f) || math.IsInf(step.f, 0) {
			return value{}, fmt.Errorf("GENERATE_ARRAY requires finite arguments")
		}
		for i := 0; ; i++ {
			x := start.f + float64(i)*step.f
			if step.f > 0 && x > end.f || step.f < 0 && x < end.f {
				break
			}
			if len(out) >= maxGenerated {
				return tooMany()
			}
			out = append(out, value{f: x})
		}
	default: // NUMERIC, BIGNUMERIC
		if step.r.Sign() == 0 {
			return value{}, fmt.Errorf("Sequence step cannot be 0.")
		}
		x := new(big.Rat).Set(start.r)
		for step.r.Sign() > 0 && x.Cmp(end.r) <= 0 || step.r.Sign() < 0 && x.Cmp(end.r) >= 0 {
			if len(out) >= maxGenerated {
				return tooMany()
			}
			out = append(out, value{r: new(big.Rat).Set(x)})
			x.Add(x, step.r)
		}
	}
	return value{a: out}, nil
}
