package sql

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestImplicitArrayPathForms: the implicit UNNEST of FROM t, t.arr
// (GoogleSQL, FROM clause > unnest_operator: "{ UNNEST( array ) |
// array_path } [ as_alias ] [ WITH OFFSET [ as_alias ] ]") in each join
// form, with WITH OFFSET, LEFT JOIN keeping a row of an empty array, and
// INNER JOIN ... ON filtering the pairs; a path whose first name is no
// range variable in scope is still a table.
func TestImplicitArrayPathForms(t *testing.T) {
	base := parseTable(t, "k:INTEGER a:INTEGER:REPEATED\n1 | [1, 2]\n2 | [3]\n3 | []")
	other := parseTable(t, "x:INTEGER\n7\n8\n9")
	resolve := func(_ context.Context, n TableName) (Table, error) {
		switch {
		case n.Dataset == "" && strings.EqualFold(n.Table, "t"):
			return base, nil
		case strings.EqualFold(n.Dataset, "d") && strings.EqualFold(n.Table, "a"):
			return other, nil
		}
		return nil, errors.New("Not found: Table " + n.Dataset + "." + n.Table)
	}
	for _, c := range []struct{ q, want string }{
		{"SELECT k, e, o FROM t, t.a AS e WITH OFFSET AS o ORDER BY e", "k:INTEGER e:INTEGER o:INTEGER\n1 | 1 | 0\n1 | 2 | 1\n2 | 3 | 0\n"},
		{"SELECT k, offset FROM t, t.a WITH OFFSET ORDER BY k, offset", "k:INTEGER offset:INTEGER\n1 | 0\n1 | 1\n2 | 0\n"},
		{"SELECT x.k, e FROM t AS x, x.a e ORDER BY e", "k:INTEGER e:INTEGER\n1 | 1\n1 | 2\n2 | 3\n"},
		{"SELECT k, e FROM t LEFT JOIN t.a AS e ORDER BY k, e", "k:INTEGER e:INTEGER\n1 | 1\n1 | 2\n2 | 3\n3 | NULL\n"},
		{"SELECT k, e FROM t JOIN t.a AS e ORDER BY e", "k:INTEGER e:INTEGER\n1 | 1\n1 | 2\n2 | 3\n"},
		{"SELECT k, e FROM t JOIN t.a AS e ON e > k ORDER BY e", "k:INTEGER e:INTEGER\n1 | 2\n2 | 3\n"},
		{"SELECT k, e FROM t JOIN UNNEST(t.a) AS e ON e <> 2 ORDER BY e", "k:INTEGER e:INTEGER\n1 | 1\n2 | 3\n"},
		{"SELECT COUNT(*) AS n FROM t JOIN t.a AS e ON TRUE", "n:INTEGER\n3\n"},
		{"SELECT COUNT(*) AS n FROM t, UNNEST(t.a) WITH OFFSET", "n:INTEGER\n3\n"},
		// d is no range variable: d.a is the table a of dataset d.
		{"SELECT COUNT(*) AS n FROM t, d.a", "n:INTEGER\n9\n"},
	} {
		if got := reviewSRun(t, resolve, c.q); got != c.want {
			t.Errorf("%s\ngot:\n%swant:\n%s", c.q, got, c.want)
		}
	}
	for _, c := range []struct{ q, want string }{
		{"SELECT 1 FROM t, t.k", "error: Values referenced in UNNEST must be arrays"},
		{"SELECT 1 FROM t JOIN d.a", "error: Syntax error: Expected keyword ON or keyword USING"},
		{"SELECT 1 FROM t, d.a WITH OFFSET", "error: WITH OFFSET can only be used with an array"},
		{"SELECT 1 FROM t, t.nope", "error: Name nope not found inside t"},
	} {
		if got := reviewSRun(t, resolve, c.q); !strings.HasPrefix(got, c.want) {
			t.Errorf("%s\ngot:\n%swant prefix %s", c.q, got, c.want)
		}
	}
}
