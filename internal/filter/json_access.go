package filter

// JSON field access and subscripts: j.name, j['name'], j[i] (operators
// docs, field access operator and JSON subscript operator). Each gives
// JSON: the member or element, or SQL NULL when the member is missing,
// the index is negative or past the end, or the value is not an object
// (not an array). A JSON null member stays JSON null.

import "bytes"

// jsonAccessNode is x.key (key) or x[i] (i, an INT64 or STRING node).
type jsonAccessNode struct {
	x   node
	key string
	i   node // nil: key
	p   int
}

func (n *jsonAccessNode) typ() typ { return tJSON }
func (n *jsonAccessNode) pos() int { return n.p }

func (c *checker) jsonMember(x node, key string, pos int) (node, error) {
	return c.fold(&jsonAccessNode{x: x, key: key, p: pos}, x)
}

// jsonSubscript is x[i] on a JSON x: i an INT64 (array element) or a
// STRING (member).
func (c *checker) jsonSubscript(e *Index, x, i node) (node, error) {
	if e.Mode != "" {
		return nil, c.errf(e.P, "Array element access with array position is not supported on values of type JSON")
	}
	switch i.typ() {
	case tInt, tString:
	case tNull:
		var err error
		if i, err = c.coerce(i, tInt, "JSON subscript"); err != nil {
			return nil, err
		}
	default:
		return nil, c.errf(e.I.Pos(), "JSON subscript must be INT64 or STRING, but has type %s", i.typ())
	}
	return c.fold(&jsonAccessNode{x: x, i: i, p: e.P}, x, i)
}

func (n *jsonAccessNode) eval(ctx *evalCtx) (*vec, error) {
	x, err := n.x.eval(ctx)
	if err != nil {
		return nil, err
	}
	var iv *vec
	if n.i != nil {
		if iv, err = n.i.eval(ctx); err != nil {
			return nil, err
		}
	}
	out := newVec(tJSON, ctx.n)
	var b bytes.Buffer
	for r := 0; r < ctx.n; r++ {
		if r%checkEvery == 0 {
			if err := ctx.check(); err != nil {
				return nil, err
			}
		}
		v := x.get(r)
		if v.null {
			out.set(r, nullValue)
			continue
		}
		doc, err := jsonDecode(v.s)
		if err != nil {
			return nil, ctx.errf(n.p, "Invalid JSON value: %v", err)
		}
		var got any
		found := false
		switch {
		case n.i == nil:
			if o, ok := doc.(*jsonObject); ok {
				got, found = o.vals[n.key]
			}
		case n.i.typ() == tString:
			k := iv.get(r)
			if o, ok := doc.(*jsonObject); ok && !k.null {
				got, found = o.vals[k.s]
			}
		default:
			k := iv.get(r)
			if a, ok := doc.([]any); ok && !k.null && k.i >= 0 && k.i < int64(len(a)) {
				got, found = a[k.i], true
			}
		}
		if !found {
			out.set(r, nullValue)
			continue
		}
		b.Reset()
		jsonWrite(&b, got, "", "", true)
		out.set(r, value{s: b.String()})
	}
	return out, nil
}
