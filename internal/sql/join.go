package sql

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
)

// A join reads both inputs whole (only the columns the query needs),
// then pairs rows: by a hash table on the right input's keys when the ON
// condition has equalities between the two sides (or USING names
// columns), by every pair otherwise; the rest of the ON condition is
// evaluated over the candidate pairs. A NULL (or NaN) key never matches.
// Outer joins add the unmatched rows of the preserved side(s), NULL on
// the other. Pairs are produced in batches of joinBatch rows, so a large
// join streams into the operator above it.

const joinBatch = 8192

// joinCol says where a column of the join's output comes from.
type joinCol struct {
	side  int // 0 left, 1 right, 2 a USING column (both)
	index int // in the side's relation (side 2: the left one)
	right int // side 2: the right one
	// side 2 of a FULL JOIN whose inputs' types differ: the key
	// expressions (k in lkeys and rkeys) cast each side to the merged
	// column's type.
	cast bool
	key  int
}

type joinRel struct {
	*runner
	j           *JoinRef
	left, right *relation
	out         *relation
	src         []joinCol
	on          *filter.Scalar
	// lkeys[k] and rkeys[k] are one equality; residual says whether the
	// ON condition must still be evaluated over the pairs they select.
	lkeys, rkeys []*filter.Scalar
	residual     bool
}

func (r *runner) join(ctx context.Context, j *JoinRef, e *env) (*relation, error) {
	left, err := r.from(ctx, j.Left, e)
	if err != nil {
		return nil, err
	}
	var right *relation // the right input, when an UNNEST has made it
	if u, ok := j.Right.(*UnnestRef); ok {
		parts, _ := u.Expr.path()
		if u.Alias == "" && parts != nil {
			u.Alias = parts[len(parts)-1]
		}
		joined, rel, err := r.unnestRight(j, left, u, parts, r.text(u.Expr.pos(), u.Expr.end()), e)
		if err != nil || joined != nil {
			return joined, err
		}
		right = rel
	}
	if t, ok := j.Right.(*TableRef); ok && len(t.Path) > 1 && (left.vars[strings.ToLower(t.Path[0])] || left.elemAlias(t.Path[0])) {
		// GoogleSQL's implicit UNNEST: a path whose first name is a
		// range variable in scope (a table's alias or an earlier
		// UNNEST's element) is that item's array, before any table of
		// that name (FROM t, t.arr is FROM t, UNNEST(t.arr); FROM t,
		// t.s.arr the array field arr of the STRUCT column s; FROM t,
		// t.recs AS r, r.arr the array field of each element r).
		if t.AsOf != nil {
			return nil, r.errf(t.AsOf.pos(), "FOR SYSTEM_TIME AS OF cannot be used with an array path")
		}
		if _, _, err := left.resolve(r.src, t.Path, t.Name.Pos); err != nil {
			return nil, err
		}
		u := &UnnestRef{Alias: t.Alias, Offset: t.Offset, OffsetAlias: t.OffsetAlias, Pos: t.Name.Pos}
		if u.Alias == "" {
			u.Alias = t.Path[len(t.Path)-1]
		}
		quoted := make([]string, len(t.Path))
		for i, p := range t.Path {
			quoted[i] = quoteIdent(p)
		}
		joined, _, err := r.unnestRight(j, left, u, t.Path, exprText{at: t.Name.Pos, text: strings.Join(quoted, ".")}, e)
		return joined, err
	}
	if t, ok := j.Right.(*TableRef); ok && j.Kind != "CROSS" && j.On == nil && len(j.Using) == 0 {
		// The parser let a path go without ON for an array path.
		return nil, r.errf(t.Name.Pos, "Syntax error: Expected keyword ON or keyword USING after table %s", strings.Join(t.Path, "."))
	}
	if right == nil {
		if right, err = r.from(ctx, j.Right, e); err != nil {
			return nil, err
		}
	}
	for v := range right.vars {
		if left.vars[v] {
			return nil, r.errf(j.Right.fromPos(), "Duplicate table alias %s in the same FROM clause", v)
		}
	}
	jr := &joinRel{runner: r, j: j, left: left, right: right}
	out := &relation{schema: &schema.Schema{}, vars: map[string]bool{}}
	for v := range left.vars {
		out.vars[v] = true
	}
	for v := range right.vars {
		out.vars[v] = true
	}
	add := func(c relCol, f *schema.Field, src joinCol) {
		c.internal = fmt.Sprintf("__c%d", len(out.cols))
		nf := *f
		nf.Name = c.internal
		out.cols = append(out.cols, c)
		out.schema.Fields = append(out.schema.Fields, &nf)
		jr.src = append(jr.src, src)
	}
	usedL, usedR := map[int]bool{}, map[int]bool{}
	var keyTypes []string // of each USING comparison
	for _, u := range j.Using {
		li, lerr := sideColumn(left, u.name)
		ri, rerr := sideColumn(right, u.name)
		if lerr {
			return nil, r.errf(u.pos, "Column %s in USING clause not found on left side of join", u.name)
		}
		if rerr {
			return nil, r.errf(u.pos, "Column %s in USING clause not found on right side of join", u.name)
		}
		lf, rf := left.field(li), right.field(ri)
		st, err := usingType(r, u, lf, rf)
		if err != nil {
			return nil, err
		}
		usedL[li], usedR[ri] = true, true
		keyTypes = append(keyTypes, st)
		// The merged column is the left one for INNER and LEFT JOIN, the
		// right one for RIGHT JOIN, each of its own type, and for FULL
		// JOIN COALESCE(left, right) of their supertype.
		f, src := lf, joinCol{side: 2, index: li, right: ri, key: len(keyTypes) - 1}
		switch {
		case j.Kind == "RIGHT":
			f = rf
		case j.Kind == "FULL" && st != filter.FieldTypeName(lf):
			f = resultField(lf.Name, st)
			src.cast = true
		}
		add(relCol{name: left.cols[li].name, star: true, unq: true}, f, src)
	}
	for i, c := range left.cols {
		if usedL[i] {
			c.star, c.unq = false, false
		}
		add(c, left.field(i), joinCol{side: 0, index: i})
	}
	for i, c := range right.cols {
		if usedR[i] {
			c.star, c.unq = false, false
		}
		add(c, right.field(i), joinCol{side: 1, index: i})
	}
	jr.out = out
	// Inside a subquery, ON may name the enclosing blocks' columns.
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
	if j.On != nil {
		if at, ok := findAgg(j.On.toks); ok {
			return nil, r.errf(at, "Aggregate function %s not allowed in JOIN ON clause", strings.ToUpper(j.On.toks[indexAt(j.On.toks, at)].Text))
		}
		if jr.on, err = r.compileText(r.text(j.On.pos(), j.On.end()), out.schema, &scope{env: e, outer: out, join: true}, names); err != nil {
			return nil, err
		}
		if t := jr.on.Type(); t != "BOOL" && t != "NULL" {
			return nil, r.errf(j.On.pos(), "JOIN ON clause should return type BOOL, but returns %s", t)
		}
		jr.residual = false
		for _, conj := range conjuncts(j.On.toks) {
			if !jr.equiKey(conj, names) {
				jr.residual = true
			}
		}
	}
	for k := range j.Using {
		key := func(side, i int) (*filter.Scalar, error) {
			text := colText(jr.outName(side, i))
			if t := filter.FieldTypeName(out.field(out.index(jr.outName(side, i)))); t != keyTypes[k] {
				text.text = "CAST(" + text.text + " AS " + keyTypes[k] + ")"
			}
			return r.compileText(text, out.schema, nil)
		}
		lx, err := key(0, jr.src[k].index)
		if err != nil {
			return nil, err
		}
		rx, err := key(1, jr.src[k].right)
		if err != nil {
			return nil, err
		}
		jr.lkeys, jr.rkeys = append(jr.lkeys, lx), append(jr.rkeys, rx)
	}
	out.scan = jr.scan
	return out, nil
}

// usingType is the type a USING column's two sides are compared at:
// their common supertype (GoogleSQL's conversion rules: INT64 ->
// NUMERIC -> BIGNUMERIC -> FLOAT64, DATE -> DATETIME). Types without
// one, and types without equality, are ZetaSQL's errors at the name.
func usingType(r *runner, u nameAt, lf, rf *schema.Field) (string, error) {
	lt, rt := filter.FieldTypeName(lf), filter.FieldTypeName(rf)
	for _, f := range []*schema.Field{lf, rf} {
		if !equalityField(f) {
			return "", r.errf(u.pos, "Column '%s' in USING has types that do not support equality comparison: %s", u.name, filter.FieldTypeName(f))
		}
	}
	if lt == rt {
		return lt, nil
	}
	if typeKind(lt) == "STRUCT" && typeKind(rt) == "STRUCT" {
		return "", notSupported(r.src, u.pos, "USING columns of different STRUCT types")
	}
	st, ok := supertype(lt, rt)
	if !ok {
		return "", r.errf(u.pos, "Column '%s' in USING has incompatible types that cannot be directly compared using equality on either side of the join: %s and %s", u.name, lt, rt)
	}
	return st, nil
}

// equalityField reports whether a column's values can be compared with
// = (GoogleSQL: not ARRAY, JSON, GEOGRAPHY or RANGE, nor a STRUCT with
// such a field).
func equalityField(f *schema.Field) bool {
	if f.EffectiveMode() == schema.Repeated {
		return false
	}
	switch canonical(f.Type) {
	case schema.JSON, schema.Geography, schema.Range:
		return false
	case schema.Record:
		for _, g := range f.Fields {
			if !equalityField(g) {
				return false
			}
		}
	}
	return true
}

func canonical(t schema.Type) schema.Type {
	c, _ := schema.CanonicalType(string(t))
	return c
}

// sideColumn finds an unqualified column of a join input; bad if none or
// ambiguous.
func sideColumn(rel *relation, name string) (int, bool) {
	found := -1
	for i, c := range rel.cols {
		if c.unq && strings.EqualFold(c.name, name) {
			if found >= 0 {
				return 0, true
			}
			found = i
		}
	}
	return found, found < 0
}

// conjuncts splits an ON condition at its top-level ANDs (not the AND of
// BETWEEN).
func conjuncts(toks []filter.Token) [][]filter.Token {
	var out [][]filter.Token
	depth, between, start := 0, 0, 0
	for i, t := range toks {
		switch {
		case t.Op && (t.Text == "(" || t.Text == "["):
			depth++
		case t.Op && (t.Text == ")" || t.Text == "]"):
			depth--
		case t.Ident && strings.EqualFold(t.Text, "CASE"):
			depth++
		case t.Ident && strings.EqualFold(t.Text, "END"):
			depth--
		case depth == 0 && t.Ident && strings.EqualFold(t.Text, "BETWEEN"):
			between++
		case depth == 0 && t.Ident && strings.EqualFold(t.Text, "AND"):
			if between > 0 {
				between--
				continue
			}
			out = append(out, toks[start:i])
			start = i + 1
		}
	}
	return append(out, toks[start:])
}

// equiKey records conj as a hash key if it is a = b with a over one side
// and b over the other, of one type.
func (jr *joinRel) equiKey(conj []filter.Token, names filter.Option) bool {
	eq, depth := -1, 0
	for i, t := range conj {
		switch {
		case t.Op && (t.Text == "(" || t.Text == "["):
			depth++
		case t.Op && (t.Text == ")" || t.Text == "]"):
			depth--
		case t.Ident && (strings.EqualFold(t.Text, "CASE") || strings.EqualFold(t.Text, "END")),
			t.Ident && (strings.EqualFold(t.Text, "OR") || strings.EqualFold(t.Text, "NOT")) && depth == 0:
			return false
		case depth == 0 && t.Op && t.Text == "=":
			if eq >= 0 {
				return false
			}
			eq = i
		case depth == 0 && t.Op && t.Text != "." && t.Text != "(" && t.Text != ")":
			// another operator at top level (a = b + 1 is fine to key on
			// only if we parse it; keep it simple and general)
		}
	}
	if eq <= 0 || eq == len(conj)-1 {
		return false
	}
	for i := range conj {
		if subqueryEnd(conj, i) > 0 || conj[i].Ident && strings.EqualFold(conj[i].Text, "EXISTS") {
			return false // evaluated once, in the whole condition
		}
	}
	a, erra := jr.compileText(jr.text(conj[0].Pos, conj[eq-1].End), jr.out.schema, nil, names)
	b, errb := jr.compileText(jr.text(conj[eq+1].Pos, conj[len(conj)-1].End), jr.out.schema, nil, names)
	if erra != nil || errb != nil || a.Type() != b.Type() {
		return false
	}
	switch a.Type() {
	case "INT64", "STRING", "BYTES", "DATE", "DATETIME", "TIME", "TIMESTAMP", "BOOL", "NUMERIC", "BIGNUMERIC", "FLOAT64":
	default:
		return false
	}
	sa, sb := jr.sideOf(a), jr.sideOf(b)
	switch {
	case sa == 0 && sb == 1:
		jr.lkeys, jr.rkeys = append(jr.lkeys, a), append(jr.rkeys, b)
	case sa == 1 && sb == 0:
		jr.lkeys, jr.rkeys = append(jr.lkeys, b), append(jr.rkeys, a)
	default:
		return false
	}
	return true
}

// sideOf says which input an expression reads: 0 left, 1 right, -1 both
// or none.
func (jr *joinRel) sideOf(x *filter.Scalar) int {
	side := -1
	for _, c := range x.Columns() {
		s := jr.src[jr.out.index(c)].side
		if s == 2 || side >= 0 && s != side {
			return -1
		}
		side = s
	}
	return side
}

// joinSide is one input read whole: its arrays (named by the join's
// output columns) and its row count.
type joinSide struct {
	n    int
	cols []string // output internal names
	arrs []arrow.Array
	rec  arrow.RecordBatch // the arrays as a record (nil without columns)
}

func (s *joinSide) release() {
	for _, a := range s.arrs {
		a.Release()
	}
	if s.rec != nil {
		s.rec.Release()
	}
}

// read reads the input rel with the side's columns (in rel's internal
// names, in[k] named out[k] in the join).
func (jr *joinRel) read(ctx context.Context, rel *relation, in, out []string) (*joinSide, error) {
	s := &joinSide{cols: out}
	parts := make([][]arrow.Array, len(in))
	err := rel.scan(ctx, in, func(rec arrow.RecordBatch, n int) error {
		s.n += n
		if len(in) > 0 {
			if err := jr.chargeArrays(rec.Columns()[:len(in)], "JOIN operations"); err != nil {
				return err
			}
		}
		for k := range in {
			a := rec.Column(k)
			a.Retain()
			parts[k] = append(parts[k], a)
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
		return nil, err
	}
	var fields []arrow.Field
	for k, c := range in {
		f := schema.FieldToArrow(rel.field(rel.index(c)))
		var a arrow.Array
		if len(parts[k]) == 0 {
			a = array.MakeArrayOfNull(memory.DefaultAllocator, f.Type, 0)
		} else {
			if a, err = array.Concatenate(parts[k], memory.DefaultAllocator); err != nil {
				return nil, err
			}
			f.Type = a.DataType()
		}
		f.Name = out[k]
		fields = append(fields, f)
		s.arrs = append(s.arrs, a)
	}
	if len(in) > 0 {
		s.rec = array.NewRecordBatch(arrow.NewSchema(fields, nil), s.arrs, int64(s.n))
	}
	return s, nil
}

func (jr *joinRel) scan(ctx context.Context, cols []string, fn func(arrow.RecordBatch, int) error) error {
	// The columns each side must provide: those asked for, those of the
	// ON condition and of the keys.
	need := [2][]int{}
	seen := [2]map[int]bool{{}, {}}
	want := func(side, i int) {
		if !seen[side][i] {
			seen[side][i] = true
			need[side] = append(need[side], i)
		}
	}
	kind := jr.j.Kind
	for _, c := range cols {
		s := jr.src[jr.out.index(c)]
		switch s.side {
		case 0, 1:
			want(s.side, s.index)
		case 2:
			want(0, s.index)
			want(1, s.right)
		}
	}
	exprs := append(append([]*filter.Scalar{jr.on}, jr.lkeys...), jr.rkeys...)
	for _, c := range referenced(exprs) {
		s := jr.src[jr.out.index(c)]
		want(s.side, s.index)
	}
	sides := [2]*joinSide{}
	for side, rel := range []*relation{jr.left, jr.right} {
		var in, out []string
		for _, i := range need[side] {
			in = append(in, rel.cols[i].internal)
			out = append(out, jr.outName(side, i))
		}
		s, err := jr.read(ctx, rel, in, out)
		if err != nil {
			return err
		}
		defer s.release()
		sides[side] = s
	}
	L, R := sides[0], sides[1]
	em := &joinEmitter{jr: jr, ctx: ctx, cols: cols, L: L, R: R, fn: fn,
		matchedL: make([]bool, L.n), matchedR: make([]bool, R.n)}
	defer em.release()
	if len(jr.lkeys) > 0 {
		rk, err := keyStrings(ctx, jr.rkeys, R)
		if err != nil {
			return err
		}
		table := map[string][]int32{}
		for i, k := range rk {
			if k != "" {
				table[k] = append(table[k], int32(i))
			}
		}
		lk, err := keyStrings(ctx, jr.lkeys, L)
		if err != nil {
			return err
		}
		for i, k := range lk {
			if k == "" {
				continue
			}
			for _, j := range table[k] {
				if err := em.pair(int32(i), j); err != nil {
					return err
				}
			}
		}
	} else {
		for i := 0; i < L.n; i++ {
			for j := 0; j < R.n; j++ {
				if err := em.pair(int32(i), int32(j)); err != nil {
					return err
				}
			}
		}
	}
	if err := em.flush(); err != nil {
		return err
	}
	if kind == "LEFT" || kind == "FULL" {
		for i, m := range em.matchedL {
			if !m {
				if err := em.emit(int32(i), -1); err != nil {
					return err
				}
			}
		}
	}
	if kind == "RIGHT" || kind == "FULL" {
		for j, m := range em.matchedR {
			if !m {
				if err := em.emit(-1, int32(j)); err != nil {
					return err
				}
			}
		}
	}
	return em.flushOut()
}

// outName is the join output's internal name of a side's column.
func (jr *joinRel) outName(side, i int) string {
	for k, s := range jr.src {
		if s.side == side && s.index == i {
			return jr.out.cols[k].internal
		}
	}
	return ""
}

// keyStrings evaluates the key expressions over a side: one string per
// row, "" when a key is NULL or NaN (such a row matches nothing).
func keyStrings(ctx context.Context, keys []*filter.Scalar, s *joinSide) ([]string, error) {
	vals := make([][]any, len(keys))
	for k, x := range keys {
		v, err := x.Values(ctx, s.rec, s.n)
		if err != nil {
			return nil, err
		}
		vals[k] = v
	}
	out := make([]string, s.n)
	var kb []byte
	for i := range out {
		kb = append(kb[:0], 1)
		ok := true
		for k := range keys {
			v := vals[k][i]
			if f, isF := v.(float64); v == nil || isF && math.IsNaN(f) {
				ok = false
				break
			}
			kb = appendKey(kb, v)
		}
		if ok {
			out[i] = string(kb)
		}
	}
	return out, nil
}

// joinEmitter collects candidate pairs, keeps those the ON condition
// accepts, and emits output batches.
type joinEmitter struct {
	jr                 *joinRel
	ctx                context.Context
	cols               []string
	L, R               *joinSide
	fn                 func(arrow.RecordBatch, int) error
	matchedL, matchedR []bool
	candL, candR       []int32                // pairs awaiting the ON condition
	outL, outR         []int32                // pairs to emit (-1: NULL side)
	casts              map[int][2]arrow.Array // castKeys' arrays, by key
}

func (em *joinEmitter) release() {
	for _, c := range em.casts {
		c[0].Release()
		c[1].Release()
	}
}

func (em *joinEmitter) pair(i, j int32) error {
	em.candL, em.candR = append(em.candL, i), append(em.candR, j)
	if len(em.candL) >= joinBatch {
		return em.flush()
	}
	return nil
}

// flush evaluates the ON condition over the candidates.
func (em *joinEmitter) flush() error {
	if len(em.candL) == 0 {
		return nil
	}
	if err := em.ctx.Err(); err != nil {
		return err
	}
	keep := make([]bool, len(em.candL))
	for k := range keep {
		keep[k] = true
	}
	if em.jr.residual && em.jr.on != nil {
		rec, err := em.record(em.jr.on.Columns(), em.candL, em.candR)
		if err != nil {
			return err
		}
		keep, err = selection(em.ctx, em.jr.on, rec, len(em.candL))
		if rec != nil {
			rec.Release()
		}
		if err != nil {
			return err
		}
	}
	for k, ok := range keep {
		if !ok {
			continue
		}
		i, j := em.candL[k], em.candR[k]
		em.matchedL[i], em.matchedR[j] = true, true
		if err := em.emit(i, j); err != nil {
			return err
		}
	}
	em.candL, em.candR = em.candL[:0], em.candR[:0]
	return nil
}

func (em *joinEmitter) emit(i, j int32) error {
	em.outL, em.outR = append(em.outL, i), append(em.outR, j)
	if len(em.outL) >= joinBatch {
		return em.flushOut()
	}
	return nil
}

func (em *joinEmitter) flushOut() error {
	n := len(em.outL)
	if n == 0 {
		return nil
	}
	rec, err := em.record(em.cols, em.outL, em.outR)
	if err != nil {
		return err
	}
	em.outL, em.outR = em.outL[:0], em.outR[:0]
	err = em.fn(rec, n)
	if rec != nil {
		rec.Release()
	}
	return err
}

// record builds the join output's columns cols for the pairs (li, ri).
func (em *joinEmitter) record(cols []string, li, ri []int32) (arrow.RecordBatch, error) {
	if len(cols) == 0 {
		return nil, nil
	}
	jr := em.jr
	lidx, ridx := indices(li), indices(ri)
	defer lidx.Release()
	defer ridx.Release()
	var fields []arrow.Field
	var arrs []arrow.Array
	defer func() {
		for _, a := range arrs {
			a.Release()
		}
	}()
	for _, c := range cols {
		s := jr.src[jr.out.index(c)]
		var a arrow.Array
		var err error
		switch s.side {
		case 0:
			a, err = takeArray(em.ctx, em.L.arr(jr.outName(0, s.index)), lidx)
		case 1:
			a, err = takeArray(em.ctx, em.R.arr(jr.outName(1, s.index)), ridx)
		case 2:
			a, err = em.usingColumn(s, li, ri)
		}
		if err != nil {
			return nil, err
		}
		arrs = append(arrs, a)
		fields = append(fields, arrow.Field{Name: c, Type: a.DataType(), Nullable: true})
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, int64(len(li)))
	return rec, nil
}

// usingColumn is a USING column: the left value (INNER, LEFT JOIN), the
// right one (RIGHT JOIN), or of a FULL JOIN the left value or the right
// one where the left row is NULL-extended.
func (em *joinEmitter) usingColumn(s joinCol, li, ri []int32) (arrow.Array, error) {
	switch em.jr.j.Kind {
	case "RIGHT":
		ia := indices(ri)
		defer ia.Release()
		return takeArray(em.ctx, em.R.arr(em.jr.outName(1, s.right)), ia)
	case "FULL":
	default: // no left row is NULL-extended
		ia := indices(li)
		defer ia.Release()
		return takeArray(em.ctx, em.L.arr(em.jr.outName(0, s.index)), ia)
	}
	la, ra := em.L.arr(em.jr.outName(0, s.index)), em.R.arr(em.jr.outName(1, s.right))
	if s.cast {
		var err error
		if la, ra, err = em.castKeys(s); err != nil {
			return nil, err
		}
	}
	both, err := array.Concatenate([]arrow.Array{la, ra}, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	defer both.Release()
	idx := make([]int32, len(li))
	for k := range li {
		if li[k] >= 0 {
			idx[k] = li[k]
		} else {
			idx[k] = int32(la.Len()) + ri[k]
		}
	}
	ia := indices(idx)
	defer ia.Release()
	return takeArray(em.ctx, both, ia)
}

// castKeys is a FULL JOIN USING column's two sides cast to its type:
// the key expressions' values over each whole side, built once.
func (em *joinEmitter) castKeys(s joinCol) (arrow.Array, arrow.Array, error) {
	if c, ok := em.casts[s.key]; ok {
		return c[0], c[1], nil
	}
	var f *schema.Field // the merged column's
	for k, c := range em.jr.src {
		if c == s {
			f = em.jr.out.field(k)
		}
	}
	var out [2]arrow.Array
	for side, in := range []*joinSide{em.L, em.R} {
		x := em.jr.lkeys[s.key]
		if side == 1 {
			x = em.jr.rkeys[s.key]
		}
		vals, err := x.Values(em.ctx, in.rec, in.n)
		if err != nil {
			return nil, nil, err
		}
		rec, err := buildRecord(&schema.Schema{Fields: []*schema.Field{f}}, in.n, func(_, row int) any { return vals[row] })
		if err != nil {
			return nil, nil, err
		}
		out[side] = rec.Column(0)
		out[side].Retain()
		rec.Release()
	}
	if em.casts == nil {
		em.casts = map[int][2]arrow.Array{}
	}
	em.casts[s.key] = out
	return out[0], out[1], nil
}

func (s *joinSide) arr(name string) arrow.Array {
	for k, c := range s.cols {
		if c == name {
			return s.arrs[k]
		}
	}
	return nil
}

// indices builds Take's index array, NULL where idx is -1.
func indices(idx []int32) arrow.Array {
	b := array.NewInt32Builder(memory.DefaultAllocator)
	defer b.Release()
	b.Reserve(len(idx))
	for _, i := range idx {
		if i < 0 {
			b.AppendNull()
		} else {
			b.UnsafeAppend(i)
		}
	}
	return b.NewArray()
}
