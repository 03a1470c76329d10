package filter

// LIKE: its type check and the node that evaluates a LIKE pattern over a
// column.

// ---- LIKE ----

func (c *checker) like(e *Like) (node, error) {
	if e.Quant != "" {
		return c.quantifiedLike(e)
	}
	x, err := c.check(e.X)
	if err != nil {
		return nil, err
	}
	pat, err := c.check(e.Pattern)
	if err != nil {
		return nil, err
	}
	t := x.typ()
	if t == tNull {
		t = pat.typ()
	}
	if t == tNull {
		t = tString
	}
	if t != tString && t != tBytes {
		return nil, c.errf(e.P, "No matching signature for operator LIKE for argument types: %s, %s", x.typ(), pat.typ())
	}
	if x, err = c.coerce(x, t, "operator LIKE"); err != nil {
		return nil, err
	}
	if pat, err = c.coerce(pat, t, "operator LIKE"); err != nil {
		return nil, err
	}
	n := &likeNode{x: x, pat: pat, not: e.Not, bytes: t == tBytes, p: e.P}
	if v, ok := constValue(pat); ok && !v.null {
		m, err := compileLike(v.s, t == tBytes)
		if err != nil {
			return nil, c.errf(e.Pattern.Pos(), "%s", err.Error())
		}
		n.m = m
	}
	return c.fold(n, x, pat)
}

type likeNode struct {
	x, pat node
	not    bool
	bytes  bool
	m      *likeMatcher // nil when the pattern is not constant
	p      int
}

func (n *likeNode) typ() typ { return tBool }
func (n *likeNode) pos() int { return n.p }

func (n *likeNode) eval(ctx *evalCtx) (*vec, error) {
	x, err := n.x.eval(ctx)
	if err != nil {
		return nil, err
	}
	pat, err := n.pat.eval(ctx)
	if err != nil {
		return nil, err
	}
	out := newVec(tBool, ctx.n)
	out.nulls = orNulls(ctx.n, x, pat)
	if n.m != nil && x.off != nil {
		for lo := 0; lo < len(out.b); lo += checkEvery {
			if err := ctx.check(); err != nil {
				return nil, err
			}
			hi := min(lo+checkEvery, len(out.b))
			n.m.matchCol(x.off[lo:hi+1], x.data, out.b[lo:hi])
		}
		if n.not {
			for i, b := range out.b {
				out.b[i] = !b
			}
		}
		return out, nil
	}
	if n.m != nil && !x.konst {
		ss := x.strs()[:ctx.n]
		for lo := 0; lo < len(out.b); lo += checkEvery {
			if err := ctx.check(); err != nil {
				return nil, err
			}
			hi := min(lo+checkEvery, len(out.b))
			n.m.matchAll(ss[lo:hi], out.b[lo:hi])
		}
		if n.not {
			for i, b := range out.b {
				out.b[i] = !b
			}
		}
		return out, nil
	}
	var last string
	var m *likeMatcher
	for i := range out.b {
		if i%checkEvery == 0 {
			if err := ctx.check(); err != nil {
				return nil, err
			}
		}
		if out.nulls != nil && out.nulls[i] {
			continue
		}
		ps := pat.strs()[pat.idx(i)]
		if m == nil || ps != last {
			if m, err = compileLike(ps, n.bytes); err != nil {
				return nil, ctx.errf(n.pat.pos(), "%s", err.Error())
			}
			last = ps
		}
		out.b[i] = m.match(x.strs()[x.idx(i)]) != n.not
	}
	return out, nil
}
