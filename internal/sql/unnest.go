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
// arr (comma, CROSS JOIN, [INNER] JOIN, LEFT JOIN) pairs each row of
// that item with each element of its array (WITH OFFSET: the element's
// 0-based position), read from the Arrow list arrays by compute.Take.
// An empty array gives no row (LEFT JOIN: one row, NULL element).

// unnestLiteral serves UNNEST(expr) of an array expression that reads no
// column: an array literal, a parameter, a function of constants
// (GENERATE_ARRAY(1, 10)), a subquery. The rows are its elements (for
// an ARRAY of STRUCT: their fields, as columns qualified by the alias),
// then WITH OFFSET's position.
func (r *runner) unnestLiteral(u *UnnestRef, e *env) (*relation, error) {
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
	t := x.Type()
	if t == "NULL" {
		t = "ARRAY<INT64>"
	}
	elem, ok := strings.CutPrefix(t, "ARRAY<")
	if !ok {
		return nil, r.errf(u.Expr.pos(), "Values referenced in UNNEST must be arrays. UNNEST contains expression of type %s", t)
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
				row = make([]any, len(rs.names))
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
	return rowsRelation(rs, qual), nil
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

// unnestJoin serves left JOIN UNNEST(path) where path names a REPEATED
// column of left.
func (r *runner) unnestJoin(j *JoinRef, left *relation, u *UnnestRef, col int, e *env) (*relation, error) {
	if len(j.Using) > 0 || j.On != nil && j.Kind == "LEFT" {
		return nil, notSupported(r.src, j.Pos, "USING, or LEFT JOIN's ON, with UNNEST")
	}
	if j.Kind == "RIGHT" || j.Kind == "FULL" {
		return nil, notSupported(r.src, j.Pos, j.Kind+" JOIN UNNEST")
	}
	af := left.field(col)
	name := u.Alias
	if name == "" {
		parts, _ := u.Expr.path()
		name = parts[len(parts)-1]
	}
	out := &relation{schema: &schema.Schema{}, vars: left.vars}
	var srcIdx []int // output column -> left column, -1 element, -2 offset
	for i, c := range left.cols {
		c.internal = fmt.Sprintf("__c%d", len(out.cols))
		f := *left.field(i)
		f.Name = c.internal
		out.cols = append(out.cols, c)
		out.schema.Fields = append(out.schema.Fields, &f)
		srcIdx = append(srcIdx, i)
	}
	elem := *af
	elem.Mode = schema.Nullable
	elem.Name = fmt.Sprintf("__c%d", len(out.cols))
	out.cols = append(out.cols, relCol{internal: elem.Name, name: name, star: true, unq: true})
	out.schema.Fields = append(out.schema.Fields, &elem)
	srcIdx = append(srcIdx, -1)
	if u.Offset {
		in := fmt.Sprintf("__c%d", len(out.cols))
		out.cols = append(out.cols, relCol{internal: in, name: u.OffsetAlias, star: true, unq: true})
		out.schema.Fields = append(out.schema.Fields, &schema.Field{Name: in, Type: schema.Integer, Mode: schema.Nullable})
		srcIdx = append(srcIdx, -2)
	}
	keepEmpty := j.Kind == "LEFT"
	out.scan = func(ctx context.Context, cols []string, fn func(arrow.RecordBatch, int) error) error {
		// Read the left input: the columns asked for and the array.
		var in, outNames []string
		seen := map[int]bool{col: true}
		in, outNames = append(in, left.cols[col].internal), append(outNames, "__array")
		for _, c := range cols {
			if k := srcIdx[out.index(c)]; k >= 0 && !seen[k] {
				seen[k] = true
				in, outNames = append(in, left.cols[k].internal), append(outNames, c)
			}
		}
		jr := &joinRel{runner: r}
		side, err := jr.read(ctx, left, in, outNames)
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
		flush := func() error {
			n := len(li)
			if n == 0 {
				return nil
			}
			defer func() { li, ei, offs = li[:0], ei[:0], offs[:0] }()
			if len(cols) == 0 {
				return fn(nil, n)
			}
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
			for _, c := range cols {
				var a arrow.Array
				var err error
				switch k := srcIdx[out.index(c)]; k {
				case -1:
					a, err = takeArray(ctx, values, eidx)
				case -2:
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
					a, err = takeArray(ctx, side.arr(c), lidx)
				}
				if err != nil {
					return err
				}
				arrs = append(arrs, a)
				fields = append(fields, arrow.Field{Name: c, Type: a.DataType(), Nullable: true})
			}
			rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, int64(n))
			defer rec.Release()
			return fn(rec, n)
		}
		for i := 0; i < side.n; i++ {
			start, end := list.ValueOffsets(i)
			if list.IsNull(i) {
				start, end = 0, 0
			}
			if start == end && keepEmpty {
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
		return flush()
	}
	if j.On != nil {
		return r.unnestOn(j, out, e)
	}
	return out, nil
}

// unnestOn serves [INNER] JOIN UNNEST(...) ON cond: the pairs, then
// those for which cond is TRUE (an inner join is the cross join filtered).
func (r *runner) unnestOn(j *JoinRef, out *relation, e *env) (*relation, error) {
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
	pairs := out.scan
	filtered := *out
	filtered.scan = func(ctx context.Context, cols []string, fn func(arrow.RecordBatch, int) error) error {
		read := append([]string(nil), cols...)
		seen := map[string]bool{}
		for _, c := range cols {
			seen[strings.ToLower(c)] = true
		}
		for _, c := range on.Columns() {
			if !seen[strings.ToLower(c)] && out.index(c) >= 0 {
				seen[strings.ToLower(c)] = true
				read = append(read, c)
			}
		}
		return pairs(ctx, read, func(rec arrow.RecordBatch, n int) error {
			kept, m, release, err := whereRows(ctx, on, rec, n)
			if err != nil {
				return err
			}
			defer release()
			if m == 0 {
				return nil
			}
			if len(cols) == 0 {
				return fn(nil, m)
			}
			if len(read) == len(cols) {
				return fn(kept, m)
			}
			proj := array.NewRecordBatch(arrow.NewSchema(kept.Schema().Fields()[:len(cols)], nil), kept.Columns()[:len(cols)], int64(m))
			defer proj.Release()
			return fn(proj, m)
		})
	}
	return &filtered, nil
}

// unnestColumn returns the left column an UNNEST path names, if it is a
// REPEATED column of left.
func (r *runner) unnestColumn(left *relation, parts []string, pos int) (int, error) {
	i, used, err := left.resolve(r.src, parts, pos)
	if err != nil {
		return 0, err
	}
	if used != len(parts) {
		return 0, notSupported(r.src, pos, "UNNEST of an array inside a STRUCT")
	}
	if left.field(i).EffectiveMode() != schema.Repeated {
		return 0, r.errf(pos, "Values referenced in UNNEST must be arrays. UNNEST contains expression of type %s", typeName(left.field(i)))
	}
	return i, nil
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
