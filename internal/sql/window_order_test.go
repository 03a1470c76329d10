package sql

import (
	"strings"
	"testing"
)

// TestWindowOrderRequired: numbering and navigation functions need a
// window ORDER BY (GoogleSQL reference, Numbering functions: "ORDER BY:
// Required except for ROW_NUMBER()"; BigQuery answers "Window ORDER BY
// is required for analytic function lead at [l:c]"). RANK() OVER () gave
// every row rank 1 and LAG() OVER () read rows in storage order.
func TestWindowOrderRequired(t *testing.T) {
	tables := map[string]string{"t": "k:INTEGER s:STRING\n1 | 'a'\n3 | 'A'\n2 | 'b'"}
	for _, c := range []struct{ q, want string }{
		{"SELECT RANK() OVER () AS r FROM t", "error: Window ORDER BY is required for analytic function rank at [1:20]"},
		{"SELECT LAG(k) OVER (PARTITION BY s) AS r FROM t", "error: Window ORDER BY is required for analytic function lag at [1:20]"},
		{"SELECT NTILE(2) OVER w AS r FROM t WINDOW w AS (PARTITION BY s)", "error: Window ORDER BY is required for analytic function ntile at [1:22]"},
		{"SELECT FIRST_VALUE(k) OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS r FROM t", "error: Window ORDER BY is required for analytic function first_value at [1:28]"},
	} {
		if got := reviewSQuery(t, tables, c.q); strings.TrimSpace(got) != c.want {
			t.Errorf("%s\ngot:  %s\nwant: %s", c.q, got, c.want)
		}
	}
	for _, c := range []struct{ q, want string }{
		{"SELECT COUNT(*) OVER () AS n, ROW_NUMBER() OVER () AS r FROM t ORDER BY r", "n:INTEGER r:INTEGER\n3 | 1\n3 | 2\n3 | 3\n"},
		{"SELECT k, RANK() OVER (ORDER BY k DESC) AS r FROM t ORDER BY k", "k:INTEGER r:INTEGER\n1 | 3\n2 | 2\n3 | 1\n"},
	} {
		if got := reviewSQuery(t, tables, c.q); got != c.want {
			t.Errorf("%s\ngot:\n%swant:\n%s", c.q, got, c.want)
		}
	}
}
