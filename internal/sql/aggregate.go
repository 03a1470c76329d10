package sql

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
)

// isCall reports whether toks[i] names a function called at toks[i+1].
func isCall(toks []filter.Token, i int) bool {
	return toks[i].Ident && i+1 < len(toks) && toks[i+1].Op && toks[i+1].Text == "(" &&
		(i == 0 || !(toks[i-1].Op && toks[i-1].Text == "."))
}

// findAgg returns the position of the first aggregate call in toks.
func findAgg(toks []filter.Token) (int, bool) {
	for i := 0; i < len(toks); i++ {
		if end := subqueryEnd(toks, i); end > 0 {
			i = end // a subquery's aggregates are its own
			continue
		}
		if o, _ := overAt(toks, i); o > 0 {
			continue // an aggregate OVER a window is an analytic function
		}
		if isCall(toks, i) && aggFuncs[strings.ToUpper(toks[i].Text)] {
			return toks[i].Pos, true
		}
	}
	return 0, false
}

// closing returns the index of the parenthesis closing toks[open], or -1.
// The match the tokenizer recorded answers at once (a scan per call
// made nested calls quadratic); tokens made up elsewhere are scanned.
func closing(toks []filter.Token, open int) int {
	t := toks[open]
	if t.Op && t.Text == "(" {
		if t.Match < 0 {
			return -1
		}
		if k := open + t.Match; t.Match > 0 && k < len(toks) && toks[k].Op && toks[k].Text == ")" && toks[k].Pos == t.MatchPos {
			return k
		}
	}
	depth := 0
	for i := open; i < len(toks); i++ {
		if toks[i].Op {
			switch toks[i].Text {
			case "(":
				depth++
			case ")":
				depth--
				if depth == 0 {
					closingScanned.Add(int64(i - open))
					return i
				}
			}
		}
	}
	closingScanned.Add(int64(len(toks) - open))
	return -1
}

// closingScanned counts the tokens closing scanned, for tests that bound
// the work of compiling a query.
var closingScanned atomic.Int64

// rewrite replaces, in the span's text, every aggregate call by its
// column (__a<i>) and every GROUP BY expression that is not a plain name
// by its column (__g<i>), padding with spaces so positions stay put.
// It returns the text to compile against the post-aggregation schema.
// postColumn is a column of the groups' record that rewrite names: an
// aggregate's, a window call's, a GROUP BY expression's or a GROUPING
// call's.
var postColumn = regexp.MustCompile(`^__(a|w|g|gq)[0-9]+$`)

func (q *selectQuery) rewrite(sp Span, aggs *[]*agg, groups []Span, groupCol []string, clause string) (exprText, error) {
	toks := sp.toks
	var b strings.Builder
	last := sp.pos()
	emit := func(from, to int, name string) {
		b.WriteString(q.src[last:from])
		b.WriteString(name)
		for k := len(name); k < to-from; k++ {
			b.WriteByte(' ')
		}
		last = to
	}
	for i := 0; i < len(toks); i++ {
		if end := subqueryEnd(toks, i); end > 0 {
			i = end // a subquery's names and aggregates are its own
			continue
		}
		// A window call: its column, computed over the groups; the
		// aggregates inside it are registered.
		if o, _ := overAt(toks, i); o > 0 {
			if spec, overEnd, err := q.overSpec(toks, o); err == nil {
				// The call's arguments, then each piece of its window
				// (a named window's is elsewhere in the statement).
				if _, err := q.rewrite(Span{toks: toks[i+1 : o]}, aggs, groups, groupCol, clause); err != nil {
					return exprText{}, err
				}
				for _, piece := range spec.pieces {
					if _, err := q.rewrite(Span{toks: piece}, aggs, groups, groupCol, clause); err != nil {
						return exprText{}, err
					}
				}
				if _, ok := q.pendingAt[toks[i].Pos]; !ok {
					q.pendingAt[toks[i].Pos] = true
					q.pending = append(q.pending, toks[i:overEnd+1])
				}
				emit(toks[i].Pos, toks[overEnd].End, fmt.Sprintf("__w%d", toks[i].Pos))
				i = overEnd
				continue
			}
		}
		// GROUPING(x): whether x is left out of the row's grouping set.
		if end, g, ok := groupingCall(toks, i, groups); ok {
			if g < 0 {
				_, g, _ = groupingCall(toks, i, q.sel.GroupBy)
			}
			if g < 0 {
				return exprText{}, q.errf(toks[i].Pos, "GROUPING must have an argument that exists within the group-by expression list.")
			}
			emit(toks[i].Pos, toks[end].End, fmt.Sprintf("__gq%d", g))
			i = end
			continue
		}
		// A GROUP BY expression (not a plain name: those are columns of
		// the post-aggregation schema already).
		matched := false
		for g, gs := range groups {
			if groupCol[g] == "" || len(gs.toks) > len(toks)-i {
				continue
			}
			if (Span{toks: toks[i : i+len(gs.toks)]}).key() == gs.key() {
				emit(toks[i].Pos, toks[i+len(gs.toks)-1].End, groupCol[g])
				i += len(gs.toks) - 1
				matched = true
				break
			}
		}
		if matched || !isCall(toks, i) {
			continue
		}
		name := strings.ToUpper(toks[i].Text)
		if !aggFuncs[name] {
			if analyticFuncs[name] {
				return exprText{}, q.errf(toks[i].Pos, "Analytic function %s cannot be called without an OVER clause", name)
			}
			if knownAggs[name] {
				return exprText{}, notSupported(q.src, toks[i].Pos, "aggregate or analytic function "+name)
			}
			continue
		}
		end := closing(toks, i+1)
		if end < 0 {
			continue // unbalanced: compiling the text reports the syntax error
		}
		idx := -1
		key := (Span{toks: toks[i : end+1]}).key()
		for j, o := range *aggs {
			if o.key == key {
				idx = j
			}
		}
		if idx < 0 {
			a, err := q.newAgg(Span{toks: toks[i : end+1]}, clause)
			if err != nil {
				return exprText{}, err
			}
			idx = len(*aggs)
			*aggs = append(*aggs, a)
		}
		emit(toks[i].Pos, toks[end].End, fmt.Sprintf("__a%d", idx))
		i = end
	}
	b.WriteString(q.src[last:sp.end()])
	return exprText{at: sp.pos(), text: b.String()}, nil
}

// runAggregate runs a query with GROUP BY, HAVING or aggregate functions:
// groups are formed from the rows WHERE keeps, then the select list,
// HAVING and ORDER BY are evaluated over one row per group (the group's
// keys and aggregates as columns) by the same expression layer.
func (q *selectQuery) runAggregate(ctx context.Context, items []Item, where *filter.Scalar) (*output, error) {
	if out, ok, err := q.fastAggregate(ctx, items, where); ok {
		return out, err // fastagg.go: the simple aggregate's fast path
	}
	sel := q.sel
	// GROUP BY: ordinals and select aliases name select expressions.
	groups := make([]Span, len(sel.GroupBy))
	starCol := make([]string, len(sel.GroupBy)) // a key that is an expanded star's column
	for g, gs := range sel.GroupBy {
		groups[g] = gs
		if n, ok, err := ordinal(q.runner, gs, len(items), "GROUP BY"); err != nil {
			return nil, err
		} else if ok {
			it := items[n]
			if it.Star {
				starCol[g] = it.col
				continue
			}
			if at, ok := findAgg(it.Expr.toks); ok {
				return nil, q.errf(gs.pos(), "GROUP BY position %d refers to an aggregate at [%s]", n+1, lineCol(q.src, at))
			}
			groups[g] = it.Expr
			continue
		}
		// A select-list alias comes before an input column of the same
		// name: "those aliases override names in the corresponding FROM
		// clause" (BigQuery's GROUP BY reference); one of an aggregate is
		// BigQuery's error, not the input column.
		if name, ok := gs.singleName(); ok {
			if err := q.groupAliasUnique(gs, name, items); err != nil {
				return nil, err
			}
			for _, it := range items {
				if !strings.EqualFold(it.Alias, name) {
					continue
				}
				if it.Star {
					starCol[g] = it.col
				} else if _, agg := findAgg(it.Expr.toks); agg {
					return nil, q.errf(gs.pos(), "Column %s contains an aggregation function, which is not allowed in GROUP BY", it.Alias)
				} else {
					groups[g] = it.Expr
				}
				break
			}
		}
		if at, ok := findAgg(groups[g].toks); ok {
			return nil, q.errf(at, "Aggregate functions are not allowed in GROUP BY")
		}
	}
	// The post-aggregation schema: group keys, then aggregates. A key
	// that is a column keeps the column's internal name (names resolve to
	// it through the input's resolver); other keys are __g<i>, replaced
	// in the text.
	post := &schema.Schema{}
	groupX := make([]*filter.Scalar, len(groups))
	groupCol := make([]string, len(groups)) // "" for a column
	groupedCols := map[string]bool{}
	for g, gs := range groups {
		var x *filter.Scalar
		var err error
		if starCol[g] != "" {
			x, err = q.compileText(colText(starCol[g]), q.in.schema, nil)
		} else {
			x, err = q.compile(gs)
		}
		if err != nil {
			return nil, err
		}
		// BigQuery groups every type but GEOGRAPHY and JSON, an ARRAY or
		// STRUCT when its elements or fields group.
		switch k := typeKind(x.Type()); k {
		case "GEOGRAPHY", "JSON":
			return nil, q.errf(gs.pos(), "Grouping by expressions of type %s is not allowed", k)
		case "ARRAY", "STRUCT":
			if !filter.Groupable(x.Type()) {
				return nil, q.errf(gs.pos(), "Grouping by expressions of type %s is not allowed", x.Type())
			}
		}
		groupX[g] = x
		name := fmt.Sprintf("__g%d", g)
		if starCol[g] != "" {
			name = starCol[g]
			groupedCols[strings.ToLower(name)] = true
		} else if col, ok := q.columnRef(gs); ok {
			name = col
			groupedCols[strings.ToLower(col)] = true
		} else {
			groupCol[g] = name
		}
		post.Fields = append(post.Fields, resultField(name, x.Type()))
	}
	// Rewrite the select list, HAVING and ORDER BY over the post schema.
	var aggs []*agg
	itemText := make([]exprText, len(items))
	for i, it := range items {
		if it.Star {
			if !groupedCols[strings.ToLower(it.col)] {
				return nil, q.errf(it.pos, "SELECT list expression references column %s which is neither grouped nor aggregated", it.Alias)
			}
			itemText[i] = colText(it.col)
			continue
		}
		t, err := q.rewrite(it.Expr, &aggs, groups, groupCol, "SELECT list")
		if err != nil {
			return nil, err
		}
		itemText[i] = t
	}
	var qualifyText exprText
	var err error
	if sel.Qualify != nil {
		if qualifyText, err = q.rewrite(*sel.Qualify, &aggs, groups, groupCol, "QUALIFY clause"); err != nil {
			return nil, err
		}
	}
	var havingText exprText
	if sel.Having != nil {
		if err := q.checkAmbiguousAliases(sel.Having.toks, items); err != nil {
			return nil, err
		}
		t, err := q.rewrite(*sel.Having, &aggs, groups, groupCol, "HAVING clause")
		if err != nil {
			return nil, err
		}
		havingText = t
	}
	out := &output{}
	type hidden struct {
		text exprText
		o    OrderItem
	}
	orderCol := make([]int, len(q.order))
	var hiddens []hidden
	for k, o := range q.order {
		col, err := q.resolveOrder(o, items)
		if err != nil {
			return nil, err
		}
		if col < 0 {
			if _, agg := findAgg(o.Expr.toks); sel.Distinct && agg {
				return nil, q.errf(o.Expr.pos(), "ORDER BY clause expression references columns that are not visible after SELECT DISTINCT")
			}
			t, err := q.rewrite(o.Expr, &aggs, groups, groupCol, "ORDER BY clause")
			if err != nil {
				return nil, err
			}
			col = len(items) + len(hiddens)
			hiddens = append(hiddens, hidden{t, o})
		}
		orderCol[k] = col
	}
	for i, a := range aggs {
		post.Fields = append(post.Fields, resultField(fmt.Sprintf("__a%d", i), a.typ))
	}
	// GROUPING(x) of each grouping expression (grouping.go).
	sets := sel.GroupingSets
	if sets == nil {
		all := make([]int, len(groups))
		for g := range all {
			all[g] = g
		}
		sets = [][]int{all}
	}
	grouped := make([][]bool, len(sets)) // set, expression
	for k, set := range sets {
		grouped[k] = make([]bool, len(groups))
		for _, g := range set {
			grouped[k][g] = true
		}
	}
	for g := range groups {
		post.Fields = append(post.Fields, &schema.Field{Name: fmt.Sprintf("__gq%d", g), Type: schema.Integer, Mode: schema.Nullable})
	}
	// compileIn compiles text over the schema s of the groups' columns;
	// first, if not nil, resolves a name before the input's columns do
	// (ORDER BY's select-list aliases, orderalias.go); alias, if not nil,
	// one no input column has (HAVING's select-list aliases).
	// Correlated subqueries among them are columns of the groups' record
	// (correlated_groups.go).
	gc := &groupCorr{q: q, grouped: groupedCols, keys: post}
	compileIn := func(text exprText, clause string, s *schema.Schema, first, alias func(name string) (string, bool)) (*filter.Scalar, error) {
		if strings.TrimSpace(text.text) == "" || text.at == 0 && strings.HasPrefix(text.text, "`") {
			return q.compileText(text, s, nil) // an expanded star's column
		}
		s = gc.schemaFor(s, clause)
		return q.compileText(text, s, &scope{env: q.env, outer: q.in, groups: gc}, filter.WithNames(func(parts []string, pos int) (string, int, error) {
			if len(parts[0]) > 3 && (strings.HasPrefix(parts[0], "__a") || strings.HasPrefix(parts[0], "__g") || strings.HasPrefix(parts[0], "__w") || strings.HasPrefix(parts[0], "__p")) {
				return parts[0], 1, nil
			}
			if first != nil {
				if col, ok := first(parts[0]); ok {
					return col, 1, nil
				}
			}
			i, used, err := q.in.resolve(q.src, parts, pos)
			if err != nil {
				if alias != nil {
					if col, ok := alias(parts[0]); ok {
						return col, 1, nil
					}
				}
				return "", 0, err
			}
			col := q.in.cols[i].internal
			if !groupedCols[strings.ToLower(col)] {
				what := "column " + parts[0]
				if used == 2 {
					what = parts[0] + "." + parts[1]
				}
				return "", 0, q.errf(pos, "%s expression references %s which is neither grouped nor aggregated", clause, what)
			}
			return col, used, nil
		}))
	}
	compilePost := func(text exprText, clause string) (*filter.Scalar, error) {
		return compileIn(text, clause, post, nil, nil)
	}
	// Windows over the groups: their arguments and windows compile over
	// the groups' columns; their values become columns __w<pos>.
	postBase := len(post.Fields)
	q.winCompile = func(sp Span) (*filter.Scalar, error) {
		saved := q.winCompile
		q.winCompile = nil
		t, err := q.rewrite(sp, &aggs, groups, groupCol, "analytic function")
		q.winCompile = saved
		if err != nil {
			return nil, err
		}
		return compilePost(t, "SELECT list")
	}
	for _, wt := range q.pending {
		o, callEnd := overAt(wt, 0)
		spec, _, err := q.overSpec(wt, o)
		if err != nil {
			return nil, err
		}
		w, err := q.newWindow(wt[:callEnd+1], spec.tokens())
		if err != nil {
			return nil, err
		}
		w.pos, w.end, w.col = wt[0].Pos, wt[len(wt)-1].End, fmt.Sprintf("__w%d", wt[0].Pos)
		q.windows = append(q.windows, w)
		post.Fields = append(post.Fields, resultField(w.col, w.typ))
	}
	q.winCompile = nil
	var qualify *filter.Scalar
	if sel.Qualify != nil {
		// QUALIFY may name a select-list alias where no input column has
		// the name, as it may without GROUP BY (compileQualify): of an
		// item that is a window call, an aggregate, a GROUPING call or a
		// grouped column, each a column of the groups' record.
		alias := func(name string) (string, bool) {
			for k, it := range items {
				if it.Star || !strings.EqualFold(it.Alias, name) {
					continue
				}
				if t := strings.TrimSpace(itemText[k].text); postColumn.MatchString(t) {
					return t, true
				}
				if p, ok := it.Expr.path(); ok && len(p) > 0 {
					if i, used, err := q.in.resolve(q.src, p, it.Expr.pos()); err == nil && used == len(p) && groupedCols[strings.ToLower(q.in.cols[i].internal)] {
						return q.in.cols[i].internal, true
					}
				}
				return "", false
			}
			return "", false
		}
		if qualify, err = compileIn(qualifyText, "QUALIFY clause", post, nil, alias); err != nil {
			return nil, err
		}
		if t := qualify.Type(); t != "BOOL" && t != "NULL" {
			return nil, q.errf(sel.Qualify.pos(), "QUALIFY clause should return type BOOL, but returns %s", t)
		}
	}
	var exprs []*filter.Scalar
	for i, t := range itemText {
		x, err := compilePost(t, "SELECT list")
		if err != nil {
			return nil, err
		}
		exprs = append(exprs, x)
		out.types = append(out.types, x.Type())
		_ = i
	}
	// ORDER BY expressions may name select-list aliases (orderalias.go).
	aliases := orderAliases(items)
	aliased := map[int]bool{}
	for _, h := range hiddens {
		if sel.Distinct {
			// After SELECT DISTINCT, ORDER BY sees the select list only
			// (`ORDER BY x + 1` of an item x; orderalias.go): then its
			// value over a group is one of the item values DISTINCT keeps.
			if _, _, err := q.compileDistinctOrder(h.o.Expr, items, out.types); err != nil {
				return nil, err
			}
		}
		used := map[string]bool{}
		x, err := compileIn(h.text, "ORDER BY clause", aliasSchema(post, out.types), func(name string) (string, bool) {
			k, ok := aliases[strings.ToLower(name)]
			if ok {
				used[aliasColumn(k)] = true
			}
			return aliasColumn(k), ok
		}, nil)
		if err != nil {
			return nil, err
		}
		if len(used) > 0 {
			aliased[len(exprs)] = true
		}
		exprs = append(exprs, x)
	}
	for k, o := range q.order {
		t := exprs[orderCol[k]].Type()
		if err := checkOrderable(q.runner, o.Expr, t); err != nil {
			return nil, err
		}
		out.order = append(out.order, orderKey{col: orderCol[k], typ: t, desc: o.Desc, nullsLast: o.NullsLast})
	}
	var having *filter.Scalar
	// HAVING may name a select-list alias (of an item without analytic
	// functions) where no input column has the name: a column __h<k> of
	// the item's values.
	havingSchema := &schema.Schema{Fields: append([]*schema.Field(nil), post.Fields[:postBase]...)}
	var havingItems []int
	if sel.Having != nil {
		aliasCol := map[string]int{}
		for k, it := range items {
			if _, win := hasWindow(it.Expr.toks); it.Star || it.Alias == "" || win {
				continue
			}
			if _, dup := aliasCol[strings.ToLower(it.Alias)]; !dup {
				aliasCol[strings.ToLower(it.Alias)] = k
			}
		}
		for k := range items {
			havingSchema.Fields = append(havingSchema.Fields, &schema.Field{Name: fmt.Sprintf("__h%d", k), Type: bqType(exprs[k].Type()), Mode: schema.Nullable})
		}
		alias := func(name string) (string, bool) {
			k, ok := aliasCol[strings.ToLower(name)]
			if ok && !slices.Contains(havingItems, k) {
				havingItems = append(havingItems, k)
			}
			return fmt.Sprintf("__h%d", k), ok
		}
		// An alias comes before an input column of the same name
		// (ZetaSQL's having.test: "SELECT list aliases override FROM
		// clause names there"), but for an item that is that column.
		bare := orderAliases(items)
		first := func(name string) (string, bool) {
			if _, ok := bare[strings.ToLower(name)]; !ok {
				return "", false
			}
			return alias(name)
		}
		x, err := compileIn(havingText, "HAVING clause", havingSchema, first, alias)
		if err != nil {
			return nil, err
		}
		if t := x.Type(); t != "BOOL" && t != "NULL" {
			return nil, q.errf(sel.Having.pos(), "HAVING clause should return type BOOL, but returns %s", t)
		}
		having = x
	}

	// Scan and group (groupstate.go).
	if q.whereDone {
		where = nil // a correlated column applies it (correlated.go)
	}
	gs := newGroupState(post.Fields[:len(groups)], aggs, len(sets) > 1)
	defer gs.release()
	scanned := []*filter.Scalar{where}
	scanned = append(scanned, groupX...)
	for _, a := range aggs {
		scanned = append(scanned, a.args...)
		scanned = append(scanned, a.order...)
	}
	err = q.scan(ctx, scanned, func(rec arrow.RecordBatch, n int) error {
		rec, n, release, err := whereRows(ctx, where, rec, n)
		if err != nil {
			return err
		}
		defer release()
		keys := make([][]any, len(groupX))
		for g, x := range groupX {
			vals, err := x.Values(ctx, rec, n)
			if err != nil {
				return err
			}
			keys[g] = vals
		}
		args := make([][][]any, len(aggs)) // aggregate, argument (then ORDER BY keys), row
		for j, a := range aggs {
			for _, x := range append(append([]*filter.Scalar(nil), a.args...), a.order...) {
				vals, err := x.Values(ctx, rec, n)
				if err != nil {
					return err
				}
				args[j] = append(args[j], vals)
			}
		}
		for i := 0; i < n; i++ {
			for set := range sets {
				grp, err := gs.group(keys, i, set, grouped[set])
				if err != nil {
					return err
				}
				for j := range aggs {
					if err := gs.states[j].add(grp, args[j], i, q); err != nil {
						return err
					}
				}
			}
		}
		// What the groups hold now, charged once a batch: the budget
		// is passed by at most one batch's growth.
		return gs.charge(q)
	})
	if testHookGroupsHeld != nil {
		testHookGroupsHeld(gs.total())
	}
	if err != nil {
		return nil, err
	}
	// Aggregation of no rows (no GROUP BY, or an empty grouping set):
	// one row.
	for set, in := range sets {
		if len(in) > 0 {
			continue
		}
		if !gs.hasSet(set) {
			if _, err := gs.group(nil, 0, set, grouped[set]); err != nil {
				return nil, err
			}
		}
	}
	// One row per group, evaluated by the expression layer.
	n := gs.len()
	var rerr error // the first result that is an error (aggResult)
	rec, err := gs.record(post.Fields[len(groups):postBase], func(col, row int) any {
		if col < len(aggs) {
			v, err := q.aggResult(gs.states[col].result(row))
			if err != nil && rerr == nil {
				rerr = err
			}
			return v
		}
		if grouped[gs.set(row)][col-len(aggs)] {
			return int64(0)
		}
		return int64(1)
	})
	if err == nil && rerr != nil {
		rec.Release()
		err = rerr
	}
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	// HAVING's subquery columns (all of them if HAVING names a select
	// alias); the others once HAVING has cut the groups.
	rec, release, err := gc.with(ctx, rec, n, len(havingItems) == 0)
	if err != nil {
		return nil, err
	}
	defer release()
	keep := make([]bool, n)
	for i := range keep {
		keep[i] = true
	}
	if having != nil {
		hrec := rec
		if len(havingItems) > 0 {
			itemVals := make([][]any, len(items))
			for _, k := range havingItems {
				if itemVals[k], err = exprs[k].Values(ctx, rec, n); err != nil {
					return nil, err
				}
			}
			irec, err := buildRecord(&schema.Schema{Fields: havingSchema.Fields[postBase:]}, n, func(col, row int) any {
				if v := itemVals[col]; v != nil {
					return v[row]
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
			hrec = joinRecords(rec, irec)
			irec.Release()
			defer hrec.Release()
		}
		vals, err := having.Values(ctx, hrec, n)
		if err != nil {
			return nil, err
		}
		for i, v := range vals {
			keep[i] = v == true
		}
	}
	if len(q.windows) == 0 {
		// The select list and ORDER BY see the groups HAVING keeps only,
		// as they see the rows WHERE keeps: a group HAVING drops must not
		// fail the query (1/SUM(x) ... HAVING SUM(x) != 0).
		if rec, n, release, err = keepRows(ctx, rec, keep); err != nil {
			return nil, err
		}
		defer release()
		keep = keep[:0]
		for range n {
			keep = append(keep, true)
		}
		if rec, release, err = gc.with(ctx, rec, n, false); err != nil {
			return nil, err
		}
		defer release()
	}
	if len(q.windows) > 0 {
		// The kept groups, with their subquery columns: an analytic
		// function's argument or window may read one.
		if rec, n, release, err = keepRows(ctx, rec, keep); err != nil {
			return nil, err
		}
		defer release()
		if rec, release, err = gc.with(ctx, rec, n, false); err != nil {
			return nil, err
		}
		defer release()
		keep = make([]bool, n)
		for i := range keep {
			keep[i] = true
		}
		if rec, n, err = q.windowsOverGroups(ctx, rec, keep, post, postBase); err != nil {
			return nil, err
		}
		defer rec.Release()
		// The kept groups' subquery columns (from the cache).
		if rec, release, err = gc.with(ctx, rec, n, false); err != nil {
			return nil, err
		}
		defer release()
		keep = make([]bool, n)
		for i := range keep {
			keep[i] = true
		}
		if qualify != nil {
			if keep, err = selection(ctx, qualify, rec, n); err != nil {
				return nil, err
			}
		}
	}
	cols := make([][]any, len(exprs))
	var arec arrow.RecordBatch // rec with the items' values, for aliased
	for j, x := range exprs {
		in := rec
		if aliased[j] {
			if arec == nil {
				var release func()
				if arec, release, err = withAliases(rec, n, out.types, cols[:len(items)]); err != nil {
					return nil, err
				}
				defer release()
			}
			in = arec
		}
		if cols[j], err = x.Values(ctx, in, n); err != nil {
			return nil, err
		}
	}
	if q.hold {
		// A derived table's rows: into Arrow batches (derived.go).
		out.held = newHeldRows(q.runner, out.types)
		return out, out.held.add(cols[:len(out.types)], n, keep)
	}
	for i := 0; i < n; i++ {
		if !keep[i] {
			continue
		}
		row := make([]any, len(exprs))
		for j := range exprs {
			row[j] = cols[j][i]
		}
		out.rows = append(out.rows, row)
	}
	return out, nil
}

// columnRef returns the internal name of the input column a span names
// (a path naming a whole column).
func (q *selectQuery) columnRef(sp Span) (string, bool) {
	parts, ok := sp.path()
	if !ok {
		return "", false
	}
	i, used, err := q.in.resolve(q.src, parts, sp.pos())
	if err != nil || used != len(parts) {
		return "", false
	}
	return q.in.cols[i].internal, true
}

// groupAliasUnique: a GROUP BY name that two SELECT-list items are
// aliased to is ZetaSQL's error (SelectColumnStateList marks the alias
// ambiguous), unless both are the same input column (the reference's
// "not ambiguous ... as long as the name resolves to the same
// underlying object"); the first one was taken.
func (q *selectQuery) groupAliasUnique(gs Span, name string, items []Item) error {
	first := ""
	seen := false
	for _, it := range items {
		if it.Alias == "" || !strings.EqualFold(it.Alias, name) {
			continue
		}
		col, isCol := it.col, it.Star
		if !isCol {
			col, isCol = q.columnRef(it.Expr)
		}
		if !isCol {
			col = "\x00" // an expression: the same as no other item
		}
		if seen && (col != first || col == "\x00") {
			return q.errf(gs.pos(), "Name %s in GROUP BY clause is ambiguous; it may refer to multiple columns in the SELECT-list", name)
		}
		first, seen = col, true
	}
	return nil
}

func lineCol(src string, pos int) string {
	e := filter.NewError(src, pos, "")
	return fmt.Sprintf("%d:%d", e.Line, e.Column)
}
