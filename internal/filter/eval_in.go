package filter

// IN: the IN-list node and its compiled set of constants.

import (
	"math"
	"slices"
)

// ---- IN ----

type inNode struct {
	x    node
	list []node // nil when the list is all constant INT64-like or STRING/BYTES (ints/strs hold it)
	not  bool
	p    int
	// set holds the non-NULL constant items when the list is all constant;
	// hasNull records a NULL item. For INT64-like and STRING/BYTES items,
	// ints or strs hold them sorted and unique instead (for pruning), with
	// a typed set for membership: a 1 MB IN list then costs a few MB, not
	// the ~60 MB that boxed map keys and the item nodes took.
	set     map[any]struct{}
	ints    []int64
	strs    []string
	intSet  map[int64]struct{}
	strSet  map[string]struct{}
	konst   bool // every item is constant
	hasNull bool
}

func setKey(t typ, v value) (any, bool) {
	switch {
	case isIntLike(t):
		return v.i, true
	case t == tString || t == tBytes:
		return v.s, true
	case t == tBool:
		return v.b, true
	case t == tFloat && !math.IsNaN(v.f):
		if v.f == 0 {
			return 0.0, true // -0 == +0
		}
		return v.f, true
	}
	return nil, false
}

func newInNode(x node, list []node, not bool, p int) *inNode {
	n := &inNode{x: x, list: list, not: not, p: p}
	t := x.typ()
	typed := isIntLike(t) || t == tString || t == tBytes
	set := map[any]struct{}{}
	var ints []int64
	var strs []string
	for _, it := range list {
		v, ok := constValue(it)
		if !ok {
			return n
		}
		if v.null {
			n.hasNull = true
			continue
		}
		switch {
		case isIntLike(t):
			ints = append(ints, v.i)
		case t == tString || t == tBytes:
			strs = append(strs, v.s)
		default:
			k, ok := setKey(t, v)
			if !ok {
				return n
			}
			set[k] = struct{}{}
		}
	}
	n.konst = true
	if !typed {
		n.set = set
		return n
	}
	n.list = nil
	if isIntLike(t) {
		slices.Sort(ints)
		n.ints = slices.Clip(slices.Compact(ints))
		n.intSet = make(map[int64]struct{}, len(n.ints))
		for _, v := range n.ints {
			n.intSet[v] = struct{}{}
		}
		return n
	}
	slices.Sort(strs)
	n.strs = slices.Clip(slices.Compact(strs))
	n.strSet = make(map[string]struct{}, len(n.strs))
	for _, v := range n.strs {
		n.strSet[v] = struct{}{}
	}
	return n
}

// contains reports whether the constant list holds v (of the node's
// type). REQUIRES: n.konst.
func (n *inNode) contains(t typ, v value) bool {
	switch {
	case n.intSet != nil:
		_, ok := n.intSet[v.i]
		return ok
	case n.strSet != nil:
		_, ok := n.strSet[v.s]
		return ok
	}
	k, ok := setKey(t, v)
	if !ok {
		return false
	}
	_, found := n.set[k]
	return found
}

// anyWithin reports whether some non-NULL constant item lies in [lo, hi].
// REQUIRES: n.konst.
func (n *inNode) anyWithin(t typ, lo, hi value) bool {
	switch {
	case n.intSet != nil:
		i, _ := slices.BinarySearch(n.ints, lo.i)
		return i < len(n.ints) && n.ints[i] <= hi.i
	case n.strSet != nil:
		i, _ := slices.BinarySearch(n.strs, lo.s)
		return i < len(n.strs) && n.strs[i] <= hi.s
	}
	for _, it := range n.list {
		v, _ := constValue(it)
		if !v.null && compareValues(t, v, lo) >= 0 && compareValues(t, v, hi) <= 0 {
			return true
		}
	}
	return false
}

func (n *inNode) typ() typ { return tBool }
func (n *inNode) pos() int { return n.p }

func (n *inNode) eval(ctx *evalCtx) (*vec, error) {
	x, err := n.x.eval(ctx)
	if err != nil {
		return nil, err
	}
	out := newVec(tBool, ctx.n)
	setNull := func(i int) {
		if out.nulls == nil {
			out.nulls = make([]bool, ctx.n)
		}
		out.nulls[i] = true
	}
	if (n.intSet != nil || n.strSet != nil) && !x.konst {
		// Typed membership: no boxing per row.
		if n.intSet != nil && len(n.ints) <= 8 {
			// A short list: compare with each item, no hashing.
			items := n.ints
			for i, v := range x.i[:ctx.n] {
				found := false
				for _, it := range items {
					found = found || v == it
				}
				out.b[i] = found
			}
		} else if n.intSet != nil {
			set := n.intSet
			for i, v := range x.i[:ctx.n] {
				_, found := set[v]
				out.b[i] = found
			}
		} else {
			set, items := n.strSet, n.strs
			short := len(items) <= 8
			for i := range out.b {
				var v string
				if x.off != nil {
					v = bytesToString(x.data[x.off[i]:x.off[i+1]])
				} else {
					v = x.s[i]
				}
				if short {
					found := false
					for _, it := range items {
						if len(it) == len(v) && it == v {
							found = true
							break
						}
					}
					out.b[i] = found
					continue
				}
				_, found := set[v]
				out.b[i] = found
			}
		}
		for i, found := range out.b {
			switch {
			case x.isNull(i):
				setNull(i)
			case found:
				out.b[i] = !n.not
			case n.hasNull:
				setNull(i)
			default:
				out.b[i] = n.not
			}
		}
		return out, nil
	}
	if n.konst {
		t := x.t
		for i := range out.b {
			if x.isNull(i) {
				setNull(i)
				continue
			}
			found := n.contains(t, x.get(i))
			switch {
			case found:
				out.b[i] = !n.not
			case n.hasNull:
				setNull(i)
			default:
				out.b[i] = n.not
			}
		}
		return out, nil
	}
	items := make([]*vec, len(n.list))
	for j, it := range n.list {
		if items[j], err = it.eval(ctx); err != nil {
			return nil, err
		}
	}
	for i := range out.b {
		if x.isNull(i) {
			setNull(i)
			continue
		}
		xv := x.get(i)
		found, sawNull := false, false
		for _, it := range items {
			if it.isNull(i) {
				sawNull = true
				continue
			}
			if x.t == tFloat && (math.IsNaN(xv.f) || math.IsNaN(it.get(i).f)) {
				continue
			}
			if compareValues(x.t, xv, it.get(i)) == 0 {
				found = true
				break
			}
		}
		switch {
		case found:
			out.b[i] = !n.not
		case sawNull:
			setNull(i)
		default:
			out.b[i] = n.not
		}
	}
	return out, nil
}
