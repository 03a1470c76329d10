package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/bqstore/bqstore/internal/testkit"
)

// TestBQScriptChildJobs: bq query of a script prints each statement's
// result, which it reads from the script's child jobs (jobs.list with
// parentJobId, then each SELECT child's getQueryResults), preceded by
// the statement's text and position from scriptStatistics; bq ls -j
// lists the script but not its children, bq ls -j --parent_job_id its
// two children. Before, bq found no child jobs and printed the script's
// last result only.
func TestBQScriptChildJobs(t *testing.T) {
	// Each bq process has its own bound (bqProcessTimeout).
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e := dial(t, ctx, testkit.Start(t))
	b := newBQCLI(t, e)
	out := b.ok("query", "--use_legacy_sql=false", "--job_id=bq_script", "SELECT 17 AS first_col; SELECT 'z' AS second_col")
	for _, w := range []string{"SELECT 17 AS first_col;", "-- at [1:1]", "first_col", "17", "SELECT 'z' AS second_col", "-- at [1:25]", "second_col", "| z "} {
		if !strings.Contains(out, w) {
			t.Fatalf("bq query of a script: output lacks %q:\n%s", w, out)
		}
	}
	out = b.shell("ls -j", "ls -j --parent_job_id=bq_script")
	parts := strings.Split(out, project+"> ") // the shell's prompts: welcome, ls -j, ls -j --parent_job_id, goodbye
	top, kids := parts[1], parts[2]
	if !strings.Contains(top, "bq_script") || strings.Contains(top, "script_job_") {
		t.Fatalf("bq ls -j: want the script, not its children:\n%s", top)
	}
	if n := strings.Count(kids, "script_job_"); n != 2 {
		t.Fatalf("bq ls -j --parent_job_id: %d children, want 2:\n%s", n, kids)
	}
}
