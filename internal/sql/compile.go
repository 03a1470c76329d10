package sql

import (
	"errors"
	"strings"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
)

// text returns the statement with everything outside [from, to) blanked
// (each byte a space, newlines kept), so that the expression layer's
// byte positions are positions in the statement (compileText makes its
// error columns count the statement's characters again).
func (r *runner) text(from, to int) string {
	var b strings.Builder
	b.Grow(to)
	for i := range from {
		if r.src[i] == '\n' {
			b.WriteByte('\n')
		} else {
			b.WriteByte(' ')
		}
	}
	b.WriteString(r.src[from:to])
	return b.String()
}

// compile compiles a span against the block's input.
func (q *selectQuery) compile(sp Span) (*filter.Scalar, error) {
	text := q.text(sp.pos(), sp.end())
	if len(q.windows) > 0 {
		text = q.windowText(sp)
	}
	// Subqueries first: a correlated one adds a column to q.in.
	text, consts, err := q.substitute(text, q.scope())
	if err != nil {
		return nil, err
	}
	return q.compileText(text, q.in.schema, nil, filter.WithConstants(consts), filter.WithNames(q.names))
}

// names resolves a name of the block: its input, then the enclosing
// blocks' inputs (correlated references).
func (q *selectQuery) names(parts []string, pos int) (string, int, error) {
	i, used, err := q.in.resolve(q.src, parts, pos)
	if err == nil {
		return q.in.cols[i].internal, used, nil
	}
	if col, u, ok, err2 := q.outerResolve(parts, pos); ok {
		return col, u, err2
	}
	return "", 0, err
}

// compileQualify compiles QUALIFY over the input and the windows' columns;
// it may name a select-list alias of a window call or of a column.
func (q *selectQuery) compileQualify(sp Span, items []Item) (*filter.Scalar, error) {
	// q.in, as a correlated subquery of QUALIFY leaves it (its column).
	base := func(parts []string, pos int) (string, int, error) { return q.in.names(q.src)(parts, pos) }
	names := func(parts []string, pos int) (string, int, error) {
		col, used, err := base(parts, pos)
		if err == nil || len(parts) == 0 {
			return col, used, err
		}
		for _, it := range items {
			if !strings.EqualFold(it.Alias, parts[0]) {
				continue
			}
			if it.Star {
				return it.col, 1, nil
			}
			if w, ok := q.windowAt[it.Expr.pos()]; ok && w.end == it.Expr.end() {
				return w.col, 1, nil
			}
			if p, ok := it.Expr.path(); ok && len(p) > 0 {
				if c, u, err2 := base(p, pos); err2 == nil && u == len(p) {
					return c, 1, nil
				}
			}
		}
		return col, used, err
	}
	text, consts, err := q.substitute(q.windowText(sp), q.scope())
	if err != nil {
		return nil, err
	}
	x, err := q.compileText(text, q.in.schema, nil, filter.WithConstants(consts), filter.WithNames(names))
	if err != nil {
		return nil, err
	}
	if t := x.Type(); t != "BOOL" && t != "NULL" {
		return nil, q.errf(sp.pos(), "QUALIFY clause should return type BOOL, but returns %s", t)
	}
	return x, nil
}

// compileText compiles an expression (the statement's text blanked
// outside it) against s; its subqueries run in sc (nil: none allowed).
func (r *runner) compileText(text string, s *schema.Schema, sc *scope, opts ...filter.Option) (*filter.Scalar, error) {
	text, consts, err := r.substitute(text, sc)
	if err != nil {
		return nil, err
	}
	if consts != nil {
		opts = append(opts, filter.WithConstants(consts))
	}
	if oc := r.outerConsts(); oc != nil {
		opts = append(opts, filter.WithConstants(oc))
	}
	opts = append(opts, filter.WithParams(r.opts.Params))
	opts = append(opts, r.clock()...)
	x, err := filter.CompileScalar(text, s, opts...)
	var fe *filter.Error
	if errors.As(err, &fe) {
		r.statementColumn(fe, text)
		// The expression layer speaks of row_restriction here.
		if rest, ok := strings.CutPrefix(fe.Msg, "row_restriction cannot reference REPEATED field "); ok {
			name, _, _ := strings.Cut(rest, ":")
			fe.Msg = "not supported yet by bqstore: REPEATED (ARRAY) columns in queries: " + name
		}
	}
	return x, err
}

// statementColumn makes the line and column of fe, an error in text (the
// statement blanked byte for byte before the expression, as text and
// windowText make it), count the statement's characters in the blanked
// part, where text has a space for each byte of a multibyte character.
func (r *runner) statementColumn(fe *filter.Error, text string) {
	blank := len(text) - len(strings.TrimLeft(text, " \n"))
	if blank == 0 || blank > len(r.src) || fe.Pos < blank || fe.Pos > len(text) {
		return
	}
	e := filter.NewError(r.src[:blank]+text[blank:], fe.Pos, "")
	fe.Line, fe.Column = e.Line, e.Column
}

// compileItem compiles a select-list item against the input.
func (q *selectQuery) compileItem(it Item) (*filter.Scalar, error) {
	if it.Star {
		return q.compileText(quoteIdent(it.col), q.in.schema, nil)
	}
	return q.compile(it.Expr)
}

func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "\\`") + "`" }

func indexAt(toks []filter.Token, pos int) int {
	for i, t := range toks {
		if t.Pos == pos {
			return i
		}
	}
	return 0
}
