package filter

import (
	"fmt"
	"strings"
)

// RANGE values (queries only).
//
// RANGE<T> (T one of DATE, DATETIME, TIMESTAMP) is a composite type of
// kind tRange whose elem is T: an interned descriptor as ARRAY and STRUCT
// types are (composite.go), so RANGE<DATE> and RANGE<TIMESTAMP> are
// different typ values. A value holds its two bounds in a (start, end),
// each NULL when unbounded; a vec holds its rows in c. Scalar.Values
// gives a RANGE as a Range of its two bounds (nil: unbounded), which the
// query engine writes to the Arrow struct<start, end> of a RANGE column. The bare tRange kind is what row_restriction gives a
// RANGE column (only IS [NOT] NULL reads it).
//
// A range is [start, end): start is included, end excluded, and start <
// end when both are bounded.

// rangeOf returns RANGE<elem>.
func rangeOf(elem typ) (typ, error) {
	switch elem {
	case tDate, tDatetime, tTimestamp:
	default:
		return 0, fmt.Errorf("RANGE<%s> is not supported: the element type must be DATE, DATETIME or TIMESTAMP", elem)
	}
	return intern(&compType{kind: tRange, elem: elem, name: "RANGE<" + elem.String() + ">"})
}

func (t typ) isRange() bool { return t.kind() == tRange && t.comp() != nil }

// rangeValue builds a range, checking start < end.
func rangeValue(elem typ, start, end value) (value, error) {
	if !start.null && !end.null && compareValues(elem, start, end) >= 0 {
		return value{}, fmt.Errorf("Range start element must be smaller than range end element")
	}
	return value{a: []value{start, end}}, nil
}

// formatRange is CAST(range AS STRING): [start, end) with UNBOUNDED for
// a missing bound, each bound as CAST(bound AS STRING).
func formatRange(elem typ, v value) (string, error) {
	var b strings.Builder
	b.WriteByte('[')
	for i, x := range v.a {
		if i > 0 {
			b.WriteString(", ")
		}
		if x.null {
			b.WriteString("UNBOUNDED")
			continue
		}
		s, err := castToString(elem, x)
		if err != nil {
			return "", err
		}
		b.WriteString(s)
	}
	b.WriteByte(')')
	return b.String(), nil
}

// parseRange reads "[start, end)" (a bound UNBOUNDED or NULL is open), as
// CAST(string AS RANGE<T>) and RANGE<T> 'literal' do.
func parseRange(elem typ, s string) (value, error) {
	bad := func() (value, error) {
		return value{}, fmt.Errorf("Invalid range literal: %s", s)
	}
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "[") || !strings.HasSuffix(t, ")") {
		return bad()
	}
	parts := strings.Split(t[1:len(t)-1], ",")
	if len(parts) != 2 {
		return bad()
	}
	var bounds [2]value
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if strings.EqualFold(p, "UNBOUNDED") || strings.EqualFold(p, "NULL") {
			bounds[i] = nullValue
			continue
		}
		v, err := castFromString(elem, p, nil)
		if err != nil {
			return bad()
		}
		bounds[i] = v
	}
	return rangeValue(elem, bounds[0], bounds[1])
}

// rangeCompare orders bound a against bound b of type elem, where a NULL
// start is -infinity and a NULL end +infinity (aEnd, bEnd say which kind
// each bound is).
func rangeBoundCmp(elem typ, a value, aEnd bool, b value, bEnd bool) int {
	inf := func(v value, end bool) int {
		if !v.null {
			return 0
		}
		if end {
			return 1
		}
		return -1
	}
	ia, ib := inf(a, aEnd), inf(b, bEnd)
	if ia != 0 || ib != 0 {
		switch {
		case ia == ib:
			return 0
		case ia < ib:
			return -1
		}
		return 1
	}
	return compareValues(elem, a, b)
}

func registerRange() {
	// RANGE(start, end): the bounds of one type (DATE, DATETIME,
	// TIMESTAMP; NULL for an unbounded side).
	builtins["RANGE"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 2, 2); err != nil {
			return nil, err
		}
		elem, ok := c.supertype(args[0], args[1])
		if ok && elem == tNull {
			return nil, c.errf(e.P, "Cannot determine the type of RANGE(NULL, NULL): its bounds must be DATE, DATETIME or TIMESTAMP")
		}
		switch elem {
		case tDate, tDatetime, tTimestamp:
		default:
			ok = false
		}
		if !ok || args[0].typ() != tNull && args[1].typ() != tNull && args[0].typ() != args[1].typ() {
			return nil, c.noSig(e, args)
		}
		rt, err := rangeOf(elem)
		if err != nil {
			return nil, c.errf(e.P, "%v", err)
		}
		return c.sigStrict(e, args, []typ{elem, elem}, rt, false, func(a []value) (value, error) {
			return rangeValue(elem, a[0], a[1])
		})
	}
	rangeArg := func(c *checker, e *Call, args []node, n int) (typ, error) {
		if err := c.arity(e, args, n, n); err != nil {
			return 0, err
		}
		t := args[0].typ()
		if !t.isRange() {
			return 0, c.noSig(e, args)
		}
		return t, nil
	}
	bound := func(i int) builtin {
		return func(c *checker, e *Call, args []node) (node, error) {
			t, err := rangeArg(c, e, args, 1)
			if err != nil {
				return nil, err
			}
			return c.sig(e, args, []typ{t}, t.elem(), func(a []value) (value, error) { return a[0].a[i], nil })
		}
	}
	builtins["RANGE_START"] = bound(0)
	builtins["RANGE_END"] = bound(1)
	// RANGE_CONTAINS(outer, inner range | value).
	builtins["RANGE_CONTAINS"] = func(c *checker, e *Call, args []node) (node, error) {
		t, err := rangeArg(c, e, args, 2)
		if err != nil {
			return nil, err
		}
		elem := t.elem()
		if args[1].typ() == t {
			return c.sig(e, args, []typ{t, t}, tBool, func(a []value) (value, error) {
				o, in := a[0].a, a[1].a
				ok := rangeBoundCmp(elem, o[0], false, in[0], false) <= 0 && rangeBoundCmp(elem, in[1], true, o[1], true) <= 0
				return value{b: ok}, nil
			})
		}
		return c.sig(e, args, []typ{t, elem}, tBool, func(a []value) (value, error) {
			o, x := a[0].a, a[1]
			ok := rangeBoundCmp(elem, o[0], false, x, false) <= 0 && rangeBoundCmp(elem, x, false, o[1], true) < 0
			return value{b: ok}, nil
		})
	}
	overlap := func(elem typ, a, b []value) (start, end value, ok bool) {
		start, end = a[0], a[1]
		if rangeBoundCmp(elem, b[0], false, start, false) > 0 {
			start = b[0]
		}
		if rangeBoundCmp(elem, b[1], true, end, true) < 0 {
			end = b[1]
		}
		return start, end, rangeBoundCmp(elem, start, false, end, true) < 0
	}
	builtins["RANGE_OVERLAPS"] = func(c *checker, e *Call, args []node) (node, error) {
		t, err := rangeArg(c, e, args, 2)
		if err != nil {
			return nil, err
		}
		return c.sig(e, args, []typ{t, t}, tBool, func(a []value) (value, error) {
			_, _, ok := overlap(t.elem(), a[0].a, a[1].a)
			return value{b: ok}, nil
		})
	}
	builtins["RANGE_INTERSECT"] = func(c *checker, e *Call, args []node) (node, error) {
		t, err := rangeArg(c, e, args, 2)
		if err != nil {
			return nil, err
		}
		return c.sig(e, args, []typ{t, t}, t, func(a []value) (value, error) {
			s, en, ok := overlap(t.elem(), a[0].a, a[1].a)
			if !ok {
				return value{}, fmt.Errorf("Provided RANGE inputs: %s and %s do not overlap. Please check RANGE_OVERLAPS before calling RANGE_INTERSECT",
					formatValue(t, a[0]), formatValue(t, a[1]))
			}
			return value{a: []value{s, en}}, nil
		})
	}
}
