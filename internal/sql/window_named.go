package sql

import (
	"strings"

	"github.com/bqstore/bqstore/internal/filter"
)

// Named windows: WINDOW name AS (spec) | name [, ...] after QUALIFY, used
// as OVER name, or as the first word of an OVER (...) that adds to it
// (OVER (w ORDER BY x)). A window is kept as the pieces of its
// specification's tokens, each contiguous in the statement (a named
// window's own text, then what a reference adds), so that every
// expression of it compiles from the statement's text at its position.

type namedWindow struct {
	pieces       [][]filter.Token
	order, frame bool // it has, or inherits, an ORDER BY / a frame
}

// tokens is the window's specification as one token list.
func (w *namedWindow) tokens() []filter.Token {
	var out []filter.Token
	for _, p := range w.pieces {
		out = append(out, p...)
	}
	return out
}

// windowClause parses the definitions of a WINDOW clause (after the
// keyword).
func (p *parser) windowClause() (map[string]*namedWindow, error) {
	named := map[string]*namedWindow{}
	for {
		name, pos, err := p.name()
		if err != nil {
			return nil, err
		}
		if err := p.expect("keyword AS", p.isKw("AS")); err != nil {
			return nil, err
		}
		var spec []filter.Token
		switch t := p.tok(); {
		case p.isOp("("):
			end := closing(p.toks, p.i)
			if end < 0 {
				return nil, p.errf(p.toks[len(p.toks)-1].Pos, "Syntax error: Expected \")\" but got end of input")
			}
			spec = p.toks[p.i+1 : end]
			p.i = end + 1
		case t.QIdent || t.Ident && !filter.IsReserved(t.Text):
			spec = []filter.Token{t}
			p.i++
		default:
			return nil, p.errf(t.Pos, "Syntax error: Expected \"(\" but got %s", describe(t))
		}
		if _, dup := named[strings.ToLower(name)]; dup {
			return nil, p.errf(pos, "Duplicate window alias %s", name)
		}
		w, err := expandWindow(p.src, named, spec)
		if err != nil {
			return nil, err
		}
		named[strings.ToLower(name)] = w
		if !p.isOp(",") {
			return named, nil
		}
		p.i++
	}
}

// expandWindow resolves a window specification that may start with the
// name of a window defined before it, with GoogleSQL's rules for what a
// reference may add (zetasql's analyzer words the errors).
func expandWindow(src string, named map[string]*namedWindow, spec []filter.Token) (*namedWindow, error) {
	partition, order, frame := -1, -1, -1
	depth := 0
	for i, t := range spec {
		switch {
		case t.Op && (t.Text == "(" || t.Text == "["):
			depth++
		case t.Op && (t.Text == ")" || t.Text == "]"):
			depth--
		case depth == 0 && t.Ident:
			switch strings.ToUpper(t.Text) {
			case "PARTITION":
				partition = i
			case "ORDER":
				if order < 0 {
					order = i
				}
			case "ROWS", "RANGE":
				frame = i
			}
		}
	}
	out := &namedWindow{order: order >= 0, frame: frame >= 0}
	if len(spec) == 0 {
		return out, nil
	}
	first := spec[0]
	kw := strings.ToUpper(first.Text)
	if !(first.QIdent || first.Ident && kw != "PARTITION" && kw != "ORDER" && kw != "ROWS" && kw != "RANGE") {
		out.pieces = [][]filter.Token{spec}
		return out, nil
	}
	base := named[strings.ToLower(first.Value)]
	if base == nil {
		return nil, filter.NewError(src, first.Pos, "Unrecognized window alias %s", first.Value)
	}
	if partition >= 0 {
		return nil, filter.NewError(src, first.Pos, "If a window has a PARTITION BY, it cannot reference a named window")
	}
	if len(spec) > 1 {
		// After the name: ORDER BY, a frame, or nothing.
		if t := spec[1]; !(t.Ident && (strings.EqualFold(t.Text, "ORDER") || strings.EqualFold(t.Text, "ROWS") || strings.EqualFold(t.Text, "RANGE"))) {
			return nil, filter.NewError(src, t.Pos, "Syntax error: Unexpected %s", describe(t))
		}
	}
	if (order >= 0 || frame >= 0) && base.frame {
		return nil, filter.NewError(src, first.Pos, "If a window has an inline ORDER BY or window frame clause, it cannot reference another window that contains or inherits a window frame clause")
	}
	if order >= 0 && base.order {
		return nil, filter.NewError(src, spec[order].Pos, "If a window inherits an ORDER BY from its referenced window, it cannot have an inline ORDER BY")
	}
	out.pieces = append(out.pieces, base.pieces...)
	if len(spec) > 1 {
		out.pieces = append(out.pieces, spec[1:])
	}
	out.order, out.frame = out.order || base.order, out.frame || base.frame
	return out, nil
}

// overSpec returns the window specification of the OVER at toks[o]
// (OVER (spec) or OVER name) and the index of its last token.
func (q *selectQuery) overSpec(toks []filter.Token, o int) (*namedWindow, int, error) {
	var spec []filter.Token
	var end int
	switch {
	case o+1 < len(toks) && toks[o+1].Op && toks[o+1].Text == "(":
		end = closing(toks, o+1)
		if end < 0 {
			return nil, 0, q.errf(toks[len(toks)-1].End, "Syntax error: Expected \")\"")
		}
		spec = toks[o+2 : end]
	case o+1 < len(toks) && (toks[o+1].QIdent || toks[o+1].Ident && !filter.IsReserved(toks[o+1].Text)):
		end = o + 1
		spec = toks[o+1 : o+2]
	default:
		return nil, 0, q.errf(toks[min(o+1, len(toks)-1)].Pos, "Syntax error: Expected \"(\"")
	}
	w, err := expandWindow(q.src, q.sel.Windows, spec)
	if err != nil {
		return nil, 0, err
	}
	return w, end, nil
}
