package filter

import (
	"context"
	"math/big"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/bqstore/bqstore/internal/schema"
)

// This file exports the expression layer to the query engine
// (internal/sql): a compiled expression of any type evaluated to values,
// and the lexer's tokens. A row_restriction stays a Filter (compile.go),
// unchanged.

// Scalar is a compiled expression of any type, checked against a table
// schema. It is immutable and safe for concurrent use.
type Scalar struct {
	src     source
	root    node
	columns []string
}

// CompileScalar parses expr and type-checks it against s, as Compile does,
// without requiring a BOOL result. Errors are *Error naming the position
// in expr (callers embedding an expression in a larger text pass At, so
// that positions are the larger text's).
func CompileScalar(expr string, s *schema.Schema, opts ...Option) (*Scalar, error) {
	c := &checker{src: source{text: expr}, schema: s, seen: map[string]bool{}, query: true}
	for _, o := range opts {
		o(c)
	}
	ast, err := parseAt(c.src, true)
	if err != nil {
		return nil, err
	}
	if c.now.IsZero() {
		c.now = time.Now()
	}
	root, err := c.check(ast)
	if err != nil {
		return nil, err
	}
	return &Scalar{src: c.src, root: root, columns: c.cols}, nil
}

// Type is the GoogleSQL name of the expression's type ("INT64", "STRING",
// ...; "NULL" for an untyped NULL literal).
func (x *Scalar) Type() string { return x.root.typ().String() }

// Columns returns the top-level columns the expression references, in the
// schema's spelling and in order of first reference.
func (x *Scalar) Columns() []string { return append([]string(nil), x.columns...) }

// Values evaluates the expression over rec (which holds Columns, as for
// Filter.Eval; nil when the expression references none, with n rows) and
// returns one Go value per row: nil for NULL; bool for BOOL; int64 for
// INT64, DATE (days since 1970-01-01), DATETIME and TIMESTAMP (µs since
// the epoch) and TIME (µs since midnight); float64 for FLOAT64; *big.Rat
// for NUMERIC and BIGNUMERIC; string for STRING, BYTES, JSON and
// GEOGRAPHY (WKT); []any of the elements for an ARRAY (never nil; an
// element may be nil) and Struct for a STRUCT. Other types (RANGE,
// INTERVAL) are an *Error.
func (x *Scalar) Values(cx context.Context, rec arrow.RecordBatch, n int) ([]any, error) {
	if rec != nil {
		n = int(rec.NumRows())
	}
	ctx := &evalCtx{cx: cx, rec: rec, n: n, src: x.src, cols: map[string]*vec{}}
	if err := ctx.check(); err != nil {
		return nil, err
	}
	v, err := x.root.eval(ctx)
	if err != nil {
		return nil, err
	}
	t := v.t
	switch t {
	case tStruct, tArray, tRange:
		return nil, x.src.errf(x.root.pos(), "not supported yet by bqstore: query results of type %s", t)
	}
	out := make([]any, n)
	if t.comp() != nil {
		for i := range out {
			out[i] = goValue(t, v.get(i))
		}
		return out, nil
	}
	for i := range out {
		val := v.get(i)
		if val.null || t == tNull {
			continue
		}
		switch {
		case t == tBool:
			out[i] = val.b
		case isIntLike(t):
			out[i] = val.i
		case t == tFloat:
			out[i] = val.f
		case isDecimal(t):
			out[i] = val.r
		case t == tInterval:
			out[i] = val.iv
		default:
			out[i] = val.s
		}
	}
	ownStrings(out)
	return out, nil
}

// ownStrings copies the strings of vals into one buffer of their own:
// evaluation aliases a string column's values to the record's buffers,
// which the scan recycles once the batch is done, while callers keep the
// values (result rows, group keys) long after.
func ownStrings(vals []any) {
	n := 0
	for _, v := range vals {
		if s, ok := v.(string); ok {
			n += len(s)
		}
	}
	if n == 0 {
		return
	}
	buf := make([]byte, 0, n) // never grown: the strings alias it
	for i, v := range vals {
		if s, ok := v.(string); ok && s != "" {
			at := len(buf)
			buf = append(buf, s...)
			vals[i] = bytesToString(buf[at:])
		}
	}
}

// Token is a lexical token of GoogleSQL text.
type Token struct {
	Pos, End int    // byte offsets of the token in the text
	Text     string // as written
	Ident    bool   // an identifier or keyword, unquoted
	QIdent   bool   // a `quoted identifier`
	Value    string // identifiers: the name; literals: the decoded value
	Op       bool   // punctuation or an operator
	Param    bool   // a query parameter: @name (Value: the name) or ? (Value: "")
	EOF      bool
	// Match is, for a "(", the distance to its closing ")" in the list
	// Tokens returned (which MatchPos, that token's Pos, confirms), or -1
	// when none closes it; 0 for every other token. It stays true in any
	// piece of that list, so callers need not scan for the parenthesis.
	Match, MatchPos int
}

// Tokens splits src into tokens, the last one EOF. The error is an *Error
// naming the position of the bad token.
func Tokens(src string) ([]Token, error) { return TokensAt("", src) }

// TokensAt splits src, which follows prefix in a larger text, into
// tokens whose positions (and errors') are the larger text's, without
// reading prefix but for an error's line and column.
func TokensAt(prefix, src string) ([]Token, error) {
	l := newLexer(source{prefix: prefix, text: src})
	var out []Token
	var open []int // the unclosed "(" tokens
	for {
		t, err := l.next()
		if err != nil {
			return nil, err
		}
		out = append(out, Token{Pos: t.pos, End: t.pos + len(t.text), Text: t.text,
			Ident: t.kind == kIdent, QIdent: t.kind == kQIdent, Value: t.val,
			Op: t.kind == kOp, Param: t.kind == kParam, EOF: t.kind == kEOF})
		if t.kind == kOp && t.text == "(" {
			open = append(open, len(out)-1)
		}
		if t.kind == kOp && t.text == ")" && len(open) > 0 {
			o := open[len(open)-1]
			open = open[:len(open)-1]
			out[o].Match, out[o].MatchPos = len(out)-1-o, t.pos
		}
		if t.kind == kEOF {
			for _, o := range open {
				out[o].Match = -1
			}
			return out, nil
		}
	}
}

// NewError returns an *Error for byte offset pos of src.
func NewError(src string, pos int, format string, args ...any) *Error {
	return newError(src, pos, format, args...)
}

// At places the expression CompileScalar compiles after prefix in a larger
// text (the query engine's statement): the positions of its errors and
// those a NameResolver is given are offsets in prefix+expr, and errors'
// lines and columns count prefix's characters, while the expression layer
// lexes and copies only expr.
func At(prefix string) Option {
	return func(c *checker) { c.src.prefix = prefix }
}

// IsReserved reports whether word is a GoogleSQL reserved keyword.
func IsReserved(word string) bool { return isReserved(word) }

// Const is a value computed outside the expression (the query engine's
// uncorrelated subqueries) that the expression names: one value, or a
// list when Set (the right side of IN). Type is a GoogleSQL type name as
// Scalar.Type returns; values are as Scalar.Values returns them.
type Const struct {
	Type   string
	Values []any
	Set    bool
}

// WithConstants makes the names of consts (lower case) stand for their
// values (several options add up): a name alone, or a name a NameResolver
// returns for a whole path, is its value; "x IN (name)" with a Set tests
// membership in the list (an empty list: FALSE, even for a NULL x).
func WithConstants(consts map[string]Const) Option {
	return func(c *checker) {
		if c.consts == nil {
			c.consts = map[string]Const{}
		}
		for k, v := range consts {
			c.consts[k] = v
		}
	}
}

// constLookup returns the constant an identifier names, if any.
func (c *checker) constLookup(e Expr) (Const, bool) {
	id, ok := e.(*Ident)
	if !ok || len(id.Parts) != 1 || c.consts == nil {
		return Const{}, false
	}
	k, ok := c.consts[strings.ToLower(id.Parts[0])]
	return k, ok
}

// constNodeOf builds the node of one constant value.
func (c *checker) constNodeOf(typeName string, v any, pos int) (node, error) {
	t := tNull
	for tt, n := range typNames {
		if n == typeName {
			t = typ(tt)
		}
	}
	if strings.HasPrefix(typeName, "ARRAY<") || strings.HasPrefix(typeName, "STRUCT<") || strings.HasPrefix(typeName, "RANGE<") {
		ct, err := parseTypeName(typeName)
		if err != nil {
			return nil, c.errf(pos, "%v", err)
		}
		x, err := fromGo(ct, v)
		if err != nil {
			return nil, c.errf(pos, "internal error: %v", err)
		}
		return &constNode{v: constVec(ct, x), p: pos}, nil
	}
	if typeName != "NULL" && t == tNull {
		return nil, c.errf(pos, "not supported yet by bqstore: subquery values of type %s", typeName)
	}
	var x value
	switch y := v.(type) {
	case nil:
		x = nullValue
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
				return nil, c.errf(pos, "%v", err)
			}
			x.g = g
		}
	default:
		return nil, c.errf(pos, "not supported yet by bqstore: subquery values of type %s", typeName)
	}
	return &constNode{v: constVec(t, x), p: pos}, nil
}

// MayMatch is Filter.MayMatch for a BOOL (or NULL) expression used as a
// condition (a query's WHERE): false only when no row of a batch with
// these zone maps can make it TRUE. It is true for other types.
func (x *Scalar) MayMatch(stats ColumnStatsFunc) bool {
	root := x.root
	switch root.typ() {
	case tBool:
	case tNull:
		root = &constNode{v: constVec(tBool, nullValue)}
	default:
		return true
	}
	return (&Filter{src: x.src, root: root, columns: x.columns}).MayMatch(stats)
}
