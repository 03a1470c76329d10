package sql

import (
	"strconv"
	"strings"

	"github.com/bqstore/bqstore/internal/filter"
)

type parser struct {
	src  string
	toks []filter.Token
	i    int
	// params are the query parameters (nil: none), for LIMIT and
	// OFFSET (params.go).
	params *filter.Params
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

func (p *parser) expect(what string, ok bool) error {
	if ok {
		p.i++
		return nil
	}
	return p.errf(p.tok().Pos, "Syntax error: Expected %s but got %s", what, describe(p.tok()))
}

// unsupported clauses and statements: keyword -> feature named in the error.
var unsupportedKw = map[string]string{
	"TABLESAMPLE": "TABLESAMPLE", "PIVOT": "PIVOT", "UNPIVOT": "UNPIVOT", "OVER": "analytic functions (OVER)",
	"NATURAL": "NATURAL JOIN", "LATERAL": "LATERAL",
}

var statementKw = map[string]string{
	"INSERT": "INSERT", "UPDATE": "UPDATE", "DELETE": "DELETE", "MERGE": "MERGE", "TRUNCATE": "TRUNCATE TABLE",
	"CREATE": "CREATE", "DROP": "DROP", "ALTER": "ALTER", "DECLARE": "scripting", "BEGIN": "scripting",
	"SET": "scripting", "CALL": "CALL", "EXPORT": "EXPORT DATA", "LOAD": "LOAD DATA", "GRANT": "GRANT",
	"REVOKE": "REVOKE", "ASSERT": "ASSERT", "EXECUTE": "EXECUTE IMMEDIATE",
}

// notSupported reports a valid statement using a feature bqstore does not
// serve yet.
func notSupported(src string, pos int, feature string) error {
	return filter.NewError(src, pos, "not supported yet by bqstore: %s", feature)
}

// Parse parses one GoogleSQL query statement (an optional trailing
// semicolon allowed). Errors are *filter.Error with BigQuery's position
// suffix.
func Parse(src string) (*Query, error) { return parse(src, 0, nil) }

// parse is Parse of the statement at byte offset from of src (a script up
// to the statement's end; the text before from is neither lexed nor
// copied, but errors' [line:column] count it), with the query's
// parameters.
func parse(src string, from int, params *filter.Params) (*Query, error) {
	if len(src) > filter.MaxLength {
		return nil, &filter.Error{Line: 1, Column: 1, Msg: "The query is too large. The maximum standard SQL query length is 1024.00K characters"}
	}
	text := trimSemicolon(src)
	from = min(max(from, 0), len(text))
	toks, err := filter.TokensAt(src[:from], text[from:])
	if err != nil {
		return nil, err
	}
	p := &parser{src: src, toks: toks, params: params}
	t := p.tok()
	if t.EOF {
		return nil, p.errf(t.Pos, "Syntax error: Unexpected end of input")
	}
	if t.Ident {
		if f, ok := statementKw[strings.ToUpper(t.Text)]; ok {
			return nil, notSupported(src, t.Pos, f+" statements")
		}
	}
	if !p.isKw("SELECT") && !p.isKw("WITH") && !p.isOp("(") {
		return nil, p.errf(t.Pos, "Syntax error: Expected \"(\" or keyword SELECT or keyword WITH but got %s", describe(t))
	}
	q, err := p.query()
	if err != nil {
		return nil, err
	}
	if t := p.tok(); !t.EOF {
		return nil, p.trailing()
	}
	return q, nil
}

// trailing reports the token after a complete query.
func (p *parser) trailing() error {
	t := p.tok()
	if t.Ident {
		if f, ok := unsupportedKw[strings.ToUpper(t.Text)]; ok {
			return notSupported(p.src, t.Pos, f)
		}
	}
	return p.errf(t.Pos, "Syntax error: Expected end of input but got %s", describe(t))
}

func trimSemicolon(src string) string {
	t := strings.TrimRight(src, " \t\r\n")
	if strings.HasSuffix(t, ";") {
		return t[:len(t)-1]
	}
	return src
}

// query parses [WITH ...] set-expression [ORDER BY ...] [LIMIT ...].
func (p *parser) query() (*Query, error) {
	q := &Query{Limit: -1, Pos: p.tok().Pos}
	if p.isKw("WITH") {
		p.i++
		if p.isKw("RECURSIVE") {
			q.Recursive = true
			p.i++
		}
		for {
			t := p.tok()
			if !(t.QIdent || t.Ident && !filter.IsReserved(t.Text)) {
				return nil, p.unexpected()
			}
			p.i++
			if err := p.expect("keyword AS", p.isKw("AS")); err != nil {
				return nil, err
			}
			if err := p.expect("\"(\"", p.isOp("(")); err != nil {
				return nil, err
			}
			sub, err := p.query()
			if err != nil {
				return nil, err
			}
			if err := p.expect("\")\"", p.isOp(")")); err != nil {
				return nil, err
			}
			for _, c := range q.With {
				if strings.EqualFold(c.Name, t.Value) {
					return nil, p.errf(t.Pos, "Duplicate alias %s for WITH subquery", t.Value)
				}
			}
			q.With = append(q.With, &CTE{Name: t.Value, Pos: t.Pos, Q: sub})
			if !p.isOp(",") {
				break
			}
			p.i++
		}
		if !p.isKw("SELECT") && !p.isOp("(") {
			return nil, p.errf(p.tok().Pos, "Syntax error: Expected \"(\" or keyword SELECT but got %s", describe(p.tok()))
		}
	}
	body, err := p.setExpr()
	if err != nil {
		return nil, err
	}
	q.Body = body
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
			q.OrderBy = append(q.OrderBy, o)
			if !p.isOp(",") {
				break
			}
			p.i++
		}
	}
	if p.isKw("LIMIT") {
		p.i++
		if q.Limit, err = p.count("LIMIT"); err != nil {
			return nil, err
		}
		if p.isKw("OFFSET") {
			p.i++
			if q.Offset, err = p.count("OFFSET"); err != nil {
				return nil, err
			}
		}
	}
	return q, nil
}

// setExpr parses primary { UNION|INTERSECT|EXCEPT ALL|DISTINCT primary },
// one kind of operator per level (parentheses group others).
func (p *parser) setExpr() (queryBody, error) {
	left, err := p.primary()
	if err != nil {
		return nil, err
	}
	var first *SetOp
	for p.isKw("UNION") || p.isKw("INTERSECT") || p.isKw("EXCEPT") {
		t := p.tok()
		op := &SetOp{Op: strings.ToUpper(t.Text), Pos: t.Pos, Left: left}
		p.i++
		switch {
		case p.isKw("ALL"):
		case p.isKw("DISTINCT"):
			op.Distinct = true
		default:
			return nil, p.errf(p.tok().Pos, "Syntax error: Expected keyword ALL or keyword DISTINCT but got %s", describe(p.tok()))
		}
		p.i++
		if first == nil {
			first = op
		} else if first.Op != op.Op || first.Distinct != op.Distinct {
			return nil, p.errf(t.Pos, "Syntax error: Different set operations cannot be used in the same query without using parentheses for grouping")
		}
		if op.Right, err = p.primary(); err != nil {
			return nil, err
		}
		left = op
	}
	return left, nil
}

// primary parses a SELECT block or a parenthesised query.
func (p *parser) primary() (queryBody, error) {
	if p.isOp("(") {
		p.i++
		q, err := p.query()
		if err != nil {
			return nil, err
		}
		if err := p.expect("\")\"", p.isOp(")")); err != nil {
			return nil, err
		}
		return q, nil
	}
	if !p.isKw("SELECT") {
		return nil, p.errf(p.tok().Pos, "Syntax error: Expected \"(\" or keyword SELECT but got %s", describe(p.tok()))
	}
	return p.selectBlock()
}

func (p *parser) selectBlock() (*Select, error) {
	s := &Select{Pos: p.tok().Pos}
	p.i++
	if p.isKw("ALL") {
		p.i++
	} else if p.isKw("DISTINCT") {
		s.Distinct = true
		p.i++
	}
	if p.isKw("AS") {
		p.i++
		switch {
		case p.isKw("STRUCT"):
			s.AsStruct = true
		case p.isKw("VALUE"):
			s.AsValue = true
		default:
			return nil, p.errf(p.tok().Pos, "Syntax error: Expected keyword STRUCT or keyword VALUE but got %s", describe(p.tok()))
		}
		s.AsPos = p.tok().Pos
		p.i++
	}
	if err := p.selectList(s); err != nil {
		return nil, err
	}
	var err error
	if p.isKw("FROM") {
		p.i++
		if s.From, err = p.fromClause(); err != nil {
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
		if err := p.groupBy(s); err != nil {
			return nil, err
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
	if p.isKw("QUALIFY") {
		p.i++
		sp, err := p.expr()
		if err != nil {
			return nil, err
		}
		s.Qualify = &sp
	}
	if p.isKw("WINDOW") {
		p.i++
		if s.Windows, err = p.windowClause(); err != nil {
			return nil, err
		}
	}
	if t := p.tok(); t.Ident {
		if f, ok := unsupportedKw[strings.ToUpper(t.Text)]; ok {
			return nil, notSupported(p.src, t.Pos, f)
		}
	}
	return s, nil
}

// clauseKw end an expression at parenthesis depth 0.
var clauseKw = map[string]bool{
	"FROM": true, "WHERE": true, "GROUP": true, "HAVING": true, "ORDER": true, "LIMIT": true,
	"ASC": true, "DESC": true, "NULLS": true, "QUALIFY": true, "WINDOW": true,
	"UNION": true, "INTERSECT": true, "EXCEPT": true, "JOIN": true, "INNER": true, "LEFT": true,
	"RIGHT": true, "FULL": true, "CROSS": true, "ON": true, "USING": true, "AS": true, "FOR": true,
	"TABLESAMPLE": true, "NATURAL": true, "ROWS": true, "RANGE": true, "PARTITION": true,
}

// expr collects the tokens of one expression: up to a comma, a clause
// keyword or a closing parenthesis at depth 0. CASE ... END nests.
func (p *parser) expr() (Span, error) {
	return p.exprUntil(func(t filter.Token, start int) bool {
		return t.Ident && clauseKw[strings.ToUpper(t.Text)] && !p.distinctFrom() && !p.funcCall()
	})
}

// funcCall reports whether the current token, a clause keyword, is the
// name of a function call instead: LEFT( or RIGHT( (string functions),
// or a name after "." as in SAFE.LEFT(; or RANGE( and RANGE<T> 'text'
// (a window frame's RANGE is followed by neither).
func (p *parser) funcCall() bool {
	t := p.tok()
	next := p.toks[p.i+1] // the last token is EOF, never LEFT, RIGHT or RANGE
	if strings.EqualFold(t.Text, "RANGE") {
		prev := p.i > 0 && p.toks[p.i-1].Op && p.toks[p.i-1].Text == "."
		return next.Op && (next.Text == "(" || next.Text == "<") || prev
	}
	if !strings.EqualFold(t.Text, "LEFT") && !strings.EqualFold(t.Text, "RIGHT") {
		return false
	}
	prev := p.i > 0 && p.toks[p.i-1].Op && p.toks[p.i-1].Text == "."
	return next.Op && next.Text == "(" || prev
}

// distinctFrom reports whether the current token is the FROM of
// x IS [NOT] DISTINCT FROM y, which does not end the expression.
func (p *parser) distinctFrom() bool {
	kw := func(i int, w string) bool {
		return i >= 0 && p.toks[i].Ident && strings.EqualFold(p.toks[i].Text, w)
	}
	i := p.i - 1
	return kw(i+1, "FROM") && kw(i, "DISTINCT") && (kw(i-1, "IS") || kw(i-1, "NOT") && kw(i-2, "IS"))
}

// exprUntil collects the tokens of one expression: up to a comma or a
// closing parenthesis at depth 0, or a token at depth 0 for which stop
// (given the expression's first token index) is true. Parentheses,
// brackets and CASE ... END nest.
func (p *parser) exprUntil(stop func(t filter.Token, start int) bool) (Span, error) {
	start := p.i
	depth := 0
	angle := 0 // inside the <...> of ARRAY<T> or STRUCT<...>
	for {
		t := p.tok()
		if t.EOF {
			break
		}
		if depth == 0 && angle == 0 && stop(t, start) {
			break
		}
		if t.Op && (t.Text == "<" && p.i > start && isTypeKw(p.toks[p.i-1]) || angle > 0 && (t.Text == ">" || t.Text == ">>")) {
			switch t.Text {
			case "<":
				angle++
			case ">":
				angle--
			default:
				angle = max(0, angle-2)
			}
			p.i++
			continue
		}
		if t.Op && angle == 0 {
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

// isTypeKw is ARRAY, STRUCT or RANGE, which a <type parameter list>
// follows.
func isTypeKw(t filter.Token) bool {
	return t.Ident && (strings.EqualFold(t.Text, "ARRAY") || strings.EqualFold(t.Text, "STRUCT") || strings.EqualFold(t.Text, "RANGE"))
}

func (p *parser) selectList(s *Select) error {
	for {
		t := p.tok()
		// t.* (a path then ".*")
		qualStar := false
		if (t.Ident && !filter.IsReserved(t.Text) || t.QIdent) && p.i+2 < len(p.toks) &&
			p.toks[p.i+1].Op && p.toks[p.i+1].Text == "." && p.toks[p.i+2].Op && p.toks[p.i+2].Text == "*" {
			qualStar = true
		}
		if t.Op && t.Text == "*" || qualStar {
			it := Item{Star: true, pos: t.Pos}
			if qualStar {
				it.Qual = t.Value
				p.i += 2
			}
			p.i++
			if p.isKw("EXCEPT") && p.i+1 < len(p.toks) && p.toks[p.i+1].Op && p.toks[p.i+1].Text == "(" {
				p.i += 2
				for {
					n, pos, err := p.name()
					if err != nil {
						return err
					}
					it.Except = append(it.Except, nameAt{n, pos})
					if !p.isOp(",") {
						break
					}
					p.i++
				}
				if err := p.expect("\")\"", p.isOp(")")); err != nil {
					return err
				}
			}
			if p.isKw("REPLACE") && p.i+1 < len(p.toks) && p.toks[p.i+1].Op && p.toks[p.i+1].Text == "(" {
				p.i += 2
				for {
					sp, err := p.expr()
					if err != nil {
						return err
					}
					if err := p.expect("keyword AS", p.isKw("AS")); err != nil {
						return err
					}
					n, pos, err := p.name()
					if err != nil {
						return err
					}
					it.Replace = append(it.Replace, replaceItem{expr: sp, alias: n, pos: pos})
					if !p.isOp(",") {
						break
					}
					p.i++
				}
				if err := p.expect("\")\"", p.isOp(")")); err != nil {
					return err
				}
			}
			s.Items = append(s.Items, it)
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
	if parts, ok := (Span{toks: toks}).path(); ok {
		return parts[len(parts)-1]
	}
	return ""
}

// fromClause parses FROM items joined left to right by commas and JOINs.
func (p *parser) fromClause() (FromItem, error) {
	left, err := p.fromPrimary()
	if err != nil {
		return nil, err
	}
	for {
		t := p.tok()
		j := &JoinRef{Left: left, Pos: t.Pos}
		switch {
		case p.isOp(","):
			j.Kind, j.Comma = "CROSS", true
			p.i++
		case p.isKw("CROSS"):
			p.i++
			if err := p.expect("keyword JOIN", p.isKw("JOIN")); err != nil {
				return nil, err
			}
			j.Kind = "CROSS"
		case p.isKw("JOIN"), p.isKw("INNER"), p.isKw("LEFT"), p.isKw("RIGHT"), p.isKw("FULL"):
			j.Kind = "INNER"
			if !p.isKw("JOIN") {
				j.Kind = strings.ToUpper(t.Text)
				p.i++
				if j.Kind != "INNER" && p.isKw("OUTER") {
					p.i++
				}
			}
			if err := p.expect("keyword JOIN", p.isKw("JOIN")); err != nil {
				return nil, err
			}
		case p.isKw("NATURAL"):
			return nil, notSupported(p.src, t.Pos, "NATURAL JOIN")
		default:
			return left, nil
		}
		if j.Right, err = p.fromPrimary(); err != nil {
			return nil, err
		}
		_, unnest := j.Right.(*UnnestRef)
		if tr, ok := j.Right.(*TableRef); ok && len(tr.Path) > 1 {
			unnest = true // maybe an array path (implicit UNNEST): runner.join checks
		}
		if j.Kind != "CROSS" && !(unnest && !p.isKw("ON") && !p.isKw("USING")) {
			switch {
			case p.isKw("ON"):
				p.i++
				sp, err := p.expr()
				if err != nil {
					return nil, err
				}
				j.On = &sp
			case p.isKw("USING"):
				p.i++
				if err := p.expect("\"(\"", p.isOp("(")); err != nil {
					return nil, err
				}
				for {
					n, pos, err := p.name()
					if err != nil {
						return nil, err
					}
					j.Using = append(j.Using, nameAt{n, pos})
					if !p.isOp(",") {
						break
					}
					p.i++
				}
				if err := p.expect("\")\"", p.isOp(")")); err != nil {
					return nil, err
				}
			default:
				return nil, p.errf(p.tok().Pos, "Syntax error: Expected keyword ON or keyword USING but got %s", describe(p.tok()))
			}
		} else if p.isKw("ON") || p.isKw("USING") {
			return nil, p.errf(p.tok().Pos, "Syntax error: Expected end of input but got %s", describe(p.tok()))
		}
		left = j
	}
}

// fromPrimary parses a table, a subquery or a parenthesised join, with
// an optional alias.
func (p *parser) fromPrimary() (FromItem, error) {
	t := p.tok()
	if t.Ident && strings.EqualFold(t.Text, "UNNEST") {
		p.i++
		if err := p.expect("\"(\"", p.isOp("(")); err != nil {
			return nil, err
		}
		sp, err := p.expr()
		if err != nil {
			return nil, err
		}
		if err := p.expect("\")\"", p.isOp(")")); err != nil {
			return nil, err
		}
		u := &UnnestRef{Expr: sp, Pos: t.Pos}
		if u.Alias, err = p.alias(); err != nil {
			return nil, err
		}
		if u.Offset, u.OffsetAlias, err = p.withOffset(); err != nil {
			return nil, err
		}
		return u, nil
	}
	if p.isOp("(") {
		nx := p.toks[p.i+1]
		if nx.Ident && (strings.EqualFold(nx.Text, "SELECT") || strings.EqualFold(nx.Text, "WITH")) || nx.Op && nx.Text == "(" {
			p.i++
			q, err := p.query()
			if err != nil {
				return nil, err
			}
			if err := p.expect("\")\"", p.isOp(")")); err != nil {
				return nil, err
			}
			s := &SubqueryRef{Q: q, Pos: t.Pos}
			if s.Alias, err = p.alias(); err != nil {
				return nil, err
			}
			return s, nil
		}
		p.i++
		j, err := p.fromClause()
		if err != nil {
			return nil, err
		}
		if err := p.expect("\")\"", p.isOp(")")); err != nil {
			return nil, err
		}
		return j, nil
	}
	n, path, err := p.tableName()
	if err != nil {
		return nil, err
	}
	r := &TableRef{Name: *n, Path: path}
	if p.isKw("FOR") {
		if r.AsOf, err = p.systemTime(); err != nil {
			return nil, err
		}
	}
	if r.Alias, err = p.alias(); err != nil {
		return nil, err
	}
	if p.isKw("FOR") && r.AsOf == nil {
		if r.AsOf, err = p.systemTime(); err != nil {
			return nil, err
		}
	}
	if r.Offset, r.OffsetAlias, err = p.withOffset(); err != nil {
		return nil, err
	}
	return r, nil
}

// withOffset parses [WITH OFFSET [[AS] alias]] after UNNEST or an array
// path.
func (p *parser) withOffset() (bool, string, error) {
	if !p.isKw("WITH", "OFFSET") {
		return false, "", nil
	}
	p.i += 2
	alias := "offset"
	if p.isKw("AS") {
		p.i++
		n, _, err := p.name()
		return true, n, err
	}
	if t := p.tok(); t.QIdent || t.Ident && !filter.IsReserved(t.Text) && !clauseKw[strings.ToUpper(t.Text)] {
		alias = t.Value
		p.i++
	}
	return true, alias, nil
}

// alias parses [AS] name after a FROM item.
func (p *parser) alias() (string, error) {
	if p.isKw("AS") {
		p.i++
		n, _, err := p.name()
		return n, err
	}
	if t := p.tok(); t.QIdent || t.Ident && !filter.IsReserved(t.Text) && !clauseKw[strings.ToUpper(t.Text)] {
		if f, ok := unsupportedKw[strings.ToUpper(t.Text)]; ok {
			return "", notSupported(p.src, t.Pos, f)
		}
		p.i++
		return t.Value, nil
	}
	return "", nil
}

// tableName parses a table path: `p.d.t`, `p`.d.t, d.t, `d.t`; project
// names may contain dashes when quoted.
func (p *parser) tableName() (*TableName, []string, error) {
	t := p.tok()
	var parts []string
	for {
		t := p.tok()
		switch {
		case t.QIdent:
			parts = append(parts, strings.Split(t.Value, ".")...)
		case t.Ident && !filter.IsReserved(t.Text):
			parts = append(parts, t.Value)
		default:
			return nil, nil, p.unexpected()
		}
		p.i++
		if !p.isOp(".") {
			break
		}
		p.i++
	}
	for _, x := range parts {
		if strings.EqualFold(x, "INFORMATION_SCHEMA") {
			// Else d.INFORMATION_SCHEMA.TABLES would read as project d.
			return nil, nil, notSupported(p.src, t.Pos, "INFORMATION_SCHEMA views (tables.list and tables.get describe datasets' tables: bq ls, bq show)")
		}
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
		// Maybe an array path t.s.arr (implicit UNNEST), checked when
		// the FROM clause runs (runner.from).
	}
	return out, parts, nil
}

// count parses the integer literal of LIMIT or OFFSET.
func (p *parser) count(clause string) (int64, error) {
	t := p.tok()
	if t.Op || t.EOF || t.Ident || t.QIdent {
		return 0, p.errf(t.Pos, "Syntax error: Unexpected %s", describe(t))
	}
	if t.Param {
		return p.countParam(clause, t)
	}
	v, err := strconv.ParseInt(t.Text, 0, 64)
	if err != nil || v < 0 {
		return 0, p.errf(t.Pos, "%s expects an integer literal or parameter", clause)
	}
	p.i++
	return v, nil
}
