package e2e

import (
	"errors"
	"net/http"
	"sort"
	"testing"

	"cloud.google.com/go/bigquery"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"

	"github.com/bqstore/bqstore/internal/testkit"
)

// TestScriptChildJobsGoClient: a script's statements are child jobs of
// its job, as BigQuery runs them: the Go client's Job.Children (jobs.list
// with parentJobId) lists one per statement, each with ParentJobID and
// ScriptStatistics (STATEMENT, the statement's text and position), and a
// SELECT child's rows read through the client; the project's job list
// (no parentJobId) holds the script but not its children; deleting a
// child is refused, deleting the script deletes its children. Before,
// jobs.list?parentJobId answered no jobs.
func TestScriptChildJobsGoClient(t *testing.T) {
	e := dial(t, newCtx(t), testkit.Start(t))
	e.fillSimple("t_script", 10)
	q := e.bq.Query("SELECT id FROM d.t_script WHERE id < 3 ORDER BY id;\nSELECT COUNT(*) AS n FROM d.t_script")
	q.JobID = "script_parent"
	job, err := q.Run(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, err := job.Wait(e.ctx)
	if err != nil || st.Err() != nil {
		t.Fatalf("script: %v %v", err, st.Err())
	}
	if st.Statistics.NumChildJobs != 2 {
		t.Fatalf("numChildJobs %d, want 2", st.Statistics.NumChildJobs)
	}
	var kids []*bigquery.Job
	it := job.Children(e.ctx)
	for {
		c, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			t.Fatalf("jobs.list parentJobId: %v", err)
		}
		kids = append(kids, c)
	}
	if len(kids) != 2 {
		t.Fatalf("%d child jobs, want 2", len(kids))
	}
	sort.Slice(kids, func(a, b int) bool {
		return kids[a].LastStatus().Statistics.ScriptStatistics.StackFrames[0].StartLine < kids[b].LastStatus().Statistics.ScriptStatistics.StackFrames[0].StartLine
	})
	texts := []string{"SELECT id FROM d.t_script WHERE id < 3 ORDER BY id;", "SELECT COUNT(*) AS n FROM d.t_script"}
	counts := []int{3, 1}
	for i, c := range kids {
		s := c.LastStatus().Statistics
		ss := s.ScriptStatistics
		if s.ParentJobID != "script_parent" || ss == nil || ss.EvaluationKind != "STATEMENT" || len(ss.StackFrames) != 1 || ss.StackFrames[0].Text != texts[i] || ss.StackFrames[0].StartLine != int64(i+1) {
			t.Fatalf("child %d: parent %q, script statistics %+v", i, s.ParentJobID, ss)
		}
		rows, err := c.Read(e.ctx)
		if err != nil {
			t.Fatalf("child %d: read: %v", i, err)
		}
		n := 0
		for {
			var row []bigquery.Value
			err := rows.Next(&row)
			if errors.Is(err, iterator.Done) {
				break
			}
			if err != nil {
				t.Fatalf("child %d: %v", i, err)
			}
			n++
		}
		if n != counts[i] {
			t.Fatalf("child %d: %d rows, want %d", i, n, counts[i])
		}
	}

	top := map[string]bool{}
	jit := e.bq.Jobs(e.ctx)
	for {
		j, err := jit.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		top[j.ID()] = true
	}
	if !top["script_parent"] || top[kids[0].ID()] || top[kids[1].ID()] {
		t.Fatalf("jobs.list without parentJobId: %v; want the script, not its children", top)
	}

	var gerr *googleapi.Error
	if err := kids[0].Delete(e.ctx); !errors.As(err, &gerr) || gerr.Code != http.StatusBadRequest {
		t.Fatalf("delete a child job: %v, want 400", err)
	}
	if err := job.Delete(e.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.bq.JobFromID(e.ctx, kids[1].ID()); !errors.As(err, &gerr) || gerr.Code != http.StatusNotFound {
		t.Fatalf("a child job after its script's delete: %v, want 404", err)
	}
}
