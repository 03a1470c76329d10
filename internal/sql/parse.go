package sql

import (
	"strconv"
	"strings"

	"github.com/bqstore/bqstore/internal/filter"
)

// Select is a parsed SELECT statement of the first slice of the language:
// one table (or none), WHERE, GROUP BY, HAVING, ORDER BY, LIMIT/OFFSET.
// Expressions are kept as spans of the source text: the expression layer
// (internal/filter) parses and checks them, with the text before the span
// blanked so that its error positions are positions in the statement.
type Select struct {
	src      string
	Distinct bool
	Items    []Item
	From     *TableName // nil: SELECT without FROM
	Where    *Span
	GroupBy  []Span
	Having   *Span
	OrderBy  []OrderItem
	Limit    int64 // -1: none
	Offset   int64
}

// Item is one expression of the SELECT list.
type Item struct {
	Star  bool // SELECT *
	Expr  Span
	Alias string // explicit or implied (a column's name); "" if none
	pos   int
}

// OrderItem is one key of ORDER BY.
type OrderItem struct {
	Expr       Span
	Desc       bool
	NullsLast  bool // ASC defaults to NULLS FIRST, DESC to NULLS LAST
	explicitNl bool
}

// TableName is a table path as written: project may be empty, dataset
// too (then the job's default dataset applies).
type TableName struct {
	Project, Dataset, Table string
	Pos                     int
}

// Span is a range of tokens of the statement.
type Span struct {
	toks []filter.Token
}

func (s Span) pos() int { return s.toks[0].Pos }
func (s Span) end() int { return s.toks[len(s.toks)-1].End }

// key is a normalised form of the span for matching GROUP BY
// expressions with SELECT ones: tokens, identifiers lower-cased.
func (s Span) key() string {
	var b strings.Builder
	for _, t := range s.toks {
		if t.Ident || t.QIdent {
			b.WriteString(strings.ToLower(t.Value))
		} else {
			b.WriteString(t.Text)
		}
		b.WriteByte(0)
	}
	return b.String()
}

// singleName returns the identifier if the span is one (unqualified) name.
func (s Span) singleName() (string, bool) {
	if len(s.toks) == 1 && (s.toks[0].QIdent || s.toks[0].Ident && !filter.IsReserved(s.toks[0].Text)) {
		return s.toks[0].Value, true
	}
	return "", false
}

type parser struct {
	src  string
	toks []filter.Token
	i    int
}

func (p *parser) tok() filter.Token { return p.toks[p.i] }

func (p *parser) isKw(kws ...string) bool {
	for k, kw := range kws {
		if p.i+k >= len(p.toks) {
			return false
		}
		t := p.toks[p.i+k]
		if !t.Ident || !strings.EqualFold(t.Text, kw) {
			return false
		}
	}
	return true
}

func (p *parser) isOp(op string) bool { t := p.tok(); return t.Op && t.Text == op }

func (p *parser) errf(pos int, format string, args ...any) error {
	return filter.NewError(p.src, pos, format, args...)
}

func describe(t filter.Token) string {
	switch {
	case t.EOF:
		return "end of input"
	case t.Ident && filter.IsReserved(t.Text):
		return "keyword " + strings.ToUpper(t.Text)
	case t.Ident || t.QIdent:
		return "identifier \"" + t.Value + "\""
	}
	return "\"" + t.Text + "\""
}

func (p *parser) unexpected() error {
	t := p.tok()
	if t.EOF {
		return p.errf(t.Pos, "Syntax error: Unexpected end of input")
	}
	return p.errf(t.Pos, "Syntax error: Unexpected %s", describe(t))
}

// unsupported clauses and statements: keyword -> feature named in the error.
var unsupportedKw = map[string]string{
	"JOIN": "JOIN", "INNER": "JOIN", "LEFT": "JOIN", "RIGHT": "JOIN", "FULL": "JOIN", "CROSS": "JOIN",
	"UNION": "UNION", "INTERSECT": "INTERSECT", "EXCEPT": "EXCEPT", "QUALIFY": "QUALIFY", "WINDOW": "WINDOW",
	"UNNEST": "UNNEST", "FOR": "FOR SYSTEM_TIME AS OF", "TABLESAMPLE": "TABLESAMPLE", "PIVOT": "PIVOT",
	"UNPIVOT": "UNPIVOT", "OVER": "analytic functions (OVER)", "ROLLUP": "GROUP BY ROLLUP",
	"WITH": "WITH", "SELECT": "subqueries", "EXISTS": "subqueries",
}

var statementKw = map[string]string{
	"INSERT": "INSERT", "UPDATE": "UPDATE", "DELETE": "DELETE", "MERGE": "MERGE", "TRUNCATE": "TRUNCATE TABLE",
	"CREATE": "CREATE", "DROP": "DROP", "ALTER": "ALTER", "DECLARE": "scripting", "BEGIN": "scripting",
	"SET": "scripting", "CALL": "CALL", "EXPORT": "EXPORT DATA", "LOAD": "LOAD DATA", "GRANT": "GRANT",
	"REVOKE": "REVOKE", "ASSERT": "ASSERT", "EXECUTE": "EXECUTE IMMEDIATE",
}

// NotSupportedError reports a valid statement using a feature bqstore
// does not serve yet.
func notSupported(src string, pos int, feature string) error {
	return filter.NewError(src, pos, "not supported yet by bqstore: %s", feature)
}

// Parse parses one GoogleSQL statement (an optional trailing semicolon
// allowed). Errors are *filter.Error with BigQuery's position suffix.
func Parse(src string) (*Select, error) {
	if len(src) > filter.MaxLength {
		return nil, &filter.Error{Line: 1, Column: 1, Msg: "The query is too large. The maximum standard SQL query length is 1024.00K characters"}
	}
	toks, err := filter.Tokens(trimSemicolon(src))
	if err != nil {
		return nil, err
	}
	p := &parser{src: src, toks: toks}
	t := p.tok()
	if t.EOF {
		return nil, p.errf(t.Pos, "Syntax error: Unexpected end of input")
	}
	if t.Ident {
		if f, ok := statementKw[strings.ToUpper(t.Text)]; ok {
			return nil, notSupported(src, t.Pos, f+" statements")
		}
		if strings.EqualFold(t.Text, "WITH") {
			return nil, notSupported(src, t.Pos, "WITH")
		}
	}
	if p.isOp("(") {
		return nil, notSupported(src, t.Pos, "parenthesized query expressions")
	}
	if !p.isKw("SELECT") {
		return nil, p.errf(t.Pos, "Syntax error: Expected \"(\" or keyword SELECT or keyword WITH but got %s", describe(t))
	}
	p.i++
	s := &Select{src: src, Limit: -1}
	if p.isKw("ALL") {
		p.i++
	} else if p.isKw("DISTINCT") {
		s.Distinct = true
		p.i++
	}
	if p.isKw("AS") {
		return nil, notSupported(src, p.tok().Pos, "SELECT AS STRUCT/VALUE")
	}
	if err := p.selectList(s); err != nil {
		return nil, err
	}
	if p.isKw("FROM") {
		p.i++
		if s.From, err = p.tableName(); err != nil {
			return nil, err
		}
	}
	if p.isKw("WHERE") {
		p.i++
		sp, err := p.expr()
		if err != nil {
			return nil, err
		}
		s.Where = &sp
	}
	if p.isKw("GROUP") {
		if !p.isKw("GROUP", "BY") {
			p.i++
			return nil, p.errf(p.tok().Pos, "Syntax error: Expected keyword BY but got %s", describe(p.tok()))
		}
		p.i += 2
		if p.isKw("ROLLUP") || p.isKw("CUBE") || p.isKw("GROUPING") {
			return nil, notSupported(src, p.tok().Pos, "GROUP BY "+strings.ToUpper(p.tok().Text))
		}
		for {
			sp, err := p.expr()
			if err != nil {
				return nil, err
			}
			s.GroupBy = append(s.GroupBy, sp)
			if !p.isOp(",") {
				break
			}
			p.i++
		}
	}
	if p.isKw("HAVING") {
		p.i++
		sp, err := p.expr()
		if err != nil {
			return nil, err
		}
		s.Having = &sp
	}
	if p.isKw("ORDER") {
		if !p.isKw("ORDER", "BY") {
			p.i++
			return nil, p.errf(p.tok().Pos, "Syntax error: Expected keyword BY but got %s", describe(p.tok()))
		}
		p.i += 2
		for {
			sp, err := p.expr()
			if err != nil {
				return nil, err
			}
			o := OrderItem{Expr: sp}
			if p.isKw("DESC") {
				o.Desc, o.NullsLast = true, true
				p.i++
			} else if p.isKw("ASC") {
				p.i++
			}
			if p.isKw("NULLS", "FIRST") {
				o.NullsLast, o.explicitNl = false, true
				p.i += 2
			} else if p.isKw("NULLS", "LAST") {
				o.NullsLast, o.explicitNl = true, true
				p.i += 2
			}
			s.OrderBy = append(s.OrderBy, o)
			if !p.isOp(",") {
				break
			}
			p.i++
		}
	}
	if p.isKw("LIMIT") {
		p.i++
		if s.Limit, err = p.count("LIMIT"); err != nil {
			return nil, err
		}
		if p.isKw("OFFSET") {
			p.i++
			if s.Offset, err = p.count("OFFSET"); err != nil {
				return nil, err
			}
		}
	}
	if t := p.tok(); !t.EOF {
		if t.Ident {
			if f, ok := unsupportedKw[strings.ToUpper(t.Text)]; ok {
				return nil, notSupported(src, t.Pos, f)
			}
		}
		if t.Op && t.Text == "," && s.From != nil {
			return nil, notSupported(src, t.Pos, "comma joins")
		}
		return nil, p.errf(t.Pos, "Syntax error: Expected end of input but got %s", describe(t))
	}
	return s, nil
}

func trimSemicolon(src string) string {
	t := strings.TrimRight(src, " \t\r\n")
	if strings.HasSuffix(t, ";") {
		return t[:len(t)-1]
	}
	return src
}

// clauseKw end an expression at parenthesis depth 0.
var clauseKw = map[string]bool{
	"FROM": true, "WHERE": true, "GROUP": true, "HAVING": true, "ORDER": true, "LIMIT": true,
	"OFFSET": true, "ASC": true, "DESC": true, "NULLS": true, "QUALIFY": true, "WINDOW": true,
	"UNION": true, "INTERSECT": true, "EXCEPT": true, "JOIN": true, "INNER": true, "LEFT": true,
	"RIGHT": true, "FULL": true, "CROSS": true, "ON": true, "USING": true, "AS": true, "FOR": true,
	"TABLESAMPLE": true,
}

// expr collects the tokens of one expression: up to a comma, a clause
// keyword or a closing parenthesis at depth 0. CASE ... END nests.
func (p *parser) expr() (Span, error) {
	start := p.i
	depth := 0
	for {
		t := p.tok()
		if t.EOF {
			break
		}
		if t.Op {
			switch t.Text {
			case "(", "[":
				depth++
			case ")", "]":
				if depth == 0 {
					goto done
				}
				depth--
			case ",":
				if depth == 0 {
					goto done
				}
			}
		} else if t.Ident && depth == 0 && clauseKw[strings.ToUpper(t.Text)] {
			// EXCEPT after "*" is SELECT * EXCEPT; anything else ends here.
			break
		}
		if t.Ident && strings.EqualFold(t.Text, "CASE") {
			depth++
		}
		if t.Ident && strings.EqualFold(t.Text, "END") && depth > 0 {
			depth--
		}
		p.i++
	}
done:
	if p.i == start {
		return Span{}, p.unexpected()
	}
	return Span{toks: p.toks[start:p.i]}, nil
}

func (p *parser) selectList(s *Select) error {
	for {
		t := p.tok()
		if t.Op && t.Text == "*" {
			p.i++
			if p.isKw("EXCEPT") || p.isKw("REPLACE") {
				return notSupported(p.src, p.tok().Pos, "SELECT * "+strings.ToUpper(p.tok().Text))
			}
			s.Items = append(s.Items, Item{Star: true, pos: t.Pos})
		} else {
			sp, err := p.expr()
			if err != nil {
				return err
			}
			it := Item{Expr: sp, pos: sp.pos()}
			if p.isKw("AS") {
				p.i++
				a := p.tok()
				if !(a.QIdent || a.Ident && !filter.IsReserved(a.Text)) {
					return p.errf(a.Pos, "Syntax error: Unexpected %s", describe(a))
				}
				it.Alias = a.Value
				p.i++
			} else if n := len(sp.toks); n >= 2 && bareAlias(sp.toks) {
				it.Alias = sp.toks[n-1].Value
				it.Expr = Span{toks: sp.toks[:n-1]}
			} else if len(sp.toks) >= 1 {
				it.Alias = impliedAlias(sp.toks)
			}
			s.Items = append(s.Items, it)
		}
		if !p.isOp(",") {
			return nil
		}
		p.i++
	}
}

// bareAlias reports whether the last token of an item is an alias without
// AS ("SELECT x total"): a name following a complete operand.
func bareAlias(toks []filter.Token) bool {
	last, prev := toks[len(toks)-1], toks[len(toks)-2]
	if !(last.QIdent || last.Ident && !filter.IsReserved(last.Text)) {
		return false
	}
	for _, t := range toks {
		if t.Ident && strings.EqualFold(t.Text, "INTERVAL") {
			return false
		}
	}
	if prev.Op {
		return prev.Text == ")" || prev.Text == "]"
	}
	if prev.Ident && filter.IsReserved(prev.Text) {
		// "x IS NULL" ends in a keyword; "CASE ... END total" has an alias.
		return strings.EqualFold(prev.Text, "END") || strings.EqualFold(prev.Text, "NULL") ||
			strings.EqualFold(prev.Text, "TRUE") || strings.EqualFold(prev.Text, "FALSE")
	}
	return true
}

// impliedAlias is the name BigQuery gives a column selected by a path:
// its last part.
func impliedAlias(toks []filter.Token) string {
	for i, t := range toks {
		if i%2 == 0 && !(t.QIdent || t.Ident && !filter.IsReserved(t.Text)) {
			return ""
		}
		if i%2 == 1 && !(t.Op && t.Text == ".") {
			return ""
		}
	}
	if len(toks)%2 == 0 {
		return ""
	}
	return toks[len(toks)-1].Value
}

// tableName parses a table path: `p.d.t`, `p`.d.t, d.t, `d.t`; project
// names may contain dashes when quoted.
func (p *parser) tableName() (*TableName, error) {
	t := p.tok()
	if p.isOp("(") {
		return nil, notSupported(p.src, t.Pos, "subqueries in FROM")
	}
	if t.Ident && strings.EqualFold(t.Text, "UNNEST") {
		return nil, notSupported(p.src, t.Pos, "UNNEST")
	}
	var parts []string
	for {
		t := p.tok()
		switch {
		case t.QIdent:
			parts = append(parts, strings.Split(t.Value, ".")...)
		case t.Ident && !filter.IsReserved(t.Text):
			parts = append(parts, t.Value)
		default:
			return nil, p.unexpected()
		}
		p.i++
		if !p.isOp(".") {
			break
		}
		p.i++
	}
	out := &TableName{Pos: t.Pos}
	switch len(parts) {
	case 1:
		out.Table = parts[0]
	case 2:
		out.Dataset, out.Table = parts[0], parts[1]
	case 3:
		out.Project, out.Dataset, out.Table = parts[0], parts[1], parts[2]
	default:
		return nil, p.errf(t.Pos, "Invalid table name: %s", strings.Join(parts, "."))
	}
	if p.isKw("AS") {
		return nil, notSupported(p.src, p.tok().Pos, "table aliases")
	}
	if t := p.tok(); t.QIdent || t.Ident && !filter.IsReserved(t.Text) && !clauseKw[strings.ToUpper(t.Text)] {
		return nil, notSupported(p.src, t.Pos, "table aliases")
	}
	return out, nil
}

// count parses the integer literal of LIMIT or OFFSET.
func (p *parser) count(clause string) (int64, error) {
	t := p.tok()
	if t.Op || t.EOF || t.Ident || t.QIdent {
		if t.Ident && strings.EqualFold(t.Text, "@") || t.Op && (t.Text == "@" || t.Text == "?") {
			return 0, notSupported(p.src, t.Pos, "query parameters")
		}
		return 0, p.errf(t.Pos, "Syntax error: Unexpected %s", describe(t))
	}
	v, err := strconv.ParseInt(t.Text, 0, 64)
	if err != nil || v < 0 {
		return 0, p.errf(t.Pos, "%s expects an integer literal or parameter", clause)
	}
	p.i++
	return v, nil
}
