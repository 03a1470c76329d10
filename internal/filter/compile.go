package filter

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/bqstore/bqstore/internal/schema"
)

// Filter is a compiled row_restriction: the typed expression tree checked
// against a table schema. It is immutable and safe for concurrent use.
type Filter struct {
	src     source
	root    node
	columns []string
}

// Option configures Compile.
type Option func(*checker)

// WithClock sets the clock that CURRENT_DATE, CURRENT_TIMESTAMP and their
// relatives read, once, at Compile time. The default is time.Now.
func WithClock(now func() time.Time) Option {
	return func(c *checker) { c.now = now() }
}

// Compile parses expr and type-checks it against s. Errors are *Error
// naming the position. The filter's result must be BOOL (or NULL).
func Compile(expr string, s *schema.Schema, opts ...Option) (*Filter, error) {
	ast, err := Parse(expr)
	if err != nil {
		return nil, err
	}
	c := &checker{src: source{text: expr}, schema: s, seen: map[string]bool{}}
	for _, o := range opts {
		o(c)
	}
	if c.now.IsZero() {
		c.now = time.Now()
	}
	root, err := c.check(ast)
	if err != nil {
		return nil, err
	}
	if t := root.typ(); t != tBool && t != tNull {
		return nil, c.errf(ast.Pos(), "row_restriction must be of type BOOL, not %s", t)
	}
	if root.typ() == tNull {
		root = &constNode{v: constVec(tBool, nullValue)}
	}
	return &Filter{src: c.src, root: root, columns: c.cols}, nil
}

// String returns the expression the filter was compiled from.
func (f *Filter) String() string { return f.src.text }

// Columns returns the top-level columns the filter references, in the
// schema's spelling and in order of first reference: the reader must
// project at least these.
func (f *Filter) Columns() []string { return append([]string(nil), f.columns...) }

type checker struct {
	src    source
	schema *schema.Schema
	now    time.Time
	cols   []string
	seen   map[string]bool
	names  NameResolver
	consts map[string]Const
	params *Params
	// safeCall is set while a SAFE.-prefixed call builds its node: the
	// kernels it builds answer NULL instead of their own errors.
	safeCall bool
	// query is set by CompileScalar: the query engine's expressions,
	// where ARRAY and STRUCT values exist (a row_restriction keeps its
	// scalar-only language).
	query bool
	// lazy counts the conditional expressions (IF, CASE, COALESCE,
	// IFNULL) whose operands are being checked: a constant there that
	// fails to fold may be one no row evaluates, so fold defers its
	// error to evaluation (errNode) instead of failing the check.
	lazy int
}

// NameResolver maps a name path as written (a.b.c, at byte offset pos of
// the text) to a top-level column of the schema: it returns the column's
// name in the schema and how many leading parts of the path it consumed
// (the rest are RECORD fields). Its error is returned as it is (callers
// return an *Error with a position). The query engine uses it for
// qualified names (t.col) and for columns whose schema names are internal.
type NameResolver func(parts []string, pos int) (column string, used int, err error)

// WithNames resolves the names of the expression through r instead of
// looking the first part up in the schema.
func WithNames(r NameResolver) Option {
	return func(c *checker) { c.names = r }
}

func (c *checker) errf(pos int, format string, args ...any) *Error {
	return c.src.errf(pos, format, args...)
}

// node is a typed expression.
type node interface {
	typ() typ
	pos() int
	eval(ctx *evalCtx) (*vec, error)
}

type constNode struct {
	v   *vec
	lit bool // an unmodified literal: string literals coerce to date/time types
	// param: a STRING query parameter, which coerces to date/time types
	// as a string literal does (GoogleSQL "parameter coercion").
	param bool
	p     int
}

func (n *constNode) typ() typ                    { return n.v.t }
func (n *constNode) pos() int                    { return n.p }
func (n *constNode) eval(*evalCtx) (*vec, error) { return n.v, nil }

func isConst(n node) bool { _, ok := n.(*constNode); return ok }

// errNode is a constant expression whose evaluation fails, inside a
// conditional expression (see fold): it fails when evaluated on any row.
// It is not constant, so nothing folds over it.
type errNode struct {
	err error
	t   typ
	p   int
}

func (n *errNode) typ() typ { return n.t }
func (n *errNode) pos() int { return n.p }

func (n *errNode) eval(ctx *evalCtx) (*vec, error) {
	if ctx.n == 0 {
		return newVec(n.t, 0), nil
	}
	return nil, n.err
}

func constValue(n node) (value, bool) {
	if k, ok := n.(*constNode); ok {
		return k.v.get(0), true
	}
	return value{}, false
}

// fold evaluates n once when all of its inputs are constant. Its error
// fails the check, unless n is an operand of a conditional expression
// (c.lazy): BigQuery evaluates only the branch a row takes, so IF(TRUE,
// 1, DIV(1, 0)) is 1; there the error becomes an errNode, raised only if
// evaluated.
func (c *checker) fold(n node, kids ...node) (node, error) {
	for _, k := range kids {
		if !isConst(k) {
			return n, nil
		}
	}
	v, err := n.eval(&evalCtx{n: 1, src: c.src})
	if err != nil && c.lazy > 0 {
		return &errNode{err: err, t: n.typ(), p: n.pos()}, nil
	}
	if err != nil {
		return nil, err
	}
	if v.n != 1 {
		return nil, c.errf(n.pos(), "internal error: constant folding produced %d rows", v.n)
	}
	v.konst = true
	return &constNode{v: v, p: n.pos()}, nil
}

func fieldType(f *schema.Field) typ {
	t, _ := schema.CanonicalType(string(f.Type))
	switch t {
	case schema.Integer:
		return tInt
	case schema.Float:
		return tFloat
	case schema.Numeric:
		return tNumeric
	case schema.BigNumeric:
		return tBigNumeric
	case schema.Boolean:
		return tBool
	case schema.String:
		return tString
	case schema.Bytes:
		return tBytes
	case schema.Date:
		return tDate
	case schema.DateTime:
		return tDatetime
	case schema.Time:
		return tTime
	case schema.Timestamp:
		return tTimestamp
	case schema.Geography:
		return tGeo
	case schema.JSON:
		return tJSON
	case schema.Record:
		return tStruct
	case schema.Range:
		return tRange
	case schema.Interval:
		return tInterval
	}
	return tNull
}

func (c *checker) column(e *Ident) (node, error) {
	if k, ok := c.constLookup(e); ok {
		if k.Set || len(k.Values) != 1 {
			return nil, c.errf(e.P, "internal error: a list where a value is expected")
		}
		return c.constNodeOf(k.Type, k.Values[0], e.P)
	}
	if c.names != nil {
		col, used, err := c.names(e.Parts, e.P)
		if err != nil {
			return nil, err
		}
		if k, ok := c.consts[strings.ToLower(col)]; ok && !k.Set && len(k.Values) == 1 {
			x, err := c.constNodeOf(k.Type, k.Values[0], e.P)
			// The rest of the path: fields of a STRUCT of an enclosing
			// query (a correlated t.rec.f).
			for _, name := range e.Parts[used:] {
				if err != nil {
					break
				}
				x, err = c.field(x, name, e.P)
			}
			return x, err
		}
		e = &Ident{Parts: append([]string{col}, e.Parts[used:]...), P: e.P}
	}
	if c.schema == nil {
		return nil, c.errf(e.P, "Unrecognized name: %s", e.Parts[0])
	}
	i := c.schema.Lookup(e.Parts[0])
	if i < 0 {
		return nil, c.errf(e.P, "Unrecognized name: %s", e.Parts[0])
	}
	f := c.schema.Fields[i]
	path := []string{f.Name}
	var jsonPath []string // members of a JSON column: j.a.b
	for k := 0; ; k++ {
		if f.EffectiveMode() == schema.Repeated && c.query {
			t, err := fullFieldType(f)
			if err != nil {
				return nil, c.errf(e.P, "%v", err)
			}
			if k+1 < len(e.Parts) {
				return nil, c.errf(e.P, "Cannot access field %s on a value with type %s", e.Parts[k+1], t)
			}
			break
		}
		if f.EffectiveMode() == schema.Repeated {
			return nil, c.errf(e.P, "row_restriction cannot reference REPEATED field %s: predicates on repeated fields are not supported", strings.Join(path, "."))
		}
		if k+1 == len(e.Parts) {
			break
		}
		name := e.Parts[k+1]
		if fieldType(f) == tJSON && c.query {
			jsonPath = e.Parts[k+1:]
			break
		}
		if fieldType(f) != tStruct {
			return nil, c.errf(e.P, "Cannot access field %s on a value with type %s", name, fieldType(f))
		}
		var sub *schema.Field
		for _, g := range f.Fields {
			if strings.EqualFold(g.Name, name) {
				sub = g
				break
			}
		}
		if sub == nil {
			return nil, c.errf(e.P, "Field name %s does not exist in STRUCT %s", name, strings.Join(path, "."))
		}
		f = sub
		path = append(path, f.Name)
	}
	if !c.seen[path[0]] {
		c.seen[path[0]] = true
		c.cols = append(c.cols, path[0])
	}
	t := fieldType(f)
	if c.query {
		var err error
		if t, err = fullFieldType(f); err != nil {
			return nil, c.errf(e.P, "%v", err)
		}
	}
	var x node = &colNode{path: path, t: t, p: e.P, key: strings.Join(path, "\x00")}
	for _, name := range jsonPath {
		var err error
		if x, err = c.jsonMember(x, name, e.P); err != nil {
			return nil, err
		}
	}
	return x, nil
}

func (c *checker) check(e Expr) (node, error) {
	switch e := e.(type) {
	case *Ident:
		return c.column(e)
	case *Param:
		return c.param(e)
	case *InUnnest:
		return c.inUnnest(e)
	case *Literal:
		return c.literal(e, false)
	case *TypedLiteral:
		return c.typedLiteral(e)
	case *Unary:
		if e.Op == "-" {
			if l, ok := e.X.(*Literal); ok && l.Kind == LitInt {
				return c.literal(l, true)
			}
		}
		x, err := c.check(e.X)
		if err != nil {
			return nil, err
		}
		switch e.Op {
		case "NOT":
			if x, err = c.coerce(x, tBool, "NOT"); err != nil {
				return nil, err
			}
			return c.fold(&notNode{x: x, p: e.P}, x)
		case "~":
			xi, err := c.coerce(x, tInt, "operator ~")
			if err != nil || x.typ() == tFloat {
				return nil, c.errf(e.P, "No matching signature for operator ~ for argument types: %s", x.typ())
			}
			x = xi
			return c.fold(&callNode{name: "~", args: []node{x}, t: tInt, strict: true, p: e.P,
				impl: func(a []value) (value, error) { return value{i: ^a[0].i}, nil }}, x)
		case "+":
			if !isNumeric(x.typ()) && x.typ() != tNull {
				return nil, c.errf(e.P, "No matching signature for operator unary plus for argument types: %s", x.typ())
			}
			return x, nil
		default:
			if x.typ() == tNull {
				x = &constNode{v: constVec(tInt, nullValue), p: x.pos()}
			}
			if x.typ() == tInterval {
				return c.fold(&intervalArithNode{op: "-iv", l: x, t: tInterval, p: e.P}, x)
			}
			if !isNumeric(x.typ()) {
				return nil, c.errf(e.P, "No matching signature for operator unary minus for argument types: %s", x.typ())
			}
			return c.fold(&negNode{x: x, p: e.P}, x)
		}
	case *Binary:
		return c.binary(e)
	case *Is:
		x, err := c.check(e.X)
		if err != nil {
			return nil, err
		}
		if e.What != "NULL" {
			if x, err = c.coerce(x, tBool, "IS "+e.What); err != nil {
				return nil, err
			}
		}
		return c.fold(&isNode{x: x, not: e.Not, what: e.What, p: e.P}, x)
	case *Between:
		x, err := c.check(e.X)
		if err != nil {
			return nil, err
		}
		lo, err := c.check(e.Lo)
		if err != nil {
			return nil, err
		}
		hi, err := c.check(e.Hi)
		if err != nil {
			return nil, err
		}
		ge, err := c.compare(">=", x, lo, e.P)
		if err != nil {
			return nil, err
		}
		le, err := c.compare("<=", x, hi, e.P)
		if err != nil {
			return nil, err
		}
		var n node = &logicNode{and: true, l: ge, r: le, p: e.P}
		if n, err = c.fold(n, ge, le); err != nil {
			return nil, err
		}
		if e.Not {
			return c.fold(&notNode{x: n, p: e.P}, n)
		}
		return n, nil
	case *In:
		return c.in(e)
	case *Like:
		return c.like(e)
	case *Cast:
		return c.cast(e)
	case *Call:
		return c.call(e)
	case *Extract:
		return c.extract(e)
	case *Case:
		return c.caseExpr(e)
	case *ArrayLit:
		return c.arrayLit(e)
	case *StructLit:
		return c.structLit(e)
	case *Index:
		return c.index(e)
	case *FieldAccess:
		return c.fieldAccess(e)
	case *Interval:
		if !c.query {
			return nil, c.errf(e.P, "INTERVAL is only supported as an argument of DATE_ADD, DATE_SUB, DATETIME_ADD, DATETIME_SUB, TIMESTAMP_ADD and TIMESTAMP_SUB")
		}
		return c.interval(e)
	}
	return nil, c.errf(e.Pos(), "unsupported expression")
}

func (c *checker) literal(e *Literal, neg bool) (node, error) {
	k := func(t typ, v value) (node, error) {
		return &constNode{v: constVec(t, v), lit: true, p: e.P}, nil
	}
	switch e.Kind {
	case LitNull:
		return k(tNull, nullValue)
	case LitBool:
		return k(tBool, value{b: e.Text == "TRUE"})
	case LitInt:
		text := e.Text
		if neg {
			text = "-" + text
		}
		v, err := parseIntLiteral(text)
		if err != nil {
			return nil, c.errf(e.P, "Invalid integer literal: %s", text)
		}
		return k(tInt, value{i: v})
	case LitFloat:
		f, err := strconv.ParseFloat(e.Text, 64)
		if err != nil {
			return nil, c.errf(e.P, "Invalid floating point literal: %s", e.Text)
		}
		return k(tFloat, value{f: f})
	case LitString:
		return k(tString, value{s: e.Text})
	case LitBytes:
		return k(tBytes, value{s: e.Text})
	}
	return nil, c.errf(e.P, "unsupported literal")
}

func (c *checker) typedLiteral(e *TypedLiteral) (node, error) {
	if strings.HasPrefix(e.Type, "RANGE<") {
		t, err := parseTypeName(e.Type)
		if err != nil {
			return nil, c.errf(e.P, "%v", err)
		}
		v, err := parseRange(t.elem(), e.Value)
		if err != nil {
			return nil, c.errf(e.P, "%v", err)
		}
		return &constNode{v: constVec(t, v), p: e.P}, nil
	}
	t := castTypes[e.Type]
	v, err := castFromString(t, e.Value, nil)
	if err != nil {
		return nil, c.errf(e.P, "Invalid %s literal: %s", e.Type, quoteString(e.Value))
	}
	return &constNode{v: constVec(t, v), p: e.P}, nil
}

// coerce converts n to type t where GoogleSQL coerces implicitly: NULL to
// anything, INT64 -> NUMERIC -> BIGNUMERIC -> FLOAT64, DATE -> DATETIME,
// and string literals and STRING parameters to DATE, DATETIME, TIME and
// TIMESTAMP. what names the operator or function for the error message.
func (c *checker) coerce(n node, t typ, what string) (node, error) {
	from := n.typ()
	if from == t {
		return n, nil
	}
	if from == tNull {
		if !isConst(n) {
			return &nullAsNode{x: n, t: t}, nil // ERROR(...): funcs_debug.go
		}
		return &constNode{v: constVec(t, nullValue), p: n.pos()}, nil
	}
	if from.comp() != nil && t.comp() != nil {
		if st, ok := superComposite(from, t); ok && st == t {
			return c.fold(&convNode{x: n, to: t, p: n.pos()}, n)
		}
	}
	if numRank(from) > 0 && numRank(t) > numRank(from) || (from == tDate && t == tDatetime) {
		return c.fold(&castNode{x: n, to: t, p: n.pos()}, n)
	}
	if k, ok := n.(*constNode); ok && (k.lit || k.param) && from == tString {
		switch t {
		case tDate, tDatetime, tTime, tTimestamp:
			v, err := castFromString(t, k.v.s[0], nil)
			if k.v.isNull(0) {
				v, err = nullValue, nil
			}
			if err != nil && k.param {
				return nil, c.errf(n.pos(), "Could not cast query parameter value %s to type %s", quoteString(k.v.s[0]), t)
			}
			if err != nil {
				return nil, c.errf(n.pos(), "Could not cast literal %s to type %s", quoteString(k.v.s[0]), t)
			}
			return &constNode{v: constVec(t, v), p: n.pos()}, nil
		}
	}
	return nil, c.errf(n.pos(), "No matching signature for %s: expected %s but got %s", what, t, from)
}

// supertype picks the common type of a and b for comparison and IN.
func (c *checker) supertype(a, b node) (typ, bool) {
	ta, tb := a.typ(), b.typ()
	switch {
	case ta == tb:
		return ta, true
	case ta.comp() != nil && tb.comp() != nil:
		return superComposite(ta, tb)
	case ta == tNull:
		return tb, true
	case tb == tNull:
		return ta, true
	case isNumeric(ta) && isNumeric(tb):
		if numRank(ta) > numRank(tb) {
			return ta, true
		}
		return tb, true
	case (ta == tDate && tb == tDatetime) || (ta == tDatetime && tb == tDate):
		return tDatetime, true
	}
	isLitStr := func(n node) bool {
		k, ok := n.(*constNode)
		return ok && (k.lit || k.param) && k.typ() == tString
	}
	switch {
	case isLitStr(b) && (ta == tDate || ta == tDatetime || ta == tTime || ta == tTimestamp):
		return ta, true
	case isLitStr(a) && (tb == tDate || tb == tDatetime || tb == tTime || tb == tTimestamp):
		return tb, true
	}
	return 0, false
}

var opNames = map[string]string{
	"=": "Equality", "!=": "Inequality", "<>": "Inequality", "<": "Less than", "<=": "Less than or equal",
	">": "Greater than", ">=": "Greater than or equal",
}

func (c *checker) compare(op string, l, r node, p int) (node, error) {
	t, ok := c.supertype(l, r)
	if !ok {
		return nil, c.errf(p, "No matching signature for operator %s for argument types: %s, %s. Supported signature: ANY %s ANY", op, l.typ(), r.typ(), op)
	}
	eq := op == "=" || op == "!=" || op == "<>"
	if t.isStruct() && eq && isEqualityType(t) {
		var err error
		if l, err = c.coerce(l, t, "operator "+op); err != nil {
			return nil, err
		}
		if r, err = c.coerce(r, t, "operator "+op); err != nil {
			return nil, err
		}
		return c.fold(&structEqNode{not: op != "=", l: l, r: r, p: p}, l, r)
	}
	switch t.kind() {
	case tGeo, tJSON, tStruct, tArray:
		return nil, c.errf(p, "%s is not defined for arguments of type %s", opNames[op], t)
	case tRange:
		// A typed RANGE compares as it orders (compareValues); the bare
		// RANGE of a row_restriction column has no values to compare.
		if !t.isRange() {
			return nil, c.errf(p, "%s is not defined for arguments of type %s", opNames[op], t)
		}
	}
	if t == tNull {
		t = tInt
	}
	var err error
	if l, err = c.coerce(l, t, "operator "+op); err != nil {
		return nil, err
	}
	if r, err = c.coerce(r, t, "operator "+op); err != nil {
		return nil, err
	}
	return c.fold(&cmpNode{op: cmpOps[op], l: l, r: r, p: p}, l, r)
}

func (c *checker) binary(e *Binary) (node, error) {
	l, err := c.check(e.L)
	if err != nil {
		return nil, err
	}
	r, err := c.check(e.R)
	if err != nil {
		return nil, err
	}
	switch e.Op {
	case "AND", "OR":
		if l, err = c.coerce(l, tBool, "operator "+e.Op); err != nil {
			return nil, err
		}
		if r, err = c.coerce(r, tBool, "operator "+e.Op); err != nil {
			return nil, err
		}
		return c.fold(&logicNode{and: e.Op == "AND", l: l, r: r, p: e.P}, l, r)
	case "=", "!=", "<>", "<", "<=", ">", ">=":
		return c.compare(e.Op, l, r, e.P)
	case "IS DISTINCT FROM", "IS NOT DISTINCT FROM":
		return c.distinct(e.Op, l, r, e.P)
	case "||":
		// STRING || STRING (any type that CONCAT casts), BYTES || BYTES
		// and ARRAY<T> || ARRAY<T>.
		if l.typ().isArray() || r.typ().isArray() {
			return c.callNodes(&Call{Name: "ARRAY_CONCAT", P: e.P}, []node{l, r})
		}
		return c.callNodes(&Call{Name: "CONCAT", P: e.P}, []node{l, r})
	case "&", "|", "^", "<<", ">>":
		return c.bitwise(e.Op, l, r, e.P)
	}
	return c.arith(e.Op, l, r, e.P)
}

func (c *checker) arith(op string, l, r node, p int) (node, error) {
	tl, tr := l.typ(), r.typ()
	if tl == tNull && tr == tNull {
		tl = tInt
	}
	if tl == tNull {
		tl = tr
	}
	if tr == tNull {
		tr = tl
	}
	if n, ok, err := c.intervalArith(op, l, r, p); ok {
		return n, err
	}
	// DATE +/- INT64.
	if (op == "+" || op == "-") && tl == tDate && tr == tInt {
		l2, _ := c.coerce(l, tDate, op)
		r2, _ := c.coerce(r, tInt, op)
		return c.fold(&dateAddNode{x: l2, n: r2, sign: map[string]int64{"+": 1, "-": -1}[op], part: "DAY", p: p}, l2, r2)
	}
	if op == "+" && tl == tInt && tr == tDate {
		l2, _ := c.coerce(l, tInt, op)
		r2, _ := c.coerce(r, tDate, op)
		return c.fold(&dateAddNode{x: r2, n: l2, sign: 1, part: "DAY", p: p}, l2, r2)
	}
	if !isNumeric(tl) || !isNumeric(tr) {
		return nil, c.errf(p, "No matching signature for operator %s for argument types: %s, %s", op, l.typ(), r.typ())
	}
	t := tl
	if numRank(tr) > numRank(t) {
		t = tr
	}
	if op == "/" && t == tInt {
		t = tFloat // INT64 / INT64 is FLOAT64
	}
	var err error
	if l, err = c.coerce(l, t, "operator "+op); err != nil {
		return nil, err
	}
	if r, err = c.coerce(r, t, "operator "+op); err != nil {
		return nil, err
	}
	return c.fold(&arithNode{op: op[0], l: l, r: r, t: t, p: p}, l, r)
}

func (c *checker) in(e *In) (node, error) {
	x, err := c.check(e.X)
	if err != nil {
		return nil, err
	}
	if len(e.List) == 1 {
		if k, ok := c.constLookup(e.List[0]); ok && k.Set {
			if len(k.Values) == 0 {
				// IN an empty subquery is FALSE (NOT IN: TRUE), even for NULL.
				return &constNode{v: constVec(tBool, value{b: e.Not}), p: e.P}, nil
			}
			list := make([]Expr, len(k.Values))
			items := make([]node, len(k.Values))
			for i, v := range k.Values {
				if items[i], err = c.constNodeOf(k.Type, v, e.List[0].Pos()); err != nil {
					return nil, err
				}
				list[i] = e.List[0]
			}
			return c.inNodes(e, x, list, items)
		}
	}
	return c.inNodes(e, x, e.List, nil)
}

// inNodes checks IN over the items (checked from list when nil).
func (c *checker) inNodes(e *In, x node, list []Expr, checked []node) (node, error) {
	var err error
	items := make([]node, len(list))
	t := x.typ()
	// The NULL of the list's type so far, rebuilt only when the type
	// changes (one per item cost a vector each: ~1 KB per item of a long
	// list, transiently).
	var tnull *constNode
	for i, it := range list {
		if checked != nil {
			items[i] = checked[i]
		} else if items[i], err = c.check(it); err != nil {
			return nil, err
		}
		if tnull == nil || tnull.v.t != t {
			tnull = &constNode{v: constVec(t, nullValue)}
		}
		nt, ok := c.supertype(tnull, items[i])
		if t == tNull {
			nt, ok = items[i].typ(), true
		} else if !ok {
			if st, ok2 := c.supertype(x, items[i]); ok2 {
				nt, ok = st, true
			}
		}
		if !ok {
			return nil, c.errf(it.Pos(), "No matching signature for operator IN for argument types %s and {%s}", x.typ(), items[i].typ())
		}
		t = nt
	}
	if t == tNull {
		t = tInt
	}
	switch t.kind() {
	case tGeo, tJSON, tStruct, tArray, tRange:
		return nil, c.errf(e.P, "Equality is not defined for arguments of type %s", t)
	}
	if x, err = c.coerce(x, t, "operator IN"); err != nil {
		return nil, err
	}
	for i := range items {
		if items[i], err = c.coerce(items[i], t, "operator IN"); err != nil {
			return nil, err
		}
	}
	n := newInNode(x, items, e.Not, e.P)
	return c.fold(n, append([]node{x}, items...)...)
}

func (c *checker) cast(e *Cast) (node, error) {
	x, err := c.check(e.X)
	if err != nil {
		return nil, err
	}
	to, ok := castTypes[e.Type]
	if !ok && c.query && (strings.HasPrefix(e.Type, "ARRAY<") || strings.HasPrefix(e.Type, "STRUCT<") || strings.HasPrefix(e.Type, "RANGE<")) {
		return c.castComposite(e, x)
	}
	if !ok {
		return nil, c.errf(e.P, "Type not found: %s", e.Type)
	}
	if e.Format != nil {
		return c.castFormat(e, x, to)
	}
	if x.typ() == tNull {
		return &constNode{v: constVec(to, nullValue), p: e.P}, nil
	}
	if !castable(x.typ(), to) {
		return nil, c.errf(e.P, "Invalid cast from %s to %s", x.typ(), to)
	}
	return c.fold(&castNode{x: x, to: to, safe: e.Safe, p: e.P}, x)
}

// castComposite checks CAST(x AS ARRAY<T>) and CAST(x AS STRUCT<...>):
// GoogleSQL casts an ARRAY to an ARRAY whose element type the elements
// cast to, and a STRUCT to a STRUCT of as many fields, field by field in
// order, the names being the target's (Conversion functions, CAST AS
// ARRAY / CAST AS STRUCT).
func (c *checker) castComposite(e *Cast, x node) (node, error) {
	to, err := parseTypeName(e.Type)
	if err != nil {
		return nil, c.errf(e.P, "%v", err)
	}
	if e.Format != nil {
		return nil, c.errf(e.P, "FORMAT is not allowed for cast to %s", to)
	}
	if x.typ() == tNull {
		return &constNode{v: constVec(to, nullValue), p: e.P}, nil
	}
	if !castableComposite(x.typ(), to) {
		return nil, c.errf(e.P, "Invalid cast from %s to %s", x.typ(), to)
	}
	return c.fold(&convNode{x: x, to: to, safe: e.Safe, p: e.P}, x)
}

// castableComposite reports whether CAST converts from to to, for any
// types.
func castableComposite(from, to typ) bool {
	cf, ct := from.comp(), to.comp()
	if cf == nil || ct == nil {
		if ct != nil && ct.kind == tRange && from == tString || cf != nil && cf.kind == tRange && to == tString {
			return true // the [start, end) text
		}
		return cf == nil && ct == nil && castable(from, to)
	}
	if cf.kind != ct.kind {
		return false
	}
	if cf.kind != tStruct {
		return castableComposite(cf.elem, ct.elem)
	}
	if len(cf.fields) != len(ct.fields) {
		return false
	}
	for i := range cf.fields {
		if !castableComposite(cf.fields[i].t, ct.fields[i].t) {
			return false
		}
	}
	return true
}

func (c *checker) extract(e *Extract) (node, error) {
	x, err := c.check(e.X)
	if err != nil {
		return nil, err
	}
	t := x.typ()
	if t == tNull {
		t = tTimestamp
		x = &constNode{v: constVec(t, nullValue), p: x.pos()}
	}
	if e.Part == "DATETIME" && t == tTimestamp {
		// The civil date and time of the timestamp in UTC or the zone
		// (GoogleSQL timestamp EXTRACT's DATETIME part): the same
		// microseconds, as DATETIME(ts[, zone]).
		args := []node{x}
		if e.Zone != nil {
			z, err := c.check(e.Zone)
			if err != nil {
				return nil, err
			}
			args = append(args, z)
		}
		return c.callNodes(&Call{Name: "DATETIME", P: e.P}, args)
	}
	if e.Zone != nil {
		// The parts of the civil time in the zone: those of
		// DATETIME(ts, zone).
		if t != tTimestamp {
			return nil, c.errf(e.P, "No matching signature for function EXTRACT for argument types: DATE_TIME_PART FROM %s AT TIME ZONE STRING", t)
		}
		z, err := c.check(e.Zone)
		if err != nil {
			return nil, err
		}
		if x, err = c.callNodes(&Call{Name: "DATETIME", P: e.P}, []node{x, z}); err != nil {
			return nil, err
		}
		t = tDatetime
	}
	ok := false
	rt := tInt
	switch t {
	case tDate:
		_, ok = extractDatePart(0, e.Part)
	case tDatetime, tTimestamp:
		_, ok = extractDatePart(0, e.Part)
		switch e.Part {
		case "HOUR", "MINUTE", "SECOND", "MILLISECOND", "MICROSECOND":
			ok = true
		case "DATE":
			ok, rt = true, tDate
		case "TIME":
			ok, rt = true, tTime
		}
	case tTime:
		switch e.Part {
		case "HOUR", "MINUTE", "SECOND", "MILLISECOND", "MICROSECOND":
			ok = true
		}
	case tInterval:
		return c.extractInterval(e, x)
	default:
		return nil, c.errf(e.P, "No matching signature for function EXTRACT for argument types: DATE_TIME_PART FROM %s", t)
	}
	if !ok {
		return nil, c.errf(e.P, "EXTRACT from %s does not support the %s date part", t, e.Part)
	}
	return c.fold(&extractNode{x: x, part: e.Part, t: rt, p: e.P}, x)
}

// bigRat helpers shared by the checker and kernels.
var (
	tenPow9  = new(big.Int).Exp(big.NewInt(10), big.NewInt(9), nil)
	tenPow38 = new(big.Int).Exp(big.NewInt(10), big.NewInt(38), nil)
)

// bitwise checks &, |, ^, << and >> on INT64. >> shifts in zeros (no sign
// extension), as GoogleSQL documents; shifting by 64 or more gives 0 and
// by a negative amount is an error.
func (c *checker) bitwise(op string, l, r node, p int) (node, error) {
	l2, err1 := c.coerce(l, tInt, "operator "+op)
	r2, err2 := c.coerce(r, tInt, "operator "+op)
	if err1 != nil || err2 != nil || l.typ() == tFloat || r.typ() == tFloat {
		return nil, c.errf(p, "No matching signature for operator %s for argument types: %s, %s", op, l.typ(), r.typ())
	}
	impl := func(a []value) (value, error) {
		x, y := a[0].i, a[1].i
		switch op {
		case "&":
			return value{i: x & y}, nil
		case "|":
			return value{i: x | y}, nil
		case "^":
			return value{i: x ^ y}, nil
		}
		if y < 0 {
			return value{}, fmt.Errorf("Bit shift by negative amount: %d", y)
		}
		if y >= 64 {
			return value{i: 0}, nil
		}
		if op == "<<" {
			return value{i: x << uint(y)}, nil
		}
		return value{i: int64(uint64(x) >> uint(y))}, nil
	}
	return c.fold(&callNode{name: op, args: []node{l2, r2}, t: tInt, strict: true, impl: impl, p: p}, l2, r2)
}

func (c *checker) caseExpr(e *Case) (node, error) {
	c.lazy++
	defer func() { c.lazy-- }()
	var operand node
	if e.Operand != nil {
		var err error
		if operand, err = c.check(e.Operand); err != nil {
			return nil, err
		}
	}
	conds := make([]node, len(e.Whens))
	results := make([]node, len(e.Whens))
	for i, w := range e.Whens {
		cond, err := c.check(w.Cond)
		if err != nil {
			return nil, err
		}
		if operand != nil {
			cond, err = c.compare("=", operand, cond, w.Cond.Pos())
		} else {
			cond, err = c.coerce(cond, tBool, "CASE WHEN")
		}
		if err != nil {
			return nil, err
		}
		conds[i] = cond
		if results[i], err = c.check(w.Result); err != nil {
			return nil, err
		}
	}
	var els node
	if e.Else != nil {
		var err error
		if els, err = c.check(e.Else); err != nil {
			return nil, err
		}
	}
	return c.cond(e.P, conds, results, els, func() *Error {
		return c.errf(e.P, "No matching signature for CASE: the THEN and ELSE results have no common supertype")
	})
}
