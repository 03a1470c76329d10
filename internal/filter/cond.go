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

// commonSupertype is the supertype of the nodes (nil ones left out) as
// GoogleSQL's conversion rules find it ("Supertypes", "Literal
// coercion"): the non-literals' supertype first, then the most specific
// type the literals and parameters coerce to (a STRING literal to DATE,
// DATETIME, TIME or TIMESTAMP, an INT64 one to NUMERIC or FLOAT64); with
// literals only, theirs. tNull when all are untyped NULLs. Taken in the
// arguments' order, IF(c, '2020-01-01', date_col) fixed STRING at the
// literal and then found no supertype with DATE.
func (c *checker) commonSupertype(nodes []node) (typ, bool) {
	literal := func(n node) bool {
		k, ok := n.(*constNode)
		return ok && (k.lit || k.param || k.typ() == tNull)
	}
	var acc node // of the supertype so far; a literal while only literals were seen
	for _, lits := range []bool{false, true} {
		for _, n := range nodes {
			if n == nil || literal(n) != lits {
				continue
			}
			if acc == nil {
				acc = n
				continue
			}
			st, ok := c.supertype(acc, n)
			if !ok {
				return 0, false
			}
			switch st {
			case acc.typ():
			case n.typ():
				acc = n
			default:
				acc = &constNode{v: constVec(st, nullValue)}
			}
		}
	}
	if acc == nil {
		return tNull, true
	}
	return acc.typ(), true
}

// cond checks the branches of a CASE or IF: the results get their common
// supertype.
func (c *checker) cond(p int, conds, results []node, els node, noSig func() *Error) (node, error) {
	t, ok := c.commonSupertype(append(append([]node(nil), results...), els))
	if !ok {
		return nil, noSig()
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
	// Constant conditions pick the result now: the others are never
	// evaluated, so a failing constant among them (an errNode) is not
	// raised, and IF(@d = 0, NULL, DIV(10, @d)) stays a constant.
	for j, cd := range conds {
		v, ok := constValue(cd)
		if !ok {
			break
		}
		if !v.null && v.b {
			return unliteral(results[j]), nil
		}
		if j == len(conds)-1 {
			if els == nil {
				return &constNode{v: constVec(t, nullValue), p: p}, nil
			}
			return unliteral(els), nil
		}
	}
	n := &condNode{conds: conds, results: results, els: els, t: t, p: p}
	kids := append(append([]node(nil), conds...), results...)
	if els != nil {
		kids = append(kids, els)
	}
	return c.fold(n, kids...)
}

// unliteral is n as the result of an expression: a literal's or a
// parameter's constant no longer coerces as a literal does.
func unliteral(n node) node {
	if k, ok := n.(*constNode); ok && (k.lit || k.param) {
		return &constNode{v: k.v, p: k.p}
	}
	return n
}

func (n *condNode) eval(ctx *evalCtx) (*vec, error) {
	// branch[i] is the index of the result row i takes; len(n.conds) is
	// the ELSE. open[i] is true while no condition has decided row i: a
	// condition is evaluated only on those rows (evalRows), so an error
	// in a later WHEN does not fire for a row an earlier WHEN decided.
	els := len(n.conds)
	branch := make([]int, ctx.n)
	open := make([]bool, ctx.n)
	for i := range branch {
		branch[i] = els
		open[i] = true
	}
	undecided := ctx.n
	for j, cond := range n.conds {
		if undecided == 0 {
			break
		}
		cv, err := evalRows(ctx, cond, open, undecided)
		if err != nil {
			return nil, err
		}
		for i, o := range open {
			if o && !cv.isNull(i) && cv.b[cv.idx(i)] {
				branch[i] = j
				open[i] = false
				undecided--
			}
		}
	}
	var out *vec
	keep := make([]bool, ctx.n)
	for j := 0; j <= els; j++ {
		res := n.els
		if j < els {
			res = n.results[j]
		}
		kept := 0
		for i, b := range branch {
			keep[i] = b == j
			if keep[i] {
				kept++
			}
		}
		if kept == 0 {
			continue
		}
		if res == nil {
			if kept == ctx.n {
				return constVec(n.t, nullValue), nil
			}
			if out == nil {
				out = newVec(n.t, ctx.n)
			}
			for i, k := range keep {
				if k {
					out.set(i, nullValue)
				}
			}
			continue
		}
		v, err := evalRows(ctx, res, keep, kept)
		if err != nil {
			return nil, err
		}
		if kept == ctx.n {
			return v, nil // every row takes this result
		}
		if out == nil {
			out = newVec(n.t, ctx.n)
		}
		for i, k := range keep {
			if k {
				out.set(i, v.get(i))
			}
		}
	}
	if out == nil { // no rows
		out = newVec(n.t, ctx.n)
	}
	return out, nil
}

// coalesceNode is COALESCE (and IFNULL): each row takes its first
// non-NULL argument. An argument is evaluated only on the rows whose
// earlier arguments were all NULL: BigQuery does not evaluate the rest
// ("the remaining expressions aren't evaluated").
type coalesceNode struct {
	args []node // coerced to t
	t    typ
	p    int
}

func (n *coalesceNode) typ() typ { return n.t }
func (n *coalesceNode) pos() int { return n.p }

func (n *coalesceNode) eval(ctx *evalCtx) (*vec, error) {
	open := make([]bool, ctx.n) // rows whose arguments so far were NULL
	for i := range open {
		open[i] = true
	}
	undecided := ctx.n
	var out *vec
	for _, a := range n.args {
		if undecided == 0 {
			break
		}
		v, err := evalRows(ctx, a, open, undecided)
		if err != nil {
			return nil, err
		}
		if out == nil && !v.hasNulls() {
			return v, nil // the first argument decides every row
		}
		if out == nil {
			out = newVec(n.t, ctx.n)
		}
		for i, o := range open {
			if o && !v.isNull(i) {
				out.set(i, v.get(i))
				open[i] = false
				undecided--
			}
		}
	}
	if out == nil {
		return newVec(n.t, ctx.n), nil // no rows
	}
	if undecided > 0 {
		for i, o := range open {
			if o {
				out.set(i, nullValue)
			}
		}
	}
	return out, nil
}

// evalRows evaluates n for the rows of the batch where keep is true (kept
// of them); the other rows of the result are unspecified. The whole batch
// is evaluated first, the common case being that it evaluates without
// error; only when that fails is n evaluated again on the kept rows alone,
// whose error is then the row's own.
func evalRows(ctx *evalCtx, n node, keep []bool, kept int) (*vec, error) {
	v, err := n.eval(ctx)
	if err == nil || kept == ctx.n {
		return v, err
	}
	return evalSubset(ctx, n, keep, err)
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
	if kept == ctx.n {
		return nil, err
	}
	if ctx.rec == nil {
		// n reads no column: the kept rows are any kept of them.
		sv, err := n.eval(&evalCtx{cx: ctx.cx, n: kept, src: ctx.src, cols: map[string]*vec{}})
		if err != nil {
			return nil, err
		}
		return spread(n.typ(), sv, keep), nil
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
	return spread(n.typ(), sv, keep), nil
}

// spread places the values of sv (one per kept row) at the kept rows of a
// vector of len(keep) rows whose other rows are NULL.
func spread(t typ, sv *vec, keep []bool) *vec {
	out := newVec(t, len(keep))
	j := 0
	for i, k := range keep {
		if !k {
			out.set(i, nullValue)
			continue
		}
		out.set(i, sv.get(j))
		j++
	}
	return out
}
