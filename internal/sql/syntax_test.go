package sql

import (
	"strings"
	"testing"
)

// A script parses whole before any statement runs (BigQuery: ZetaSQL's
// ParseScript): ParseScript reports a syntax error in any statement's
// query, at the script's [line:column], and nothing else of what only
// running the query can tell (names, types, parameters).
func TestParseScriptChecksQuerySyntax(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"SELECT 1;\nSELECT 1 +;", "Syntax error: Unexpected end of input at [2:11]"},
		{"SELECT 1;\nSELECT FROM WHERE", "Syntax error: Unexpected keyword FROM at [2:8]"},
		{"SELECT 1;\nSELECT (SELECT\n 1 +) AS x", "Syntax error: Unexpected end of input at [3:5]"},
		{"SELECT 1;\nSELECT EXISTS (SELECT\n 1) AND x = = 1", "Syntax error: Unexpected \"=\" at [3:13]"},
		{"SELECT 1;\nCREATE TABLE d.u AS SELECT 1 +", "Syntax error: Unexpected end of input"},
		{"SELECT 1;\nINSERT INTO d.u (x) SELECT * FROM t WHERE", "Syntax error: Unexpected end of input"},
		{"SELECT 1;\nSELECT x FROM t, UNNEST([1, ]) AS y", "Syntax error"},
		// Not syntax: for the executor, when the statement runs.
		{"SELECT 1;\nSELECT nope FROM missing.t LIMIT @n", ""},
		{"SELECT 1;\nSELECT COUNT(*), STRING_AGG(s ORDER BY s LIMIT 2), SUM(x) OVER (PARTITION BY k ORDER BY x), ARRAY(SELECT 1), x IN (SELECT 2) FROM t GROUP BY ROLLUP(k)", ""},
	} {
		_, err := ParseScript(c.src)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v, want no error", c.src, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q: %v, want %q", c.src, err, c.want)
		}
	}
}

// Tables reads the syntax tree only: the tables a query names, WITH
// entries left out, subqueries in expressions included.
func TestTablesFromSyntax(t *testing.T) {
	src := "SELECT 1;\nWITH w AS (SELECT * FROM d.a) SELECT (SELECT MAX(x) FROM e.b), y FROM w JOIN p.f.c USING (k) WHERE EXISTS (SELECT 1 FROM UNNEST(ARRAY(SELECT z FROM g)))"
	var got []string
	for _, n := range Tables(src, 10) {
		got = append(got, n.Project+"."+n.Dataset+"."+n.Table)
	}
	if want := ".d.a p.f.c .e.b ..g"; strings.Join(got, " ") != want {
		t.Errorf("Tables = %q, want %q", strings.Join(got, " "), want)
	}
}
