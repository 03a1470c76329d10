package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/bigquery/storage/managedwriter"
	"google.golang.org/api/iterator"

	"github.com/bqstore/bqstore/internal/testkit"
)

// fillSimple writes ids [0, n) to a new simpleSchema table d.name and
// returns its Storage API path.
func (e *env) fillSimple(name string, n int) string {
	e.t.Helper()
	tp := e.table(name, simpleSchema)
	dp, md := descriptor(e.t, simpleSchema)
	ms, err := e.mw.NewManagedStream(e.ctx, managedwriter.WithDestinationTable(tp), managedwriter.WithSchemaDescriptor(dp))
	if err != nil {
		e.t.Fatal(err)
	}
	defer ms.Close()
	const batch = 20000
	for i := 0; i < n; i += batch {
		e.appendSimple(tp, md, ms, i, min(batch, n-i))
	}
	return tp
}

// TestQueryLargeResultReadAPI: a 200,000-row result is written to an
// anonymous table (a hidden dataset "_...", a table "anon..."), which
// jobs.get names as the destinationTable; the Go client with
// EnableStorageReadClient reads it through the Read API (the server's
// read-rows counter moves by the result's rows), values equal to the data;
// tables.get and datasets.get describe it, datasets.list hides it.
func TestQueryLargeResultReadAPI(t *testing.T) {
	e := newEnv(t)
	const n = 200000
	e.fillSimple("t_big", n)
	if err := e.bq.EnableStorageReadClient(e.ctx, testkit.GRPCOptions(e.srv.GRPCAddr())...); err != nil {
		t.Fatal(err)
	}
	before := metricValue(t, e.srv, "bqstore_read_rows_total")
	it, err := e.bq.Query("SELECT id, name, score FROM d.t_big").Read(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := make([]bool, n)
	count := 0
	for {
		var row []bigquery.Value
		err := it.Next(&row)
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		id, ok := row[0].(int64)
		if !ok || id < 0 || id >= n || seen[id] || row[1] != "row" || row[2] != float64(id)/2 {
			t.Fatalf("row %v: want a new id in [0, %d), name row, score id/2", row, n)
		}
		seen[id] = true
		count++
	}
	if count != n {
		t.Fatalf("%d rows, want %d", count, n)
	}
	if got := metricValue(t, e.srv, "bqstore_read_rows_total") - before; got < n {
		t.Fatalf("the Read API sent %v rows, want the %d of the result (read through the anonymous table)", got, n)
	}

	job := it.SourceJob()
	if job == nil {
		t.Fatal("no source job")
	}
	j, err := e.bq.JobFromID(e.ctx, job.ID())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := j.Config()
	if err != nil {
		t.Fatal(err)
	}
	dst := cfg.(*bigquery.QueryConfig).Dst
	if dst == nil || !strings.HasPrefix(dst.DatasetID, "_") || !strings.HasPrefix(dst.TableID, "anon") {
		t.Fatalf("destinationTable %+v, want an anonymous table (_dataset.anon...)", dst)
	}
	md, err := dst.Metadata(e.ctx)
	if err != nil {
		t.Fatalf("tables.get of the anonymous table: %v", err)
	}
	if md.NumRows != n || md.ExpirationTime.IsZero() {
		t.Fatalf("anonymous table: %d rows, expiration %v; want %d and one", md.NumRows, md.ExpirationTime, n)
	}
	if _, err := e.bq.Dataset(dst.DatasetID).Metadata(e.ctx); err != nil {
		t.Fatalf("datasets.get of the anonymous dataset: %v", err)
	}
	dit := e.bq.Datasets(e.ctx)
	for {
		ds, err := dit.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ds.DatasetID == dst.DatasetID {
			t.Fatalf("datasets.list shows the hidden dataset %s", ds.DatasetID)
		}
	}
	// tabledata.list reads it too (a client without the Read API).
	rest, err := bigquery.NewClient(e.ctx, project, testkit.RESTOptions(e.srv.HTTPAddr())...)
	if err != nil {
		t.Fatal(err)
	}
	defer rest.Close()
	tit := rest.DatasetInProject(dst.ProjectID, dst.DatasetID).Table(dst.TableID).Read(e.ctx)
	var row []bigquery.Value
	if err := tit.Next(&row); err != nil || tit.TotalRows != n {
		t.Fatalf("tabledata.list: %v, %d rows", err, tit.TotalRows)
	}
}

// TestQueryJobsSurviveRestart: jobs and their results survive a restart on
// the same data directory: jobs.get and getQueryResults answer as before.
func TestQueryJobsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	srv := testkit.StartDir(t, dir)
	e := dial(t, newCtx(t), srv)
	e.fillSimple("t_restart", 10)
	q := e.bq.Query("SELECT id, score FROM d.t_restart WHERE id >= 7 ORDER BY id")
	q.JobID = "before_restart"
	job, err := q.Run(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := job.Wait(e.ctx); err != nil || st.Err() != nil {
		t.Fatalf("wait: %v %v", err, st.Err())
	}
	srv.Stop(t)

	e2 := dial(t, newCtx(t), testkit.StartDir(t, dir))
	job, err = e2.bq.JobFromID(e2.ctx, "before_restart")
	if err != nil {
		t.Fatalf("jobs.get after a restart: %v", err)
	}
	st, err := job.Status(e2.ctx)
	if err != nil || !st.Done() || st.Err() != nil {
		t.Fatalf("status after a restart: %+v %v", st, err)
	}
	if qs, ok := st.Statistics.Details.(*bigquery.QueryStatistics); !ok || qs.StatementType != "SELECT" {
		t.Fatalf("statistics after a restart: %+v", st.Statistics.Details)
	}
	it, err := job.Read(e2.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for {
		var row []bigquery.Value
		err := it.Next(&row)
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			t.Fatalf("getQueryResults after a restart: %v", err)
		}
		got = append(got, row[0].(int64))
	}
	if len(got) != 3 || got[0] != 7 || got[2] != 9 {
		t.Fatalf("rows after a restart: %v, want 7 8 9", got)
	}
}

func newCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
