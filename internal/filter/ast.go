package filter

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Expr is a node of the untyped syntax tree that Parse returns. String
// prints it in a form that parses back to the same tree: compound
// expressions are fully parenthesised, identifiers are quoted when needed,
// literals keep their value.
type Expr interface {
	// Pos is the byte offset of the node in the parsed text.
	Pos() int
	String() string
	exprNode()
}

// Ident is a column reference, possibly a path through RECORD fields
// (a.b.c). Parts are the names as written, without backticks.
type Ident struct {
	Parts []string
	P     int
}

// LitKind is the kind of a Literal.
type LitKind int

// The literal kinds.
const (
	LitNull LitKind = iota
	LitBool
	LitInt   // decimal or 0x hex integer; Text as written
	LitFloat // Text as written
	LitString
	LitBytes
)

// Literal is NULL, TRUE/FALSE, a number, or a string or bytes literal. Text
// holds the number as written or the decoded string/bytes value; for
// LitBool it is "TRUE" or "FALSE".
type Literal struct {
	Kind LitKind
	Text string
	P    int
}

// TypedLiteral is a literal with a type prefix: DATE '2020-01-01',
// TIMESTAMP '...', NUMERIC '1.5', JSON '{"a":1}'. Type is upper case.
type TypedLiteral struct {
	Type  string
	Value string
	P     int
}

// Unary is NOT x, -x, +x or ~x.
type Unary struct {
	Op string // "NOT", "-", "+", "~"
	X  Expr
	P  int
}

// Binary is an infix operator: AND, OR, comparisons (=, !=, <>, <, <=, >,
// >=, IS [NOT] DISTINCT FROM), arithmetic (+, -, *, /), concatenation (||) and the bitwise
// operators (&, |, ^, <<, >>).
type Binary struct {
	Op   string
	L, R Expr
	P    int // position of the operator
}

// Is is x IS [NOT] NULL / TRUE / FALSE.
type Is struct {
	X    Expr
	Not  bool
	What string // "NULL", "TRUE", "FALSE"
	P    int
}

// Between is x [NOT] BETWEEN lo AND hi.
type Between struct {
	X, Lo, Hi Expr
	Not       bool
	P         int
}

// In is x [NOT] IN (list...).
type In struct {
	X    Expr
	List []Expr
	Not  bool
	P    int
}

// Like is x [NOT] LIKE pattern, or the quantified x [NOT] LIKE
// ANY|SOME|ALL (pattern, ...) (List) or ... UNNEST(array) (Array); then
// Pattern is nil and Quant is the quantifier as written.
type Like struct {
	X, Pattern Expr
	Not        bool
	Quant      string
	List       []Expr
	Array      Expr
	P          int
}

// Call is a function call; Name is upper case.
type Call struct {
	Name string
	Args []Expr
	Safe bool // SAFE.Name(...): an error of the function itself is NULL
	P    int
}

// NamedArg is a named argument of a function call, name => x (GoogleSQL's
// "mandatory-named" optional arguments such as PARSE_JSON's
// wide_number_mode); it appears only in Call.Args, after the positional
// arguments. Name is as written (names match case-insensitively).
type NamedArg struct {
	Name string
	X    Expr
	P    int // position of the name
}

// Cast is CAST(x AS type) or SAFE_CAST(x AS type); Type is upper case.
type Cast struct {
	X    Expr
	Type string
	Safe bool
	// Format and Zone: CAST(x AS type FORMAT f [AT TIME ZONE z]); nil
	// when absent.
	Format, Zone Expr
	P            int
}

// Extract is EXTRACT(part FROM x [AT TIME ZONE zone]); Part is upper
// case, Zone nil when absent.
type Extract struct {
	Part string
	X    Expr
	Zone Expr
	P    int
}

// Interval is INTERVAL x part [TO part]: an argument of DATE_ADD and its
// relatives, or (in queries) an INTERVAL value; Part and To are upper
// case, To "" without TO.
type Interval struct {
	X    Expr
	Part string
	To   string
	P    int
}

// Case is CASE [operand] WHEN ... THEN ... [ELSE ...] END.
type Case struct {
	Operand Expr // nil for the searched form
	Whens   []When
	Else    Expr // nil: no ELSE
	P       int
}

// When is one WHEN ... THEN ... arm of a Case.
type When struct {
	Cond, Result Expr
}

func (e *Case) Pos() int { return e.P }
func (*Case) exprNode()  {}

func (e *Case) String() string {
	var b strings.Builder
	b.WriteString("CASE ")
	if e.Operand != nil {
		b.WriteString(e.Operand.String() + " ")
	}
	for _, w := range e.Whens {
		b.WriteString("WHEN " + w.Cond.String() + " THEN " + w.Result.String() + " ")
	}
	if e.Else != nil {
		b.WriteString("ELSE " + e.Else.String() + " ")
	}
	b.WriteString("END")
	return b.String()
}

func (e *Ident) Pos() int        { return e.P }
func (e *Literal) Pos() int      { return e.P }
func (e *TypedLiteral) Pos() int { return e.P }
func (e *Unary) Pos() int        { return e.P }
func (e *Binary) Pos() int       { return e.P }
func (e *Is) Pos() int           { return e.P }
func (e *Between) Pos() int      { return e.P }
func (e *In) Pos() int           { return e.P }
func (e *Like) Pos() int         { return e.P }
func (e *Call) Pos() int         { return e.P }
func (e *NamedArg) Pos() int     { return e.P }
func (e *Cast) Pos() int         { return e.P }
func (e *Extract) Pos() int      { return e.P }
func (e *Interval) Pos() int     { return e.P }

func (*Ident) exprNode()        {}
func (*Literal) exprNode()      {}
func (*TypedLiteral) exprNode() {}
func (*Unary) exprNode()        {}
func (*Binary) exprNode()       {}
func (*Is) exprNode()           {}
func (*Between) exprNode()      {}
func (*In) exprNode()           {}
func (*Like) exprNode()         {}
func (*Call) exprNode()         {}
func (*NamedArg) exprNode()     {}
func (*Cast) exprNode()         {}
func (*Extract) exprNode()      {}
func (*Interval) exprNode()     {}

func (e *Ident) String() string {
	parts := make([]string, len(e.Parts))
	for i, p := range e.Parts {
		parts[i] = quoteIdent(p)
	}
	return strings.Join(parts, ".")
}

func (e *Literal) String() string {
	switch e.Kind {
	case LitNull:
		return "NULL"
	case LitString:
		return quoteString(e.Text)
	case LitBytes:
		return quoteBytes(e.Text)
	}
	return e.Text
}

func (e *TypedLiteral) String() string { return e.Type + " " + quoteString(e.Value) }

func (e *Unary) String() string {
	if e.Op == "NOT" {
		return "(NOT " + e.X.String() + ")"
	}
	return "(" + e.Op + e.X.String() + ")"
}

// String prints a chain of left-associative operators (a OR b OR c) in
// one pair of parentheses, so that its printed form is no deeper to parse
// than the chain.
func (e *Binary) String() string {
	links := []*Binary{e}
	for l, ok := chainLink(e); ok; l, ok = chainLink(l) {
		links = append(links, l)
	}
	var b strings.Builder
	b.WriteString("(")
	b.WriteString(links[len(links)-1].L.String())
	for i := len(links) - 1; i >= 0; i-- {
		b.WriteString(" " + links[i].Op + " ")
		b.WriteString(links[i].R.String())
	}
	b.WriteString(")")
	return b.String()
}

func (e *Is) String() string {
	not := ""
	if e.Not {
		not = "NOT "
	}
	return "(" + e.X.String() + " IS " + not + e.What + ")"
}

func (e *Between) String() string {
	return "(" + e.X.String() + notStr(e.Not) + " BETWEEN " + e.Lo.String() + " AND " + e.Hi.String() + ")"
}

func (e *In) String() string {
	items := make([]string, len(e.List))
	for i, x := range e.List {
		items[i] = x.String()
	}
	return "(" + e.X.String() + notStr(e.Not) + " IN (" + strings.Join(items, ", ") + "))"
}

func (e *Like) String() string {
	switch {
	case e.Array != nil:
		return "(" + e.X.String() + notStr(e.Not) + " LIKE " + e.Quant + " UNNEST(" + e.Array.String() + "))"
	case e.Quant != "":
		items := make([]string, len(e.List))
		for i, x := range e.List {
			items[i] = x.String()
		}
		return "(" + e.X.String() + notStr(e.Not) + " LIKE " + e.Quant + " (" + strings.Join(items, ", ") + "))"
	}
	return "(" + e.X.String() + notStr(e.Not) + " LIKE " + e.Pattern.String() + ")"
}

func (e *Call) String() string {
	args := make([]string, len(e.Args))
	for i, x := range e.Args {
		args[i] = x.String()
	}
	name := e.Name
	if e.Safe {
		name = "SAFE." + name
	}
	return name + "(" + strings.Join(args, ", ") + ")"
}

func (e *NamedArg) String() string { return quoteIdent(e.Name) + " => " + e.X.String() }

func (e *Cast) String() string {
	fn := "CAST"
	if e.Safe {
		fn = "SAFE_CAST"
	}
	f := ""
	if e.Format != nil {
		f = " FORMAT " + e.Format.String()
		if e.Zone != nil {
			f += " AT TIME ZONE " + e.Zone.String()
		}
	}
	return fn + "(" + e.X.String() + " AS " + e.Type + f + ")"
}

func (e *Extract) String() string {
	if e.Zone != nil {
		return "EXTRACT(" + e.Part + " FROM " + e.X.String() + " AT TIME ZONE " + e.Zone.String() + ")"
	}
	return "EXTRACT(" + e.Part + " FROM " + e.X.String() + ")"
}

func (e *Interval) String() string {
	if e.To != "" {
		return "INTERVAL " + e.X.String() + " " + e.Part + " TO " + e.To
	}
	return "INTERVAL " + e.X.String() + " " + e.Part
}

func notStr(not bool) string {
	if not {
		return " NOT"
	}
	return ""
}

// quoteIdent returns s as written in an expression: bare when it is a plain
// unreserved identifier, in backticks otherwise.
func quoteIdent(s string) string {
	plain := s != "" && isIdentStart(s[0]) && !isReserved(s)
	for i := 0; plain && i < len(s); i++ {
		plain = isIdentChar(s[i])
	}
	if plain {
		return s
	}
	var b strings.Builder
	b.WriteByte('`')
	writeEscaped(&b, s, '`', false)
	b.WriteByte('`')
	return b.String()
}

// quoteString returns a single-quoted GoogleSQL string literal for s.
func quoteString(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	writeEscaped(&b, s, '\'', false)
	b.WriteByte('\'')
	return b.String()
}

// quoteBytes returns a b'...' bytes literal for s.
func quoteBytes(s string) string {
	var b strings.Builder
	b.WriteString("b'")
	writeEscaped(&b, s, '\'', true)
	b.WriteByte('\'')
	return b.String()
}

func writeEscaped(b *strings.Builder, s string, quote byte, bytes bool) {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\' || c == quote:
			b.WriteByte('\\')
			b.WriteByte(c)
			i++
		case c == '\n':
			b.WriteString(`\n`)
			i++
		case c == '\r':
			b.WriteString(`\r`)
			i++
		case c == '\t':
			b.WriteString(`\t`)
			i++
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(b, `\x%02x`, c)
			i++
		case c >= utf8.RuneSelf && bytes:
			fmt.Fprintf(b, `\x%02x`, c)
			i++
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				// Not valid UTF-8 (only reachable from a quoted identifier);
				// keep the byte as a hex escape so the text re-lexes.
				fmt.Fprintf(b, `\x%02x`, c)
			} else {
				b.WriteString(s[i : i+n])
			}
			i += n
		default:
			b.WriteByte(c)
			i++
		}
	}
}
