package filter

// The quantified LIKE: x [NOT] LIKE ANY|SOME|ALL (pattern, ...) and
// x [NOT] LIKE ANY|SOME|ALL UNNEST(array). GoogleSQL's reference
// evaluator (zetasql reference_impl/functions/like.cc,
// EvaluateQuantifiedLike): each pattern gives x [NOT] LIKE pattern;
// ANY (SOME) is their three-valued OR, ALL their AND; a NULL x is NULL
// and no pattern at all (an empty or NULL array) is FALSE, for ALL too.

import "strings"

// quantifiedLike parses what follows LIKE when it is ANY, SOME or ALL.
func (p *parser) quantifiedLike(left Expr, not bool, pos int) (Expr, *Error) {
	quant := strings.ToUpper(p.tok.text)
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.isKw("UNNEST") {
		unnest := p.tok
		if !p.query {
			return nil, p.errf(unnest.pos, "LIKE %s UNNEST is not supported in row_restriction", quant)
		}
		if err := p.advance(); err != nil {
			return nil, err
		}
		if err := p.expectOp("("); err != nil {
			return nil, err
		}
		arr, err := p.parseExpr(0)
		if err != nil {
			return nil, err
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
		return &Like{X: left, Not: not, Quant: quant, Array: arr, P: pos}, nil
	}
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	if p.isKw("SELECT") {
		if !p.query {
			return nil, p.errf(p.tok.pos, "Subqueries are not supported in row_restriction")
		}
		return nil, p.errf(p.tok.pos, "not supported yet by bqstore: LIKE %s (subquery)", quant)
	}
	list, err := p.parseExprListClose()
	if err != nil {
		return nil, err
	}
	return &Like{X: left, Not: not, Quant: quant, List: list, P: pos}, nil
}

// quantifiedLike checks a quantified LIKE. The list form is the OR (AND
// for ALL) of one LIKE per pattern; the array form a quantLikeNode.
func (c *checker) quantifiedLike(e *Like) (node, error) {
	all := e.Quant == "ALL"
	if e.Array == nil {
		var out node
		for _, pat := range e.List {
			n, err := c.like(&Like{X: e.X, Pattern: pat, Not: e.Not, P: e.P})
			if err != nil {
				return nil, err
			}
			if out == nil {
				out = n
				continue
			}
			l := out
			if out, err = c.fold(&logicNode{and: all, l: l, r: n, p: e.P}, l, n); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	x, err := c.check(e.X)
	if err != nil {
		return nil, err
	}
	arr, err := c.check(e.Array)
	if err != nil {
		return nil, err
	}
	at := arr.typ()
	if at != tNull && !at.isArray() {
		return nil, c.errf(e.Array.Pos(), "Values referenced in UNNEST must be arrays. UNNEST contains expression of type %s", at)
	}
	t := x.typ()
	if at != tNull && (t == tNull || t == at.elem()) {
		t = at.elem()
	}
	if t == tNull {
		t = tString
	}
	if (t != tString && t != tBytes) || (at != tNull && at.elem() != t) {
		return nil, c.errf(e.P, "No matching signature for operator LIKE %s UNNEST for argument types: %s, %s", e.Quant, x.typ(), at)
	}
	if x, err = c.coerce(x, t, "operator LIKE"); err != nil {
		return nil, err
	}
	if at == tNull {
		if at, err = arrayOf(t); err != nil {
			return nil, c.errf(e.P, "%s", err.Error())
		}
		arr = &constNode{v: constVec(at, nullValue), p: arr.pos()}
	}
	return c.fold(&quantLikeNode{x: x, arr: arr, not: e.Not, all: all, bytes: t == tBytes, p: e.P}, x, arr)
}

// quantLikeNode is x [NOT] LIKE ANY|ALL UNNEST(arr), row by row.
type quantLikeNode struct {
	x, arr   node
	not, all bool
	bytes    bool
	p        int
}

func (n *quantLikeNode) typ() typ { return tBool }
func (n *quantLikeNode) pos() int { return n.p }

func (n *quantLikeNode) eval(ctx *evalCtx) (*vec, error) {
	xv, err := n.x.eval(ctx)
	if err != nil {
		return nil, err
	}
	av, err := n.arr.eval(ctx)
	if err != nil {
		return nil, err
	}
	out := newVec(tBool, ctx.n)
	ms := map[string]*likeMatcher{}
	for r := 0; r < ctx.n; r++ {
		if r%checkEvery == 0 {
			if err := ctx.check(); err != nil {
				return nil, err
			}
		}
		x, a := xv.get(r), av.get(r)
		if x.null {
			out.set(r, nullValue)
			continue
		}
		if a.null || len(a.a) == 0 {
			out.b[r] = false
			continue
		}
		// ANY: a TRUE decides, ALL: a FALSE decides; else NULL if any was.
		decided, null := false, false
		for _, el := range a.a {
			if el.null {
				null = true
				continue
			}
			m := ms[el.s]
			if m == nil {
				if len(ms) >= 1024 { // patterns that differ row by row
					clear(ms)
				}
				if m, err = compileLike(el.s, n.bytes); err != nil {
					return nil, ctx.errf(n.p, "%s", err.Error())
				}
				ms[el.s] = m
			}
			if (m.match(x.s) != n.not) != n.all {
				decided = true
				break
			}
		}
		switch {
		case decided:
			out.b[r] = !n.all
		case null:
			out.set(r, nullValue)
		default:
			out.b[r] = n.all
		}
	}
	return out, nil
}
