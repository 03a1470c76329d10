package sql

import (
	"errors"
	"fmt"
	"strings"

	"github.com/bqstore/bqstore/internal/filter"
)

// Subqueries inside expressions: scalar `(SELECT ...)`, `x [NOT] IN
// (SELECT ...)` and `EXISTS (SELECT ...)`. An uncorrelated subquery is
// run before the expression is compiled; its text is replaced by a name
// of the same length (padded with spaces, so positions hold) that the
// expression layer resolves to the value (filter.WithConstants). A
// subquery that names a column of the enclosing block (correlated)
// becomes a column of that block's input (correlated.go).

// scope is what an expression's subqueries see: the WITH entries, and
// the enclosing query's input (to recognise correlated references).
type scope struct {
	env   *env
	outer *relation
	q     *selectQuery // the block, when a correlated subquery may add a column to its input
	// groups, when the expression is over the groups of an aggregation
	// of outer's rows: a correlated subquery becomes a column of the
	// groups' record (correlated_groups.go).
	groups *groupCorr
	// join: the expression is a JOIN's ON condition, where BigQuery
	// refuses IN and EXISTS subqueries and correlated ones that read a
	// table.
	join bool
}

// subqueryEnd returns the index of the parenthesis closing a subquery
// that opens at toks[i], or -1 if none opens there.
func subqueryEnd(toks []filter.Token, i int) int {
	if i+1 >= len(toks) || !(toks[i].Op && toks[i].Text == "(") {
		return -1
	}
	nx := toks[i+1]
	if !nx.Ident || !(strings.EqualFold(nx.Text, "SELECT") || strings.EqualFold(nx.Text, "WITH")) {
		return -1
	}
	return closing(toks, i)
}

// substitute runs the subqueries of text, at byte offset at of the
// statement, and returns the text with each replaced by a constant's
// name, and the constants.
func (r *runner) substitute(text string, at int, sc *scope) (string, map[string]filter.Const, error) {
	toks, err := filter.TokensAt(r.src[:at], text)
	if err != nil {
		return text, nil, nil // the expression layer reports it
	}
	var consts map[string]filter.Const
	out := []byte(text) // out[k-at] is the statement's byte k
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		exists := t.Ident && strings.EqualFold(t.Text, "EXISTS")
		open := i
		if exists {
			open = i + 1
		}
		end := subqueryEnd(toks, open)
		if end < 0 && open+1 < len(toks) && toks[open].Op && toks[open].Text == "(" && toks[open+1].Ident &&
			(strings.EqualFold(toks[open+1].Text, "SELECT") || strings.EqualFold(toks[open+1].Text, "WITH")) {
			// Unbalanced: the parser names what is missing.
			p := &parser{src: r.src, toks: toks, i: open + 1, params: r.opts.Params}
			if _, err := p.query(); err != nil {
				return "", nil, err
			}
			return "", nil, p.errf(p.tok().Pos, "Syntax error: Expected \")\" but got %s", describe(p.tok()))
		}
		if end < 0 {
			if exists {
				if open < len(toks) && !toks[open].EOF {
					return "", nil, r.errf(toks[open].Pos, "Syntax error: Expected \"(\" but got %s", describe(toks[open]))
				}
			}
			continue
		}
		if sc == nil {
			return "", nil, notSupported(r.src, toks[open+1].Pos, "subqueries here")
		}
		kind := "scalar"
		switch {
		case exists:
			kind = "EXISTS"
		case i > 0 && toks[i-1].Ident && strings.EqualFold(toks[i-1].Text, "IN"):
			kind = "IN"
		case i > 0 && toks[i-1].Ident && strings.EqualFold(toks[i-1].Text, "ARRAY"):
			kind = "ARRAY"
		}
		if sc.join && (kind == "IN" || kind == "EXISTS") {
			// BigQuery's answers (invalidQuery), correlated or not.
			return "", nil, r.errf(toks[i].Pos, "%s subquery not supported inside join predicate", kind)
		}
		p := &parser{src: r.src, toks: append(append([]filter.Token(nil), toks[:end]...), filter.Token{Pos: toks[end].Pos, End: toks[end].Pos, EOF: true}), i: open + 1, params: r.opts.Params}
		q, err := p.query()
		if err != nil {
			return "", nil, err
		}
		if !p.tok().EOF {
			return "", nil, p.errf(p.tok().Pos, "Syntax error: Expected \")\" but got %s", describe(p.tok()))
		}
		// A first run with the enclosing block's columns bound to NULL:
		// a correlated subquery references some.
		var frame *corrFrame
		if sc.outer != nil {
			frame = &corrFrame{rel: sc.outer, refs: map[int]bool{}, pos: map[int]int{}}
			r.corr = append(r.corr, frame)
		}
		r.exprSub++
		rs, err := r.query(r.ctx, q, sc.env)
		r.exprSub--
		if frame != nil {
			r.corr = r.corr[:len(r.corr)-1]
		}
		if err != nil {
			return "", nil, r.correlated(err, sc)
		}
		subPos := toks[open+1].Pos
		if frame != nil && len(frame.refs) > 0 {
			if sc.join {
				if readsTable(q) {
					return "", nil, r.errf(subPos, "Unsupported subquery with table in join predicate")
				}
				return "", nil, notSupported(r.src, subPos, "correlated subqueries in a JOIN's ON condition")
			}
			if sc.groups == nil && (sc.q == nil || sc.outer != sc.q.in) {
				return "", nil, notSupported(r.src, subPos, "correlated subqueries here")
			}
			if kind == "scalar" && len(rs.types) != 1 {
				return "", nil, r.errf(subPos, "Scalar subquery cannot have more than one column unless using SELECT AS STRUCT to build STRUCT values")
			}
			typ := "BOOL"
			from, to := toks[i].Pos, toks[end].End
			switch kind {
			case "scalar":
				typ = rs.types[0]
				if typ == "NULL" {
					typ = "INT64"
				}
			case "ARRAY":
				k, err := r.arraySubquery(rs, subPos)
				if err != nil {
					return "", nil, err
				}
				typ, from = k.Type, toks[i-1].Pos // the replaced text starts at ARRAY
			}
			if kind == "IN" && sc.groups != nil {
				// x [NOT] IN (correlated) over the groups: the column is
				// the subquery's values per group, as an ARRAY, and the
				// predicate x [NOT] IN UNNEST(column) (its three-valued
				// logic is IN's).
				if len(rs.types) != 1 {
					return "", nil, r.errf(subPos, "Subquery of type IN must have only one output column")
				}
				et := rs.types[0]
				if et == "NULL" {
					et = "INT64"
				}
				if typeKind(et) == "ARRAY" {
					return "", nil, notSupported(r.src, subPos, "IN subqueries of ARRAY values")
				}
				typ = "ARRAY<" + et + ">"
			}
			var in *inPred
			if kind == "IN" && sc.groups == nil {
				// x [NOT] IN (correlated): the column is the whole
				// predicate's value, x evaluated per row (correlated.go).
				if len(rs.types) != 1 {
					return "", nil, r.errf(subPos, "Subquery of type IN must have only one output column")
				}
				var err error
				if in, from, err = sc.q.inOperand(toks, i, rs.types[0]); err != nil {
					return "", nil, err
				}
			}
			var name string
			if sc.groups != nil {
				if name, err = sc.groups.add(q, sc.env, kind, typ, frame, subPos); err != nil {
					return "", nil, err
				}
			} else {
				name = sc.q.correlatedColumn(q, sc.env, kind, typ, frame.refs, in)
				sc.outer = sc.q.in
			}
			if kind == "IN" && sc.groups != nil {
				name = "UNNEST(" + name + ")"
			}
			if len(name) > to-from {
				return "", nil, notSupported(r.src, from, "this subquery")
			}
			for k := from - at; k < to-at; k++ {
				if out[k] != '\n' {
					out[k] = ' '
				}
			}
			copy(out[from-at:], name)
			i = end
			continue
		}
		var k filter.Const
		switch kind {
		case "ARRAY":
			if k, err = r.arraySubquery(rs, subPos); err != nil {
				return "", nil, err
			}
			i-- // the replaced text starts at ARRAY
		case "EXISTS":
			k = filter.Const{Type: "BOOL", Values: []any{len(rs.rows) > 0}}
		case "IN":
			if len(rs.types) != 1 {
				return "", nil, r.errf(subPos, "Subquery of type IN must have only one output column")
			}
			k = filter.Const{Type: rs.types[0], Set: true}
			for _, row := range rs.rows {
				k.Values = append(k.Values, row[0])
			}
		default:
			if len(rs.types) != 1 {
				return "", nil, r.errf(subPos, "Scalar subquery cannot have more than one column unless using SELECT AS STRUCT to build STRUCT values")
			}
			if len(rs.rows) > 1 {
				return "", nil, r.errf(subPos, "Scalar subquery produced more than one element")
			}
			var v any
			if len(rs.rows) == 1 {
				v = rs.rows[0][0]
			}
			k = filter.Const{Type: rs.types[0], Values: []any{v}}
		}
		r.nsub++
		name := fmt.Sprintf("__s%d", r.nsub)
		from, to := toks[i].Pos, toks[end].End
		repl := name
		if kind == "IN" || kind == "scalar" {
			repl = "(" + name
		}
		if len(repl)+1 > to-from {
			return "", nil, notSupported(r.src, from, "this subquery")
		}
		for k := from - at; k < to-at; k++ {
			if out[k] != '\n' {
				out[k] = ' '
			}
		}
		copy(out[from-at:], repl)
		if kind == "IN" || kind == "scalar" {
			out[to-1-at] = ')'
		}
		if consts == nil {
			consts = map[string]filter.Const{}
		}
		consts[name] = k
		i = end
	}
	return string(out), consts, nil
}

// correlated turns "Unrecognized name: x" inside a subquery, where x is a
// column of the enclosing query, into "not supported yet".
func (r *runner) correlated(err error, sc *scope) error {
	var fe *filter.Error
	if sc.outer == nil || !errors.As(err, &fe) {
		return err
	}
	if name, ok := strings.CutPrefix(fe.Msg, "Unrecognized name: "); ok && (sc.outer.has(name) || sc.outer.vars[strings.ToLower(name)]) {
		return &filter.Error{Pos: fe.Pos, Line: fe.Line, Column: fe.Column, Msg: "not supported yet by bqstore: correlated subqueries (a reference to " + name + " of the enclosing query)"}
	}
	return err
}

// readsTable reports whether a query reads a table (or a WITH entry) in
// a FROM clause, its own or a FROM subquery's; UNNEST reads none.
func readsTable(q *Query) bool {
	var body func(b queryBody) bool
	var from func(f FromItem) bool
	from = func(f FromItem) bool {
		switch f := f.(type) {
		case *TableRef:
			return true
		case *SubqueryRef:
			return readsTable(f.Q)
		case *JoinRef:
			return from(f.Left) || from(f.Right)
		}
		return false
	}
	body = func(b queryBody) bool {
		switch b := b.(type) {
		case *Select:
			return from(b.From)
		case *Query:
			return readsTable(b)
		case *SetOp:
			return body(b.Left) || body(b.Right)
		}
		return false
	}
	return body(q.Body)
}
