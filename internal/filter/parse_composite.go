package filter

import "strings"

// ARRAY and STRUCT syntax, parsed only for the query engine
// (parser.query; a row_restriction keeps its scalar language): array
// literals [a, b], ARRAY[a, b] and ARRAY<T>[...], STRUCT(x AS a, ...) and
// STRUCT<a T>(...), tuples (a, b), subscripts arr[OFFSET(i)] (also
// SAFE_OFFSET, ORDINAL, SAFE_ORDINAL, and arr[i] meaning OFFSET) and
// field access on any STRUCT expression (f(x).a, arr[OFFSET(0)].b).

// bpPostfix binds subscripts and field access tighter than any operator.
const bpPostfix = 12

// Index is X[Mode(I)], Mode one of OFFSET, SAFE_OFFSET, ORDINAL,
// SAFE_ORDINAL, or "" for X[I].
type Index struct {
	X, I Expr
	Mode string
	P    int // position of [
}

// FieldAccess is X.Name on an expression X that is not a name path
// (those are Idents).
type FieldAccess struct {
	X    Expr
	Name string
	P    int // position of the name
}

// ArrayLit is [e, ...], ARRAY[e, ...] or ARRAY<T>[e, ...]; Type is
// "ARRAY<T>" as written or "".
type ArrayLit struct {
	Type  string
	Elems []Expr
	P     int
}

// StructLit is STRUCT(e [AS name], ...), STRUCT<...>(e, ...) or a tuple
// (e, e, ...). Type is "STRUCT<...>" as written or ""; Names[i] is the
// alias of field i ("" none).
type StructLit struct {
	Type   string
	Fields []Expr
	Names  []string
	Tuple  bool
	P      int
}

func (e *Index) Pos() int       { return e.P }
func (e *FieldAccess) Pos() int { return e.P }
func (e *ArrayLit) Pos() int    { return e.P }
func (e *StructLit) Pos() int   { return e.P }
func (*Index) exprNode()        {}
func (*FieldAccess) exprNode()  {}
func (*ArrayLit) exprNode()     {}
func (*StructLit) exprNode()    {}

func (e *Index) String() string {
	if e.Mode == "" {
		return "(" + e.X.String() + "[" + e.I.String() + "])"
	}
	return "(" + e.X.String() + "[" + e.Mode + "(" + e.I.String() + ")])"
}

func (e *FieldAccess) String() string { return "(" + e.X.String() + ")." + quoteIdent(e.Name) }

func (e *ArrayLit) String() string {
	items := make([]string, len(e.Elems))
	for i, x := range e.Elems {
		items[i] = x.String()
	}
	return e.Type + "[" + strings.Join(items, ", ") + "]"
}

func (e *StructLit) String() string {
	items := make([]string, len(e.Fields))
	for i, x := range e.Fields {
		items[i] = x.String()
		if e.Names[i] != "" {
			items[i] += " AS " + quoteIdent(e.Names[i])
		}
	}
	if e.Tuple {
		return "(" + strings.Join(items, ", ") + ")"
	}
	return "STRUCT" + strings.TrimPrefix(e.Type, "STRUCT") + "(" + strings.Join(items, ", ") + ")"
}

// postfix parses [subscript] or .field after left (p.tok is [ or .).
func (p *parser) postfix(left Expr) (Expr, *Error) {
	op := p.tok
	if err := p.advance(); err != nil {
		return nil, err
	}
	if op.text == "." {
		if p.tok.kind != kIdent && p.tok.kind != kQIdent {
			return nil, p.unexpected()
		}
		name, pos := p.tok.val, p.tok.pos
		if err := p.advance(); err != nil {
			return nil, err
		}
		return &FieldAccess{X: left, Name: name, P: pos}, nil
	}
	ix := &Index{X: left, P: op.pos}
	if p.tok.kind == kIdent {
		switch up := strings.ToUpper(p.tok.text); up {
		case "OFFSET", "SAFE_OFFSET", "ORDINAL", "SAFE_ORDINAL":
			nt, err := p.peek()
			if err != nil {
				return nil, err
			}
			if nt.kind == kOp && nt.text == "(" {
				ix.Mode = up
				if err := p.advance(); err != nil {
					return nil, err
				}
				if err := p.advance(); err != nil {
					return nil, err
				}
			}
		}
	}
	i, err := p.parseExpr(0)
	if err != nil {
		return nil, err
	}
	ix.I = i
	if ix.Mode != "" {
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
	}
	if err := p.expectOp("]"); err != nil {
		return nil, err
	}
	return ix, nil
}

// typeParams reads <...> after ARRAY or STRUCT (p.tok is <) and returns
// it as written.
func (p *parser) typeParams() (string, *Error) {
	start := p.tok.pos
	depth := 0
	for {
		t := p.tok
		switch {
		case t.kind == kEOF:
			return "", p.errf(t.pos, "Syntax error: Unexpected end of input")
		case t.kind == kOp && t.text == "<":
			depth++
		case t.kind == kOp && t.text == ">":
			depth--
		case t.kind == kOp && t.text == ">>":
			depth -= 2
		case t.kind == kOp && t.text == "<>":
		}
		if err := p.advance(); err != nil {
			return "", err
		}
		if depth < 0 {
			return "", p.errf(t.pos, "Syntax error: Unexpected \">\"")
		}
		if depth == 0 {
			return p.lx.src[start-len(p.lx.prefix) : t.pos-len(p.lx.prefix)+len(t.text)], nil
		}
	}
}

// arrayLit parses [e, ...] (p.tok is [); typ is "ARRAY<...>" or "".
func (p *parser) arrayLit(typ string, pos int) (Expr, *Error) {
	if err := p.expectOp("["); err != nil {
		return nil, err
	}
	a := &ArrayLit{Type: typ, P: pos}
	if p.isOp("]") {
		return a, p.advance()
	}
	for {
		e, err := p.parseExpr(0)
		if err != nil {
			return nil, err
		}
		a.Elems = append(a.Elems, e)
		if p.isOp(",") {
			if err := p.advance(); err != nil {
				return nil, err
			}
			continue
		}
		return a, p.expectOp("]")
	}
}

// arrayOrStruct parses what follows the keyword ARRAY or STRUCT.
func (p *parser) arrayOrStruct(kw string) (Expr, *Error) {
	pos := p.tok.pos
	if err := p.advance(); err != nil {
		return nil, err
	}
	typ := ""
	if p.isOp("<") {
		params, err := p.typeParams()
		if err != nil {
			return nil, err
		}
		typ = kw + params
	}
	if kw == "ARRAY" {
		if p.isOp("(") {
			return nil, p.errf(pos, "ARRAY subqueries are not supported here")
		}
		if typ == "" && !p.isOp("[") {
			return nil, p.errf(p.tok.pos, "Syntax error: Expected \"(\" or \"<\" or \"[\" but got %s", p.tok.describe())
		}
		// ARRAY[...] without a type is [...]: the keyword is optional.
		return p.arrayLit(typ, pos)
	}
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	s := &StructLit{Type: typ, P: pos}
	if p.isOp(")") {
		return s, p.advance()
	}
	for {
		e, err := p.parseExpr(0)
		if err != nil {
			return nil, err
		}
		name := ""
		if p.isKw("AS") {
			if err := p.advance(); err != nil {
				return nil, err
			}
			if p.tok.kind != kIdent && p.tok.kind != kQIdent || p.tok.kind == kIdent && isReserved(p.tok.text) {
				return nil, p.unexpected()
			}
			name = p.tok.val
			if err := p.advance(); err != nil {
				return nil, err
			}
		} else if id, ok := e.(*Ident); ok {
			name = id.Parts[len(id.Parts)-1]
		}
		s.Fields = append(s.Fields, e)
		s.Names = append(s.Names, name)
		if p.isOp(",") {
			if err := p.advance(); err != nil {
				return nil, err
			}
			continue
		}
		return s, p.expectOp(")")
	}
}

// tuple parses the rest of (first, e, ...) (p.tok is the first comma).
func (p *parser) tuple(first Expr, pos int) (Expr, *Error) {
	s := &StructLit{Fields: []Expr{first}, Names: []string{""}, Tuple: true, P: pos}
	for p.isOp(",") {
		if err := p.advance(); err != nil {
			return nil, err
		}
		e, err := p.parseExpr(0)
		if err != nil {
			return nil, err
		}
		s.Fields = append(s.Fields, e)
		s.Names = append(s.Names, "")
	}
	return s, p.expectOp(")")
}
