package filter

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// condNode is CASE WHEN ... THEN ... [ELSE ...] END (and IF): each row
// takes the result of the first condition that is TRUE, else the ELSE
// result (NULL without one). A result that fails over the whole batch is
// evaluated again on only the rows that take it, so guards such as
// IF(x = 0, 0, 1 / x) work as in BigQuery, which evaluates branches
// lazily.
type condNode struct {
	conds   []node
	results []node
	els     node // nil: NULL
	t       typ
	p       int
}

func (n *condNode) typ() typ { return n.t }
func (n *condNode) pos() int { return n.p }

// cond checks the branches of a CASE or IF: the results get their common
// supertype.
func (c *checker) cond(p int, conds, results []node, els node, noSig func() *Error) (node, error) {
	t := tNull
	all := append(append([]node(nil), results...), els)
	for _, r := range all {
		if r == nil {
			continue
		}
		st, ok := c.supertype(&constNode{v: constVec(t, nullValue)}, r)
		if !ok {
			return nil, noSig()
		}
		t = st
	}
	if t == tNull {
		t = tInt
	}
	for i, r := range results {
		var err error
		if results[i], err = c.coerce(r, t, "CASE"); err != nil {
			return nil, noSig()
		}
	}
	if els != nil {
		var err error
		if els, err = c.coerce(els, t, "CASE"); err != nil {
			return nil, noSig()
		}
	}
	n := &condNode{conds: conds, results: results, els: els, t: t, p: p}
	kids := append(append([]node(nil), conds...), results...)
	if els != nil {
		kids = append(kids, els)
	}
	return c.fold(n, kids...)
}

func (n *condNode) eval(ctx *evalCtx) (*vec, error) {
	// branch[i] is the index of the result row i takes; len(results) is
	// the ELSE.
	branch := make([]int, ctx.n)
	undecided := len(n.conds)
	for i := range branch {
		branch[i] = undecided
	}
	for j := len(n.conds) - 1; j >= 0; j-- {
		cv, err := n.conds[j].eval(ctx)
		if err != nil {
			return nil, err
		}
		for i := range branch {
			if !cv.isNull(i) && cv.b[cv.idx(i)] {
				branch[i] = j
			}
		}
	}
	out := newVec(n.t, ctx.n)
	for j := 0; j <= len(n.conds); j++ {
		res := n.els
		if j < len(n.conds) {
			res = n.results[j]
		}
		keep := make([]bool, ctx.n)
		any := false
		for i, b := range branch {
			keep[i] = b == j
			any = any || keep[i]
		}
		if !any {
			continue
		}
		if res == nil {
			for i, k := range keep {
				if k {
					out.set(i, nullValue)
				}
			}
			continue
		}
		v, err := res.eval(ctx)
		if err != nil {
			if v, err = evalSubset(ctx, res, keep, err); err != nil {
				return nil, err
			}
		}
		for i, k := range keep {
			if k {
				out.set(i, v.get(i))
			}
		}
	}
	return out, nil
}

// evalSubset evaluates n on the rows of the batch where keep is true (err
// is what evaluating it on every row gave) and returns a vector of all the
// batch's rows whose other rows are NULL.
func evalSubset(ctx *evalCtx, n node, keep []bool, err error) (*vec, error) {
	kept := 0
	for _, k := range keep {
		if k {
			kept++
		}
	}
	if ctx.rec == nil || kept == ctx.n {
		return nil, err
	}
	bb := array.NewBooleanBuilder(memory.DefaultAllocator)
	bb.AppendValues(keep, nil)
	mask := bb.NewBooleanArray()
	bb.Release()
	defer mask.Release()
	sub, ferr := compute.FilterRecordBatch(context.Background(), ctx.rec, mask, compute.DefaultFilterOptions())
	if ferr != nil {
		return nil, err
	}
	defer sub.Release()
	subCtx := &evalCtx{cx: ctx.cx, rec: sub, n: int(sub.NumRows()), src: ctx.src, cols: map[string]*vec{}}
	sv, err := n.eval(subCtx)
	if err != nil {
		return nil, err
	}
	out := newVec(n.typ(), ctx.n)
	j := 0
	for i, k := range keep {
		if !k {
			out.set(i, nullValue)
			continue
		}
		out.set(i, sv.get(j))
		j++
	}
	return out, nil
}
