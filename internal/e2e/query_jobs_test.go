package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/bigquery/storage/managedwriter"
	"google.golang.org/api/iterator"

	"github.com/bqstore/bqstore/internal/server"
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
// tables.get and datasets.get describe it, datasets.list hides it. The
// server's query memory budget is 8 MiB, a quarter of what the result's
// rows take held in memory: the scan streams them into the table (before,
// the executor held them all and the query failed with resourcesExceeded).
func TestQueryLargeResultReadAPI(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	e := dial(t, ctx, testkit.Start(t, func(c *server.Config) { c.MaxQueryMemory = 8 << 20 }))
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

// runQuery runs q as a job through the Go client and returns the job's
// error (nil if it succeeded).
func runQuery(t *testing.T, e *env, q *bigquery.Query) error {
	t.Helper()
	job, err := q.Run(e.ctx)
	if err != nil {
		t.Fatalf("%s: %v", q.Q, err)
	}
	st, err := job.Wait(e.ctx)
	if err != nil {
		return err
	}
	return st.Err()
}

func numRows(t *testing.T, e *env, name string) uint64 {
	t.Helper()
	md, err := e.bq.Dataset("d").Table(name).Metadata(e.ctx)
	if err != nil {
		t.Fatalf("tables.get %s: %v", name, err)
	}
	return md.NumRows
}

// TestQueryDestinationTable: a query job with a destinationTable creates
// it (CREATE_IF_NEEDED) or refuses (CREATE_NEVER: notFound); WRITE_EMPTY
// refuses a table with rows (duplicate); WRITE_APPEND adds the rows;
// WRITE_TRUNCATE replaces them; a failed query leaves the table as it
// was; jobs.get names the table and getQueryResults reads it.
func TestQueryDestinationTable(t *testing.T) {
	e := newEnv(t)
	e.fillSimple("t_src", 10)
	dst := e.bq.Dataset("d").Table("dst")
	q := func(sql, create, write string) *bigquery.Query {
		q := e.bq.Query(sql)
		q.Dst = dst
		q.CreateDisposition = bigquery.TableCreateDisposition(create)
		q.WriteDisposition = bigquery.TableWriteDisposition(write)
		return q
	}
	if err := runQuery(t, e, q("SELECT id, name FROM d.t_src WHERE id < 3", "", "")); err != nil {
		t.Fatal(err)
	}
	if n := numRows(t, e, "dst"); n != 3 {
		t.Fatalf("created destination: %d rows, want 3", n)
	}
	err := runQuery(t, e, q("SELECT id, name FROM d.t_src", "", "WRITE_EMPTY"))
	if !isHTTP(err, http.StatusConflict, "duplicate") {
		t.Fatalf("WRITE_EMPTY into a table with rows: %v, want 409 duplicate", err)
	}
	if err := runQuery(t, e, q("SELECT id, name FROM d.t_src WHERE id >= 7", "", "WRITE_APPEND")); err != nil {
		t.Fatal(err)
	}
	if n := numRows(t, e, "dst"); n != 6 {
		t.Fatalf("after WRITE_APPEND: %d rows, want 6", n)
	}
	err = runQuery(t, e, q("SELECT name FROM d.t_src", "", "WRITE_APPEND"))
	if !isHTTP(err, http.StatusBadRequest, "invalid") {
		t.Fatalf("WRITE_APPEND of another schema: %v, want 400 invalid", err)
	}
	// A failed query changes nothing.
	err = runQuery(t, e, q("SELECT nope FROM d.t_src", "", "WRITE_TRUNCATE"))
	if !isHTTP(err, http.StatusBadRequest, "invalidQuery") {
		t.Fatalf("failed query: %v", err)
	}
	if n := numRows(t, e, "dst"); n != 6 {
		t.Fatalf("after a failed WRITE_TRUNCATE: %d rows, want 6", n)
	}
	tq := q("SELECT id * 10 AS x FROM d.t_src WHERE id = 5", "", "WRITE_TRUNCATE")
	tq.JobID = "truncate_job"
	if err := runQuery(t, e, tq); err != nil {
		t.Fatal(err)
	}
	md, err := dst.Metadata(e.ctx)
	if err != nil || md.NumRows != 1 || len(md.Schema) != 1 || md.Schema[0].Name != "x" {
		t.Fatalf("after WRITE_TRUNCATE: %+v %v, want 1 row of x", md, err)
	}
	job, err := e.bq.JobFromID(e.ctx, "truncate_job")
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := job.Config()
	if d := cfg.(*bigquery.QueryConfig).Dst; d == nil || d.TableID != "dst" || d.DatasetID != "d" {
		t.Fatalf("jobs.get destinationTable %+v", d)
	}
	it, err := job.Read(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var row []bigquery.Value
	if err := it.Next(&row); err != nil || row[0] != int64(50) {
		t.Fatalf("getQueryResults: %v %v, want [50]", row, err)
	}
	err = runQuery(t, e, func() *bigquery.Query {
		q := q("SELECT 1 AS x", "CREATE_NEVER", "")
		q.Dst = e.bq.Dataset("d").Table("never")
		return q
	}())
	if !isHTTP(err, http.StatusNotFound, "notFound") {
		t.Fatalf("CREATE_NEVER of a missing table: %v, want 404 notFound", err)
	}
	if _, err := e.bq.Dataset("d").Table("never").Metadata(e.ctx); !isHTTP(err, http.StatusNotFound, "notFound") {
		t.Fatalf("CREATE_NEVER created the table: %v", err)
	}
}

// TestQueryDryRun: a dry run answers the schema and the bytes the query
// would process, runs nothing and stores no job (jobs.insert and
// jobs.query); an invalid query is its error.
func TestQueryDryRun(t *testing.T) {
	e := newEnv(t)
	e.fillSimple("t_dry", 10)
	q := e.bq.Query("SELECT id, name FROM d.t_dry WHERE id > 100")
	q.DryRun = true
	q.JobID = "dry_job"
	job, err := q.Run(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	st := job.LastStatus()
	if st == nil || !st.Done() || st.Statistics == nil {
		t.Fatalf("dry run status %+v", st)
	}
	qs, ok := st.Statistics.Details.(*bigquery.QueryStatistics)
	// id: 10 x 8 bytes; name "row": 10 x (2 + 3).
	if !ok || st.Statistics.TotalBytesProcessed != 130 || len(qs.Schema) != 2 || qs.Schema[1].Name != "name" || qs.StatementType != "SELECT" {
		t.Fatalf("dry run statistics %+v %+v, want 130 bytes and the schema (id, name)", st.Statistics, qs)
	}
	if _, err := e.bq.JobFromID(e.ctx, "dry_job"); !isHTTP(err, http.StatusNotFound, "notFound") {
		t.Fatalf("a dry run stored a job: %v", err)
	}
	bad := e.bq.Query("SELECT nope FROM d.t_dry")
	bad.DryRun = true
	if _, err := bad.Run(e.ctx); !isHTTP(err, http.StatusBadRequest, "invalidQuery") {
		t.Fatalf("dry run of an invalid query: %v", err)
	}
	// jobs.query.
	resp, err := http.Post("http://"+e.srv.HTTPAddr()+"/bigquery/v2/projects/"+project+"/queries", "application/json",
		strings.NewReader(`{"query":"SELECT score FROM d.t_dry","useLegacySql":false,"dryRun":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var qr struct {
		JobComplete         bool
		TotalBytesProcessed string
		Rows                []any
		JobReference        struct{ JobID string }
		Schema              struct{ Fields []struct{ Name string } }
	}
	if err := json.NewDecoder(resp.Body).Decode(&qr); err != nil || resp.StatusCode != 200 || !qr.JobComplete ||
		qr.TotalBytesProcessed != "80" || len(qr.Rows) != 0 || qr.JobReference.JobID != "" || len(qr.Schema.Fields) != 1 {
		t.Fatalf("jobs.query dry run: %d %+v %v", resp.StatusCode, qr, err)
	}
}

// TestQueryJobStatistics: jobs.get and jobs.list carry the statistics the
// clients read: creation, start and end times, totalBytesProcessed (of the
// columns read), statementType, referencedTables and cacheHit false.
func TestQueryJobStatistics(t *testing.T) {
	e := newEnv(t)
	e.fillSimple("t_stats", 10)
	q := e.bq.Query("SELECT COUNT(*), MAX(score) FROM d.t_stats")
	q.JobID = "stats_job"
	if err := runQuery(t, e, q); err != nil {
		t.Fatal(err)
	}
	type stats struct {
		CreationTime, StartTime, EndTime, TotalBytesProcessed string
		Query                                                 *struct {
			StatementType    string
			CacheHit         *bool
			ReferencedTables []struct{ ProjectID, DatasetID, TableID string }
		}
	}
	check := func(what string, s stats) {
		t.Helper()
		if s.CreationTime == "" || s.StartTime == "" || s.EndTime == "" || s.TotalBytesProcessed != "80" || s.Query == nil ||
			s.Query.StatementType != "SELECT" || s.Query.CacheHit == nil || *s.Query.CacheHit ||
			len(s.Query.ReferencedTables) != 1 || s.Query.ReferencedTables[0].TableID != "t_stats" || s.Query.ReferencedTables[0].DatasetID != "d" {
			t.Fatalf("%s statistics %+v (query %+v)", what, s, s.Query)
		}
	}
	get := func(path string, out any) {
		t.Helper()
		resp, err := http.Get("http://" + e.srv.HTTPAddr() + "/bigquery/v2/projects/" + project + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
		}
	}
	var job struct{ Statistics stats }
	get("/jobs/stats_job", &job)
	check("jobs.get", job.Statistics)
	var list struct {
		Jobs []struct {
			JobReference struct{ JobID string }
			Statistics   stats
		}
	}
	get("/jobs?stateFilter=done", &list)
	found := false
	for _, j := range list.Jobs {
		if j.JobReference.JobID == "stats_job" {
			check("jobs.list", j.Statistics)
			found = true
		}
	}
	if !found {
		t.Fatalf("jobs.list does not list stats_job: %+v", list)
	}
}
