package filter

// x IS [NOT] DISTINCT FROM y. GoogleSQL compares the operands as GROUP BY
// does, so the result is never NULL: two NULLs are not distinct, a NULL
// and a value are, NaN is not distinct from NaN and 0 not from -0.

// distinct checks x IS [NOT] DISTINCT FROM y: the operands take their
// common supertype, which must be one GROUP BY accepts.
func (c *checker) distinct(op string, l, r node, p int) (node, error) {
	t, ok := c.supertype(l, r)
	if !ok {
		return nil, c.errf(p, "No matching signature for operator %s for argument types: %s, %s", op, l.typ(), r.typ())
	}
	if t == tNull {
		t = tInt
	}
	if !groupable(t) {
		return nil, c.errf(p, "Operator %s is not defined for arguments of type %s", op, t)
	}
	var err error
	if l, err = c.coerce(l, t, "operator "+op); err != nil {
		return nil, err
	}
	if r, err = c.coerce(r, t, "operator "+op); err != nil {
		return nil, err
	}
	return c.fold(&distinctNode{not: op == "IS NOT DISTINCT FROM", t: t, l: l, r: r, p: p}, l, r)
}

// groupable reports whether values of t can be GROUP BY keys and so
// operands of IS DISTINCT FROM.
func groupable(t typ) bool {
	switch t.kind() {
	case tGeo, tJSON, tRange:
		return false
	case tArray:
		return groupable(t.elem())
	case tStruct:
		for _, f := range t.comp().fields {
			if !groupable(f.t) {
				return false
			}
		}
	}
	return true
}

// sameGroup reports whether a and b of type t fall in one GROUP BY group.
func sameGroup(t typ, a, b value) bool {
	if a.null || b.null {
		return a.null && b.null
	}
	switch t.kind() {
	case tStruct:
		for i, f := range t.comp().fields {
			if !sameGroup(f.t, a.a[i], b.a[i]) {
				return false
			}
		}
		return true
	case tArray:
		if len(a.a) != len(b.a) {
			return false
		}
		for i := range a.a {
			if !sameGroup(t.elem(), a.a[i], b.a[i]) {
				return false
			}
		}
		return true
	}
	// compareValues orders NaN equal to NaN and 0 equal to -0.
	return compareValues(t, a, b) == 0
}

type distinctNode struct {
	not  bool // IS NOT DISTINCT FROM
	t    typ
	l, r node
	p    int
}

func (n *distinctNode) typ() typ { return tBool }
func (n *distinctNode) pos() int { return n.p }

func (n *distinctNode) eval(ctx *evalCtx) (*vec, error) {
	l, err := n.l.eval(ctx)
	if err != nil {
		return nil, err
	}
	r, err := n.r.eval(ctx)
	if err != nil {
		return nil, err
	}
	out := newVec(tBool, ctx.n)
	for i := 0; i < ctx.n; i++ {
		out.b[i] = sameGroup(n.t, l.get(i), r.get(i)) == n.not
	}
	return out, nil
}

// Groupable reports whether values of the GoogleSQL type typeName (as
// Scalar.Type spells it) can be GROUP BY and SELECT DISTINCT keys: not
// GEOGRAPHY or JSON, nor an ARRAY or STRUCT holding one (BigQuery's
// data types reference, "Groupable data types").
func Groupable(typeName string) bool {
	t, err := parseTypeName(typeName)
	return err == nil && groupable(t)
}
