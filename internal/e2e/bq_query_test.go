package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"cloud.google.com/go/bigquery/storage/managedwriter"
)

// TestBQQuery runs bq query (Google's CLI, one process per command)
// against rows written through the Storage Write API: --parameter in its
// named, positional, STRING-default and ARRAY forms, --format=json,
// --max_rows, --dry_run, and a parameter error; the JSON output is parsed
// and checked.
//
// It needs bq and skips without it, unless BQSTORE_REQUIRE_BQ=1.
func TestBQQuery(t *testing.T) {
	bqPath, err := exec.LookPath("bq")
	if err != nil {
		if os.Getenv("BQSTORE_REQUIRE_BQ") == "1" {
			t.Fatalf("bq not found (%v) but BQSTORE_REQUIRE_BQ=1", err)
		}
		t.Skip("bq (Google's BigQuery CLI, package google-cloud-cli) is not installed; skipping")
	}
	e := newEnv(t)
	tp := e.table("t_bq", simpleSchema)
	dp, md := descriptor(t, simpleSchema)
	ms, err := e.mw.NewManagedStream(e.ctx, managedwriter.WithDestinationTable(tp), managedwriter.WithSchemaDescriptor(dp))
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	e.appendSimple(tp, md, ms, 1, 20) // ids 1..20, name "row", score id/2

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("bqstore-test-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(),
		"HOME="+home,
		"CLOUDSDK_CONFIG="+filepath.Join(dir, "gcloud"),
		"CLOUDSDK_AUTH_ACCESS_TOKEN_FILE="+filepath.Join(dir, "token"),
		"CLOUDSDK_CORE_DISABLE_PROMPTS=1",
		"CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK=1",
	)
	api := "http://" + e.srv.HTTPAddr()
	run := func(args ...string) (string, string, int) {
		t.Helper()
		cmd, cancel := bqCommand(bqPath, append([]string{"--api", api, "--project_id", project, "--format=json", "query", "--use_legacy_sql=false"}, args...)...)
		defer cancel()
		cmd.Dir, cmd.Env = dir, env
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return out.String(), errb.String(), ee.ExitCode()
		} else if err != nil {
			t.Fatalf("bq query %v: %v", args, err)
		}
		return out.String(), errb.String(), 0
	}
	rowsOf := func(args ...string) []map[string]any {
		t.Helper()
		out, errs, code := run(args...)
		if code != 0 {
			t.Fatalf("bq query %v: exit %d\n%s%s", args, code, out, errs)
		}
		var rows []map[string]any
		if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &rows); err != nil {
			t.Fatalf("bq query %v: output is not a JSON array of rows (%v):\n%s", args, err, out)
		}
		return rows
	}

	// Named parameters, one with bq's empty type (STRING).
	got := rowsOf("--parameter=lo:INT64:18", "--parameter=name::row",
		"SELECT id, name, score FROM d.t_bq WHERE id >= @lo AND name = @name ORDER BY id")
	if len(got) != 3 || got[0]["id"] != "18" || got[2]["id"] != "20" || got[0]["name"] != "row" || got[0]["score"] != "9.0" {
		t.Errorf("named parameters: %v", got)
	}
	// Positional parameters and an ARRAY.
	got = rowsOf("--parameter=:INT64:5", "--parameter=:FLOAT64:2.5",
		"SELECT COUNT(*) AS n, MAX(score) AS m FROM d.t_bq WHERE id <= ? AND score >= ?")
	if len(got) != 1 || got[0]["n"] != "1" || got[0]["m"] != "2.5" {
		t.Errorf("positional parameters: %v", got)
	}
	got = rowsOf("--parameter=ids:ARRAY<INT64>:[2, 4, 99]", "SELECT id FROM d.t_bq WHERE id IN UNNEST(@ids) ORDER BY id")
	if len(got) != 2 || got[0]["id"] != "2" || got[1]["id"] != "4" {
		t.Errorf("ARRAY parameter: %v", got)
	}
	// --max_rows: bq pages through getQueryResults and stops there.
	got = rowsOf("--max_rows=4", "SELECT id FROM d.t_bq ORDER BY id DESC")
	if len(got) != 4 || got[0]["id"] != "20" || got[3]["id"] != "17" {
		t.Errorf("--max_rows=4: %v", got)
	}
	// A parameter of the wrong type: BigQuery's message, exit 1.
	// bq wraps its messages: compare with the spaces folded.
	folded := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	out, errs, code := run("--parameter=x:INT64:abc", "SELECT @x")
	if code == 0 || !strings.Contains(folded(out+errs), "Unparseable query parameter `x` in type `TYPE_INT64`, Bad int64 value: abc value: 'abc'") {
		t.Errorf("bad parameter: exit %d\n%s%s", code, out, errs)
	}
	// An undeclared one.
	out, errs, code = run("SELECT @nope")
	if code == 0 || !strings.Contains(folded(out+errs), "Query parameter 'nope' not found at [1:8]") {
		t.Errorf("undeclared parameter: exit %d\n%s%s", code, out, errs)
	}
	// DDL and DML: bq prints what the job's statistics say was done
	// (ddlOperationPerformed on ddlTargetTable, numDmlAffectedRows; a CTAS
	// has no numDmlAffectedRows, else bq would print that instead).
	for _, tc := range []struct{ sql, want string }{
		{"CREATE TABLE d.t_bq_ddl (x INT64)", "Created local.d.t_bq_ddl"},
		{"INSERT INTO d.t_bq_ddl VALUES (1), (2)", "Number of affected rows: 2"},
		{"CREATE TABLE IF NOT EXISTS d.t_bq_ddl (x INT64)", "Skipped local.d.t_bq_ddl"},
		{"CREATE OR REPLACE TABLE d.t_bq_ddl AS SELECT id FROM d.t_bq", "Replaced local.d.t_bq_ddl"},
		{"ALTER TABLE d.t_bq_ddl ADD COLUMN y STRING", "Altered local.d.t_bq_ddl"},
		{"ALTER TABLE d.t_bq_ddl RENAME TO t_bq_ddl2", "Altered local.d.t_bq_ddl"},
		{"DROP TABLE d.t_bq_ddl2", "Dropped local.d.t_bq_ddl2"},
	} {
		out, errs, code := run(tc.sql)
		if code != 0 || !strings.Contains(out+errs, tc.want) {
			t.Errorf("bq query %q: exit %d, want %q\n%s%s", tc.sql, code, tc.want, out, errs)
		}
	}
	// --dry_run: bq prints the job's statistics (json): the bytes the
	// query would read (20 INT64 ids), nothing run.
	out, errs, code = run("--dry_run", "SELECT id FROM d.t_bq")
	var job struct {
		Statistics struct{ TotalBytesProcessed string }
	}
	if code != 0 {
		t.Errorf("--dry_run: exit %d\n%s%s", code, out, errs)
	} else if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &job); err != nil || job.Statistics.TotalBytesProcessed != "160" {
		t.Errorf("--dry_run: %v\n%s%s", err, out, errs)
	}
}
