package filter

import (
	"strings"
)

// maxDepth bounds the nesting of the syntax tree, where a chain of
// left-associative operators (a OR b OR c, 1 + 2 - 3) is one level, as
// ORMs write hundreds of terms; maxHeight bounds the tree's height
// counting each link of a chain, for the recursion of the tree's
// walkers. maxParseDepth bounds the parser's recursion, which
// parentheses deepen without adding nodes (a chain is a loop there). The
// printed form of any accepted tree parses within maxParseDepth.
const (
	maxDepth      = 200
	maxHeight     = 50 * maxDepth
	maxParseDepth = 4 * maxDepth
)

// MaxLength is the longest row_restriction accepted, in bytes: BigQuery's
// limit for the filter of CreateReadSession.
const MaxLength = 1 << 20

// Binding powers, from loosest to tightest (GoogleSQL operator precedence).
const (
	bpOr      = 1
	bpAnd     = 2
	bpNot     = 3
	bpCompare = 4
	bpBitOr   = 5
	bpBitXor  = 6
	bpBitAnd  = 7
	bpShift   = 8
	bpAdd     = 9
	bpMul     = 10
	bpUnary   = 11
)

type parser struct {
	lx    lexer
	tok   token
	peekd *token
	depth int
	query bool // the query engine's language: ARRAY and STRUCT syntax
}

// Parse parses a row_restriction into its syntax tree. The error, if any,
// is an *Error naming the position.
func Parse(expr string) (Expr, error) { return parse(expr, false) }

// ParseAt is Parse of expr placed after prefix in a larger text (as At
// places CompileScalar's): positions are offsets in prefix+expr and
// errors' lines and columns count prefix, which is not lexed or copied.
func ParseAt(prefix, expr string) (Expr, error) {
	return parseAt(source{prefix: prefix, text: expr}, false)
}

// ParseQueryAt is ParseAt in the query engine's language (ARRAY and
// STRUCT syntax, as CompileScalar parses): the syntax of an expression of
// a query, checked without type-checking or evaluating it.
func ParseQueryAt(prefix, expr string) (Expr, error) {
	return parseAt(source{prefix: prefix, text: expr}, true)
}

// parse parses an expression; query admits the query engine's ARRAY and
// STRUCT syntax (parse_composite.go).
func parse(expr string, query bool) (Expr, error) { return parseAt(source{text: expr}, query) }

// parseAt parses expr.text, its positions those of expr (source).
func parseAt(expr source, query bool) (Expr, error) {
	if len(expr.text) > MaxLength {
		return nil, &Error{Line: 1, Column: 1, Msg: "row_restriction exceeded maximum allowed length. Maximum bytes allowed: 1048576"}
	}
	p := &parser{lx: newLexer(expr), query: query}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.kind == kEOF {
		return nil, p.errf(p.tok.pos, "Syntax error: Unexpected end of input")
	}
	e, err := p.parseExpr(0)
	if err != nil {
		return nil, err
	}
	if p.tok.kind != kEOF {
		return nil, p.errf(p.tok.pos, "Syntax error: Expected end of input but got %s", p.tok.describe())
	}
	if d, h, at := depth(e); d > maxDepth || h > maxHeight {
		return nil, p.errf(at.Pos(), "Syntax error: Expression is nested too deeply")
	}
	return e, nil
}

// chainBP is the binding power of a binary operator that chains (left
// associative, a - b - c is (a - b) - c), 0 for one that does not
// (comparisons).
func chainBP(op string) int {
	switch op {
	case "OR":
		return bpOr
	case "AND":
		return bpAnd
	case "|":
		return bpBitOr
	case "^":
		return bpBitXor
	case "&":
		return bpBitAnd
	case "<<", ">>":
		return bpShift
	case "+", "-":
		return bpAdd
	case "*", "/", "||":
		return bpMul
	}
	return 0
}

// chainLink reports whether e's left operand is the previous link of the
// same chain: a binary operator of e's binding power.
func chainLink(e *Binary) (*Binary, bool) {
	l, ok := e.L.(*Binary)
	return l, ok && chainBP(e.Op) != 0 && chainBP(l.Op) == chainBP(e.Op)
}

// depth returns the nesting of the tree (a chain one level), its height
// and the node deepest in nesting (in height if the height is the
// greater excess).
func depth(e Expr) (int, int, Expr) {
	best, high, at, hat := 0, 0, e, e
	visit := func(kids ...Expr) {
		for _, k := range kids {
			if k == nil {
				continue
			}
			d, h, a := depth(k)
			if d > best {
				best, at = d, a
			}
			if h > high {
				high, hat = h, a
			}
		}
	}
	switch e := e.(type) {
	case *Unary:
		visit(e.X)
	case *Binary:
		if l, ok := chainLink(e); ok {
			// The previous link is at the chain's level of nesting.
			d, h, a := depth(l)
			best, high, at, hat = d-1, h, a, a
			visit(e.R)
		} else {
			visit(e.L, e.R)
		}
	case *Is:
		visit(e.X)
	case *Between:
		visit(e.X, e.Lo, e.Hi)
	case *In:
		visit(append([]Expr{e.X}, e.List...)...)
	case *InUnnest:
		visit(e.X, e.Expr)
	case *Like:
		visit(append([]Expr{e.X, e.Pattern, e.Array}, e.List...)...)
	case *Call:
		visit(e.Args...)
	case *NamedArg:
		visit(e.X)
	case *Cast:
		visit(e.X)
	case *Extract:
		visit(e.X, e.Zone)
	case *Interval:
		visit(e.X)
	case *Case:
		visit(e.Operand, e.Else)
		for _, w := range e.Whens {
			visit(w.Cond, w.Result)
		}
	case *Index:
		visit(e.X, e.I)
	case *FieldAccess:
		visit(e.X)
	case *ArrayLit:
		visit(e.Elems...)
	case *StructLit:
		visit(e.Fields...)
	}
	if high-maxHeight > best-maxDepth {
		at = hat
	}
	return best + 1, high + 1, at
}

func (p *parser) errf(pos int, format string, args ...any) *Error {
	return newErrorIn(p.lx.prefix, p.lx.src, pos, format, args...)
}

func (p *parser) advance() *Error {
	if p.peekd != nil {
		p.tok = *p.peekd
		p.peekd = nil
		return nil
	}
	t, err := p.lx.next()
	if err != nil {
		return err
	}
	p.tok = t
	return nil
}

func (p *parser) peek() (token, *Error) {
	if p.peekd == nil {
		t, err := p.lx.next()
		if err != nil {
			return token{}, err
		}
		p.peekd = &t
	}
	return *p.peekd, nil
}

// isKw reports whether the current token is the unquoted keyword kw.
func (p *parser) isKw(kw string) bool {
	return p.tok.kind == kIdent && strings.EqualFold(p.tok.text, kw)
}

func (p *parser) isOp(op string) bool { return p.tok.kind == kOp && p.tok.text == op }

func (p *parser) unexpected() *Error {
	return p.errf(p.tok.pos, "Syntax error: Unexpected %s", p.tok.describe())
}

func (p *parser) expectOp(op string) *Error {
	if !p.isOp(op) {
		return p.errf(p.tok.pos, "Syntax error: Expected %q but got %s", op, p.tok.describe())
	}
	return p.advance()
}

func (p *parser) expectKw(kw string) *Error {
	if !p.isKw(kw) {
		return p.errf(p.tok.pos, "Syntax error: Expected keyword %s but got %s", kw, p.tok.describe())
	}
	return p.advance()
}

// infixBP returns the binding power of the current token as an infix or
// postfix operator, or 0 when it is not one.
func (p *parser) infixBP() (int, *Error) {
	switch p.tok.kind {
	case kOp:
		switch p.tok.text {
		case "[", ".":
			if p.query {
				return bpPostfix, nil
			}
		case "=", "!=", "<>", "<", "<=", ">", ">=":
			return bpCompare, nil
		case "|":
			return bpBitOr, nil
		case "^":
			return bpBitXor, nil
		case "&":
			return bpBitAnd, nil
		case "<<", ">>":
			return bpShift, nil
		case "+", "-":
			return bpAdd, nil
		case "*", "/", "||":
			return bpMul, nil
		}
	case kIdent:
		switch strings.ToUpper(p.tok.text) {
		case "OR":
			return bpOr, nil
		case "AND":
			return bpAnd, nil
		case "IS", "IN", "LIKE", "BETWEEN":
			return bpCompare, nil
		case "NOT":
			// Only as "x NOT IN/LIKE/BETWEEN".
			nt, err := p.peek()
			if err != nil {
				return 0, err
			}
			if nt.kind == kIdent {
				switch strings.ToUpper(nt.text) {
				case "IN", "LIKE", "BETWEEN":
					return bpCompare, nil
				}
			}
		}
	}
	return 0, nil
}

func (p *parser) parseExpr(minBP int) (Expr, *Error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxParseDepth {
		return nil, p.errf(p.tok.pos, "Syntax error: Expression is nested too deeply")
	}
	left, err := p.parsePrefix()
	if err != nil {
		return nil, err
	}
	lastCompare := false
	for {
		bp, err := p.infixBP()
		if err != nil {
			return nil, err
		}
		if bp == 0 || bp <= minBP {
			return left, nil
		}
		if bp == bpCompare && lastCompare {
			// Comparison operators do not associate: a = b = c is an error.
			return nil, p.unexpected()
		}
		left, err = p.parseInfix(left, bp)
		if err != nil {
			return nil, err
		}
		lastCompare = bp == bpCompare
	}
}

func (p *parser) parseInfix(left Expr, bp int) (Expr, *Error) {
	opTok := p.tok
	if bp == bpPostfix {
		return p.postfix(left)
	}
	if opTok.kind == kOp {
		if err := p.advance(); err != nil {
			return nil, err
		}
		right, err := p.parseExpr(bp)
		if err != nil {
			return nil, err
		}
		op := opTok.text
		return &Binary{Op: op, L: left, R: right, P: opTok.pos}, nil
	}
	kw := strings.ToUpper(opTok.text)
	if err := p.advance(); err != nil {
		return nil, err
	}
	switch kw {
	case "AND", "OR":
		right, err := p.parseExpr(bp)
		if err != nil {
			return nil, err
		}
		return &Binary{Op: kw, L: left, R: right, P: opTok.pos}, nil
	case "IS":
		not := false
		if p.isKw("NOT") {
			not = true
			if err := p.advance(); err != nil {
				return nil, err
			}
		}
		if p.isKw("DISTINCT") { // x IS [NOT] DISTINCT FROM y
			if err := p.advance(); err != nil {
				return nil, err
			}
			if err := p.expectKw("FROM"); err != nil {
				return nil, err
			}
			right, err := p.parseExpr(bp)
			if err != nil {
				return nil, err
			}
			op := "IS DISTINCT FROM"
			if not {
				op = "IS NOT DISTINCT FROM"
			}
			return &Binary{Op: op, L: left, R: right, P: opTok.pos}, nil
		}
		var what string
		switch {
		case p.isKw("NULL"), p.isKw("TRUE"), p.isKw("FALSE"):
			what = strings.ToUpper(p.tok.text)
		default:
			return nil, p.errf(p.tok.pos, "Syntax error: Expected keyword DISTINCT, NULL, TRUE or FALSE but got %s", p.tok.describe())
		}
		if err := p.advance(); err != nil {
			return nil, err
		}
		return &Is{X: left, Not: not, What: what, P: opTok.pos}, nil
	}
	not := false
	if kw == "NOT" {
		not = true
		kw = strings.ToUpper(p.tok.text)
		if err := p.advance(); err != nil {
			return nil, err
		}
	}
	switch kw {
	case "IN":
		if p.isKw("UNNEST") {
			if x, ok, err := p.inUnnest(left, not, opTok.pos); ok || err != nil {
				return x, err
			}
		}
		if p.isKw("UNNEST") || p.isKw("SELECT") {
			return nil, p.errf(p.tok.pos, "IN %s is not supported in row_restriction", strings.ToUpper(p.tok.text))
		}
		if err := p.expectOp("("); err != nil {
			return nil, err
		}
		if p.isKw("SELECT") {
			return nil, p.errf(p.tok.pos, "Subqueries are not supported in row_restriction")
		}
		list, err := p.parseExprListClose()
		if err != nil {
			return nil, err
		}
		return &In{X: left, List: list, Not: not, P: opTok.pos}, nil
	case "LIKE":
		if p.isKw("ANY") || p.isKw("SOME") || p.isKw("ALL") {
			return p.quantifiedLike(left, not, opTok.pos)
		}
		pat, err := p.parseExpr(bp)
		if err != nil {
			return nil, err
		}
		return &Like{X: left, Pattern: pat, Not: not, P: opTok.pos}, nil
	case "BETWEEN":
		lo, err := p.parseExpr(bp)
		if err != nil {
			return nil, err
		}
		if err := p.expectKw("AND"); err != nil {
			return nil, err
		}
		hi, err := p.parseExpr(bp)
		if err != nil {
			return nil, err
		}
		return &Between{X: left, Lo: lo, Hi: hi, Not: not, P: opTok.pos}, nil
	}
	return nil, p.errf(opTok.pos, "Syntax error: Unexpected keyword %s", kw)
}

var typedLiteralTypes = map[string]string{
	"DATE": "DATE", "DATETIME": "DATETIME", "TIME": "TIME", "TIMESTAMP": "TIMESTAMP",
	"NUMERIC": "NUMERIC", "DECIMAL": "NUMERIC", "BIGNUMERIC": "BIGNUMERIC", "BIGDECIMAL": "BIGNUMERIC",
	"JSON": "JSON",
}

// keywordFuncs are reserved keywords that are also function names.
var keywordFuncs = map[string]bool{"IF": true, "LEFT": true, "RIGHT": true, "RANGE": true}

// nilaryCalls may be written without parentheses.
var nilaryCalls = map[string]bool{
	"CURRENT_DATE": true, "CURRENT_TIMESTAMP": true, "CURRENT_DATETIME": true, "CURRENT_TIME": true,
}

func (p *parser) parsePrefix() (Expr, *Error) {
	t := p.tok
	switch t.kind {
	case kEOF:
		return nil, p.errf(t.pos, "Syntax error: Unexpected end of input")
	case kInt, kFloat:
		if err := p.advance(); err != nil {
			return nil, err
		}
		k := LitInt
		if t.kind == kFloat {
			k = LitFloat
		}
		return &Literal{Kind: k, Text: t.text, P: t.pos}, nil
	case kString:
		if err := p.advance(); err != nil {
			return nil, err
		}
		return &Literal{Kind: LitString, Text: t.val, P: t.pos}, nil
	case kBytes:
		if err := p.advance(); err != nil {
			return nil, err
		}
		return &Literal{Kind: LitBytes, Text: t.val, P: t.pos}, nil
	case kQIdent:
		return p.parsePath()
	case kParam:
		if err := p.advance(); err != nil {
			return nil, err
		}
		return &Param{Name: t.val, P: t.pos}, nil
	case kOp:
		switch t.text {
		case "(":
			if err := p.advance(); err != nil {
				return nil, err
			}
			if p.isKw("SELECT") {
				return nil, p.errf(p.tok.pos, "Subqueries are not supported in row_restriction")
			}
			e, err := p.parseExpr(0)
			if err != nil {
				return nil, err
			}
			if p.query && p.isOp(",") {
				return p.tuple(e, t.pos)
			}
			if err := p.expectOp(")"); err != nil {
				return nil, err
			}
			return e, nil
		case "[":
			if p.query {
				return p.arrayLit("", t.pos)
			}
		case "-", "+", "~":
			if err := p.advance(); err != nil {
				return nil, err
			}
			x, err := p.parseExpr(bpUnary)
			if err != nil {
				return nil, err
			}
			return &Unary{Op: t.text, X: x, P: t.pos}, nil
		}
		return nil, p.unexpected()
	}
	// kIdent: keyword, function, typed literal or column path.
	up := strings.ToUpper(t.text)
	switch up {
	case "NULL":
		return p.lit(LitNull, "NULL")
	case "TRUE", "FALSE":
		return p.lit(LitBool, up)
	case "NOT":
		if err := p.advance(); err != nil {
			return nil, err
		}
		x, err := p.parseExpr(bpNot)
		if err != nil {
			return nil, err
		}
		return &Unary{Op: "NOT", X: x, P: t.pos}, nil
	case "CAST":
		return p.parseCast(false)
	case "CASE":
		return p.parseCase()
	case "EXTRACT":
		return p.parseExtract()
	case "ARRAY", "STRUCT":
		if p.query {
			return p.arrayOrStruct(up)
		}
	case "RANGE":
		// RANGE<T> 'literal' (queries); RANGE(...) is a call, below.
		if nt, err := p.peek(); err == nil && nt.kind == kOp && nt.text == "<" {
			if err := p.advance(); err != nil {
				return nil, err
			}
			params, err := p.typeParams()
			if err != nil {
				return nil, err
			}
			if p.tok.kind != kString {
				return nil, p.errf(p.tok.pos, "Syntax error: Expected a string literal after RANGE%s but got %s", params, p.tok.describe())
			}
			v := p.tok.val
			if err := p.advance(); err != nil {
				return nil, err
			}
			return &TypedLiteral{Type: "RANGE" + params, Value: v, P: t.pos}, nil
		}
	case "INTERVAL":
		if err := p.advance(); err != nil {
			return nil, err
		}
		x, err := p.parseExpr(bpAdd)
		if err != nil {
			return nil, err
		}
		if p.tok.kind != kIdent || isReserved(p.tok.text) {
			return nil, p.errf(p.tok.pos, "Syntax error: Expected interval date part but got %s", p.tok.describe())
		}
		part := strings.ToUpper(p.tok.text)
		if err := p.advance(); err != nil {
			return nil, err
		}
		iv := &Interval{X: x, Part: part, P: t.pos}
		if p.tok.kind == kIdent && strings.EqualFold(p.tok.text, "TO") {
			if err := p.advance(); err != nil {
				return nil, err
			}
			if p.tok.kind != kIdent || isReserved(p.tok.text) {
				return nil, p.errf(p.tok.pos, "Syntax error: Expected interval date part but got %s", p.tok.describe())
			}
			iv.To = strings.ToUpper(p.tok.text)
			if err := p.advance(); err != nil {
				return nil, err
			}
		}
		return iv, nil
	}
	nt, err := p.peek()
	if err != nil {
		return nil, err
	}
	if up == "SAFE_CAST" && nt.kind == kOp && nt.text == "(" {
		return p.parseCast(true)
	}
	if ty, ok := typedLiteralTypes[up]; ok && nt.kind == kString {
		if err := p.advance(); err != nil {
			return nil, err
		}
		v := p.tok.val
		if err := p.advance(); err != nil {
			return nil, err
		}
		return &TypedLiteral{Type: ty, Value: v, P: t.pos}, nil
	}
	if nt.kind == kOp && nt.text == "(" && (!isReserved(up) || keywordFuncs[up]) {
		return p.parseCall()
	}
	if up == "SAFE" && nt.kind == kOp && nt.text == "." {
		return p.parseSafeCall()
	}
	if nilaryCalls[up] {
		if err := p.advance(); err != nil {
			return nil, err
		}
		return &Call{Name: up, P: t.pos}, nil
	}
	if isReserved(up) {
		return nil, p.unexpected()
	}
	return p.parsePath()
}

func (p *parser) lit(k LitKind, text string) (Expr, *Error) {
	pos := p.tok.pos
	if err := p.advance(); err != nil {
		return nil, err
	}
	return &Literal{Kind: k, Text: text, P: pos}, nil
}

func (p *parser) parsePath() (Expr, *Error) {
	id := &Ident{P: p.tok.pos}
	for {
		if p.tok.kind != kIdent && p.tok.kind != kQIdent {
			return nil, p.errf(p.tok.pos, "Syntax error: Unexpected %s", p.tok.describe())
		}
		if p.tok.kind == kIdent && isReserved(p.tok.text) && len(id.Parts) == 0 {
			return nil, p.unexpected()
		}
		id.Parts = append(id.Parts, p.tok.val)
		if err := p.advance(); err != nil {
			return nil, err
		}
		if !p.isOp(".") {
			return id, nil
		}
		if err := p.advance(); err != nil {
			return nil, err
		}
	}
}

func (p *parser) parseCall() (Expr, *Error) {
	c := &Call{Name: strings.ToUpper(p.tok.text), P: p.tok.pos}
	if err := p.advance(); err != nil { // name
		return nil, err
	}
	if err := p.advance(); err != nil { // (
		return nil, err
	}
	if p.isOp(")") {
		return c, p.advance()
	}
	for {
		if p.isKw("DISTINCT") {
			return nil, p.errf(p.tok.pos, "Aggregate functions are not supported in row_restriction")
		}
		e, err := p.parseArg()
		if err != nil {
			return nil, err
		}
		c.Args = append(c.Args, e)
		if p.isOp(",") {
			if err := p.advance(); err != nil {
				return nil, err
			}
			continue
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
		return c, nil
	}
}

// parseArg parses one argument of a call: an expression, or a named
// argument name => expression (the checker places it, funcs_named.go).
func (p *parser) parseArg() (Expr, *Error) {
	if p.tok.kind == kIdent || p.tok.kind == kQIdent {
		nt, err := p.peek()
		if err != nil {
			return nil, err
		}
		if nt.kind == kOp && nt.text == "=>" {
			name := p.tok
			if name.kind == kIdent && isReserved(name.text) {
				return nil, p.unexpected()
			}
			if err := p.advance(); err != nil { // name
				return nil, err
			}
			if err := p.advance(); err != nil { // =>
				return nil, err
			}
			x, err := p.parseExpr(0)
			if err != nil {
				return nil, err
			}
			return &NamedArg{Name: name.val, X: x, P: name.pos}, nil
		}
	}
	return p.parseExpr(0)
}

// parseSafeCall parses SAFE.name(args): the SAFE. prefix of a function
// call. SAFE.x without a call is an ordinary path.
func (p *parser) parseSafeCall() (Expr, *Error) {
	save := *p
	if err := p.advance(); err != nil { // SAFE
		return nil, err
	}
	if err := p.advance(); err != nil { // .
		return nil, err
	}
	if p.tok.kind == kIdent {
		if nt, err := p.peek(); err == nil && nt.kind == kOp && nt.text == "(" {
			e, err := p.parseCall()
			if err != nil {
				return nil, err
			}
			c := e.(*Call)
			c.Safe = true
			return c, nil
		}
	}
	*p = save
	return p.parsePath()
}

func (p *parser) parseCast(safe bool) (Expr, *Error) {
	pos := p.tok.pos
	if err := p.advance(); err != nil {
		return nil, err
	}
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	x, err := p.parseExpr(0)
	if err != nil {
		return nil, err
	}
	if err := p.expectKw("AS"); err != nil {
		return nil, err
	}
	var ty string
	if p.isKw("ARRAY") || p.isKw("STRUCT") || p.query && p.isKw("RANGE") {
		// ARRAY<T> / STRUCT<...> / RANGE<T>: the type as written after
		// the keyword.
		kw := strings.ToUpper(p.tok.text)
		if err := p.advance(); err != nil {
			return nil, err
		}
		if !p.isOp("<") {
			return nil, p.errf(p.tok.pos, "Syntax error: Expected \"<\" but got %s", p.tok.describe())
		}
		params, err := p.typeParams()
		if err != nil {
			return nil, err
		}
		ty = kw + params
	} else {
		if p.tok.kind != kIdent || isReserved(p.tok.text) && !(p.query && p.isKw("INTERVAL")) {
			return nil, p.errf(p.tok.pos, "Syntax error: Expected type name but got %s", p.tok.describe())
		}
		ty = strings.ToUpper(p.tok.text)
		if err := p.advance(); err != nil {
			return nil, err
		}
	}
	var format, zone Expr
	if p.isKw("FORMAT") {
		if err := p.advance(); err != nil {
			return nil, err
		}
		if format, err = p.parseExpr(0); err != nil {
			return nil, err
		}
		if p.isKw("AT") {
			if err := p.advance(); err != nil {
				return nil, err
			}
			if err := p.expectKw("TIME"); err != nil {
				return nil, err
			}
			if err := p.expectKw("ZONE"); err != nil {
				return nil, err
			}
			if zone, err = p.parseExpr(0); err != nil {
				return nil, err
			}
		}
	}
	if err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return &Cast{X: x, Type: ty, Safe: safe, Format: format, Zone: zone, P: pos}, nil
}

func (p *parser) parseExtract() (Expr, *Error) {
	pos := p.tok.pos
	if err := p.advance(); err != nil {
		return nil, err
	}
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	if p.tok.kind != kIdent || isReserved(p.tok.text) {
		return nil, p.errf(p.tok.pos, "Syntax error: Expected date part but got %s", p.tok.describe())
	}
	part := strings.ToUpper(p.tok.text)
	if err := p.advance(); err != nil {
		return nil, err
	}
	if part == "WEEK" && p.isOp("(") { // WEEK(<weekday>)
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.kind != kIdent {
			return nil, p.errf(p.tok.pos, "Syntax error: Expected weekday but got %s", p.tok.describe())
		}
		part += "(" + strings.ToUpper(p.tok.text) + ")"
		if err := p.advance(); err != nil {
			return nil, err
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
	}
	if err := p.expectKw("FROM"); err != nil {
		return nil, err
	}
	x, err := p.parseExpr(0)
	if err != nil {
		return nil, err
	}
	var zone Expr
	if p.isKw("AT") { // EXTRACT(part FROM ts AT TIME ZONE zone)
		if err := p.advance(); err != nil {
			return nil, err
		}
		if err := p.expectKw("TIME"); err != nil {
			return nil, err
		}
		if err := p.expectKw("ZONE"); err != nil {
			return nil, err
		}
		if zone, err = p.parseExpr(0); err != nil {
			return nil, err
		}
	}
	if err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return &Extract{Part: part, X: x, Zone: zone, P: pos}, nil
}

func (p *parser) parseCase() (Expr, *Error) {
	e := &Case{P: p.tok.pos}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if !p.isKw("WHEN") {
		op, err := p.parseExpr(0)
		if err != nil {
			return nil, err
		}
		e.Operand = op
	}
	for p.isKw("WHEN") {
		if err := p.advance(); err != nil {
			return nil, err
		}
		cond, err := p.parseExpr(0)
		if err != nil {
			return nil, err
		}
		if err := p.expectKw("THEN"); err != nil {
			return nil, err
		}
		res, err := p.parseExpr(0)
		if err != nil {
			return nil, err
		}
		e.Whens = append(e.Whens, When{Cond: cond, Result: res})
	}
	if len(e.Whens) == 0 {
		return nil, p.errf(p.tok.pos, "Syntax error: Expected keyword WHEN but got %s", p.tok.describe())
	}
	if p.isKw("ELSE") {
		if err := p.advance(); err != nil {
			return nil, err
		}
		els, err := p.parseExpr(0)
		if err != nil {
			return nil, err
		}
		e.Else = els
	}
	if err := p.expectKw("END"); err != nil {
		return nil, err
	}
	return e, nil
}

// parseExprListClose parses one or more expressions separated by commas
// and the ")" that closes them (the lists of IN and quantified LIKE).
func (p *parser) parseExprListClose() ([]Expr, *Error) {
	var list []Expr
	for {
		e, err := p.parseExpr(0)
		if err != nil {
			return nil, err
		}
		list = append(list, e)
		if !p.isOp(",") {
			return list, p.expectOp(")")
		}
		if err := p.advance(); err != nil {
			return nil, err
		}
	}
}
