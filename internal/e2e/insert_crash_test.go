package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"

	"github.com/bqstore/bqstore/internal/jobs"
	"github.com/bqstore/bqstore/internal/testkit"
)

// TestInsertKill9 kills the server (SIGKILL, at a random moment) while a
// client runs INSERT jobs with ids of its own, each inserting
// insertRows rows tagged with the job's number; after each restart
// every job the server knows agrees with the table: a job that succeeded
// has its rows there, a failed one (or one never created) none. Before
// an INSERT logged its stream ahead of its commit, a kill between the
// commit and the DONE record left the rows in and the job failed ("run
// it again": a rerun duplicated them).
func TestInsertKill9(t *testing.T) {
	cycles, rng := crashRun(t, 6, 3)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	issued := 0 // jobs ins_0 .. ins_<issued-1> were tried
	for cycle := 0; cycle <= cycles; cycle++ {
		c := testkit.StartChild(t, dir)
		bq, err := bigquery.NewClient(ctx, project, testkit.RESTOptions(c.HTTPAddr)...)
		if err != nil {
			t.Fatal(err)
		}
		if cycle == 0 {
			if err := bq.Dataset("d").Create(ctx, &bigquery.DatasetMetadata{}); err != nil {
				t.Fatal(err)
			}
			if err := runJob(ctx, bq, "CREATE TABLE d.t (k INT64, i INT64)", false); err != nil {
				t.Fatal(err)
			}
		} else {
			checkInserts(t, ctx, bq, cycle, issued)
		}
		if cycle == cycles {
			bq.Close()
			c.Kill()
			break
		}
		lctx, lcancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ; ; issued++ {
				var vals []string
				for i := range insertRows {
					vals = append(vals, fmt.Sprintf("(%d, %d)", issued, i))
				}
				q := bq.Query("INSERT INTO d.t (k, i) VALUES " + strings.Join(vals, ", "))
				q.JobID = fmt.Sprintf("ins_%d", issued)
				job, err := q.Run(lctx)
				if err != nil {
					issued++
					return // the server died
				}
				if _, err := job.Wait(lctx); err != nil {
					issued++
					return
				}
			}
		}()
		time.Sleep(time.Duration(50+rng.IntN(400)) * time.Millisecond)
		c.Kill()
		lcancel()
		<-done
		bq.Close()
	}
}

// insertRows is the rows of one INSERT of TestInsertKill9.
const insertRows = 20

// checkInserts checks that jobs ins_0 .. ins_<issued-1> agree with d.t
// (but the oldest, which the server may have forgotten: jobs.MaxJobs).
func checkInserts(t *testing.T, ctx context.Context, bq *bigquery.Client, cycle, issued int) {
	t.Helper()
	it, err := bq.Query("SELECT k, COUNT(*) FROM d.t GROUP BY k").Read(ctx)
	if err != nil {
		t.Fatalf("cycle %d: read the table after the restart: %v", cycle, err)
	}
	rows := map[int64]int64{}
	for {
		var row []bigquery.Value
		err := it.Next(&row)
		if err == iterator.Done {
			break
		}
		if err != nil {
			t.Fatalf("cycle %d: %v", cycle, err)
		}
		rows[row[0].(int64)] = row[1].(int64)
	}
	ok := 0
	for k := range issued {
		id := fmt.Sprintf("ins_%d", k)
		want, status := int64(0), "not found"
		job, err := bq.JobFromID(ctx, id)
		var ge *googleapi.Error
		switch {
		case errors.As(err, &ge) && ge.Code == http.StatusNotFound:
			if k < issued-jobs.MaxJobs/2 {
				continue // maybe one of the oldest jobs, forgotten
			}
		case err != nil:
			t.Fatalf("cycle %d: get job %s: %v", cycle, id, err)
		default:
			st := job.LastStatus()
			if st.State != bigquery.Done {
				t.Fatalf("cycle %d: job %s is %v after the restart", cycle, id, st.State)
			}
			status = fmt.Sprintf("failed: %v", st.Err())
			if st.Err() == nil {
				want, status = insertRows, "succeeded"
				ok++
			}
		}
		if rows[int64(k)] != want {
			t.Fatalf("cycle %d: job %s %s and %d rows of it in the table, want %d", cycle, id, status, rows[int64(k)], want)
		}
	}
	t.Logf("cycle %d: %d of %d INSERT jobs succeeded", cycle, ok, issued)
}
