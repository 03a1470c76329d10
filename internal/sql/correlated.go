package sql

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
)

// Correlated subqueries (scalar, EXISTS, IN and ARRAY) in the select
// list, WHERE, GROUP BY, ORDER BY, QUALIFY, window and aggregate
// arguments of a SELECT block (over the groups of an aggregation:
// correlated_groups.go): a name a subquery cannot resolve in its
// own FROM (or in UNNEST(expr) as its FROM item) resolves in the
// enclosing block's input (a correlation frame) to a constant, of any
// type (an ARRAY column of the outer row is unnested by the subquery). A first run binds
// every such column to NULL, to learn whether the subquery is correlated
// at all and its type; a correlated one becomes a column __s<i> of the
// enclosing block's input, computed per row by running the subquery once
// per distinct combination of the values it references. The first such
// column added after the block's WHERE (or QUALIFY) compiled applies that
// filter before computing its values, so a subquery runs only for the
// rows the filter keeps (selectQuery.where); the first one of the WHERE
// itself applies the WHERE's conjuncts before it (wherePrefix).

// corrFrame is an enclosing block's input, seen from inside one of its
// subqueries.
type corrFrame struct {
	rel  *relation
	bind map[int]any  // column -> its value for this run (nil: probing, NULL)
	refs map[int]bool // columns the subquery referenced
	pos  map[int]int  // where it first named each (for errors)
}

// outerName is the constant's name for column i of frame k.
func outerName(k, i int) string { return fmt.Sprintf("__o%d_%d", k, i) }

// outerResolve resolves a path no FROM item of the block knows in the
// enclosing blocks' inputs, innermost first.
func (r *runner) outerResolve(parts []string, pos int) (string, int, bool, error) {
	for k := len(r.corr) - 1; k >= 0; k-- {
		f := r.corr[k]
		i, used, err := f.rel.resolve(r.src, parts, pos)
		if err != nil {
			continue
		}
		f.refs[i] = true
		if _, ok := f.pos[i]; !ok && f.pos != nil {
			f.pos[i] = pos
		}
		return outerName(k, i), used, true, nil
	}
	return "", 0, false, nil
}

// outerConsts are the constants of every column of the correlation
// frames (their bound values, or NULL).
func (r *runner) outerConsts() map[string]filter.Const {
	if len(r.corr) == 0 {
		return nil
	}
	out := map[string]filter.Const{}
	for k, f := range r.corr {
		for i := range f.rel.cols {
			out[outerName(k, i)] = filter.Const{Type: filter.FieldTypeName(f.rel.field(i)), Values: []any{f.bind[i]}}
		}
	}
	return out
}

// correlatedColumn adds to q's input a column holding the value of the
// correlated subquery sub for each row, and returns its name.
func (q *selectQuery) correlatedColumn(sub *Query, e *env, kind, typ string, refs map[int]bool, inp *inPred) string {
	in := q.in
	q.nsub++
	name := fmt.Sprintf("__s%d", q.nsub)
	out := &relation{schema: &schema.Schema{}, vars: in.vars}
	out.cols = append(append(out.cols, in.cols...), relCol{internal: name, name: name, unq: true})
	out.schema.Fields = append(append(out.schema.Fields, in.schema.Fields...), resultField(name, typ))
	var refIdx []int
	for i := range in.cols {
		if refs[i] {
			refIdx = append(refIdx, i)
		}
	}
	// The block's filter, compiled before this column, applies first: the
	// subquery runs only for the rows it keeps, as in BigQuery (an error
	// on a row WHERE drops must not fail the query).
	var where *filter.Scalar
	if q.where != nil && !q.whereDone {
		where, q.whereDone = q.where, true
	} else if q.whereToks != nil {
		// A subquery of the WHERE itself: its conjuncts before this
		// one's apply first (the block applies the whole WHERE after).
		where, q.whereToks = q.wherePrefix(q.whereToks), nil
	}
	cache := map[string]any{}
	out.scan = func(ctx context.Context, cols []string, fn func(arrow.RecordBatch, int) error) error {
		need := map[string]bool{}
		var in2 []string
		if where != nil {
			for _, c := range where.Columns() {
				if !need[strings.ToLower(c)] {
					need[strings.ToLower(c)] = true
					in2 = append(in2, c)
				}
			}
		}
		for _, i := range refIdx {
			c := in.cols[i].internal
			if !need[strings.ToLower(c)] {
				need[strings.ToLower(c)] = true
				in2 = append(in2, c)
			}
		}
		for _, c := range cols {
			if !strings.EqualFold(c, name) && !need[strings.ToLower(c)] {
				need[strings.ToLower(c)] = true
				in2 = append(in2, c)
			}
		}
		if inp != nil {
			for _, c := range inp.lhs.Columns() {
				if !need[strings.ToLower(c)] {
					need[strings.ToLower(c)] = true
					in2 = append(in2, c)
				}
			}
		}
		refX := make([]*filter.Scalar, len(refIdx))
		for k, i := range refIdx {
			x, err := q.compileText(colText(in.cols[i].internal), in.schema, nil)
			if err != nil {
				return err
			}
			refX[k] = x
		}
		return in.scanWhere(ctx, where, in2, func(rec arrow.RecordBatch, n int) error {
			rec, n, release, err := whereRows(ctx, where, rec, n)
			if err != nil {
				return err
			}
			defer release()
			refVals := make([][]any, len(refX))
			for k, x := range refX {
				v, err := x.Values(ctx, rec, n)
				if err != nil {
					return err
				}
				refVals[k] = v
			}
			var lhs []any
			if inp != nil {
				var err error
				if lhs, err = inp.lhs.Values(ctx, rec, n); err != nil {
					return err
				}
			}
			vals := make([]any, n)
			var kb []byte
			for row := 0; row < n; row++ {
				kb = kb[:0]
				bind := map[int]any{}
				for k, i := range refIdx {
					kb = appendKey(kb, refVals[k][row])
					bind[i] = refVals[k][row]
				}
				v, ok := cache[string(kb)]
				if !ok {
					var err error
					if v, err = q.runCorrelated(ctx, sub, e, kind, in, bind); err != nil {
						return err
					}
					cache[string(kb)] = v
				}
				if inp != nil {
					v = inp.eval(lhs[row], v.(inSet))
				}
				vals[row] = v
			}
			// The batch asked for: the input's columns and this one.
			var fields []arrow.Field
			var arrs []arrow.Array
			for _, c := range cols {
				if strings.EqualFold(c, name) {
					sub := &schema.Schema{Fields: []*schema.Field{out.field(out.index(name))}}
					vr, err := buildRecord(sub, n, func(_, r int) any { return vals[r] })
					if err != nil {
						return err
					}
					a := vr.Column(0)
					a.Retain()
					vr.Release()
					arrs = append(arrs, a)
					fields = append(fields, arrow.Field{Name: c, Type: a.DataType(), Nullable: true})
					continue
				}
				for k, nc := range in2 {
					if strings.EqualFold(nc, c) {
						a := rec.Column(k)
						a.Retain()
						arrs = append(arrs, a)
						fields = append(fields, rec.Schema().Field(k))
					}
				}
			}
			if len(cols) == 0 {
				return fn(nil, n)
			}
			orec := array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, int64(n))
			for _, a := range arrs {
				a.Release()
			}
			defer orec.Release()
			return fn(orec, n)
		})
	}
	q.in = out
	return name
}

// wherePrefix compiles the conjuncts of the WHERE toks that come before
// its first conjunct with a subquery; nil if there are none, or an OR
// joins them at the top level. A row they do not keep, the WHERE drops:
// AND evaluates its left operand first, so they fail where the WHERE
// would, and a later conjunct (which AND evaluates only on the rows its
// left operand does not decide) stays in the WHERE alone.
func (q *selectQuery) wherePrefix(toks []filter.Token) *filter.Scalar {
	depth := 0
	for _, t := range toks {
		switch {
		case t.Op && (t.Text == "(" || t.Text == "["):
			depth++
		case t.Op && (t.Text == ")" || t.Text == "]"):
			depth--
		case depth == 0 && t.Ident && strings.EqualFold(t.Text, "OR"):
			return nil
		}
	}
	n := 0 // tokens of the prefix, with the AND after it
	for _, c := range conjuncts(toks) {
		sub := false
		for _, t := range c {
			if t.Ident && (strings.EqualFold(t.Text, "SELECT") || strings.EqualFold(t.Text, "WITH")) {
				sub = true
			}
		}
		if sub {
			break
		}
		n += len(c) + 1
	}
	if n == 0 {
		return nil
	}
	x, err := q.compile(Span{toks: toks[:n-1]})
	if err != nil || x.Type() != "BOOL" {
		return nil // the WHERE's compiling reports it
	}
	return x
}

// runCorrelated runs a correlated subquery for one row's values.
func (q *selectQuery) runCorrelated(ctx context.Context, sub *Query, e *env, kind string, in *relation, bind map[int]any) (any, error) {
	defer q.bindKey(sub, in, bind)() // correlated_scan.go
	if testHookCorrelatedRun != nil {
		testHookCorrelatedRun()
	}
	q.corr = append(q.corr, &corrFrame{rel: in, bind: bind, refs: map[int]bool{}})
	q.exprSub++
	rs, err := q.query(ctx, sub, e)
	q.exprSub--
	q.corr = q.corr[:len(q.corr)-1]
	if err != nil {
		return nil, err
	}
	if kind == "EXISTS" {
		return len(rs.rows) > 0, nil
	}
	if kind == "ARRAY" {
		k, err := q.arraySubquery(rs, sub.Pos)
		if err != nil {
			return nil, err
		}
		return k.Values[0], nil
	}
	if kind == "IN" {
		set := inSet{typ: rs.types[0], vals: make([]any, len(rs.rows))}
		for i, row := range rs.rows {
			set.vals[i] = row[0]
		}
		return set, nil
	}
	switch len(rs.rows) {
	case 0:
		return nil, nil
	case 1:
		return rs.rows[0][0], nil
	}
	return nil, q.errf(sub.Pos, "Scalar subquery produced more than one element")
}

// inPred is a correlated x [NOT] IN (subquery): x over the enclosing
// block's input, compared with the subquery's values in their common
// supertype.
type inPred struct {
	lhs     *filter.Scalar
	not     bool
	lhsType string
	typ     string // the common supertype
}

// inOperand compiles the left operand of the IN whose subquery opens at
// toks[open], and returns the predicate and the position it starts at:
// the operand runs back from IN (or NOT IN) to the first token at its
// depth of an operator of lower or equal precedence (comparison, NOT,
// AND, OR, a comma, an opening parenthesis, a keyword of a clause or of
// CASE).
func (q *selectQuery) inOperand(toks []filter.Token, open int, subType string) (*inPred, int, error) {
	p := &inPred{}
	k := open - 1 // IN
	if k > 0 && toks[k-1].Ident && strings.EqualFold(toks[k-1].Text, "NOT") {
		p.not = true
		k--
	}
	end := k
	depth := 0
	start := end
	for start > 0 {
		t := toks[start-1]
		if t.Op {
			switch t.Text {
			case ")", "]":
				depth++
			case "(", "[":
				if depth == 0 {
					goto done
				}
				depth--
			case ",", "=", "<", ">", "<=", ">=", "<>", "!=":
				if depth == 0 {
					goto done
				}
			}
		} else if t.Ident && depth == 0 && filter.IsReserved(t.Text) {
			switch strings.ToUpper(t.Text) {
			case "NULL", "TRUE", "FALSE", "INTERVAL", "CAST", "EXTRACT", "IF", "ARRAY", "STRUCT":
			default:
				goto done
			}
		}
		start--
	}
done:
	if start == end {
		return nil, 0, q.errf(toks[k].Pos, "Syntax error: Unexpected keyword IN")
	}
	x, err := q.compile(Span{toks: toks[start:end]})
	if err != nil {
		return nil, 0, err
	}
	st, ok := supertype(x.Type(), subType)
	if !ok {
		return nil, 0, q.errf(toks[start].Pos, "Cannot execute IN subquery with uncomparable types %s and %s", x.Type(), subType)
	}
	p.lhs, p.lhsType, p.typ = x, x.Type(), st
	return p, toks[start].Pos, nil
}

// eval is x [NOT] IN set, three-valued: TRUE on a match; else NULL if x
// or a value of the set is NULL (and the set is not empty); else FALSE.
func (p *inPred) eval(x any, set inSet) any {
	if len(set.vals) == 0 {
		return p.not
	}
	x = coerce(x, p.lhsType, p.typ)
	var res any = false
	if x == nil {
		res = nil
	} else {
		for _, v := range set.vals {
			v = coerce(v, set.typ, p.typ)
			if v == nil {
				res = nil
				continue
			}
			if f, ok := v.(float64); ok && math.IsNaN(f) {
				continue
			}
			if compareValues(x, v) == 0 {
				res = true
				break
			}
		}
	}
	if b, ok := res.(bool); ok && p.not {
		return !b
	}
	return res
}

// inSet is a correlated IN subquery's values for one row's references.
type inSet struct {
	typ  string
	vals []any
}

// testHookCorrelatedRun, set by a test, is called for each run of a
// correlated subquery.
var testHookCorrelatedRun func()
