package filter

import (
	"fmt"
	"math/big"
	"strings"
)

// Query parameters: `@name` (named) and `?` (positional) stand for typed
// constants the request supplies (jobs.query's queryParameters). The lexer
// reads them as one token (kParam), the parser as a *Param, and the
// checker binds them through WithParams to constant nodes, so a parameter
// behaves as a literal of its declared type: `col = @x` type-checks as
// `col = <INT64 constant>` would, with BigQuery's "No matching signature"
// error when the types do not agree. An ARRAY parameter is an ARRAY
// constant (also usable as `x [NOT] IN UNNEST(@arr)`, where a
// row_restriction takes it), a STRUCT one a STRUCT constant.

// Param is a query parameter in an expression: `@Name`, or `?` when Name
// is "".
type Param struct {
	Name string
	P    int
}

func (e *Param) Pos() int { return e.P }
func (*Param) exprNode()  {}
func (e *Param) String() string {
	if e.Name == "" {
		return "?"
	}
	return "@" + e.Name
}

// InUnnest is `x [NOT] IN UNNEST(@array_parameter)`, or in a query
// `x [NOT] IN UNNEST(array expression)` (Array nil, Expr set).
type InUnnest struct {
	X     Expr
	Array *Param
	Expr  Expr
	Not   bool
	P     int
}

func (e *InUnnest) Pos() int { return e.P }
func (*InUnnest) exprNode()  {}
func (e *InUnnest) String() string {
	if e.Array == nil {
		return "(" + e.X.String() + notStr(e.Not) + " IN UNNEST(" + e.Expr.String() + "))"
	}
	return "(" + e.X.String() + notStr(e.Not) + " IN UNNEST(" + e.Array.String() + "))"
}

// ParamValue is the value of one query parameter.
type ParamValue struct {
	// Type is the GoogleSQL type name of a scalar or STRUCT
	// (STRUCT<a INT64, ...>), or of an ARRAY's elements.
	Type  string
	Array bool
	// Values holds the scalar's value (one) or the array's elements, as
	// ParseParam returns them (a STRUCT: a Struct of its fields' values,
	// an ARRAY field a []any); nil: a NULL scalar or a NULL array.
	Values []any
	// Unsupported names a type the expression layer cannot hold yet
	// (INTERVAL, RANGE, or one holding them): accepted in the request,
	// an error where the query references it.
	Unsupported string
}

// Parameter modes (jobs.query's parameterMode).
const (
	ParamsNamed      = "NAMED"
	ParamsPositional = "POSITIONAL"
)

// Params are the parameters of a query.
type Params struct {
	// Mode is ParamsNamed or ParamsPositional: a query uses one kind.
	Mode string
	// Named maps lower-case names (parameter names are case-insensitive)
	// to values.
	Named map[string]ParamValue
	// Positional are the values of the `?`s, in order.
	Positional []ParamValue

	// ordinal maps the byte offset of each `?` of the statement text to
	// its index; built by Index.
	ordinal map[int]int
}

// Index numbers the positional parameters of the full statement text
// src, whose expressions are compiled later one at a time (each with the
// text outside it blanked, so offsets hold). Without Index, the `?`s are
// numbered within each compiled text.
func (p *Params) Index(src string) {
	p.ordinal = positionsOf(source{text: src})
}

func positionsOf(src source) map[int]int {
	out := map[int]int{}
	l := newLexer(src)
	for {
		t, err := l.next()
		if err != nil || t.kind == kEOF {
			return out
		}
		if t.kind == kParam && t.val == "" {
			out[t.pos] = len(out)
		}
	}
}

// WithParams binds the query parameters of p (nil: the query has none).
func WithParams(p *Params) Option {
	return func(c *checker) { c.params = p }
}

// lookupParam returns the value a parameter reference stands for.
func (c *checker) lookupParam(e *Param) (ParamValue, error) {
	p := c.params
	if e.Name != "" {
		if p != nil && p.Mode == ParamsPositional {
			return ParamValue{}, c.errf(e.P, "Named parameters are not supported")
		}
		if p != nil {
			if v, ok := p.Named[strings.ToLower(e.Name)]; ok {
				return v, nil
			}
		}
		return ParamValue{}, c.errf(e.P, "Query parameter '%s' not found", e.Name)
	}
	if p != nil && p.Mode == ParamsNamed {
		return ParamValue{}, c.errf(e.P, "Positional parameters are not supported")
	}
	if p == nil || len(p.Positional) == 0 {
		return ParamValue{}, c.errf(e.P, "Query takes no positional parameters")
	}
	ord := p.ordinal
	if ord == nil {
		ord = positionsOf(c.src)
	}
	i, ok := ord[e.P]
	if !ok {
		return ParamValue{}, c.errf(e.P, "internal error: positional parameter not indexed")
	}
	if i >= len(p.Positional) {
		return ParamValue{}, c.errf(e.P, "Query has %d positional parameters but parameter %d was referenced", len(p.Positional), i+1)
	}
	return p.Positional[i], nil
}

// param checks a parameter reference: a constant of its type.
func (c *checker) param(e *Param) (node, error) {
	v, err := c.lookupParam(e)
	if err != nil {
		return nil, err
	}
	if v.Unsupported != "" {
		return nil, c.errf(e.P, "not supported yet by bqstore: query parameters of type %s", v.Unsupported)
	}
	if v.Array {
		et, err := parseTypeName(v.Type)
		if err != nil {
			return nil, c.errf(e.P, "%v", err)
		}
		at, err := arrayOf(et)
		if err != nil {
			return nil, c.errf(e.P, "%v", err)
		}
		x := nullValue
		if v.Values != nil {
			if x, err = fromGo(at, v.Values); err != nil {
				return nil, c.errf(e.P, "internal error: %v", err)
			}
		}
		return &constNode{v: constVec(at, x), p: e.P}, nil
	}
	var x any
	if len(v.Values) > 0 {
		x = v.Values[0]
	}
	n, err := c.constNodeOf(v.Type, x, e.P)
	if k, ok := n.(*constNode); ok && k.typ() == tString {
		k.param = true
	}
	return n, err
}

// inUnnest checks `x [NOT] IN UNNEST(@array)`: IN over the elements.
func (c *checker) inUnnest(e *InUnnest) (node, error) {
	if e.Array == nil {
		return c.inUnnestExpr(e)
	}
	v, err := c.lookupParam(e.Array)
	if err != nil {
		return nil, err
	}
	if v.Unsupported != "" {
		return nil, c.errf(e.Array.P, "not supported yet by bqstore: query parameters of type %s", v.Unsupported)
	}
	if !v.Array {
		return nil, c.errf(e.Array.P, "Values referenced in UNNEST must be arrays. UNNEST contains expression of type %s", v.Type)
	}
	x, err := c.check(e.X)
	if err != nil {
		return nil, err
	}
	if len(v.Values) == 0 {
		// IN an empty (or NULL) array is FALSE (NOT IN: TRUE), even for NULL.
		return &constNode{v: constVec(tBool, value{b: e.Not}), p: e.P}, nil
	}
	list := make([]Expr, len(v.Values))
	items := make([]node, len(v.Values))
	for i, val := range v.Values {
		if items[i], err = c.constNodeOf(v.Type, val, e.Array.P); err != nil {
			return nil, err
		}
		list[i] = e.Array
	}
	return c.inNodes(&In{X: e.X, List: list, Not: e.Not, P: e.P}, x, list, items)
}

// ParseParam parses the text of a parameter value of the scalar type
// typeName (as the REST API carries it: BYTES already decoded from
// base64) and returns it as ParamValue.Values holds it: bool, int64
// (INT64; DATE in days, DATETIME and TIMESTAMP in µs since the epoch,
// TIME in µs since midnight), float64, *big.Rat (NUMERIC, BIGNUMERIC) or
// string (STRING, BYTES, JSON, GEOGRAPHY as WKT). An unknown type or a
// type without a value here is ErrParamType.
func ParseParam(typeName, text string) (any, error) {
	t, ok := castTypes[strings.ToUpper(typeName)]
	if !ok {
		return nil, ErrParamType
	}
	v, err := castFromString(t, text, nil)
	if err != nil {
		return nil, err
	}
	switch {
	case t == tBool:
		return v.b, nil
	case isIntLike(t):
		return v.i, nil
	case t == tFloat:
		return v.f, nil
	case isDecimal(t):
		return new(big.Rat).Set(v.r), nil
	case t == tInterval:
		return v.iv, nil
	}
	return v.s, nil
}

// ErrParamType is a parameter type ParseParam has no value for.
var ErrParamType = fmt.Errorf("filter: parameter type not supported")

// inUnnest parses `UNNEST(@param)` after `x [NOT] IN` (p.tok is UNNEST);
// ok is false when it is some other UNNEST, which the caller reports.
func (p *parser) inUnnest(left Expr, not bool, pos int) (Expr, bool, *Error) {
	unnest := p.tok
	nt, err := p.peek()
	if err != nil || !(nt.kind == kOp && nt.text == "(") {
		return nil, false, err
	}
	if err := p.advance(); err != nil {
		return nil, true, err
	}
	if err := p.advance(); err != nil {
		return nil, true, err
	}
	if p.tok.kind != kParam && p.query {
		arr, err := p.parseExpr(0)
		if err != nil {
			return nil, true, err
		}
		if err := p.expectOp(")"); err != nil {
			return nil, true, err
		}
		return &InUnnest{X: left, Expr: arr, Not: not, P: pos}, true, nil
	}
	if p.tok.kind != kParam {
		return nil, true, p.errf(unnest.pos, "IN UNNEST is not supported in row_restriction")
	}
	arr := &Param{Name: p.tok.val, P: p.tok.pos}
	if err := p.advance(); err != nil {
		return nil, true, err
	}
	if err := p.expectOp(")"); err != nil {
		return nil, true, err
	}
	return &InUnnest{X: left, Array: arr, Not: not, P: pos}, true, nil
}
