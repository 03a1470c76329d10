package sql

import (
	"context"
	"strings"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
)

// The column types of a set operation: GoogleSQL's supertype of the
// inputs' columns, where a literal input is more permissive than an
// expression (zetasql docs/conversion_rules.md, "Supertypes and
// literals"; Coercer::GetCommonSuperTypeImpl): the supertype candidates
// are those of the non-literal inputs, most specific first (INT64,
// NUMERIC, BIGNUMERIC, FLOAT64), and the first to which every literal
// coerces wins, a FLOAT64 literal coercing to NUMERIC and BIGNUMERIC,
// a STRING one to DATE, DATETIME, TIME and TIMESTAMP; FLOAT64, NUMERIC
// and BIGNUMERIC are candidates only when an input of that type is
// there. NULL goes to any type. STRUCTs are supertyped field by field,
// the field names those of the first input (`SELECT STRUCT(1 AS a,
// NULL AS b) UNION ALL SELECT STRUCT(2, 'y')` is STRUCT<a INT64, b
// STRING>), a NULL field of a STRUCT constructor going to any type.

// setArg is one input's column for the supertype.
type setArg struct {
	typ string
	// lit is the text of the literal the column is ("" for none): a
	// number (with its sign), a STRING or a BYTES literal; at its
	// position.
	lit string
	at  int
	// fields are, for a STRUCT constructor, its fields as setArgs (a
	// NULL field has typ NULL).
	fields []setArg
}

// setArgOf is the setArg of a select item of type t.
func setArgOf(toks []filter.Token, t string) setArg {
	a := setArg{typ: t}
	if lit, ok := literalText(toks); ok {
		a.lit, a.at = lit, toks[0].Pos
		return a
	}
	if typeKind(t) == "STRUCT" {
		if args := structArgs(toks); args != nil {
			_, types, ok := structFields(t)
			if ok && len(types) == len(args) {
				for i, at := range args {
					if len(at) == 1 && at[0].Ident && strings.EqualFold(at[0].Text, "NULL") {
						a.fields = append(a.fields, setArg{typ: "NULL"})
						continue
					}
					a.fields = append(a.fields, setArgOf(at, types[i]))
				}
			}
		}
	}
	return a
}

// literalText is the text of a literal expression: a number (or a
// negated one), a string or bytes literal.
func literalText(toks []filter.Token) (string, bool) {
	lit := func(t filter.Token) bool { return !t.Ident && !t.QIdent && !t.Op && !t.Param && !t.EOF }
	switch {
	case len(toks) == 1 && lit(toks[0]):
		return toks[0].Text, true
	case len(toks) == 2 && toks[0].Op && toks[0].Text == "-" && lit(toks[1]) && strings.ContainsAny(toks[1].Text[:1], "0123456789."):
		return "-" + toks[1].Text, true
	}
	return "", false
}

// structArgs are the field expressions of a STRUCT(...) constructor
// without a declared type, or of a tuple (a, b, ...), each without its
// AS alias; nil for any other expression.
func structArgs(toks []filter.Token) [][]filter.Token {
	i := 0
	if len(toks) > 0 && toks[0].Ident && strings.EqualFold(toks[0].Text, "STRUCT") {
		i = 1
	}
	if i >= len(toks) || !(toks[i].Op && toks[i].Text == "(") || closing(toks, i) != len(toks)-1 {
		return nil
	}
	var args [][]filter.Token
	depth, start := 0, i+1
	for k := i + 1; k < len(toks)-1; k++ {
		t := toks[k]
		switch {
		case t.Op && (t.Text == "(" || t.Text == "[" || t.Text == "<"):
			depth++
		case t.Op && (t.Text == ")" || t.Text == "]" || t.Text == ">"):
			depth--
		case t.Ident && strings.EqualFold(t.Text, "CASE"):
			depth++
		case t.Ident && strings.EqualFold(t.Text, "END"):
			depth--
		case depth == 0 && t.Op && t.Text == ",":
			args = append(args, toks[start:k])
			start = k + 1
		}
	}
	args = append(args, toks[start:len(toks)-1])
	if i == 0 && len(args) < 2 {
		return nil // (x): a parenthesised expression
	}
	for k, a := range args {
		if n := len(a); n >= 3 && a[n-2].Ident && strings.EqualFold(a[n-2].Text, "AS") {
			args[k] = a[:n-2]
		}
		if len(args[k]) == 0 {
			return nil
		}
	}
	return args
}

// structFields splits a STRUCT type name into its fields' names ("" for
// an anonymous one) and types.
func structFields(t string) (names, types []string, ok bool) {
	inner, ok := strings.CutPrefix(t, "STRUCT<")
	if !ok || !strings.HasSuffix(inner, ">") {
		return nil, nil, false
	}
	inner = inner[:len(inner)-1]
	depth, start := 0, 0
	var parts []string
	for k := 0; k < len(inner); k++ {
		switch inner[k] {
		case '<':
			depth++
		case '>':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, inner[start:k])
				start = k + 1
			}
		}
	}
	parts = append(parts, inner[start:])
	for _, p := range parts {
		p = strings.TrimSpace(p)
		name, typ := "", p
		if sp := strings.IndexByte(p, ' '); sp > 0 && !strings.ContainsAny(p[:sp], "<>") {
			name, typ = p[:sp], strings.TrimSpace(p[sp+1:])
		}
		names, types = append(names, name), append(types, typ)
	}
	return names, types, true
}

// supertypesOf are the types t coerces to, most specific first.
func supertypesOf(t string) []string {
	switch t {
	case "INT64":
		return []string{"INT64", "NUMERIC", "BIGNUMERIC", "FLOAT64"}
	case "NUMERIC":
		return []string{"NUMERIC", "BIGNUMERIC", "FLOAT64"}
	case "BIGNUMERIC":
		return []string{"BIGNUMERIC", "FLOAT64"}
	case "DATE":
		return []string{"DATE", "DATETIME"}
	}
	return []string{t}
}

// literalCoerces reports whether a literal of type from coerces to to.
func literalCoerces(from, to string) bool {
	for _, s := range supertypesOf(from) {
		if s == to {
			return true
		}
	}
	switch from {
	case "FLOAT64":
		return to == "NUMERIC" || to == "BIGNUMERIC"
	case "STRING":
		return to == "DATE" || to == "DATETIME" || to == "TIME" || to == "TIMESTAMP"
	}
	return false
}

// setSupertype is the supertype of one column's args (args[0] the first
// input's); ok false when there is none.
func setSupertype(args []setArg) (string, bool) {
	var typed []setArg
	for _, a := range args {
		if a.typ != "NULL" {
			typed = append(typed, a)
		}
	}
	if len(typed) == 0 {
		return "NULL", true
	}
	same := true
	for _, a := range typed[1:] {
		same = same && a.typ == typed[0].typ
	}
	if same {
		return typed[0].typ, true
	}
	for _, a := range typed {
		switch typeKind(a.typ) {
		case "STRUCT":
			return structSupertype(typed)
		case "ARRAY":
			// ARRAYs coerce only to their own type (and a NULL).
			return "", false
		}
	}
	var nonLit, lits []setArg
	hasFloat, hasNum, hasBig := false, false, false
	for _, a := range typed {
		if a.lit != "" {
			lits = append(lits, a)
		} else {
			nonLit = append(nonLit, a)
		}
		hasFloat = hasFloat || a.typ == "FLOAT64"
		hasNum = hasNum || a.typ == "NUMERIC"
		hasBig = hasBig || a.typ == "BIGNUMERIC"
	}
	if len(nonLit) == 0 {
		// Only literals: their supertype as expressions'.
		nonLit, lits = lits, nil
	}
	for _, cand := range supertypesOf(nonLit[0].typ) {
		if cand == "FLOAT64" && !hasFloat || cand == "NUMERIC" && !hasNum || cand == "BIGNUMERIC" && !hasBig {
			continue
		}
		ok := true
		for _, a := range nonLit[1:] {
			ok = ok && contains(supertypesOf(a.typ), cand)
		}
		for _, a := range lits {
			ok = ok && literalCoerces(a.typ, cand)
		}
		if ok {
			return cand, true
		}
	}
	return "", false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// structSupertype is the supertype of STRUCT args (typed[0] the
// dominant one, whose field names the result takes).
func structSupertype(typed []setArg) (string, bool) {
	names, _, ok := structFields(typed[0].typ)
	if !ok {
		return "", false
	}
	fieldArgs := make([][]setArg, len(names))
	for _, a := range typed {
		if typeKind(a.typ) != "STRUCT" {
			return "", false
		}
		_, types, ok := structFields(a.typ)
		if !ok || len(types) != len(names) {
			return "", false
		}
		for i, t := range types {
			fa := setArg{typ: t}
			if len(a.fields) == len(types) {
				fa = a.fields[i]
			}
			fieldArgs[i] = append(fieldArgs[i], fa)
		}
	}
	parts := make([]string, len(names))
	for i := range names {
		t, ok := setSupertype(fieldArgs[i])
		if !ok {
			return "", false
		}
		if t == "NULL" {
			t = "INT64"
		}
		parts[i] = t
		if names[i] != "" {
			parts[i] = names[i] + " " + t
		}
	}
	return "STRUCT<" + strings.Join(parts, ", ") + ">", true
}

// setArgs are the args of each column of a set operation's inputs
// (sets[i] the result of inputs[i]).
func setArgs(inputs []queryBody, sets []*rowset) [][]setArg {
	cols := make([][]setArg, len(sets[0].types))
	for i, rs := range sets {
		s, _ := inputs[i].(*Select)
		for c := range cols {
			a := setArg{typ: rs.types[c]}
			if s != nil && len(s.Items) == len(rs.types) && !s.Items[c].Star {
				a = setArgOf(s.Items[c].Expr.toks, rs.types[c])
			}
			cols[c] = append(cols[c], a)
		}
	}
	return cols
}

// simpleCoercion reports whether coerce converts values of type from to
// type to (a numeric widening, DATE to DATETIME, NULL to any).
func simpleCoercion(from, to string) bool {
	return from == to || from == "NULL" || typeKind(from) != "STRUCT" && typeKind(to) != "STRUCT" && contains(supertypesOf(from), to)
}

// castColumn converts column c of rs, of type from, to type to by the
// expression layer's CAST (a literal coerced, a STRUCT field-wise).
func (r *runner) castColumn(ctx context.Context, rs *rowset, c int, from, to string) error {
	if len(rs.rows) == 0 {
		return nil
	}
	s := &schema.Schema{Fields: []*schema.Field{resultField("c", from)}}
	x, err := r.compileText(exprText{text: "CAST(`c` AS " + to + ")"}, s, nil)
	if err != nil {
		return err
	}
	const chunk = 8192
	for lo := 0; lo < len(rs.rows); lo += chunk {
		hi := min(len(rs.rows), lo+chunk)
		rec, err := buildRecord(s, hi-lo, func(_, row int) any { return rs.rows[lo+row][c] })
		if err != nil {
			return err
		}
		vals, err := x.Values(ctx, rec, hi-lo)
		rec.Release()
		if err != nil {
			return err
		}
		for k, v := range vals {
			rs.rows[lo+k][c] = v
		}
	}
	return nil
}
