package sql

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
)

// The array of a JOIN UNNEST(expr) (or of an implicit array path,
// FROM t, t.s.arr) after a FROM item left is, by GoogleSQL's scoping,
// evaluated for each row of left: a REPEATED column of left is read as
// it is; any other expression over left's columns (UNNEST([t.x, t.x *
// 10]), a path through STRUCTs t.s.arr, ARRAY_CONCAT(t.a, t.b)) is
// computed per batch of left into a hidden column (arrayColumn), then
// unnested the same way (unnestJoin). An expression of no column of left
// (UNNEST([1, 2]), UNNEST(@p), an outer row's array in a correlated
// subquery) is an ordinary FROM item joined to left.

// unnestRight serves left <join> UNNEST(...): the joined relation, or
// (the array reads no column of left) the array's relation as the join's
// right input. text is the array expression (for the implicit array
// path: the path, quoted).
func (r *runner) unnestRight(j *JoinRef, left *relation, u *UnnestRef, parts []string, text exprText, e *env) (joined, right *relation, err error) {
	if err := r.unnestAgg(u); err != nil {
		return nil, nil, err
	}
	if parts != nil {
		i, used, err := left.resolve(r.src, parts, text.at)
		if err == nil && used == len(parts) {
			if left.field(i).EffectiveMode() != schema.Repeated {
				return nil, nil, r.errf(text.at, "Values referenced in UNNEST must be arrays. UNNEST contains expression of type %s", typeName(left.field(i)))
			}
			if err := r.correlatedOuterJoin(j, u, text); err != nil {
				return nil, nil, err
			}
			joined, err := r.unnestJoin(j, left, u, i, false, e)
			return joined, nil, err
		}
	}
	// A subquery of the expression sees left's row, as one of a select
	// list sees its block's: a correlated one becomes a column of left
	// (correlated.go), computed per row before the array.
	q := &selectQuery{runner: r, in: left, env: e}
	text, consts, err := r.substituteText(text, q.scope())
	if err != nil {
		return nil, nil, err
	}
	nLeft := len(left.cols)
	left = q.in
	inner := left.names(r.src)
	names := filter.WithNames(func(parts []string, pos int) (string, int, error) {
		col, used, err := inner(parts, pos)
		if err != nil {
			if c, u, ok, err2 := r.outerResolve(parts, pos); ok {
				return c, u, err2
			}
		}
		return col, used, err
	})
	x, err := r.compileText(text, left.schema, nil, names, filter.WithConstants(consts))
	if err != nil {
		return nil, nil, err
	}
	if len(left.cols) > nLeft {
		// The subqueries' columns, now compiled into x, are nameless.
		hidden := *left
		hidden.cols = append([]relCol(nil), left.cols...)
		for k := nLeft; k < len(hidden.cols); k++ {
			hidden.cols[k].name, hidden.cols[k].unq = "", false
		}
		left = &hidden
	}
	if len(x.Columns()) == 0 {
		right, err := r.unnestValues(u, x, text.at)
		return nil, right, err
	}
	t := x.Type()
	if !strings.HasPrefix(t, "ARRAY<") {
		return nil, nil, r.errf(text.at, "Values referenced in UNNEST must be arrays. UNNEST contains expression of type %s", t)
	}
	if err := r.correlatedOuterJoin(j, u, text); err != nil {
		return nil, nil, err
	}
	wrapped, col := arrayColumn(left, x, t)
	joined, err = r.unnestJoin(j, wrapped, u, col, true, e)
	return joined, nil, err
}

// correlatedOuterJoin refuses RIGHT and FULL JOIN of an array read from
// the left row, as GoogleSQL does (zetasql/analyzer/testdata/
// array_join.test: "Correlated array references are not allowed with
// FULL JOIN: tt.KitchenSink.repeated_int32_val").
func (r *runner) correlatedOuterJoin(j *JoinRef, u *UnnestRef, text exprText) error {
	if j.Kind != "RIGHT" && j.Kind != "FULL" {
		return nil
	}
	what := strings.ReplaceAll(text.text, "`", "") // a path, as written
	if len(u.Expr.toks) > 0 {
		what = "UNNEST(" + text.text + ")"
	}
	return r.errf(u.Pos, "Correlated array references are not allowed with %s JOIN: %s", j.Kind, what)
}

// arrayColumn is left with one more column, x (of type t) computed per
// batch, and that column's index. The column has no name: nothing
// resolves to it.
func arrayColumn(left *relation, x *filter.Scalar, t string) (*relation, int) {
	name := fmt.Sprintf("__unnest%d", len(left.cols))
	out := &relation{schema: &schema.Schema{}, vars: left.vars}
	out.cols = append(append(out.cols, left.cols...), relCol{internal: name})
	out.schema.Fields = append(append(out.schema.Fields, left.schema.Fields...), resultField(name, t))
	col := len(out.cols) - 1
	out.scan = func(ctx context.Context, cols []string, fn func(arrow.RecordBatch, int) error) error {
		// Read left's columns asked for, then those x reads.
		var read []string
		seen := map[string]bool{}
		want := false
		for _, c := range cols {
			if strings.EqualFold(c, name) {
				want = true
				continue
			}
			if k := strings.ToLower(c); !seen[k] {
				seen[k] = true
				read = append(read, c)
			}
		}
		if !want {
			return left.scan(ctx, cols, fn)
		}
		nAsked := len(read)
		for _, c := range x.Columns() {
			if k := strings.ToLower(c); !seen[k] {
				seen[k] = true
				read = append(read, c)
			}
		}
		return left.scan(ctx, read, func(rec arrow.RecordBatch, n int) error {
			vals, err := x.Values(ctx, rec, n)
			if err != nil {
				return err
			}
			ar, err := buildRecord(&schema.Schema{Fields: []*schema.Field{out.schema.Fields[col]}}, n, func(_, row int) any { return vals[row] })
			if err != nil {
				return err
			}
			defer ar.Release()
			fields := make([]arrow.Field, 0, len(cols))
			arrs := make([]arrow.Array, 0, len(cols))
			for _, c := range cols {
				if strings.EqualFold(c, name) {
					arrs = append(arrs, ar.Column(0))
					fields = append(fields, arrow.Field{Name: c, Type: ar.Column(0).DataType(), Nullable: true})
					continue
				}
				a := rec.Column(indexOf(read[:nAsked], c))
				arrs = append(arrs, a)
				fields = append(fields, arrow.Field{Name: c, Type: a.DataType(), Nullable: true})
			}
			out := array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, int64(n))
			defer out.Release()
			return fn(out, n)
		})
	}
	return out, col
}

// indexOf is the index of name in names (case-insensitive), -1 if none.
func indexOf(names []string, name string) int {
	for i, n := range names {
		if strings.EqualFold(n, name) {
			return i
		}
	}
	return -1
}

// outerArrayPath serves, inside a subquery, a FROM path whose first name
// is a range variable of an enclosing block (SELECT (SELECT SUM(v) FROM
// t.arr AS v) FROM t): the outer row's array, unnested, as GoogleSQL's
// implicit UNNEST (zetasql/analyzer/testdata/array_join.test, "Join two
// arrays coming from correlated references to an outer query with
// implicit UNNEST"). ok is false for any other path.
func (r *runner) outerArrayPath(t *TableRef, e *env) (*relation, bool, error) {
	if len(t.Path) < 2 {
		return nil, false, nil
	}
	outer := false
	for _, f := range r.corr {
		outer = outer || f.rel.vars[strings.ToLower(t.Path[0])]
	}
	if !outer {
		return nil, false, nil
	}
	if t.AsOf != nil {
		return nil, true, r.errf(t.AsOf.pos(), "FOR SYSTEM_TIME AS OF cannot be used with an array path")
	}
	u := &UnnestRef{Alias: t.Alias, Offset: t.Offset, OffsetAlias: t.OffsetAlias, Pos: t.Name.Pos}
	if u.Alias == "" {
		u.Alias = t.Path[len(t.Path)-1]
	}
	quoted := make([]string, len(t.Path))
	for i, p := range t.Path {
		quoted[i] = quoteIdent(p)
	}
	names := filter.WithNames(func(parts []string, pos int) (string, int, error) {
		if col, used, ok, err := r.outerResolve(parts, pos); ok {
			return col, used, err
		}
		return "", 0, r.errf(pos, "Unrecognized name: %s", parts[0])
	})
	x, err := r.compileText(exprText{at: t.Name.Pos, text: strings.Join(quoted, ".")}, &schema.Schema{}, &scope{env: e}, names)
	if err != nil {
		return nil, true, err
	}
	if !strings.HasPrefix(x.Type(), "ARRAY<") && x.Type() != "NULL" {
		return nil, true, r.errf(t.Name.Pos, "Values referenced in UNNEST must be arrays. UNNEST contains expression of type %s", x.Type())
	}
	rel, err := r.unnestValues(u, x, t.Name.Pos)
	return rel, true, err
}

// elemAlias reports whether name is an UNNEST element's of rel (a range
// variable for an array path: FROM t, t.recs AS r, r.arr).
func (rel *relation) elemAlias(name string) bool {
	for _, c := range rel.cols {
		if c.elem && c.unq && strings.EqualFold(c.name, name) {
			return true
		}
	}
	return false
}
