package sql

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
)

// UNNEST: an array literal of constants becomes a relation of its
// elements; UNNEST(t.arr) after a FROM item that has the REPEATED column
// arr (comma, CROSS JOIN, [INNER] JOIN, LEFT JOIN), or UNNEST of any
// array expression over that item's row (unnest_expr.go), pairs each row
// of that item with each element of its array (WITH OFFSET: the
// element's 0-based position), read from the Arrow list arrays by
// compute.Take. An empty array gives no row (LEFT JOIN: one row, NULL
// element).

// unnestLiteral serves UNNEST(expr) of an array expression that reads no
// column: an array literal, a parameter, a function of constants
// (GENERATE_ARRAY(1, 10)), a subquery. The rows are its elements (for
// an ARRAY of STRUCT: their fields, as columns qualified by the alias),
// then WITH OFFSET's position.
func (r *runner) unnestLiteral(u *UnnestRef, e *env) (*relation, error) {
	if err := r.unnestAgg(u); err != nil {
		return nil, err
	}
	// Inside a subquery, the expression may name the enclosing blocks'
	// columns (correlated: UNNEST(t.arr) of the outer row's array).
	outer := func(parts []string, pos int) (string, int, error) {
		if col, used, ok, err := r.outerResolve(parts, pos); ok {
			return col, used, err
		}
		return "", 0, r.errf(pos, "Unrecognized name: %s", parts[0])
	}
	x, err := r.compileText(r.text(u.Expr.pos(), u.Expr.end()), &schema.Schema{}, &scope{env: e}, filter.WithNames(outer))
	if err != nil {
		return nil, err
	}
	if len(x.Columns()) > 0 {
		return nil, notSupported(r.src, u.Expr.pos(), "UNNEST of this expression (an array of constants or an ARRAY column of an earlier FROM item)")
	}
	return r.unnestValues(u, x, u.Expr.pos())
}

// unnestAgg refuses an aggregate call in UNNEST's array expression, with
// BigQuery's message (an aggregate inside a subquery of it is the
// subquery's own).
func (r *runner) unnestAgg(u *UnnestRef) error {
	if at, ok := findAgg(u.Expr.toks); ok {
		return r.errf(at, "Aggregate function %s not allowed in UNNEST", strings.ToUpper(u.Expr.toks[indexAt(u.Expr.toks, at)].Text))
	}
	return nil
}

// unnestValues is the relation of the elements of x, an expression of
// no column at the position at.
func (r *runner) unnestValues(u *UnnestRef, x *filter.Scalar, at int) (*relation, error) {
	t := x.Type()
	if t == "NULL" {
		t = "ARRAY<INT64>"
	}
	elem, ok := strings.CutPrefix(t, "ARRAY<")
	if !ok {
		return nil, r.errf(at, "Values referenced in UNNEST must be arrays. UNNEST contains expression of type %s", t)
	}
	elem = strings.TrimSuffix(elem, ">")
	v, err := x.Values(r.ctx, nil, 1)
	if err != nil {
		return nil, err
	}
	elems, _ := v[0].([]any)
	rs := &rowset{names: []string{u.Alias}, types: []string{elem}}
	qual, fields := "", false
	if typeKind(elem) == "STRUCT" {
		fields = true
		f, err := filter.TypeField("", elem)
		if err != nil {
			return nil, err
		}
		rs.names, rs.types, qual = nil, nil, u.Alias
		for _, sf := range f.Fields {
			rs.names = append(rs.names, sf.Name)
			rs.types = append(rs.types, filter.FieldTypeName(sf))
		}
	}
	// A value table of STRUCTs: the alias is the STRUCT too (SELECT v
	// FROM UNNEST([STRUCT(...)]) AS v), a column * does not list.
	self := -1
	if fields && u.Alias != "" {
		self, qual = len(rs.names), ""
		rs.names, rs.types = append(rs.names, u.Alias), append(rs.types, elem)
	}
	for i, el := range elems {
		if err := r.charge(cellBytes(el)+rowOverhead, "UNNEST"); err != nil {
			return nil, err
		}
		row := []any{el}
		if fields {
			row = nil
			if st, ok := el.(filter.Struct); ok {
				row = append(row, st...)
			} else {
				row = make([]any, len(rs.names)-1)
			}
			if self >= 0 {
				row = append(row, el)
			}
		}
		if u.Offset {
			row = append(row, int64(i))
		}
		rs.rows = append(rs.rows, row)
	}
	if u.Offset {
		rs.names = append(rs.names, u.OffsetAlias)
		rs.types = append(rs.types, "INT64")
	}
	rel := rowsRelation(rs, qual)
	if self >= 0 {
		rel.cols[self].star, rel.cols[self].elem = false, true
	}
	return rel, nil
}

func closingBracket(toks []filter.Token) int {
	depth := 0
	for i, t := range toks {
		if t.Op && t.Text == "[" {
			depth++
		} else if t.Op && t.Text == "]" {
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// unnestJoin serves left JOIN UNNEST(array) where the array is column
// col of left (a REPEATED column, or one arrayColumn computed from
// left's row: hidden, it is no column of the output). ON (any join
// kind) keeps the pairs it holds TRUE for; LEFT JOIN adds, for each left
// row none of whose pairs were kept (an empty or NULL array too), one
// row with a NULL element. USING names the element (or the offset) and
// a left column it must equal; the USING column is the left one (as the
// left row is always there).
func (r *runner) unnestJoin(j *JoinRef, left *relation, u *UnnestRef, col int, hidden bool, e *env) (*relation, error) {
	af := left.field(col)
	name := u.Alias
	out := &relation{schema: &schema.Schema{}, vars: left.vars}
	var srcIdx []int // output column -> left column, -1 element, -2 offset, -3-k field k of a STRUCT element
	add := func(c relCol, f schema.Field, src int) {
		c.internal = fmt.Sprintf("__c%d", len(out.cols))
		f.Name = c.internal
		out.cols = append(out.cols, c)
		out.schema.Fields = append(out.schema.Fields, &f)
		srcIdx = append(srcIdx, src)
	}
	elem := *af
	elem.Mode = schema.Nullable
	// USING: each name is the element's or the offset's, and a left
	// column's.
	usedL := map[int]bool{}
	usedR := map[int]bool{} // -1 element, -2 offset
	for _, un := range j.Using {
		li, bad := sideColumn(left, un.name)
		if bad {
			return nil, r.errf(un.pos, "Column %s in USING clause not found on left side of join", un.name)
		}
		var rt *schema.Field
		switch {
		case name != "" && strings.EqualFold(un.name, name):
			usedR[-1], rt = true, &elem
		case u.Offset && strings.EqualFold(un.name, u.OffsetAlias):
			usedR[-2], rt = true, &schema.Field{Type: schema.Integer}
		default:
			return nil, r.errf(un.pos, "Column %s in USING clause not found on right side of join", un.name)
		}
		lf := left.field(li)
		if lf.EffectiveMode() == schema.Repeated || rt.EffectiveMode() == schema.Repeated ||
			canonical(lf.Type) != canonical(rt.Type) || canonical(lf.Type) == schema.Record {
			return nil, notSupported(r.src, un.pos, "USING columns of different or ARRAY types")
		}
		usedL[li] = true
		add(relCol{name: left.cols[li].name, star: true, unq: true}, *lf, li)
	}
	for i, c := range left.cols {
		if hidden && i == col {
			continue
		}
		if usedL[i] {
			c.star, c.unq = false, false
		}
		add(c, *left.field(i), i)
	}
	elemAt := len(out.cols)
	// An ARRAY of STRUCTs is a value table: the element (its alias) is
	// the STRUCT, and its fields are columns too, those * expands
	// (BigQuery's UNNEST: "a separate column for each field").
	fields := elem.Type == schema.Record && len(elem.Fields) > 0
	add(relCol{name: name, star: !usedR[-1] && !fields, unq: !usedR[-1], elem: true}, elem, -1)
	if fields {
		for k, f := range elem.Fields {
			add(relCol{name: f.Name, star: true, unq: true}, *f, -3-k)
		}
	}
	offsetAt := -1
	if u.Offset {
		offsetAt = len(out.cols)
		add(relCol{name: u.OffsetAlias, star: !usedR[-2], unq: !usedR[-2]}, schema.Field{Type: schema.Integer, Mode: schema.Nullable}, -2)
	}
	// The join condition over out's columns: ON, or USING's equalities.
	var on *filter.Scalar
	if len(j.Using) > 0 {
		var conds []string
		for k, un := range j.Using {
			rc := elemAt
			if !(name != "" && strings.EqualFold(un.name, name)) {
				rc = offsetAt
			}
			conds = append(conds, quoteIdent(out.cols[k].internal)+" = "+quoteIdent(out.cols[rc].internal))
		}
		x, err := r.compileText(exprText{text: strings.Join(conds, " AND ")}, out.schema, nil)
		if err != nil {
			return nil, err
		}
		on = x
	} else if j.On != nil {
		x, err := r.unnestOn(j, out, e)
		if err != nil {
			return nil, err
		}
		on = x
	}
	keepLeft := j.Kind == "LEFT"
	out.scan = func(ctx context.Context, cols []string, fn func(arrow.RecordBatch, int) error) error {
		// The pairs' columns: those asked for and those of the condition.
		need := append([]string(nil), cols...)
		if on != nil {
			seen := map[string]bool{}
			for _, c := range cols {
				seen[strings.ToLower(c)] = true
			}
			for _, c := range on.Columns() {
				if !seen[strings.ToLower(c)] && out.index(c) >= 0 {
					seen[strings.ToLower(c)] = true
					need = append(need, c)
				}
			}
		}
		// Read the left input: the array and the columns needed, each
		// named __l<its index in left>.
		in, inNames := []string{left.cols[col].internal}, []string{"__array"}
		seen := map[int]bool{}
		for _, c := range need {
			if k := srcIdx[out.index(c)]; k >= 0 && !seen[k] {
				seen[k] = true
				in, inNames = append(in, left.cols[k].internal), append(inNames, fmt.Sprintf("__l%d", k))
			}
		}
		jr := &joinRel{runner: r}
		side, err := jr.read(ctx, left, in, inNames)
		if err != nil {
			return err
		}
		defer side.release()
		list, ok := side.arrs[0].(*array.List)
		if !ok {
			return fmt.Errorf("sql: UNNEST of a %s array", side.arrs[0].DataType())
		}
		values := list.ListValues()
		var li, ei []int32
		var offs []int64
		// build makes the record of the pairs' columns names.
		build := func(names []string) (arrow.RecordBatch, error) {
			lidx, eidx := indices(li), indices(ei)
			defer lidx.Release()
			defer eidx.Release()
			var fields []arrow.Field
			var arrs []arrow.Array
			defer func() {
				for _, a := range arrs {
					a.Release()
				}
			}()
			for _, c := range names {
				var a arrow.Array
				var err error
				switch k := srcIdx[out.index(c)]; {
				case k == -1:
					a, err = takeArray(ctx, values, eidx)
				case k <= -3: // a field of the STRUCT element
					st, ok := values.(*array.Struct)
					if !ok {
						return nil, fmt.Errorf("sql: UNNEST field of a %s array", values.DataType())
					}
					a, err = takeArray(ctx, st.Field(-3-k), eidx)
				case k == -2:
					b := array.NewInt64Builder(memory.DefaultAllocator)
					for k, o := range offs {
						if ei[k] < 0 {
							b.AppendNull()
						} else {
							b.Append(o)
						}
					}
					a = b.NewArray()
					b.Release()
				default:
					a, err = takeArray(ctx, side.arr(fmt.Sprintf("__l%d", k)), lidx)
				}
				if err != nil {
					return nil, err
				}
				arrs = append(arrs, a)
				fields = append(fields, arrow.Field{Name: c, Type: a.DataType(), Nullable: true})
			}
			return array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, int64(len(li))), nil
		}
		var matched []bool // LEFT JOIN ... ON: left rows a pair of which was kept
		if keepLeft && on != nil {
			matched = make([]bool, side.n)
		}
		filtering := on != nil
		flush := func() error {
			if len(li) == 0 {
				return nil
			}
			defer func() { li, ei, offs = li[:0], ei[:0], offs[:0] }()
			if filtering {
				rec, err := build(need)
				if err != nil {
					return err
				}
				keep, err := selection(ctx, on, rec, len(li))
				rec.Release()
				if err != nil {
					return err
				}
				m := 0
				for k, ok := range keep {
					if ok {
						li[m], ei[m], offs[m] = li[k], ei[k], offs[k]
						m++
						if matched != nil {
							matched[li[k]] = true
						}
					}
				}
				li, ei, offs = li[:m], ei[:m], offs[:m]
				if m == 0 {
					return nil
				}
			}
			if len(cols) == 0 {
				return fn(nil, len(li))
			}
			rec, err := build(cols)
			if err != nil {
				return err
			}
			defer rec.Release()
			return fn(rec, len(li))
		}
		for i := 0; i < side.n; i++ {
			start, end := list.ValueOffsets(i)
			if list.IsNull(i) {
				start, end = 0, 0
			}
			if start == end && keepLeft && on == nil {
				li, ei, offs = append(li, int32(i)), append(ei, -1), append(offs, 0)
			}
			for k := start; k < end; k++ {
				li, ei, offs = append(li, int32(i)), append(ei, int32(k)), append(offs, k-start)
				if len(li) >= joinBatch {
					if err := flush(); err != nil {
						return err
					}
				}
			}
		}
		if err := flush(); err != nil {
			return err
		}
		// LEFT JOIN ... ON: a NULL element for the left rows left without
		// a pair.
		filtering = false
		for i, m := range matched {
			if !m {
				li, ei, offs = append(li, int32(i)), append(ei, -1), append(offs, 0)
				if len(li) >= joinBatch {
					if err := flush(); err != nil {
						return err
					}
				}
			}
		}
		return flush()
	}
	return out, nil
}

// unnestOn compiles the ON condition of JOIN UNNEST(...) ON cond over the
// pairs' columns (out).
func (r *runner) unnestOn(j *JoinRef, out *relation, e *env) (*filter.Scalar, error) {
	if at, ok := findAgg(j.On.toks); ok {
		return nil, r.errf(at, "Aggregate function %s not allowed in JOIN ON clause", strings.ToUpper(j.On.toks[indexAt(j.On.toks, at)].Text))
	}
	inner := out.names(r.src)
	names := filter.WithNames(func(parts []string, pos int) (string, int, error) {
		col, used, err := inner(parts, pos)
		if err != nil {
			if c, u, ok, err2 := r.outerResolve(parts, pos); ok {
				return c, u, err2
			}
		}
		return col, used, err
	})
	on, err := r.compileText(r.text(j.On.pos(), j.On.end()), out.schema, &scope{env: e, outer: out, join: true}, names)
	if err != nil {
		return nil, err
	}
	if t := on.Type(); t != "BOOL" && t != "NULL" {
		return nil, r.errf(j.On.pos(), "JOIN ON clause should return type BOOL, but returns %s", t)
	}
	return on, nil
}

func typeName(f *schema.Field) string {
	switch t := canonical(f.Type); t {
	case schema.Integer:
		return "INT64"
	case schema.Float:
		return "FLOAT64"
	case schema.Boolean:
		return "BOOL"
	case schema.Record:
		return "STRUCT"
	default:
		return string(t)
	}
}
