package sql

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/bqstore/bqstore/internal/filter"
)

// selectQuery is the state of one SELECT block.
type selectQuery struct {
	*runner
	sel   *Select
	in    *relation
	env   *env
	order []OrderItem
	// topK is LIMIT plus OFFSET when only that many of the ordered rows
	// are wanted (topk.go); -1: all.
	topK int64
	// past, set while a streamed block runs, reports that its LIMIT is
	// reached: the scan goes on only to bill (prune.go's scanPast).
	past func() bool
	// windows are the block's analytic function calls, windowAt them by
	// the position of their text.
	windows  []*window
	windowAt map[int]*window
	// With GROUP BY: the window calls' tokens (registered by rewrite, by
	// position), and while their arguments compile, the compiler over the
	// groups' columns.
	pending    [][]filter.Token
	pendingAt  map[int]bool
	winCompile func(Span) (*filter.Scalar, error)
	// where is the filter the block's rows pass before the select list
	// sees them (WHERE, then QUALIFY over the windows' relation), once
	// compiled; whereDone: the first correlated column added after it
	// applies it, before computing its values (correlated.go), so the
	// block must not apply it again.
	where     *filter.Scalar
	whereDone bool
	// whereToks is the WHERE while it compiles (correlated.go).
	whereToks []filter.Token
	// hold: the block's rows are a derived table's, appended to Arrow
	// batches as they come (output.held, derived.go).
	hold bool
}

func (q *selectQuery) scope() *scope { return &scope{env: q.env, outer: q.in, q: q} }

// selectBlock runs one SELECT; q (nil inside a set operation) holds the
// ORDER BY and LIMIT that apply to it.
func (r *runner) selectBlock(ctx context.Context, sel *Select, e *env, qq *Query) (*rowset, error) {
	// A long UNION ALL chain stops at its next branch once cancelled
	// (compileText checks again per expression).
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if sel.Where != nil {
		r.markPrunable(sel.From, sel.Where)
	}
	defer r.dropHeld(len(r.held))
	in, err := r.from(ctx, sel.From, e)
	if err != nil {
		return nil, err
	}
	q := &selectQuery{runner: r, sel: sel, in: in, env: e, windowAt: map[int]*window{}, pendingAt: map[int]bool{}, topK: -1}
	if qq != nil {
		q.order = qq.OrderBy
	}
	items, err := q.expandStars()
	if err != nil {
		return nil, err
	}
	// Aggregate and analytic functions outside the slice.
	spans := []Span{}
	for _, it := range items {
		if !it.Star {
			spans = append(spans, it.Expr)
		}
	}
	if sel.Where != nil {
		spans = append(spans, *sel.Where)
	}
	if sel.Having != nil {
		spans = append(spans, *sel.Having)
	}
	spans = append(spans, sel.GroupBy...)
	for _, o := range q.order {
		spans = append(spans, o.Expr)
	}
	for _, sp := range spans {
		for i := 0; i < len(sp.toks); i++ {
			if end := subqueryEnd(sp.toks, i); end > 0 {
				i = end
				continue
			}
			if name := strings.ToUpper(sp.toks[i].Text); isCall(sp.toks, i) && analyticFuncs[name] {
				if o, _ := overAt(sp.toks, i); o < 0 {
					return nil, q.errf(sp.toks[i].Pos, "Analytic function %s cannot be called without an OVER clause", name)
				}
				continue
			}
			if t := sp.toks[i]; isCall(sp.toks, i) && knownAggs[strings.ToUpper(t.Text)] && !(strings.EqualFold(t.Text, "GROUPING") && len(sel.GroupBy) > 0) {
				return nil, notSupported(q.src, t.Pos, "aggregate or analytic function "+strings.ToUpper(t.Text))
			}
		}
	}
	for k, sp := range []*Span{sel.Where, sel.Having} {
		if sp != nil {
			if at, ok := hasWindow(sp.toks); ok {
				return nil, q.errf(at, "Analytic function not allowed in %s clause", []string{"WHERE", "HAVING"}[k])
			}
		}
	}
	for _, sp := range sel.GroupBy {
		if at, ok := hasWindow(sp.toks); ok {
			return nil, q.errf(at, "Analytic function not allowed in GROUP BY clause")
		}
	}
	var where *filter.Scalar
	if sel.Where != nil {
		if at, ok := findAgg(sel.Where.toks); ok {
			return nil, q.errf(at, "Aggregate function %s not allowed in WHERE clause", strings.ToUpper(sel.Where.toks[indexAt(sel.Where.toks, at)].Text))
		}
		q.whereToks = sel.Where.toks // correlatedColumn filters first by its leading conjuncts
		where, err = q.compile(*sel.Where)
		q.whereToks = nil
		if err != nil {
			return nil, err
		}
		if t := where.Type(); t != "BOOL" && t != "NULL" {
			return nil, q.errf(sel.Where.pos(), "WHERE clause should return type BOOL, but returns %s", t)
		}
		q.where = where
	}
	if sel.Qualify != nil {
		if err := q.checkAmbiguousAliases(sel.Qualify.toks, items); err != nil {
			return nil, err
		}
	}
	aggregate := len(sel.GroupBy) > 0 || sel.Having != nil
	for _, it := range items {
		if !it.Star {
			if _, ok := findAgg(it.Expr.toks); ok {
				aggregate = true
			}
		}
	}
	for _, o := range q.order {
		if _, ok := findAgg(o.Expr.toks); ok {
			aggregate = true
		}
	}
	if !aggregate {
		for _, it := range items {
			if !it.Star {
				if err := q.findWindows(it.Expr); err != nil {
					return nil, err
				}
			}
		}
		for _, o := range q.order {
			if err := q.findWindows(o.Expr); err != nil {
				return nil, err
			}
		}
		if sel.Qualify != nil {
			if err := q.findWindows(*sel.Qualify); err != nil {
				return nil, err
			}
			if len(q.windows) == 0 {
				return nil, q.errf(sel.Qualify.pos(), "QUALIFY clause must be used with an analytic function in the SELECT list or the QUALIFY clause")
			}
		}
	} else if sel.Qualify != nil {
		win := false
		for _, it := range items {
			if _, ok := hasWindow(it.Expr.toks); ok && !it.Star {
				win = true
			}
		}
		if _, ok := hasWindow(sel.Qualify.toks); ok {
			win = true
		}
		if !win {
			return nil, q.errf(sel.Qualify.pos(), "QUALIFY clause must be used with an analytic function in the SELECT list or the QUALIFY clause")
		}
	}
	if len(q.windows) > 0 {
		if q.whereDone {
			where = nil // a correlated column of a window's argument applies it
		}
		q.in = q.windowRelation(q.in, where)
		where, q.where, q.whereDone = nil, nil, false
		if sel.Qualify != nil {
			if where, err = q.compileQualify(*sel.Qualify, items); err != nil {
				return nil, err
			}
			q.where = where
		}
	}
	var out *output
	streaming := q.canStream(qq, aggregate)
	if q.probing && q.unionInputs[sel] && !streaming {
		return nil, errNoStream
	}
	if qq != nil && qq.Limit >= 0 && !sel.Distinct {
		q.topK = qq.Limit + min(qq.Offset, math.MaxInt64-qq.Limit)
	}
	// A derived table whose rows come out as the block makes them.
	q.hold = qq != nil && r.holding[qq] && !streaming && !sel.Distinct && len(q.order) == 0 &&
		qq.Limit < 0 && qq.Offset == 0 && !sel.AsStruct && !sel.AsValue
	if aggregate {
		out, err = q.runAggregate(ctx, items, where)
	} else {
		out, err = q.runPlain(ctx, items, where, streaming)
	}
	if err != nil {
		return nil, err
	}
	if out.held != nil {
		if err := out.held.finish(); err != nil {
			return nil, err
		}
		rs := &rowset{types: out.types, held: out.held}
		for _, it := range items {
			rs.names = append(rs.names, it.Alias)
		}
		return rs, nil
	}
	if streaming {
		// The rows went to the sink; LIMIT and OFFSET applied there.
		rs := &rowset{types: out.types}
		for _, it := range items {
			rs.names = append(rs.names, it.Alias)
		}
		return rs, nil
	}
	rows := out.rows
	if sel.Distinct {
		for i, it := range items {
			// JSON and GEOGRAPHY do not group (BigQuery's data types
			// reference), nor an ARRAY or STRUCT holding one.
			if k := typeKind(out.types[i]); k == "JSON" || k == "GEOGRAPHY" {
				return nil, q.errf(it.pos, "Column %s of type %s cannot be used in SELECT DISTINCT", it.Alias, k)
			} else if (k == "ARRAY" || k == "STRUCT") && !filter.Groupable(out.types[i]) {
				return nil, q.errf(it.pos, "Column %s of type %s cannot be used in SELECT DISTINCT", it.Alias, out.types[i])
			}
		}
		rows = distinct(rows, len(items))
	}
	if len(out.order) > 0 {
		sortRows(rows, out.order)
	}
	rs := &rowset{types: out.types}
	for _, it := range items {
		rs.names = append(rs.names, it.Alias)
	}
	if qq != nil {
		rows = limit(rows, qq)
	}
	for i, row := range rows {
		rows[i] = row[:len(items)]
	}
	rs.rows, rs.charged = rows, out.charged
	return r.asStructOrValue(sel, rs)
}

func limit(rows [][]any, q *Query) [][]any {
	if q.Offset > 0 {
		rows = rows[min(int64(len(rows)), q.Offset):]
	}
	if q.Limit >= 0 && int64(len(rows)) > q.Limit {
		rows = rows[:q.Limit]
	}
	return rows
}

// expandStars replaces * and t.* by the columns they stand for, with
// EXCEPT and REPLACE applied.
func (q *selectQuery) expandStars() ([]Item, error) {
	var items []Item
	for _, it := range q.sel.Items {
		if !it.Star {
			items = append(items, it)
			continue
		}
		if q.sel.From == nil {
			return nil, q.errf(it.pos, "SELECT * must have a FROM clause")
		}
		qual := strings.ToLower(it.Qual)
		if qual != "" && !q.in.vars[qual] {
			if q.in.has(it.Qual) {
				return nil, notSupported(q.src, it.pos, "STRUCT.* (fields of a column)")
			}
			return nil, q.errf(it.pos, "Unrecognized name: %s", it.Qual)
		}
		var cols []int
		for i, c := range q.in.cols {
			if qual == "" && c.star || qual != "" && c.qual == qual {
				cols = append(cols, i)
			}
		}
		what := "SELECT *"
		if qual != "" {
			what = "SELECT " + it.Qual + ".*"
		}
		if len(cols) == 0 {
			return nil, q.errf(it.pos, "%s would expand to zero columns", what)
		}
		except := map[string]bool{}
		for _, x := range it.Except {
			found := false
			for _, i := range cols {
				if strings.EqualFold(q.in.cols[i].name, x.name) {
					found = true
				}
			}
			if !found {
				return nil, q.errf(x.pos, "Column %s in SELECT * EXCEPT list does not exist", x.name)
			}
			except[strings.ToLower(x.name)] = true
		}
		replace := map[string]replaceItem{}
		for _, x := range it.Replace {
			found := false
			for _, i := range cols {
				if strings.EqualFold(q.in.cols[i].name, x.alias) && !except[strings.ToLower(x.alias)] {
					found = true
				}
			}
			if !found {
				return nil, q.errf(x.pos, "Column %s in SELECT * REPLACE list does not exist", x.alias)
			}
			replace[strings.ToLower(x.alias)] = x
		}
		n := 0
		for _, i := range cols {
			c := q.in.cols[i]
			if except[strings.ToLower(c.name)] {
				continue
			}
			n++
			if x, ok := replace[strings.ToLower(c.name)]; ok && c.name != "" {
				items = append(items, Item{Expr: x.expr, Alias: c.name, pos: x.expr.pos()})
				continue
			}
			items = append(items, Item{Star: true, Alias: c.name, col: c.internal, pos: it.pos})
		}
		if n == 0 {
			return nil, q.errf(it.pos, "SELECT * EXCEPT list cannot exclude all columns")
		}
	}
	return items, nil
}

// output is the rows of a query before DISTINCT, ORDER BY and LIMIT:
// each row holds the select list's values, then hidden ORDER BY keys.
type output struct {
	rows  [][]any
	types []string // of the select list
	order []orderKey
	// charged is what rows were charged to the memory budget; held, in
	// a block of a derived table, holds its rows instead (derived.go).
	charged int64
	held    *heldRows
}

type orderKey struct {
	col       int
	typ       string
	desc      bool
	nullsLast bool
}

// resolveOrder maps an ORDER BY item to a column of the select list (by
// ordinal, alias, or the same expression), or -1.
func (q *selectQuery) resolveOrder(o OrderItem, items []Item) (int, error) {
	if n, ok, err := ordinal(q.runner, o.Expr, len(items), "ORDER BY"); ok || err != nil {
		return n, err
	}
	// A select-list alias two items with different expressions have is
	// ambiguous in ORDER BY, whole or inside an expression (ZetaSQL's
	// orderby.test: "Column name b is ambiguous").
	if err := q.checkAmbiguousAliases(o.Expr.toks, items); err != nil {
		return 0, err
	}
	if name, ok := o.Expr.singleName(); ok {
		for i, it := range items {
			if strings.EqualFold(it.Alias, name) {
				return i, nil
			}
		}
	}
	k := o.Expr.key()
	for i, it := range items {
		if !it.Star && it.Expr.key() == k {
			return i, nil
		}
	}
	return -1, nil
}

// checkAmbiguousAliases fails an expression of ORDER BY, HAVING or
// QUALIFY (which see the select list's aliases) that names an alias two
// items with different expressions have: "Column name a is ambiguous",
// as ZetaSQL resolves it. Names inside its subqueries are theirs.
func (q *selectQuery) checkAmbiguousAliases(toks []filter.Token, items []Item) error {
	for j := 0; j < len(toks); j++ {
		if end := subqueryEnd(toks, j); end > 0 {
			j = end
			continue
		}
		t := toks[j]
		if !t.QIdent && !(t.Ident && !filter.IsReserved(t.Text)) || j > 0 && toks[j-1].Op && toks[j-1].Text == "." || j+1 < len(toks) && toks[j+1].Op && toks[j+1].Text == "(" {
			continue
		}
		if name := t.Value; ambiguousAlias(items, name) {
			return q.errf(t.Pos, "Column name %s is ambiguous", name)
		}
	}
	return nil
}

// ambiguousAlias reports whether two items of items are called name
// (case-insensitively) and are not the same expression.
func ambiguousAlias(items []Item, name string) bool {
	first := -1
	for i, it := range items {
		if !strings.EqualFold(it.Alias, name) {
			continue
		}
		if first < 0 {
			first = i
			continue
		}
		a, b := items[first], it
		if a.Star || b.Star {
			if !(a.Star && b.Star && strings.EqualFold(a.col, b.col)) {
				return true
			}
			continue
		}
		if a.Expr.key() != b.Expr.key() {
			return true
		}
	}
	return false
}

// ordinal reads an integer literal naming a column of the select list
// (0-based result).
func ordinal(r *runner, sp Span, n int, clause string) (int, bool, error) {
	toks := sp.toks
	if len(toks) == 1 && !toks[0].Ident && !toks[0].QIdent && !toks[0].Op {
		var k int
		if _, err := fmt.Sscanf(toks[0].Text, "%d", &k); err == nil && toks[0].Text == fmt.Sprint(k) {
			if k < 1 || k > n {
				return 0, true, r.errf(toks[0].Pos, "%s column number exceeds number of SELECT columns: %d", clause, k)
			}
			return k - 1, true, nil
		}
	}
	return 0, false, nil
}

func checkOrderable(r *runner, sp Span, t string) error {
	switch typeKind(t) {
	case "GEOGRAPHY", "JSON", "ARRAY", "STRUCT":
		pos := 0
		if len(sp.toks) > 0 {
			pos = sp.pos()
		}
		return r.errf(pos, "ORDER BY does not support expressions of type %s", t)
	}
	return nil
}
