package filter

import (
	"fmt"
	"math/big"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/bqstore/bqstore/internal/schema"
)

// ARRAY and STRUCT types.
//
// A typ below tFirstComposite is a scalar kind (types.go), and every fast
// path of the evaluator switches on those values alone. A composite type
// (ARRAY<INT64>, STRUCT<a INT64, b ARRAY<STRING>>) is a typ at or above
// tFirstComposite naming an interned descriptor: equal types are equal
// typ values, so type checks stay integer comparisons. The registry is
// process-wide and append-only (a type, once seen, keeps its number); it
// is bounded by maxCompTypes distinct shapes and maxCompBytes of names,
// beyond which a query that builds yet another new type fails; a type
// name nests at most maxTypeDepth levels.
//
// The bare tStruct and tArray kinds remain what the row_restriction
// checker gives a RECORD column (only IS [NOT] NULL reads it); the query
// engine's checker (CompileScalar) types columns fully.
//
// A composite value is a value whose a holds the array's elements or the
// struct's fields (in order); a composite vec holds one value per row in
// c, materialised from Arrow LIST and STRUCT arrays by loadComposite.

const tFirstComposite typ = 64

const maxCompTypes = 1<<16 - int(tFirstComposite)

type compType struct {
	kind   typ // tArray or tStruct
	elem   typ // ARRAY: the element type
	fields []structField
	name   string // GoogleSQL spelling: ARRAY<INT64>, STRUCT<a INT64>
}

type structField struct {
	name string // "" for an anonymous field
	t    typ
}

var comps struct {
	mu     sync.Mutex
	byName map[string]typ
	bytes  int                         // of the names in byName
	list   atomic.Pointer[[]*compType] // copy on write
}

// maxCompBytes bounds the bytes of all interned type names (a var for
// tests).
var maxCompBytes = 64 << 20

var errTooManyTypes = fmt.Errorf("too many distinct ARRAY and STRUCT types")

func intern(ct *compType) (typ, error) {
	comps.mu.Lock()
	defer comps.mu.Unlock()
	if t, ok := comps.byName[ct.name]; ok {
		return t, nil
	}
	var list []*compType
	if p := comps.list.Load(); p != nil {
		list = *p
	}
	if len(list) >= maxCompTypes || comps.bytes+len(ct.name) > maxCompBytes {
		return 0, errTooManyTypes
	}
	comps.bytes += len(ct.name)
	if comps.byName == nil {
		comps.byName = map[string]typ{}
	}
	next := append(append(make([]*compType, 0, len(list)+1), list...), ct)
	t := tFirstComposite + typ(len(list))
	comps.byName[ct.name] = t
	comps.list.Store(&next)
	return t, nil
}

// comp returns the descriptor of a composite type, nil for a scalar.
func (t typ) comp() *compType {
	if t < tFirstComposite {
		return nil
	}
	return (*comps.list.Load())[t-tFirstComposite]
}

// kind is tArray or tStruct for composite types, t itself otherwise.
func (t typ) kind() typ {
	if c := t.comp(); c != nil {
		return c.kind
	}
	return t
}

func (t typ) isArray() bool  { return t.kind() == tArray }
func (t typ) isStruct() bool { return t.kind() == tStruct }

// elem is an ARRAY's element type.
func (t typ) elem() typ { return t.comp().elem }

// arrayOf returns ARRAY<elem>; arrays of arrays do not exist.
func arrayOf(elem typ) (typ, error) {
	if elem.kind() == tArray {
		return 0, fmt.Errorf("Cannot construct array with element type %s because nested arrays are not supported", elem)
	}
	return intern(&compType{kind: tArray, elem: elem, name: "ARRAY<" + elem.String() + ">"})
}

// structOf returns STRUCT<fields>.
func structOf(fields []structField) (typ, error) {
	var b strings.Builder
	b.WriteString("STRUCT<")
	for i, f := range fields {
		if i > 0 {
			b.WriteString(", ")
		}
		if f.name != "" {
			b.WriteString(quoteIdent(f.name) + " ")
		}
		b.WriteString(f.t.String())
	}
	b.WriteString(">")
	return intern(&compType{kind: tStruct, fields: append([]structField(nil), fields...), name: b.String()})
}

// isComparable reports whether = and != are defined on t (STRUCTs whose
// fields all are; not ARRAYs, GEOGRAPHY, JSON, ...).
func isEqualityType(t typ) bool {
	switch t.kind() {
	case tGeo, tJSON, tArray, tRange:
		return false
	case tStruct:
		c := t.comp()
		if c == nil {
			return false
		}
		for _, f := range c.fields {
			if !isEqualityType(f.t) {
				return false
			}
		}
	}
	return true
}

// ---- type names ----

// parseTypeName reads a GoogleSQL type name: a scalar (as CAST accepts
// it), ARRAY<T> or STRUCT<[name] T, ...>.
func parseTypeName(s string) (typ, error) {
	tp := typeParser{s: s}
	t, err := tp.typ()
	if err != nil {
		return 0, err
	}
	tp.space()
	if tp.i != len(tp.s) {
		return 0, fmt.Errorf("Type not found: %s", s)
	}
	return t, nil
}

type typeParser struct {
	s     string
	i     int
	depth int
}

// maxTypeDepth bounds the nesting of a type name (each level's name
// holds the inner one's: deep nesting would cost quadratic memory).
const maxTypeDepth = 64

func (p *typeParser) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n' || p.s[p.i] == '\r') {
		p.i++
	}
}

func (p *typeParser) word() (string, bool) {
	p.space()
	if p.i < len(p.s) && p.s[p.i] == '`' {
		j := strings.IndexByte(p.s[p.i+1:], '`')
		if j < 0 {
			return "", false
		}
		w := p.s[p.i+1 : p.i+1+j]
		p.i += j + 2
		return w, true
	}
	j := p.i
	for j < len(p.s) && isIdentChar(p.s[j]) {
		j++
	}
	w := p.s[p.i:j]
	p.i = j
	return w, w != ""
}

func (p *typeParser) punct(c byte) bool {
	p.space()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *typeParser) typ() (typ, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxTypeDepth {
		return 0, fmt.Errorf("Type %s... is nested too deeply", p.s[:min(len(p.s), 40)])
	}
	w, ok := p.word()
	if !ok {
		return 0, fmt.Errorf("Type not found: %s", p.s)
	}
	switch up := strings.ToUpper(w); up {
	case "ARRAY":
		if !p.punct('<') {
			return 0, fmt.Errorf("Type not found: %s", p.s)
		}
		e, err := p.typ()
		if err != nil {
			return 0, err
		}
		if !p.punct('>') {
			return 0, fmt.Errorf("Type not found: %s", p.s)
		}
		return arrayOf(e)
	case "STRUCT":
		if !p.punct('<') {
			return 0, fmt.Errorf("Type not found: %s", p.s)
		}
		var fields []structField
		if p.punct('>') {
			return structOf(nil)
		}
		for {
			// [name] type: a name is followed by a type, a type by , or >.
			save := p.i
			name, ok := p.word()
			if !ok {
				return 0, fmt.Errorf("Type not found: %s", p.s)
			}
			p.space()
			f := structField{}
			if p.i < len(p.s) && p.s[p.i] != ',' && p.s[p.i] != '>' && p.s[p.i] != '<' {
				f.name = name
			} else {
				p.i = save
			}
			t, err := p.typ()
			if err != nil {
				return 0, err
			}
			f.t = t
			fields = append(fields, f)
			if p.punct(',') {
				continue
			}
			if !p.punct('>') {
				return 0, fmt.Errorf("Type not found: %s", p.s)
			}
			return structOf(fields)
		}
	case "NULL":
		return tNull, nil
	default:
		if t, ok := castTypes[up]; ok {
			return t, nil
		}
		switch up {
		case "INTERVAL":
			return tInterval, nil
		case "RANGE":
			if p.punct('<') {
				e, err := p.typ()
				if err != nil {
					return 0, err
				}
				if !p.punct('>') {
					return 0, fmt.Errorf("Type not found: %s", p.s)
				}
				return rangeOf(e)
			}
			return tRange, nil
		}
		return 0, fmt.Errorf("Type not found: %s", w)
	}
}

// ---- schema fields ----

// fullFieldType is the type of a column with its mode: ARRAY<T> for a
// REPEATED column, STRUCT<...> for a RECORD.
func fullFieldType(f *schema.Field) (typ, error) {
	t := fieldType(f)
	if t == tRange {
		elem := schema.Timestamp
		if f.RangeElementType != nil {
			elem = f.RangeElementType.Type
		}
		var err error
		if t, err = rangeOf(fieldType(&schema.Field{Type: elem})); err != nil {
			return 0, err
		}
	}
	if t == tStruct {
		fields := make([]structField, len(f.Fields))
		for i, g := range f.Fields {
			ft, err := fullFieldType(g)
			if err != nil {
				return 0, err
			}
			fields[i] = structField{name: g.Name, t: ft}
		}
		var err error
		if t, err = structOf(fields); err != nil {
			return 0, err
		}
	}
	if f.EffectiveMode() == schema.Repeated {
		return arrayOf(t)
	}
	return t, nil
}

// FieldTypeName is the GoogleSQL name of a column's type, with its mode:
// ARRAY<INT64> for a REPEATED INTEGER, STRUCT<a INT64> for a RECORD.
func FieldTypeName(f *schema.Field) string {
	t, err := fullFieldType(f)
	if err != nil {
		return "STRUCT"
	}
	return t.String()
}

// TypeField returns the schema field named name of the GoogleSQL type
// typeName (as Scalar.Type returns it): ARRAY<T> is a REPEATED field of
// T, STRUCT<...> a RECORD with its fields (anonymous ones named _field_N
// as BigQuery names them), NULL an INTEGER.
func TypeField(name, typeName string) (*schema.Field, error) {
	t, err := parseTypeName(typeName)
	if err != nil {
		return nil, err
	}
	return typeField(name, t), nil
}

func typeField(name string, t typ) *schema.Field {
	f := &schema.Field{Name: name, Mode: schema.Nullable}
	if t.isArray() {
		f = typeField(name, t.elem())
		f.Mode = schema.Repeated
		return f
	}
	if c := t.comp(); c != nil && c.kind == tRange {
		f.Type = schema.Range
		f.RangeElementType = &schema.RangeElementType{Type: typeField("", c.elem).Type}
		return f
	}
	if c := t.comp(); c != nil {
		f.Type = schema.Record
		for i, sf := range c.fields {
			n := sf.name
			if n == "" {
				n = fmt.Sprintf("_field_%d", i+1)
			}
			f.Fields = append(f.Fields, typeField(n, sf.t))
		}
		return f
	}
	switch t {
	case tInt, tNull:
		f.Type = schema.Integer
	case tFloat:
		f.Type = schema.Float
	case tBool:
		f.Type = schema.Boolean
	case tDatetime:
		f.Type = schema.DateTime
	case tStruct:
		f.Type = schema.Record
	default:
		f.Type = schema.Type(t.String())
	}
	return f
}

// ---- values ----

// Struct is a STRUCT value as Scalar.Values returns it: its fields'
// values in order. An ARRAY value is a []any of its elements.
type Struct []any

// Range is a RANGE value as Scalar.Values returns it: its bounds, nil
// where unbounded.
type Range struct{ Start, End any }

// goValue converts x of type t to the Go value Scalar.Values returns
// (its strings copied).
func goValue(t typ, x value) any {
	if x.null || t == tNull {
		return nil
	}
	if c := t.comp(); c != nil {
		if c.kind == tRange {
			return Range{goValue(c.elem, x.a[0]), goValue(c.elem, x.a[1])}
		}
		if c.kind == tArray {
			out := make([]any, len(x.a))
			for i, e := range x.a {
				out[i] = goValue(c.elem, e)
			}
			return out
		}
		out := make(Struct, len(c.fields))
		for i, f := range c.fields {
			out[i] = goValue(f.t, x.a[i])
		}
		return out
	}
	switch {
	case t == tBool:
		return x.b
	case isIntLike(t):
		return x.i
	case t == tFloat:
		return x.f
	case isDecimal(t):
		return x.r
	case t == tInterval:
		return x.iv
	}
	// A copy: evaluation aliases strings to the record's buffers, which
	// the scan recycles, while callers keep the values (see ownStrings).
	return strings.Clone(x.s)
}

// fromGo converts a Go value (as goValue returns it) of type t to a value.
func fromGo(t typ, v any) (value, error) {
	if v == nil {
		return nullValue, nil
	}
	if c := t.comp(); c != nil {
		var elems []any
		switch y := v.(type) {
		case []any:
			elems = y
		case Struct:
			elems = y
		case Range:
			elems = []any{y.Start, y.End}
		default:
			return value{}, fmt.Errorf("a %T for a value of type %s", v, t)
		}
		x := value{a: make([]value, len(elems))}
		if c.kind == tStruct && len(elems) != len(c.fields) || c.kind == tRange && len(elems) != 2 {
			return value{}, fmt.Errorf("%d fields for a value of type %s", len(elems), t)
		}
		for i, e := range elems {
			et := c.elem
			if c.kind == tStruct {
				et = c.fields[i].t
			}
			var err error
			if x.a[i], err = fromGo(et, e); err != nil {
				return value{}, err
			}
		}
		return x, nil
	}
	var x value
	switch y := v.(type) {
	case bool:
		x.b = y
	case int64:
		x.i = y
	case float64:
		x.f = y
	case *big.Rat:
		x.r = y
	case IntervalValue:
		x.iv = y
	case string:
		x.s = y
		if t == tGeo {
			g, err := parseWKT(y)
			if err != nil {
				return value{}, err
			}
			x.g = g
		}
	default:
		return value{}, fmt.Errorf("a %T for a value of type %s", v, t)
	}
	return x, nil
}

// loadComposite materialises an Arrow LIST or STRUCT array (all of its
// rows) as values of the composite type t.
func loadComposite(arr arrow.Array, t typ) ([]value, error) {
	n := arr.Len()
	out := make([]value, n)
	c := t.comp()
	switch c.kind {
	case tArray:
		l, ok := arr.(*array.List)
		if !ok {
			return nil, fmt.Errorf("arrow type %s does not hold %s", arr.DataType(), t)
		}
		elems, err := loadValues(l.ListValues(), c.elem)
		if err != nil {
			return nil, err
		}
		for i := 0; i < n; i++ {
			if l.IsNull(i) {
				// BigQuery has no NULL arrays in storage: an empty one.
				out[i] = value{a: []value{}}
				continue
			}
			lo, hi := l.ValueOffsets(i)
			out[i] = value{a: elems[lo:hi:hi]}
		}
	case tRange:
		// struct<start, end>: a NULL bound is unbounded.
		st, ok := arr.(*array.Struct)
		if !ok || st.NumField() != 2 {
			return nil, fmt.Errorf("arrow type %s does not hold %s", arr.DataType(), t)
		}
		var bounds [2][]value
		for k := range bounds {
			var err error
			if bounds[k], err = loadValues(st.Field(k), c.elem); err != nil {
				return nil, err
			}
		}
		for i := 0; i < n; i++ {
			if st.IsNull(i) {
				out[i] = nullValue
				continue
			}
			out[i] = value{a: []value{bounds[0][i], bounds[1][i]}}
		}
	case tStruct:
		st, ok := arr.(*array.Struct)
		if !ok || st.NumField() != len(c.fields) {
			return nil, fmt.Errorf("arrow type %s does not hold %s", arr.DataType(), t)
		}
		cols := make([][]value, len(c.fields))
		for k, f := range c.fields {
			var err error
			if cols[k], err = loadValues(st.Field(k), f.t); err != nil {
				return nil, err
			}
		}
		for i := 0; i < n; i++ {
			if st.IsNull(i) {
				out[i] = nullValue
				continue
			}
			fs := make([]value, len(cols))
			for k := range cols {
				fs[k] = cols[k][i]
			}
			out[i] = value{a: fs}
		}
	}
	return out, nil
}

// loadValues reads every row of arr as a value of type t.
func loadValues(arr arrow.Array, t typ) ([]value, error) {
	if t.comp() != nil {
		return loadComposite(arr, t)
	}
	v, err := loadArray(arr, t, arr.Len())
	if err != nil {
		return nil, err
	}
	out := make([]value, arr.Len())
	for i := range out {
		out[i] = v.get(i)
	}
	return out, nil
}

// equalSQL is SQL = on two non-NULL values of type t: IEEE equality for
// FLOAT64 (NaN equals nothing, itself included; -0.0 = 0.0), field by
// field for STRUCT. null reports a NULL field deciding a STRUCT
// comparison. Grouping and DISTINCT use sameGroup instead, where NaNs are
// one group.
func equalSQL(t typ, a, b value) (eq, null bool) {
	switch {
	case t.comp() != nil:
		return equalComposite(t, a, b)
	case t == tFloat:
		return a.f == b.f, false
	}
	return compareValues(t, a, b) == 0, false
}

// equalComposite compares two non-NULL STRUCT values field by field with
// SQL = (equalSQL): eq when every field is equal, null when none differs
// but a NULL field leaves the answer unknown.
func equalComposite(t typ, a, b value) (eq, null bool) {
	c := t.comp()
	null = false
	for i, f := range c.fields {
		x, y := a.a[i], b.a[i]
		if x.null || y.null {
			null = true
			continue
		}
		e, n := equalSQL(f.t, x, y)
		if n {
			null = true
			continue
		}
		if !e {
			return false, false
		}
	}
	return !null, null
}

// structEqNode is STRUCT = STRUCT (not: !=), field by field.
type structEqNode struct {
	not  bool
	l, r node
	p    int
}

func (n *structEqNode) typ() typ { return tBool }
func (n *structEqNode) pos() int { return n.p }

func (n *structEqNode) eval(ctx *evalCtx) (*vec, error) {
	l, err := n.l.eval(ctx)
	if err != nil {
		return nil, err
	}
	r, err := n.r.eval(ctx)
	if err != nil {
		return nil, err
	}
	out := newVec(tBool, ctx.n)
	t := n.l.typ()
	for i := 0; i < ctx.n; i++ {
		a, b := l.get(i), r.get(i)
		if a.null || b.null {
			out.set(i, nullValue)
			continue
		}
		eq, null := equalComposite(t, a, b)
		if null {
			out.set(i, nullValue)
			continue
		}
		out.b[i] = eq != n.not
	}
	return out, nil
}

// superComposite is the common supertype of two ARRAY or two STRUCT
// types: element- or field-wise, a STRUCT's field names taken from the
// first type that names them.
func superComposite(a, b typ) (typ, bool) {
	ca, cb := a.comp(), b.comp()
	if ca == nil || cb == nil || ca.kind != cb.kind || ca.kind == tRange {
		return 0, false
	}
	if ca.kind == tArray {
		e, ok := superTyp(ca.elem, cb.elem)
		if !ok {
			return 0, false
		}
		t, err := arrayOf(e)
		return t, err == nil
	}
	if len(ca.fields) != len(cb.fields) {
		return 0, false
	}
	fs := make([]structField, len(ca.fields))
	for i := range fs {
		ft, ok := superTyp(ca.fields[i].t, cb.fields[i].t)
		if !ok {
			return 0, false
		}
		fs[i] = structField{name: ca.fields[i].name, t: ft}
		if fs[i].name == "" {
			fs[i].name = cb.fields[i].name
		}
	}
	t, err := structOf(fs)
	return t, err == nil
}

// superTyp is the supertype of two types (no literal coercions).
func superTyp(a, b typ) (typ, bool) {
	switch {
	case a == b:
		return a, true
	case a == tNull:
		return b, true
	case b == tNull:
		return a, true
	case isNumeric(a) && isNumeric(b):
		if numRank(a) > numRank(b) {
			return a, true
		}
		return b, true
	case a == tDate && b == tDatetime, a == tDatetime && b == tDate:
		return tDatetime, true
	}
	return superComposite(a, b)
}

// convNode converts an ARRAY or STRUCT value to a supertype.
type convNode struct {
	x    node
	to   typ
	safe bool // SAFE_CAST: a value that fails to convert is NULL
	p    int
}

func (n *convNode) typ() typ { return n.to }
func (n *convNode) pos() int { return n.p }

func (n *convNode) eval(ctx *evalCtx) (*vec, error) {
	x, err := n.x.eval(ctx)
	if err != nil {
		return nil, err
	}
	out := newVec(n.to, ctx.n)
	from := n.x.typ()
	for i := 0; i < ctx.n; i++ {
		v, err := convertValue(from, n.to, x.get(i))
		if err != nil && n.safe {
			v, err = nullValue, nil
		}
		if err != nil {
			return nil, ctx.errf(n.p, "%v", err)
		}
		out.set(i, v)
	}
	return out, nil
}

func convertValue(from, to typ, v value) (value, error) {
	if v.null || from == to {
		return v, nil
	}
	cf, ct := from.comp(), to.comp()
	if cf == nil || ct == nil {
		if from == tNull {
			return nullValue, nil
		}
		return castValue(from, to, v)
	}
	out := value{a: make([]value, len(v.a))}
	for i, e := range v.a {
		ef, et := cf.elem, ct.elem
		if cf.kind == tStruct {
			ef, et = cf.fields[i].t, ct.fields[i].t
		}
		var err error
		if out.a[i], err = convertValue(ef, et, e); err != nil {
			return value{}, err
		}
	}
	return out, nil
}
