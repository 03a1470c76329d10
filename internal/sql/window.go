package sql

import (
	"context"
	"fmt"
	"math/big"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
)

// Window (analytic) functions: F(args) OVER ([PARTITION BY ...]
// [ORDER BY ...] [ROWS|RANGE frame]) in the select list, ORDER BY and
// QUALIFY of a query without GROUP BY. The rows WHERE keeps are read
// whole; each window function's value is computed per row (partitions
// by key, sorted stably by the window's ORDER BY) into a column __w<i>;
// the select list, QUALIFY (a filter over those columns) and ORDER BY
// then run over the input plus those columns, with each call's text
// replaced by its column's name (padded, so positions hold).

var analyticFuncs = map[string]bool{"ROW_NUMBER": true, "RANK": true, "DENSE_RANK": true, "PERCENT_RANK": true,
	"CUME_DIST": true, "NTILE": true, "LAG": true, "LEAD": true, "FIRST_VALUE": true, "LAST_VALUE": true,
	"NTH_VALUE": true, "PERCENTILE_CONT": true, "PERCENTILE_DISC": true}

type window struct {
	name      string // upper case
	pos, end  int    // the call's text, through OVER's closing parenthesis
	col       string // __w<i>
	typ       string
	args      []*filter.Scalar
	agg       *agg // an aggregate function OVER a window
	partition []*filter.Scalar
	order     []*filter.Scalar
	desc      []bool
	nullsLast []bool
	frame     frame
	offset    int64 // LAG/LEAD offset, NTILE buckets, NTH_VALUE n
	// IGNORE NULLS or RESPECT NULLS (window_percentile.go); the
	// percentile of PERCENTILE_CONT/DISC.
	ignoreNulls, respectNulls bool
	pct                       *big.Rat
	lagDef                    any // LAG/LEAD's default, of the result type
}

// frame is a window frame. Bounds are row offsets from the current row
// (ROWS), or offsets from its ORDER BY key (RANGE: 0 is its peers;
// window_frame.go).
type frame struct {
	rows     bool
	startUnb bool  // UNBOUNDED PRECEDING
	start    int64 // offset (negative: preceding) when !startUnb
	endUnb   bool  // UNBOUNDED FOLLOWING
	end      int64
	// RANGE: the offsets exactly (negative: preceding), nil for CURRENT
	// ROW or UNBOUNDED; an offset may be a fraction (0.5, NUMERIC '1.5').
	startOff, endOff *big.Rat
	explicitFrame    bool
}

// overAt returns, for a call at toks[i], the index of OVER after its
// closing parenthesis (-1 if none) and that parenthesis' index.
func overAt(toks []filter.Token, i int) (int, int) {
	if !isCall(toks, i) {
		return -1, -1
	}
	end := closing(toks, i+1)
	if end < 0 || end+1 >= len(toks) || !toks[end+1].Ident || !strings.EqualFold(toks[end+1].Text, "OVER") {
		return -1, end
	}
	return end + 1, end
}

// hasWindow reports whether toks hold a window function call (outside
// subqueries).
func hasWindow(toks []filter.Token) (int, bool) {
	for i := 0; i < len(toks); i++ {
		if end := subqueryEnd(toks, i); end > 0 {
			i = end
			continue
		}
		if o, _ := overAt(toks, i); o > 0 {
			return toks[i].Pos, true
		}
	}
	return 0, false
}

// findWindows registers the window calls of a span.
func (q *selectQuery) findWindows(sp Span) error {
	toks := sp.toks
	for i := 0; i < len(toks); i++ {
		if end := subqueryEnd(toks, i); end > 0 {
			i = end
			continue
		}
		o, callEnd := overAt(toks, i)
		if o < 0 {
			if isCall(toks, i) && analyticFuncs[strings.ToUpper(toks[i].Text)] {
				return q.errf(toks[i].Pos, "Analytic function %s cannot be called without an OVER clause", strings.ToUpper(toks[i].Text))
			}
			continue
		}
		spec, overEnd, err := q.overSpec(toks, o)
		if err != nil {
			return err
		}
		if _, dup := q.windowAt[toks[i].Pos]; !dup {
			w, err := q.newWindow(toks[i:callEnd+1], spec.tokens())
			if err != nil {
				return err
			}
			w.pos, w.end = toks[i].Pos, toks[overEnd].End
			w.col = fmt.Sprintf("__w%d", len(q.windows))
			q.windowAt[w.pos] = w
			q.windows = append(q.windows, w)
		}
		i = overEnd
	}
	return nil
}

// windowText is the span's text with each window call replaced by its
// column.
func (q *selectQuery) windowText(sp Span) exprText {
	var b strings.Builder
	last := sp.pos()
	for _, t := range sp.toks {
		if t.Pos < last {
			continue
		}
		if w, ok := q.windowAt[t.Pos]; ok {
			b.WriteString(q.src[last:w.pos])
			b.WriteString(w.col)
			for k := len(w.col); k < w.end-w.pos; k++ {
				b.WriteByte(' ')
			}
			last = w.end
		}
	}
	if last < sp.end() {
		b.WriteString(q.src[last:sp.end()])
	}
	return exprText{at: sp.pos(), text: b.String()}
}

// orderRequired are the analytic functions whose window must have an
// ORDER BY: all but ROW_NUMBER and the aggregates (GoogleSQL reference,
// Numbering functions: "ORDER BY: Required except for ROW_NUMBER()";
// Navigation functions; ZetaSQL registers them ORDER_REQUIRED and
// answers "Window ORDER BY is required for analytic function lead").
var orderRequired = map[string]bool{
	"RANK": true, "DENSE_RANK": true, "PERCENT_RANK": true, "CUME_DIST": true, "NTILE": true,
	"LAG": true, "LEAD": true, "FIRST_VALUE": true, "LAST_VALUE": true, "NTH_VALUE": true,
}

// overSpecPos is the position of the window specification after call's
// OVER: its "(" or the window's name.
func overSpecPos(src string, call []filter.Token) int {
	i := call[len(call)-1].End
	skip := func() {
		for i < len(src) && strings.ContainsRune(" \t\r\n", rune(src[i])) {
			i++
		}
	}
	skip()
	if i+4 <= len(src) && strings.EqualFold(src[i:i+4], "OVER") {
		i += 4
		skip()
	}
	return i
}

// newWindow checks one call and its OVER clause.
func (q *selectQuery) newWindow(call, over []filter.Token) (*window, error) {
	w := &window{name: strings.ToUpper(call[0].Text)}
	pos := call[0].Pos
	// OVER ( [PARTITION BY ...] [ORDER BY ...] [frame] )
	p := &parser{src: q.src, toks: append(append([]filter.Token(nil), over...), filter.Token{Pos: call[len(call)-1].End, EOF: true})}
	if len(over) > 0 {
		p.toks[len(p.toks)-1].Pos = over[len(over)-1].End
	}
	if p.isKw("PARTITION") {
		if !p.isKw("PARTITION", "BY") {
			p.i++
			return nil, p.unexpected()
		}
		p.i += 2
		for {
			sp, err := p.expr()
			if err != nil {
				return nil, err
			}
			x, err := q.compileWindowArg(sp)
			if err != nil {
				return nil, err
			}
			// BigQuery's data types reference: GEOGRAPHY and JSON do not
			// group, ARRAY and STRUCT group only in GROUP BY and SELECT
			// DISTINCT, and PARTITION BY takes no floating point type.
			switch k := typeKind(x.Type()); k {
			case "GEOGRAPHY", "JSON", "ARRAY", "STRUCT", "FLOAT64":
				return nil, q.errf(sp.pos(), "Partitioning by expressions of type %s is not allowed", k)
			}
			w.partition = append(w.partition, x)
			if !p.isOp(",") {
				break
			}
			p.i++
		}
	}
	if p.isKw("ORDER") {
		if !p.isKw("ORDER", "BY") {
			p.i++
			return nil, p.unexpected()
		}
		p.i += 2
		for {
			sp, err := p.expr()
			if err != nil {
				return nil, err
			}
			x, err := q.compileWindowArg(sp)
			if err != nil {
				return nil, err
			}
			if err := checkOrderable(q.runner, sp, x.Type()); err != nil {
				return nil, err
			}
			desc := false
			if p.isKw("DESC") {
				desc = true
				p.i++
			} else if p.isKw("ASC") {
				p.i++
			}
			nl := desc
			if p.isKw("NULLS", "FIRST") {
				nl = false
				p.i += 2
			} else if p.isKw("NULLS", "LAST") {
				nl = true
				p.i += 2
			}
			w.order, w.desc, w.nullsLast = append(w.order, x), append(w.desc, desc), append(w.nullsLast, nl)
			if !p.isOp(",") {
				break
			}
			p.i++
		}
	}
	// The default frame: the whole partition without ORDER BY, else
	// RANGE UNBOUNDED PRECEDING to the current row's last peer.
	w.frame = frame{startUnb: true, endUnb: len(w.order) == 0}
	if p.isKw("ROWS") || p.isKw("RANGE") {
		if err := q.parseFrame(p, w); err != nil {
			return nil, err
		}
	}
	if t := p.tok(); !t.EOF {
		return nil, p.errf(t.Pos, "Syntax error: Unexpected %s", describe(t))
	}
	// The function.
	inner := call[2 : len(call)-1]
	switch {
	case aggFuncs[w.name]:
		a, err := q.newAgg(Span{toks: call}, "analytic")
		if err != nil {
			return nil, err
		}
		if a.distinct && len(w.order) > 0 {
			return nil, notSupported(q.src, pos, "DISTINCT in an analytic function with ORDER BY")
		}
		w.agg, w.typ = a, a.typ
		w.args = a.args
		return w, nil
	case analyticFuncs[w.name]:
	default:
		return nil, notSupported(q.src, pos, "analytic function "+w.name)
	}
	if len(w.order) == 0 && orderRequired[w.name] {
		return nil, q.errf(overSpecPos(q.src, call), "Window ORDER BY is required for analytic function %s", strings.ToLower(w.name))
	}
	if len(w.order) > 0 && orderRefused[w.name] {
		return nil, q.errf(overSpecPos(q.src, call), "Window ORDER BY is not allowed for analytic function %s", strings.ToLower(w.name))
	}
	args, rest := splitArgs(inner)
	if len(rest) > 0 {
		if err := q.nullHandling(w, rest); err != nil {
			return nil, err
		}
	}
	if len(args) == 1 && len(args[0]) == 0 {
		args = nil
	}
	for _, a := range args {
		if len(a) == 0 {
			return nil, q.errf(pos, "Syntax error: Unexpected \",\"")
		}
		x, err := q.compileWindowArg(Span{toks: a})
		if err != nil {
			return nil, err
		}
		w.args = append(w.args, x)
	}
	nargs := func(lo, hi int, sig string) error {
		if len(w.args) < lo || len(w.args) > hi {
			var types []string
			for _, x := range w.args {
				types = append(types, x.Type())
			}
			return q.errf(pos, "No matching signature for analytic function %s for argument types: %s. Supported signature: %s", w.name, strings.Join(types, ", "), sig)
		}
		return nil
	}
	// constInt reads argument k, an INT64 literal or parameter, as
	// ZetaSQL checks the options of NTILE's, NTH_VALUE's (non-NULL, at
	// least 1) and LAG/LEAD's offset (non-NULL).
	constInt := func(k int, what string) (int64, error) {
		x := w.args[k]
		prefix := fmt.Sprintf("Argument %d to %s", k+1, w.name)
		if w.name == "NTILE" {
			prefix = "The argument to NTILE"
		}
		if len(x.Columns()) > 0 || x.Type() != "INT64" && x.Type() != "NULL" {
			return 0, q.errf(args[k][0].Pos, "%s must be a literal or query parameter", prefix)
		}
		v, err := x.Values(context.Background(), nil, 1)
		if err != nil {
			return 0, err
		}
		n, ok := v[0].(int64)
		switch {
		case !ok:
			return 0, q.errf(args[k][0].Pos, "%s must be non-NULL", prefix)
		case what == "positive" && n < 1:
			return 0, q.errf(args[k][0].Pos, "%s must be at least 1", prefix)
		case n < 0:
			return 0, q.errf(args[k][0].Pos, "The %s argument to %s must be non-negative", ordinalWord(k+1), w.name)
		}
		return n, nil
	}
	frameless := func() error {
		if w.frame.explicitFrame {
			return q.errf(pos, "Window framing clause is not allowed for analytic function %s", strings.ToLower(w.name))
		}
		return nil
	}
	switch w.name {
	case "ROW_NUMBER", "RANK", "DENSE_RANK":
		if err := nargs(0, 0, w.name+"()"); err != nil {
			return nil, err
		}
		w.typ = "INT64"
		return w, frameless()
	case "PERCENT_RANK", "CUME_DIST":
		if err := nargs(0, 0, w.name+"()"); err != nil {
			return nil, err
		}
		w.typ = "FLOAT64"
		return w, frameless()
	case "NTILE":
		if err := nargs(1, 1, "NTILE(INT64)"); err != nil {
			return nil, err
		}
		n, err := constInt(0, "positive")
		if err != nil {
			return nil, err
		}
		w.offset, w.typ = n, "INT64"
		return w, frameless()
	case "LAG", "LEAD":
		if err := nargs(1, 3, w.name+"(T, [INT64], [T])"); err != nil {
			return nil, err
		}
		w.offset, w.typ = 1, w.args[0].Type()
		if len(w.args) >= 2 {
			n, err := constInt(1, "non-negative")
			if err != nil {
				return nil, err
			}
			w.offset = n
		}
		if len(w.args) == 3 {
			if err := q.lagDefault(w, args[2], pos); err != nil {
				return nil, err
			}
		}
		if w.typ == "NULL" {
			w.typ = "INT64"
		}
		return w, frameless()
	case "PERCENTILE_CONT", "PERCENTILE_DISC":
		if err := q.checkPercentile(w, args, pos); err != nil {
			return nil, err
		}
		return w, frameless()
	case "FIRST_VALUE", "LAST_VALUE":
		if err := nargs(1, 1, w.name+"(T)"); err != nil {
			return nil, err
		}
	case "NTH_VALUE":
		if err := nargs(2, 2, "NTH_VALUE(T, INT64)"); err != nil {
			return nil, err
		}
		n, err := constInt(1, "positive")
		if err != nil {
			return nil, err
		}
		w.offset = n
	}
	w.typ = w.args[0].Type()
	if w.typ == "NULL" {
		w.typ = "INT64"
	}
	return w, nil
}

func ordinalWord(n int) string {
	return map[int]string{1: "first", 2: "second", 3: "third"}[n]
}

func (q *selectQuery) compileWindowArg(sp Span) (*filter.Scalar, error) {
	if at, ok := hasWindow(sp.toks); ok {
		return nil, q.errf(at, "Analytic function cannot be an argument of another analytic function")
	}
	if q.winCompile != nil {
		return q.winCompile(sp)
	}
	if at, ok := findAgg(sp.toks); ok {
		return nil, q.errf(at, "Aggregate function %s not allowed in an analytic function of a query without GROUP BY or aggregation", strings.ToUpper(sp.toks[indexAt(sp.toks, at)].Text))
	}
	return q.compile(sp)
}

// windowRelation serves the rows of in that where keeps, with the
// windows' columns added.
func (q *selectQuery) windowRelation(in *relation, where *filter.Scalar) *relation {
	out := &relation{schema: &schema.Schema{}, vars: in.vars}
	out.cols = append(out.cols, in.cols...)
	out.schema.Fields = append(out.schema.Fields, in.schema.Fields...)
	for _, w := range q.windows {
		out.cols = append(out.cols, relCol{internal: w.col, name: w.col, unq: true})
		out.schema.Fields = append(out.schema.Fields, resultField(w.col, w.typ))
	}
	out.scan = func(ctx context.Context, cols []string, fn func(arrow.RecordBatch, int) error) error {
		// Input columns: those asked for and those the windows read.
		exprs := []*filter.Scalar{where}
		for _, w := range q.windows {
			exprs = append(exprs, w.args...)
			exprs = append(exprs, w.partition...)
			exprs = append(exprs, w.order...)
			if w.agg != nil {
				exprs = append(exprs, w.agg.order...)
			}
		}
		need := referenced(exprs)
		seen := map[string]bool{}
		for _, c := range need {
			seen[strings.ToLower(c)] = true
		}
		for _, c := range cols {
			if in.index(c) >= 0 && !seen[strings.ToLower(c)] {
				seen[strings.ToLower(c)] = true
				need = append(need, c)
			}
		}
		parts := make([][]arrow.Array, len(need))
		n := 0
		err := in.scan(ctx, need, func(rec arrow.RecordBatch, m int) error {
			keep, err := selection(ctx, where, rec, m)
			if err != nil {
				return err
			}
			var idx []int32
			for i, k := range keep {
				if k {
					idx = append(idx, int32(i))
				}
			}
			n += len(idx)
			if len(need) == 0 || len(idx) == 0 {
				return nil
			}
			ia := indices(idx)
			defer ia.Release()
			for k := range need {
				a, err := takeArray(ctx, rec.Column(k), ia)
				if err != nil {
					return err
				}
				parts[k] = append(parts[k], a)
				// Charged twice: the parts, then their concatenation
				// (which releases the parts' charge).
				if err := q.chargeArrays([]arrow.Array{a, a}, "analytic OVER() clauses"); err != nil {
					return err
				}
			}
			return nil
		})
		defer func() {
			for _, p := range parts {
				for _, a := range p {
					a.Release()
				}
			}
		}()
		if err != nil {
			return err
		}
		var fields []arrow.Field
		var arrs []arrow.Array
		defer func() {
			for _, a := range arrs {
				a.Release()
			}
		}()
		for k, c := range need {
			f := schema.FieldToArrow(in.field(in.index(c)))
			var a arrow.Array
			if len(parts[k]) == 0 {
				a = array.MakeArrayOfNull(memory.DefaultAllocator, f.Type, 0)
			} else if a, err = array.Concatenate(parts[k], memory.DefaultAllocator); err != nil {
				return err
			}
			// The parts are copied: let them go (and their charge).
			q.release(arrowBytes(parts[k]))
			for _, pa := range parts[k] {
				pa.Release()
			}
			parts[k] = nil
			f.Name, f.Type = c, a.DataType()
			fields = append(fields, f)
			arrs = append(arrs, a)
		}
		var rec arrow.RecordBatch
		if len(need) > 0 {
			rec = array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, int64(n))
			defer rec.Release()
		}
		// The windows' values.
		wvals := map[string]arrow.Array{}
		defer func() {
			for _, a := range wvals {
				a.Release()
			}
		}()
		for _, w := range q.windows {
			a, err := w.compute(ctx, rec, n, out.field(out.index(w.col)), q)
			if err != nil {
				return err
			}
			wvals[strings.ToLower(w.col)] = a
			if err := q.chargeArrays([]arrow.Array{a}, "analytic OVER() clauses"); err != nil {
				return err
			}
		}
		if n == 0 {
			return nil
		}
		if len(cols) == 0 {
			return fn(nil, n)
		}
		// The record asked for.
		var ofields []arrow.Field
		var oarrs []arrow.Array
		for _, c := range cols {
			if a, ok := wvals[strings.ToLower(c)]; ok {
				a.Retain()
				ofields = append(ofields, arrow.Field{Name: c, Type: a.DataType(), Nullable: true})
				oarrs = append(oarrs, a)
				continue
			}
			for k, nc := range need {
				if strings.EqualFold(nc, c) {
					arrs[k].Retain()
					ofields = append(ofields, fields[k])
					oarrs = append(oarrs, arrs[k])
				}
			}
		}
		orec := array.NewRecordBatch(arrow.NewSchema(ofields, nil), oarrs, int64(n))
		for _, a := range oarrs {
			a.Release()
		}
		defer orec.Release()
		return fn(orec, n)
	}
	return out
}

// compute evaluates the window function over the n rows of rec: a
// column of the window's type (field f).
func (w *window) compute(ctx context.Context, rec arrow.RecordBatch, n int, f *schema.Field, q *selectQuery) (arrow.Array, error) {
	eval := func(xs []*filter.Scalar) ([][]any, error) {
		out := make([][]any, len(xs))
		for k, x := range xs {
			v, err := x.Values(ctx, rec, n)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	}
	// Partitions in order of first row (window_part.go), and the sort
	// keys; charged while the window is computed.
	prows, pstart, held, work, err := w.partitions(ctx, rec, n)
	if err != nil {
		return nil, err
	}
	// What the partitioning held at its peak, then let go.
	if err := q.charge(held+work, "analytic OVER() clauses"); err != nil {
		return nil, err
	}
	q.release(work)
	okeys, kheld, err := w.sortCols(ctx, rec, n)
	if err != nil {
		q.release(held)
		return nil, err
	}
	o := newWinOut(w.name, n)
	if err := q.charge(kheld+o.bytes(), "analytic OVER() clauses"); err != nil {
		q.release(held)
		return nil, err
	}
	held += kheld + o.bytes()
	defer q.release(held)
	if testHookWindowHeld != nil {
		testHookWindowHeld(q.mem)
	}
	var rangeKeys []any // a RANGE frame's offsets compare the first key's values
	if w.frame.hasRangeOffset() && len(okeys) > 0 {
		rangeKeys = make([]any, n)
		for r := range rangeKeys {
			rangeKeys[r] = okeys[0].value(r)
		}
	}
	args, err := eval(w.args)
	if err != nil {
		return nil, err
	}
	var aggVals [][]any // aggregate arguments, then its ORDER BY keys
	if w.agg != nil {
		if aggVals, err = eval(append(append([]*filter.Scalar(nil), w.agg.args...), w.agg.order...)); err != nil {
			return nil, err
		}
	}
	// cmp orders two rows by the window's ORDER BY: NULLs first unless
	// NULLS LAST (DESC defaults to NULLS LAST), whatever the direction.
	cmp := func(a, b int) int {
		for k, c := range okeys {
			xn, yn := c.null.has(a), c.null.has(b)
			var v int
			switch {
			case xn && yn:
			case xn || yn:
				v = -1
				if xn == w.nullsLast[k] {
					v = 1
				}
			default:
				v = c.compare(a, b)
				if w.desc[k] {
					v = -v
				}
			}
			if v != 0 {
				return v
			}
		}
		return 0
	}
	out := o.vals
	var rows []int // the partition's rows, sorted (reused)
	for p := 0; p+1 < len(pstart); p++ {
		rows = rows[:0]
		for _, r := range prows[pstart[p]:pstart[p+1]] {
			rows = append(rows, int(r))
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// The partition's rows are in input order: ties broken by it,
		// pdqsort gives the stable order (sort.SliceStable's symmerge,
		// O(n log² n) compares, was most of a window's time).
		slices.SortFunc(rows, func(a, b int) int {
			if c := cmp(a, b); c != 0 {
				return c
			}
			return a - b
		})
		m := len(rows)
		// peerEnd[i]: one past the last peer of position i; peerStart[i].
		peerStart, peerEnd := make([]int, m), make([]int, m)
		for i := 0; i < m; {
			j := i + 1
			for j < m && cmp(rows[i], rows[j]) == 0 {
				j++
			}
			for k := i; k < j; k++ {
				peerStart[k], peerEnd[k] = i, j
			}
			i = j
		}
		// bounds of the frame of position i: [lo, hi)
		bounds := func(i int) (int, int) {
			f := w.frame
			lo, hi := 0, m
			if f.rows {
				// Offsets reach INT64's limits: clamp them to the
				// partition before adding, so the bounds cannot wrap.
				if !f.startUnb {
					lo = i + int(max(min(f.start, int64(m)), -int64(m)))
				}
				if !f.endUnb {
					hi = i + int(max(min(f.end, int64(m)), -int64(m))) + 1
				}
			} else if f.hasRangeOffset() {
				lo, hi = rangeBounds(f, rangeKeys, rows, w.desc[0], i, peerStart[i], peerEnd[i])
			} else {
				if !f.startUnb {
					lo = peerStart[i]
				}
				if !f.endUnb {
					hi = peerEnd[i]
				}
			}
			return max(lo, 0), min(hi, m)
		}
		switch w.name {
		case "ROW_NUMBER":
			for i, r := range rows {
				o.ints[r] = int64(i + 1)
			}
			continue
		case "RANK", "DENSE_RANK", "PERCENT_RANK", "CUME_DIST":
			dense := int64(0)
			for i, r := range rows {
				if peerStart[i] == i {
					dense++
				}
				switch w.name {
				case "RANK":
					o.ints[r] = int64(peerStart[i] + 1)
				case "DENSE_RANK":
					o.ints[r] = dense
				case "PERCENT_RANK":
					if m == 1 {
						o.floats[r] = 0.0
					} else {
						o.floats[r] = float64(peerStart[i]) / float64(m-1)
					}
				case "CUME_DIST":
					o.floats[r] = float64(peerEnd[i]) / float64(m)
				}
			}
			continue
		case "NTILE":
			// BigQuery's buckets: the first m % k buckets get one more row.
			k := int(w.offset)
			size, extra := m/k, m%k
			b, left := 1, size
			if extra > 0 {
				left++
			}
			for _, r := range rows {
				if left == 0 {
					b++
					left = size
					if b <= extra {
						left++
					}
				}
				o.ints[r] = int64(b)
				left--
			}
			continue
		case "LAG", "LEAD":
			from := w.args[0].Type()
			for i, r := range rows {
				j := i - int(w.offset)
				if w.name == "LEAD" {
					j = i + int(w.offset)
				}
				if j >= 0 && j < m {
					out[r] = coerce(args[0][rows[j]], from, w.typ)
				} else {
					out[r] = w.lagDef
				}
			}
			if err := chargeOut(q, out, rows); err != nil {
				return nil, err
			}
			continue
		case "PERCENTILE_CONT", "PERCENTILE_DISC":
			v := w.percentile(args[0], rows)
			for _, r := range rows {
				out[r] = v
			}
			if err := chargeOut(q, out, rows); err != nil {
				return nil, err
			}
			continue
		case "FIRST_VALUE", "LAST_VALUE", "NTH_VALUE":
			w.navigate(args[0], rows, bounds, out)
			if err := chargeOut(q, out, rows); err != nil {
				return nil, err
			}
			continue
		}
		// An aggregate over the frame: running when the frame starts at
		// the partition's start and ends at the row (or its peers).
		running := w.frame.startUnb && !w.frame.endUnb && (!w.frame.rows || w.frame.end == 0)
		if running && w.agg.name != "STRING_AGG" {
			var s acc
			next := 0
			for i, r := range rows {
				_, hi := bounds(i)
				for ; next < hi; next++ {
					if err := w.agg.add(&s, aggVals, rows[next], q); err != nil {
						return nil, err
					}
				}
				v, err := q.aggResult(w.agg.result(&s))
				if err != nil {
					return nil, err
				}
				out[r] = v
				if err := chargeOut(q, out, []int{r}); err != nil {
					return nil, err
				}
			}
			continue
		}
		var whole any
		haveWhole := false
		for i, r := range rows {
			lo, hi := bounds(i)
			if lo == 0 && hi == m && haveWhole {
				out[r] = whole
				if err := chargeOut(q, out, []int{r}); err != nil {
					return nil, err
				}
				continue
			}
			var s acc
			for k := lo; k < hi; k++ {
				if err := w.agg.add(&s, aggVals, rows[k], q); err != nil {
					return nil, err
				}
			}
			v, err := q.aggResult(w.agg.result(&s))
			if err != nil {
				return nil, err
			}
			out[r] = v
			if err := chargeOut(q, out, []int{r}); err != nil {
				return nil, err
			}
			if lo == 0 && hi == m {
				whole, haveWhole = out[r], true
			}
		}
	}
	return o.array(f)
}

// chargeOut charges the window values of rows as they are computed: an
// aggregate over a growing frame (STRING_AGG, ARRAY_AGG OVER (ORDER BY
// ...)) makes a value per row as large as its frame, quadratic in the
// partition, and the result column copies each value.
func chargeOut(q *selectQuery, out []any, rows []int) error {
	var n int64
	for _, r := range rows {
		n += cellBytes(out[r])
	}
	return q.charge(n, "analytic OVER() clauses")
}

// windowsOverGroups computes the windows over the groups HAVING keeps
// (rec's first postBase columns) and returns the kept groups with the
// windows' columns added.
func (q *selectQuery) windowsOverGroups(ctx context.Context, rec arrow.RecordBatch, keep []bool, post *schema.Schema, postBase int) (arrow.RecordBatch, int, error) {
	var idx []int32
	for i, k := range keep {
		if k {
			idx = append(idx, int32(i))
		}
	}
	n := len(idx)
	ia := indices(idx)
	defer ia.Release()
	var fields []arrow.Field
	var arrs []arrow.Array
	defer func() {
		for _, a := range arrs {
			a.Release()
		}
	}()
	// The groups' columns, and the correlated subqueries' after them
	// (correlated_groups.go), which the windows may read.
	for c := 0; c < int(rec.NumCols()); c++ {
		a, err := takeArray(ctx, rec.Column(c), ia)
		if err != nil {
			return nil, 0, err
		}
		arrs = append(arrs, a)
		fields = append(fields, rec.Schema().Field(c))
	}
	base := array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, int64(n))
	defer base.Release()
	allF := append([]arrow.Field(nil), fields...)
	allA := append([]arrow.Array(nil), arrs...)
	for k, w := range q.windows {
		f := post.Fields[postBase+k]
		a, err := w.compute(ctx, base, n, f, q)
		if err != nil {
			return nil, 0, err
		}
		arrs = append(arrs, a) // released with the others
		allF = append(allF, arrow.Field{Name: f.Name, Type: a.DataType(), Nullable: true})
		allA = append(allA, a)
	}
	return array.NewRecordBatch(arrow.NewSchema(allF, nil), allA, int64(n)), n, nil
}
