package filter

// LIKE: the node that evaluates a LIKE pattern over a column.

// ---- LIKE ----

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
