package sql

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/bqstore/bqstore/internal/filter"
)

// longScript is a script of n statements, one a line, of the kinds a
// script job parses and runs: queries, INSERT ... VALUES and INSERT ...
// SELECT, CREATE TABLE AS SELECT, CREATE VIEW.
func longScript(n int) string {
	var b strings.Builder
	for i := range n {
		switch i % 5 {
		case 0:
			fmt.Fprintf(&b, "SELECT a + %d AS x FROM t WHERE b = 'x';\n", i)
		case 1:
			fmt.Fprintf(&b, "INSERT INTO d.t (a, b) VALUES (%d, 'v'), (%d + 1, CONCAT('w', 'x'));\n", i, i)
		case 2:
			fmt.Fprintf(&b, "INSERT INTO d.t SELECT a, b FROM t LIMIT %d;\n", i)
		case 3:
			fmt.Fprintf(&b, "CREATE TABLE d.c%d AS SELECT a * %d AS a FROM t;\n", i, i)
		case 4:
			fmt.Fprintf(&b, "CREATE VIEW d.v%d AS SELECT b FROM t WHERE a > %d;\n", i, i)
		}
	}
	return b.String()
}

// runScript parses src and runs the query of each statement (a SELECT,
// INSERT ... SELECT's, CREATE TABLE AS SELECT's and CREATE VIEW's) and
// compiles each VALUES value, as a script job does.
func runScript(t *testing.T, src string) error {
	t.Helper()
	sts, err := ParseScript(src)
	if err != nil {
		return err
	}
	for _, st := range sts {
		text, at := st.Text, st.Pos
		switch {
		case st.Insert != nil && st.Insert.Query != "":
			text, at = st.Insert.Query, st.Insert.QueryPos
		case st.Insert != nil:
			for _, row := range st.Insert.Rows {
				for _, v := range row {
					if _, err := v.Compile(nil); err != nil {
						return err
					}
				}
			}
			continue
		case st.CreateTable != nil:
			text, at = st.CreateTable.Query, st.CreateTable.QueryPos
		case st.CreateView != nil:
			text, at = st.CreateView.QueryText, st.CreateView.QueryPos
		}
		if _, err := Run(context.Background(), text, wideResolver(), Options{Offset: at}); err != nil {
			return err
		}
	}
	return nil
}

// TestScriptLinear: a script of 2,000 statements parses and runs in work
// linear in its length. Each statement was parsed and run from a copy of
// the whole script before it, blanked (so that its errors' [line:column]
// were the script's): the bytes lexed and copied grew with the square of
// the statements. Doubling the script now doubles the bytes lexed and
// allocated; it quadrupled them. Counts, not time.
func TestScriptLinear(t *testing.T) {
	const n = 1000
	var lexed, alloc [2]int64
	var size [2]int
	for k, m := range []int{n, 2 * n} {
		src := longScript(m)
		size[k] = len(src)
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		before, beforeAlloc := filter.LexedBytes(), ms.TotalAlloc
		if err := runScript(t, src); err != nil {
			t.Fatalf("%d statements: %v", m, err)
		}
		runtime.ReadMemStats(&ms)
		lexed[k], alloc[k] = filter.LexedBytes()-before, int64(ms.TotalAlloc-beforeAlloc)
	}
	t.Logf("%d bytes: lexed %d, allocated %d; %d bytes: lexed %d, allocated %d", size[0], lexed[0], alloc[0], size[1], lexed[1], alloc[1])
	// Each statement is lexed a few times (split, parse, run, its
	// expressions); a quadratic cost lexes far more than the script.
	if lexed[1] > 10*int64(size[1]) {
		t.Errorf("lexed %d bytes to run a script of %d", lexed[1], size[1])
	}
	// Twice the script, at most 2.5 times the work (quadratic: 4).
	if 2*lexed[1] > 5*lexed[0] || 2*alloc[1] > 5*alloc[0] {
		t.Errorf("from %d to %d bytes, lexed bytes %d -> %d, allocated %d -> %d: not linear", size[0], size[1], lexed[0], lexed[1], alloc[0], alloc[1])
	}
}

// TestScriptErrorPositions: an error in statement k of a long script,
// found by the parser, by the query's compile or by a VALUES value's,
// names the script's [line:column].
func TestScriptErrorPositions(t *testing.T) {
	head := longScript(200) // 200 lines
	for _, c := range []struct{ stmt, want string }{
		{"SELECT nope FROM t", "Unrecognized name: nope at [201:8]"},
		{"  SELECT a FROM t WHERE a = 'x' + 1", "at [201:"},
		{"INSERT INTO d.t (a) VALUES (1 +)", "Syntax error: Unexpected \")\" at [201:32]"},
		{"INSERT INTO d.t (a) VALUES (nope)", "Unrecognized name: nope at [201:29]"},
		{"INSERT INTO d.t SELECT nope FROM t", "Unrecognized name: nope at [201:24]"},
		{"CREATE TABLE d.x AS SELECT nope FROM t", "Unrecognized name: nope at [201:28]"},
		{"CREATE VIEW d.x AS\n  SELECT nope FROM t", "Unrecognized name: nope at [202:10]"},
		{"SELECT 1 LIMIT @n", "at [201:16]"},
	} {
		src := head + c.stmt + ";\nSELECT 1;\n"
		err := runScript(t, src)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %s", c.stmt, err, c.want)
		}
	}
}
