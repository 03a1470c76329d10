package filter

import (
	"strings"
)

// Type checking and evaluation of ARRAY and STRUCT expressions:
// constructors, subscripts and field access. Values are built row by row
// (composite vectors hold one value per row; see composite.go).

// commonType is the supertype of nodes (NULLs: tNull), or false.
func (c *checker) commonType(nodes []node) (typ, bool) {
	t := tNull
	for _, n := range nodes {
		st, ok := c.supertype(&constNode{v: constVec(t, nullValue)}, n)
		if !ok {
			if st2, ok2 := c.supertype(n, &constNode{v: constVec(t, nullValue)}); ok2 {
				st, ok = st2, true
			}
		}
		if !ok {
			return 0, false
		}
		if t == tNull || st != t {
			t = st
		}
	}
	return t, true
}

func (c *checker) typeOf(name string, pos int) (typ, error) {
	t, err := parseTypeName(name)
	if err != nil {
		return 0, c.errf(pos, "%v", err)
	}
	return t, nil
}

func (c *checker) arrayLit(e *ArrayLit) (node, error) {
	elems := make([]node, len(e.Elems))
	for i, x := range e.Elems {
		var err error
		if elems[i], err = c.check(x); err != nil {
			return nil, err
		}
	}
	var et typ
	if e.Type != "" {
		t, err := c.typeOf(e.Type, e.P)
		if err != nil {
			return nil, err
		}
		et = t.elem()
	} else {
		t, ok := c.commonType(elems)
		if !ok {
			t, ok = c.nullFieldsType(e, elems)
		}
		if !ok {
			ts := make([]string, 0, len(elems))
			seen := map[typ]bool{}
			for _, n := range elems {
				if !seen[n.typ()] {
					seen[n.typ()] = true
					ts = append(ts, n.typ().String())
				}
			}
			return nil, c.errf(e.P, "Array elements of types {%s} do not have a common supertype", strings.Join(ts, ", "))
		}
		et = t
		if et == tNull {
			et = tInt
		}
	}
	for i, n := range elems {
		var err error
		if elems[i], err = c.coerce(n, et, "ARRAY"); err != nil {
			if elems[i] = c.retypeStructLit(e.Elems[i], et); elems[i] == nil {
				return nil, c.errf(e.Elems[i].Pos(), "Array element type %s does not coerce to %s", n.typ(), et)
			}
		}
	}
	t, err := arrayOf(et)
	if err != nil {
		return nil, c.errf(e.P, "%v", err)
	}
	return c.fold(&makeNode{args: elems, t: t, p: e.P}, elems...)
}

// retypeStructLit checks an untyped STRUCT literal or tuple element of an
// array literal again as a literal of the array's STRUCT element type t,
// so that its fields take t's field types: a NULL field, which a struct
// literal alone types INT64, becomes t's field type, as in
// ARRAY<STRUCT<x INT64, y STRING>>[(7, 'a'), (8, NULL)]. It answers nil
// when x is not such a literal or does not fit t.
func (c *checker) retypeStructLit(x Expr, t typ) node {
	sl, ok := x.(*StructLit)
	if !ok || sl.Type != "" || !t.isStruct() || len(sl.Fields) != len(t.comp().fields) {
		return nil
	}
	typed := *sl
	typed.Type = t.String()
	n, err := c.structLit(&typed)
	if err != nil || n.typ() != t {
		return nil
	}
	return n
}

// nullFieldsType retries the common type of an array literal's elements
// counting an untyped NULL field of a STRUCT literal as a NULL literal,
// which coerces to any type: [STRUCT('a' AS x, 1 AS y), (NULL, 5)] is an
// ARRAY<STRUCT<x STRING, y INT64>> in GoogleSQL (a struct literal alone
// types such a field INT64). The elements with NULL fields are checked
// again, typed as the common type.
func (c *checker) nullFieldsType(e *ArrayLit, elems []node) (typ, bool) {
	loose := make([]node, len(elems))
	var redo []int
	for i, n := range elems {
		loose[i] = n
		sl, ok := e.Elems[i].(*StructLit)
		if !ok || sl.Type != "" || !n.typ().isStruct() {
			continue
		}
		fs := append([]structField(nil), n.typ().comp().fields...)
		nulls := false
		for j, x := range sl.Fields {
			if fn, err := c.check(x); err == nil && fn.typ() == tNull {
				fs[j].t, nulls = tNull, true
			}
		}
		if !nulls {
			continue
		}
		lt, err := structOf(fs)
		if err != nil {
			return 0, false
		}
		loose[i] = &constNode{v: constVec(lt, nullValue), p: n.pos()}
		redo = append(redo, i)
	}
	if len(redo) == 0 {
		return 0, false
	}
	t, ok := c.commonType(loose)
	if !ok || !t.isStruct() {
		return 0, false
	}
	for _, f := range t.comp().fields {
		if f.t == tNull {
			return 0, false
		}
	}
	for _, i := range redo {
		sl := *e.Elems[i].(*StructLit)
		sl.Type = t.String()
		n, err := c.structLit(&sl)
		if err != nil {
			return 0, false
		}
		elems[i] = n
	}
	return t, true
}

func (c *checker) structLit(e *StructLit) (node, error) {
	fields := make([]node, len(e.Fields))
	for i, x := range e.Fields {
		var err error
		if fields[i], err = c.check(x); err != nil {
			return nil, err
		}
	}
	var t typ
	if e.Type != "" {
		var err error
		if t, err = c.typeOf(e.Type, e.P); err != nil {
			return nil, err
		}
		fs := t.comp().fields
		if len(fs) != len(fields) {
			return nil, c.errf(e.P, "STRUCT type has %d fields but constructor call has %d fields", len(fs), len(fields))
		}
		for i, n := range fields {
			var err error
			if fields[i], err = c.coerce(n, fs[i].t, "STRUCT"); err != nil {
				return nil, c.errf(e.Fields[i].Pos(), "STRUCT field %d type %s does not match %s", i+1, n.typ(), fs[i].t)
			}
		}
	} else {
		fs := make([]structField, len(fields))
		for i, n := range fields {
			ft := n.typ()
			if ft == tNull {
				ft = tInt
				var err error
				if fields[i], err = c.coerce(n, ft, "STRUCT"); err != nil {
					return nil, err
				}
			}
			fs[i] = structField{name: e.Names[i], t: ft}
		}
		var err error
		if t, err = structOf(fs); err != nil {
			return nil, c.errf(e.P, "%v", err)
		}
	}
	return c.fold(&makeNode{args: fields, t: t, p: e.P}, fields...)
}

// makeNode builds an ARRAY (its elements) or a STRUCT (its fields) per row.
type makeNode struct {
	args []node
	t    typ
	p    int
}

func (n *makeNode) typ() typ { return n.t }
func (n *makeNode) pos() int { return n.p }

func (n *makeNode) eval(ctx *evalCtx) (*vec, error) {
	vs := make([]*vec, len(n.args))
	for i, a := range n.args {
		v, err := a.eval(ctx)
		if err != nil {
			return nil, err
		}
		vs[i] = v
	}
	out := newVec(n.t, ctx.n)
	for i := 0; i < ctx.n; i++ {
		x := value{a: make([]value, len(vs))}
		for j, v := range vs {
			x.a[j] = v.get(i)
		}
		out.c[i] = x
	}
	return out, nil
}

func (c *checker) index(e *Index) (node, error) {
	x, err := c.check(e.X)
	if err != nil {
		return nil, err
	}
	i, err := c.check(e.I)
	if err != nil {
		return nil, err
	}
	t := x.typ()
	if t == tJSON && c.query {
		return c.jsonSubscript(e, x, i)
	}
	if !t.isArray() {
		if e.Mode == "" {
			return nil, c.errf(e.P, "Element access using [] is not supported on values of type %s", t)
		}
		return nil, c.errf(e.P, "Array element access with array position is not supported on values of type %s", t)
	}
	if e.Mode == "" && i.typ() != tInt && i.typ() != tNull {
		return nil, c.errf(e.I.Pos(), "Array position in [] must be coercible to INT64 type, but has type %s", i.typ())
	}
	if i, err = c.coerce(i, tInt, e.Mode); err != nil || i.typ() != tInt {
		return nil, c.errf(e.I.Pos(), "No matching signature for operator %s for argument types: %s", e.Mode, e.I)
	}
	mode := e.Mode
	if mode == "" {
		mode = "OFFSET"
	}
	return c.fold(&indexNode{x: x, i: i, mode: mode, t: t.elem(), p: e.P}, x, i)
}

// indexNode is arr[OFFSET(i)] and its relatives.
type indexNode struct {
	x, i node
	mode string
	t    typ
	p    int
}

func (n *indexNode) typ() typ { return n.t }
func (n *indexNode) pos() int { return n.p }

func (n *indexNode) eval(ctx *evalCtx) (*vec, error) {
	x, err := n.x.eval(ctx)
	if err != nil {
		return nil, err
	}
	iv, err := n.i.eval(ctx)
	if err != nil {
		return nil, err
	}
	base := int64(0)
	if strings.HasSuffix(n.mode, "ORDINAL") {
		base = 1
	}
	safe := strings.HasPrefix(n.mode, "SAFE_")
	out := newVec(n.t, ctx.n)
	for r := 0; r < ctx.n; r++ {
		a, i := x.get(r), iv.get(r)
		if a.null || i.null {
			out.set(r, nullValue)
			continue
		}
		k := i.i - base
		switch {
		case k < 0 || k >= int64(len(a.a)):
			if safe {
				out.set(r, nullValue)
				continue
			}
			what := "overflow"
			if k < 0 {
				what = "underflow"
			}
			return nil, ctx.errf(n.p, "Array index %d is out of bounds (%s)", i.i, what)
		}
		out.set(r, a.a[k])
	}
	return out, nil
}

func (c *checker) fieldAccess(e *FieldAccess) (node, error) {
	x, err := c.check(e.X)
	if err != nil {
		return nil, err
	}
	return c.field(x, e.Name, e.P)
}

// field is x.name on a STRUCT x.
func (c *checker) field(x node, name string, pos int) (node, error) {
	t := x.typ()
	if t == tJSON && c.query {
		return c.jsonMember(x, name, pos)
	}
	ct := t.comp()
	if ct == nil || ct.kind != tStruct {
		return nil, c.errf(pos, "Cannot access field %s on a value with type %s", name, t)
	}
	k := -1
	for i, f := range ct.fields {
		if strings.EqualFold(f.name, name) {
			if k >= 0 {
				return nil, c.errf(pos, "Struct field name %s is ambiguous", name)
			}
			k = i
		}
	}
	if k < 0 {
		return nil, c.errf(pos, "Field name %s does not exist in %s", name, t)
	}
	return c.fold(&fieldNode{x: x, k: k, t: ct.fields[k].t, p: pos}, x)
}

// fieldNode is a STRUCT's k-th field.
type fieldNode struct {
	x node
	k int
	t typ
	p int
}

func (n *fieldNode) typ() typ { return n.t }
func (n *fieldNode) pos() int { return n.p }

func (n *fieldNode) eval(ctx *evalCtx) (*vec, error) {
	x, err := n.x.eval(ctx)
	if err != nil {
		return nil, err
	}
	out := newVec(n.t, ctx.n)
	for r := 0; r < ctx.n; r++ {
		s := x.get(r)
		if s.null {
			out.set(r, nullValue)
			continue
		}
		out.set(r, s.a[n.k])
	}
	return out, nil
}

// inUnnestExpr is x [NOT] IN UNNEST(arr) over an ARRAY expression: TRUE
// when an element equals x, else NULL when x or an element is NULL (and
// the array is not empty), else FALSE; an empty or NULL array is FALSE.
func (c *checker) inUnnestExpr(e *InUnnest) (node, error) {
	x, err := c.check(e.X)
	if err != nil {
		return nil, err
	}
	arr, err := c.check(e.Expr)
	if err != nil {
		return nil, err
	}
	at := arr.typ()
	if at == tNull {
		return &constNode{v: constVec(tBool, value{b: e.Not}), p: e.P}, nil
	}
	if !at.isArray() {
		return nil, c.errf(e.Expr.Pos(), "Values referenced in UNNEST must be arrays. UNNEST contains expression of type %s", at)
	}
	et := at.elem()
	t, ok := c.supertype(x, &constNode{v: constVec(et, nullValue)})
	if !ok || !isEqualityType(t) || t.isStruct() {
		return nil, c.errf(e.P, "No matching signature for operator IN UNNEST for argument types: %s and %s", x.typ(), at)
	}
	if t == tNull {
		t = tInt
	}
	if x, err = c.coerce(x, t, "operator IN UNNEST"); err != nil {
		return nil, err
	}
	return c.fold(&inArrayNode{x: x, arr: arr, t: t, not: e.Not, p: e.P}, x, arr)
}

type inArrayNode struct {
	x, arr node
	t      typ // x's type (the elements convert to it)
	not    bool
	p      int
}

func (n *inArrayNode) typ() typ { return tBool }
func (n *inArrayNode) pos() int { return n.p }

func (n *inArrayNode) eval(ctx *evalCtx) (*vec, error) {
	xv, err := n.x.eval(ctx)
	if err != nil {
		return nil, err
	}
	av, err := n.arr.eval(ctx)
	if err != nil {
		return nil, err
	}
	et := n.arr.typ().elem()
	out := newVec(tBool, ctx.n)
	for r := 0; r < ctx.n; r++ {
		a := av.get(r)
		if a.null || len(a.a) == 0 {
			out.b[r] = n.not
			continue
		}
		x := xv.get(r)
		found, null := false, x.null
		for _, el := range a.a {
			if el.null {
				null = true
				continue
			}
			if x.null {
				continue
			}
			v, err := convertValue(et, n.t, el)
			if err != nil {
				return nil, ctx.errf(n.p, "%v", err)
			}
			eq, eqNull := equalSQL(n.t, x, v)
			if eqNull {
				null = true
				continue
			}
			if eq {
				found = true
				break
			}
		}
		switch {
		case found:
			out.b[r] = !n.not
		case null:
			out.set(r, nullValue)
		default:
			out.b[r] = n.not
		}
	}
	return out, nil
}
