package sql

import (
	"errors"
	"strings"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
)

// exprText is an expression's text and its byte offset at in the
// statement (r.src). Its bytes are the statement's, but where a subquery,
// an aggregate or window call or a GROUP BY expression was replaced by a
// name padded with spaces to the same length (substitute, windowText,
// rewrite), so positions in it are the statement's. compileText tells
// the expression layer what precedes it (filter.At) instead of handing
// it the statement blanked up to the expression: that made every
// expression cost the statement's length, quadratic in a long UNION ALL
// chain or select list.
type exprText struct {
	at   int
	text string
}

// text is the statement's [from, to).
func (r *runner) text(from, to int) exprText { return exprText{at: from, text: r.src[from:to]} }

// colText is the text naming a column (an expanded star's, a USING key):
// no position of the statement.
func colText(col string) exprText { return exprText{text: quoteIdent(col)} }

// compile compiles a span against the block's input.
func (q *selectQuery) compile(sp Span) (*filter.Scalar, error) {
	text := q.text(sp.pos(), sp.end())
	if len(q.windows) > 0 {
		text = q.windowText(sp)
	}
	// Subqueries first: a correlated one adds a column to q.in.
	text, consts, err := q.substituteText(text, q.scope())
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
	text, consts, err := q.substituteText(q.windowText(sp), q.scope())
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

// substituteText is substitute of an exprText.
func (r *runner) substituteText(text exprText, sc *scope) (exprText, map[string]filter.Const, error) {
	t, consts, err := r.substitute(text.text, text.at, sc)
	return exprText{at: text.at, text: t}, consts, err
}

// compileText compiles an expression against s; its subqueries run in sc
// (nil: none allowed).
func (r *runner) compileText(text exprText, s *schema.Schema, sc *scope, opts ...filter.Option) (*filter.Scalar, error) {
	// A cancelled query stops compiling at its next expression: a wide
	// select list is compiled before anything is read.
	if err := r.ctx.Err(); err != nil {
		return nil, err
	}
	text, consts, err := r.substituteText(text, sc)
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
	opts = append(opts, filter.At(r.src[:text.at]))
	x, err := filter.CompileScalar(text.text, s, opts...)
	var fe *filter.Error
	if errors.As(err, &fe) {
		// The expression layer speaks of row_restriction here.
		if rest, ok := strings.CutPrefix(fe.Msg, "row_restriction cannot reference REPEATED field "); ok {
			name, _, _ := strings.Cut(rest, ":")
			fe.Msg = "not supported yet by bqstore: REPEATED (ARRAY) columns in queries: " + name
		}
	}
	return x, err
}

// compileItem compiles a select-list item against the input.
func (q *selectQuery) compileItem(it Item) (*filter.Scalar, error) {
	if it.Star {
		return q.compileText(colText(it.col), q.in.schema, nil)
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
