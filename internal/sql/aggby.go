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

// havingAggs are the aggregates that take HAVING MAX|MIN y: ANY_VALUE
// (the MAX_BY state) and those whose state restarts when a row with a
// new extreme y comes (atExtreme); the sketches (APPROX_*, HLL_COUNT)
// and the synonyms MAX_BY/MIN_BY do not.
var havingAggs = map[string]bool{"ANY_VALUE": true, "COUNT": true, "COUNTIF": true, "SUM": true, "AVG": true,
	"MIN": true, "MAX": true, "LOGICAL_AND": true, "LOGICAL_OR": true, "BIT_AND": true, "BIT_OR": true, "BIT_XOR": true,
	"STDDEV": true, "STDDEV_POP": true, "STDDEV_SAMP": true, "VARIANCE": true, "VAR_POP": true, "VAR_SAMP": true,
	"CORR": true, "COVAR_POP": true, "COVAR_SAMP": true, "STRING_AGG": true, "ARRAY_AGG": true, "ARRAY_CONCAT_AGG": true}

// atExtreme reports whether a row whose HAVING value is y is aggregated
// (GoogleSQL's HAVING MAX|MIN: the rows at y's extreme, a NULL y never):
// a row beyond the extreme so far restarts the state with it.
func (a *agg) atExtreme(s *acc, y any) bool {
	if y == nil {
		return false
	}
	if s.hy != nil {
		c := compareValues(y, s.hy)
		if a.having == "MIN" {
			c = -c
		}
		if c < 0 {
			return false
		}
		if c == 0 {
			return true
		}
	}
	*s = acc{hy: y}
	return true
}
