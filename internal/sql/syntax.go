package sql

import (
	"errors"
	"strings"

	"github.com/bqstore/bqstore/internal/filter"
)

// Syntax checks of a script's queries before any statement runs.
// BigQuery parses a multi-statement query whole (ZetaSQL's ParseScript)
// before it runs its first statement: a syntax error anywhere fails the
// job with nothing run. The executor parses a query's structure when it
// runs it and each expression when it compiles it, so ParseScript checks
// here what would be a syntax error later: the query's structure, then
// each expression span (its subqueries checked as queries and replaced
// by a name, as the executor substitutes them). Only syntax errors count:
// names, types and parameters depend on what runs before (DDL of earlier
// statements, the job's parameters) and are the executor's to report.

// checkQuerySyntax checks the syntax of the query at offset from of src (a
// script up to the query's end). It returns only syntax errors.
func checkQuerySyntax(src string, from int) error {
	return (&walker{src: src}).query(from)
}

// Tables returns the tables the query at offset from of src (a script up
// to the query's end, as Run's Options.Offset) names, in the order of the
// syntax tree: WITH entries first, then each block's FROM, then its
// expressions' subqueries. Names of WITH entries are left out; a name
// that is an implicit UNNEST path may be in it. Nothing is resolved or
// run: this is for a caller that must know the tables without running
// the query (a job's location). A syntax error ends the walk: the names
// met before it are returned.
func Tables(src string, from int) []TableName {
	w := &walker{src: src, tables: true, ctes: map[string]bool{}}
	_ = w.query(from)
	return w.names
}

// walker walks a query's syntax tree, checking its expressions' syntax
// and, with tables, collecting the tables it names.
type walker struct {
	src    string
	tables bool
	ctes   map[string]bool // lower-case names of WITH entries
	names  []TableName
}

// query parses and walks the query at offset from of w.src, which ends
// where the query does.
func (w *walker) query(from int) error {
	q, err := parse(w.src, from, nil)
	if err != nil {
		return syntaxOnly(err)
	}
	return checkSyntax(w, q)
}

// syntaxOnly returns err if it is a syntax error, else nil.
func syntaxOnly(err error) error {
	var fe *filter.Error
	if errors.As(err, &fe) && strings.HasPrefix(fe.Msg, "Syntax error") {
		return err
	}
	return nil
}

// checkSyntax checks the expressions of a parsed query.
func checkSyntax(w *walker, q *Query) error {
	for _, c := range q.With {
		if w.ctes != nil {
			w.ctes[strings.ToLower(c.Name)] = true
		}
		if err := checkSyntax(w, c.Q); err != nil {
			return err
		}
	}
	if err := checkBodySyntax(w, q.Body); err != nil {
		return err
	}
	for _, o := range q.OrderBy {
		if err := checkSpanSyntax(w, o.Expr); err != nil {
			return err
		}
	}
	return nil
}

func checkBodySyntax(w *walker, b queryBody) error {
	switch b := b.(type) {
	case *Query:
		return checkSyntax(w, b)
	case *SetOp:
		if err := checkBodySyntax(w, b.Left); err != nil {
			return err
		}
		return checkBodySyntax(w, b.Right)
	case *Select:
		// FROM first, as the executor resolves it.
		if err := checkFromSyntax(w, b.From); err != nil {
			return err
		}
		var spans []Span
		for _, it := range b.Items {
			if !it.Star && len(it.Expr.toks) > 0 {
				spans = append(spans, it.Expr)
			}
			for _, r := range it.Replace {
				spans = append(spans, r.expr)
			}
		}
		for _, s := range []*Span{b.Where, b.Having, b.Qualify} {
			if s != nil {
				spans = append(spans, *s)
			}
		}
		spans = append(spans, b.GroupBy...)
		for _, s := range spans {
			if err := checkSpanSyntax(w, s); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkFromSyntax(w *walker, f FromItem) error {
	switch f := f.(type) {
	case *SubqueryRef:
		return checkSyntax(w, f.Q)
	case *JoinRef:
		if err := checkFromSyntax(w, f.Left); err != nil {
			return err
		}
		if err := checkFromSyntax(w, f.Right); err != nil {
			return err
		}
		if f.On != nil {
			return checkSpanSyntax(w, *f.On)
		}
	case *UnnestRef:
		return checkSpanSyntax(w, f.Expr)
	case *TableRef:
		n := f.Name
		if w.tables && !(n.Project == "" && n.Dataset == "" && w.ctes[strings.ToLower(n.Table)]) {
			w.names = append(w.names, n)
		}
		if f.AsOf != nil {
			return checkSpanSyntax(w, *f.AsOf)
		}
	}
	return nil
}

// checkSpanSyntax checks an expression: its subqueries as queries, then
// the expression with each replaced by a name of the same length. An
// expression the executor rewrites before compiling it (aggregates with
// clauses of their own, analytic functions) is left to the executor.
func checkSpanSyntax(w *walker, s Span) error {
	src := w.src
	if len(s.toks) == 0 {
		return nil
	}
	at, end := s.pos(), s.end()
	text := []byte(src[at:end])
	rewritten := false
	for i := 0; i < len(s.toks); i++ {
		t := s.toks[i]
		if t.Ident {
			switch strings.ToUpper(t.Text) {
			case "OVER", "ORDER", "LIMIT", "IGNORE", "RESPECT", "HAVING", "WINDOW", "GROUPING":
				rewritten = true
			}
		}
		if t.Op && t.Text == "*" && i > 0 && s.toks[i-1].Op && s.toks[i-1].Text == "(" && i+1 < len(s.toks) && s.toks[i+1].Op && s.toks[i+1].Text == ")" {
			text[t.Pos-at] = '_' // COUNT(*)
		}
		j := subqueryEnd(s.toks, i)
		if j < 0 {
			continue
		}
		sub := &walker{src: src[:s.toks[j].Pos], tables: w.tables, ctes: w.ctes}
		err := sub.query(s.toks[i+1].Pos)
		w.names = append(w.names, sub.names...)
		if err != nil {
			return err
		}
		from := i
		if i > 0 && s.toks[i-1].Ident && (strings.EqualFold(s.toks[i-1].Text, "EXISTS") || strings.EqualFold(s.toks[i-1].Text, "ARRAY")) {
			from = i - 1
		}
		// (SELECT ...) becomes (_      ); EXISTS/ARRAY (SELECT ...) becomes _.
		lo, hi := s.toks[from].Pos-at, s.toks[j].End-at
		// Newlines stay, so that later positions keep their lines.
		for k := lo; k < hi; k++ {
			if text[k] != '\n' {
				text[k] = ' '
			}
		}
		if from == i {
			text[lo], text[s.toks[i+1].Pos-at], text[hi-1] = '(', '_', ')'
		} else {
			text[lo] = '_'
		}
		i = j
	}
	if rewritten || w.tables {
		return nil
	}
	_, err := filter.ParseQueryAt(src[:at], string(text))
	return syntaxOnly(err)
}
