package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"google.golang.org/api/iterator"

	"github.com/bqstore/bqstore/internal/jobs"
	"github.com/bqstore/bqstore/internal/testkit"
)

// TestReplaceKill9 kills the server (SIGKILL, at a random moment) while
// clients replace a table over and over, by CREATE OR REPLACE TABLE AS
// SELECT and by a WRITE_TRUNCATE query job, each new generation computed
// from the last (g + 1); after each restart the table is there and whole:
// replaceRows rows of one generation, no older than the last replace
// acknowledged, at most one newer. Before replaces were atomic, a kill
// between the drop of the old table and the commit of the new rows left
// the table missing or empty.
func TestReplaceKill9(t *testing.T) {
	cycles, rng := crashRun(t, 8, 2)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	acked := int64(0) // the last generation a client saw replaced
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
			var vals []string
			for i := range replaceRows {
				vals = append(vals, fmt.Sprintf("(%d, 0)", i))
			}
			if err := runJob(ctx, bq, "CREATE TABLE d.t (x INT64, g INT64); INSERT INTO d.t VALUES "+strings.Join(vals, ", "), false); err != nil {
				t.Fatal(err)
			}
		} else {
			qctx, qcancel := context.WithTimeout(ctx, 20*time.Second)
			g := checkGeneration(t, qctx, bq, cycle, c)
			qcancel()
			if g < acked || g > acked+1 {
				t.Fatalf("cycle %d: generation %d after the restart, last acknowledged %d", cycle, g, acked)
			}
			t.Logf("cycle %d: generation %d", cycle, g)
			acked = g
			// No stage table outlives its job's restart.
			tit := bq.Dataset(jobs.AnonDataset(project, "US")).Tables(ctx)
			for {
				tb, err := tit.Next()
				if err == iterator.Done {
					break
				}
				if err != nil {
					t.Fatalf("cycle %d: list the hidden dataset: %v", cycle, err)
				}
				if strings.HasPrefix(tb.TableID, "stage") {
					t.Fatalf("cycle %d: stage table %s left after the restart", cycle, tb.TableID)
				}
			}
			if strings.Contains(c.Log(), "kept and quarantined") {
				t.Fatalf("cycle %d: the restart found a table the catalog lost:\n%s", cycle, c.Log())
			}
		}
		if cycle == cycles {
			bq.Close()
			c.Kill()
			break
		}
		// Replace until the kill.
		// (The client retries a dead server until its context ends.)
		lctx, lcancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; ; i++ {
				err := runJob(lctx, bq, "SELECT x, g + 1 AS g FROM d.t", i%2 == 1)
				if err != nil {
					return // the server died
				}
				acked++
			}
		}()
		time.Sleep(time.Duration(50+rng.IntN(400)) * time.Millisecond)
		c.Kill()
		lcancel()
		<-done
		bq.Close()
	}
}

// replaceRows is the rows of TestReplaceKill9's table.
const replaceRows = 300

// runJob runs query: as CREATE OR REPLACE TABLE d.t AS query, or with
// truncate as a query job writing d.t with WRITE_TRUNCATE (a whole SQL
// statement without a destination if query is not a SELECT).
func runJob(ctx context.Context, bq *bigquery.Client, query string, truncate bool) error {
	var q *bigquery.Query
	switch {
	case truncate:
		q = bq.Query(query)
		q.Dst = bq.Dataset("d").Table("t")
		q.WriteDisposition = bigquery.WriteTruncate
	case strings.HasPrefix(query, "SELECT"):
		q = bq.Query("CREATE OR REPLACE TABLE d.t AS " + query)
	default:
		q = bq.Query(query)
	}
	job, err := q.Run(ctx)
	if err != nil {
		return err
	}
	st, err := job.Wait(ctx)
	if err != nil {
		return err
	}
	return st.Err()
}

// checkGeneration checks that d.t holds replaceRows rows, x 0..n-1, all
// of one generation, and returns it.
func checkGeneration(t *testing.T, ctx context.Context, bq *bigquery.Client, cycle int, c *testkit.Child) int64 {
	t.Helper()
	it, err := bq.Query("SELECT COUNT(*), COUNT(DISTINCT x), MIN(x), MAX(x), MIN(g), MAX(g) FROM d.t").Read(ctx)
	if err != nil {
		t.Fatalf("cycle %d: read the table after the restart: %v\n%s", cycle, err, c.Log())
	}
	var row []bigquery.Value
	if err := it.Next(&row); err != nil {
		t.Fatalf("cycle %d: %v", cycle, err)
	}
	if err := it.Next(&row); err != iterator.Done {
		t.Fatalf("cycle %d: more than one row", cycle)
	}
	n, distinct, lo, hi := row[0].(int64), row[1].(int64), row[2], row[3]
	if n != replaceRows || distinct != replaceRows || lo != int64(0) || hi != int64(replaceRows-1) || row[4] != row[5] {
		t.Fatalf("cycle %d: table after the restart: rows %d, distinct x %d, x %v..%v, g %v..%v; want %d rows of one generation", cycle, n, distinct, lo, hi, row[4], row[5], replaceRows)
	}
	return row[4].(int64)
}
