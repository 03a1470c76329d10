package sql

// MAX_BY(x, y) and MIN_BY(x, y): x of the row with the largest
// (smallest) y, GoogleSQL's synonyms of ANY_VALUE(x HAVING MAX|MIN y):
// rows whose y is NULL are skipped, and among the rows tied at the
// extreme y the first whose x is not NULL gives the answer (NULL if x is
// NULL on all of them, or for no rows).

// checkBy checks MAX_BY/MIN_BY's arguments and sets the result type.
func (q *selectQuery) checkBy(a *agg, types []string, sig func(string) error) error {
	if len(a.args) != 2 {
		return sig(a.name + "(ANY, ANY)")
	}
	switch typeKind(types[1]) {
	case "ARRAY", "STRUCT", "GEOGRAPHY", "JSON", "INTERVAL", "RANGE":
		return sig(a.name + "(ANY, ANY)")
	}
	a.typ = a.argType
	if a.typ == "NULL" {
		a.typ = "INT64"
	}
	return nil
}

// addBy accumulates row i: s.by is the extreme y so far, s.ext its x.
func (a *agg) addBy(s *acc, vals [][]any, i int) {
	x, y := vals[0][i], vals[1][i]
	if y == nil {
		return
	}
	if s.by == nil {
		s.by, s.ext = y, x
		return
	}
	c := compareValues(y, s.by)
	if a.name == "MIN_BY" || a.having == "MIN" {
		c = -c
	}
	switch {
	case c > 0:
		s.by, s.ext = y, x
	case c == 0 && s.ext == nil:
		s.ext = x
	}
}

// checkHaving checks ANY_VALUE(x HAVING MAX|MIN y): y is orderable, and
// becomes the second argument (addBy reads it there).
func (q *selectQuery) checkHaving(a *agg) error {
	switch typeKind(a.havingBy.Type()) {
	case "ARRAY", "STRUCT", "GEOGRAPHY", "JSON", "INTERVAL", "RANGE":
		return q.errf(a.havingPos, "HAVING %s does not support expressions of type %s", a.having, a.havingBy.Type())
	}
	a.args = append(a.args, a.havingBy)
	return nil
}
