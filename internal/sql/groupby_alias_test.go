package sql

import (
	"strings"
	"testing"
)

// TestGroupByAliasTwice: a GROUP BY name that two SELECT-list items are
// aliased to is ZetaSQL's "Name x in GROUP BY clause is ambiguous; it may
// refer to multiple columns in the SELECT-list" (its resolver's
// SelectColumnStateList; the same text in Beam's ZetaSQL planner tests),
// unless both name the same input column. We grouped by the first one.
func TestGroupByAliasTwice(t *testing.T) {
	tables := map[string]string{"t": "k:INTEGER s:STRING\n1 | 'a'\n3 | 'A'\n2 | 'b'"}
	for _, c := range []struct{ q, want string }{
		{"SELECT k + 1 AS x, k AS x FROM t GROUP BY x", "error: Name x in GROUP BY clause is ambiguous; it may refer to multiple columns in the SELECT-list at [1:43]"},
		{"SELECT UPPER(s) AS x, LOWER(s) AS x FROM t GROUP BY x", "error: Name x in GROUP BY clause is ambiguous; it may refer to multiple columns in the SELECT-list at [1:53]"},
	} {
		if got := reviewSQuery(t, tables, c.q); strings.TrimSpace(got) != c.want {
			t.Errorf("%s\ngot:  %s\nwant: %s", c.q, got, c.want)
		}
	}
	for _, c := range []struct{ q, want string }{
		{"SELECT COUNT(*) AS n FROM (SELECT k AS x, t.k AS x FROM t GROUP BY x)", "n:INTEGER\n3\n"},
		{"SELECT UPPER(s) AS u, COUNT(*) AS c FROM t GROUP BY u ORDER BY u", "u:STRING c:INTEGER\nA | 2\nB | 1\n"},
		{"SELECT * FROM t GROUP BY k, s ORDER BY k", "k:INTEGER s:STRING\n1 | a\n2 | b\n3 | A\n"},
	} {
		if got := reviewSQuery(t, tables, c.q); got != c.want {
			t.Errorf("%s\ngot:\n%swant:\n%s", c.q, got, c.want)
		}
	}
}
