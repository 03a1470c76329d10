package sql

import (
	"strings"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
)

// Compile compiles the value as a constant expression with the job's
// query parameters (nil: none).
func (v *ValueExpr) Compile(params *filter.Params) (*filter.Scalar, error) {
	x, err := filter.CompileScalar(v.Text, &schema.Schema{}, filter.WithParams(params), filter.At(v.prefix))
	if err != nil {
		return nil, err
	}
	if cols := x.Columns(); len(cols) > 0 {
		return nil, filter.NewError(v.prefix+v.Text, v.Pos, "Unrecognized name: %s", cols[0])
	}
	return x, nil
}

// This file parses INSERT; the job runner executes it (the rows go
// through one PENDING write stream committed at the job's end).

// insert parses INSERT [INTO] table [(columns)] VALUES (...), ... | query.
func (p *parser) insert() (*Insert, error) {
	p.i++ // INSERT
	if p.isKw("INTO") {
		p.i++
	}
	n, err := p.objectName()
	if err != nil {
		return nil, err
	}
	ins := &Insert{Table: *n}
	if p.isOp("(") && !p.isKw("SELECT") {
		// A column list, unless the parenthesis opens the query.
		if nx := p.toks[p.i+1]; !(nx.Ident && (strings.EqualFold(nx.Text, "SELECT") || strings.EqualFold(nx.Text, "WITH"))) {
			p.i++
			ins.Columns = []string{}
			seen := map[string]bool{}
			for {
				c, pos, err := p.name()
				if err != nil {
					return nil, err
				}
				if seen[strings.ToLower(c)] {
					return nil, p.errf(pos, "INSERT has columns with duplicate name: %s", c)
				}
				seen[strings.ToLower(c)] = true
				ins.Columns = append(ins.Columns, c)
				if !p.isOp(",") {
					break
				}
				p.i++
			}
			if err := p.expectOp(")"); err != nil {
				return nil, err
			}
		}
	}
	if p.isKw("VALUES") {
		p.i++
		for {
			row, err := p.valuesRow()
			if err != nil {
				return nil, err
			}
			ins.Rows = append(ins.Rows, row)
			if !p.isOp(",") {
				break
			}
			p.i++
		}
		return ins, p.end()
	}
	t := p.tok()
	if p.isKw("SELECT") || p.isKw("WITH") || p.isOp("(") {
		ins.Query, ins.QueryPos = p.src, t.Pos
		return ins, nil
	}
	return nil, p.errf(t.Pos, "Syntax error: Expected \"(\" or keyword SELECT or keyword VALUES or keyword WITH but got %s", describe(t))
}

// valuesRow parses one (expr | DEFAULT, ...) of VALUES, compiling each
// value as a constant expression.
func (p *parser) valuesRow() ([]*ValueExpr, error) {
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	var row []*ValueExpr
	for {
		if p.isKw("DEFAULT") && (p.toks[p.i+1].Op && (p.toks[p.i+1].Text == "," || p.toks[p.i+1].Text == ")")) {
			row = append(row, nil)
			p.i++
		} else {
			sp, err := p.expr()
			if err != nil {
				return nil, err
			}
			// Syntax errors now; names, types and parameters when the
			// job compiles the value (Compile).
			text, prefix := p.src[sp.pos():sp.end()], p.src[:sp.pos()]
			if _, err := filter.ParseAt(prefix, text); err != nil {
				// The expression's text ends where the statement goes
				// on: its "end of input" is the token that follows.
				if fe, ok := err.(*filter.Error); ok && strings.HasPrefix(fe.Msg, "Syntax error: Unexpected end of input") && !p.tok().EOF {
					return nil, p.unexpected()
				}
				return nil, err
			}
			v := &ValueExpr{Text: text, Pos: sp.pos(), prefix: prefix}
			if len(sp.toks) == 1 && isStringLit(sp.toks[0]) || isNumberLit(sp.toks) {
				v.Literal = p.src[sp.pos():sp.end()]
			}
			row = append(row, v)
		}
		if !p.isOp(",") {
			break
		}
		p.i++
	}
	return row, p.expectOp(")")
}

// isNumberLit reports whether toks are a number literal, possibly
// negated.
func isNumberLit(toks []filter.Token) bool {
	if len(toks) == 2 && toks[0].Op && toks[0].Text == "-" && toks[0].End == toks[1].Pos {
		toks = toks[1:]
	}
	if len(toks) != 1 {
		return false
	}
	t := toks[0]
	return !t.Ident && !t.QIdent && !t.Op && !t.EOF && t.Text != "" && (t.Text[0] >= '0' && t.Text[0] <= '9' || t.Text[0] == '.')
}
