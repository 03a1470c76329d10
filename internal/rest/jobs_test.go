package rest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/jobs"
	"github.com/bqstore/bqstore/internal/rest"
)

// TestQueryREST: jobs.query and getQueryResults as raw REST: legacy SQL is
// a 400 saying how to switch; pages by startIndex and pageToken; a failed
// query is invalidQuery with its location.
func TestQueryREST(t *testing.T) {
	e := newEnv(t)
	base := e.srv.URL
	code, b := do(t, base, "POST", "/projects/p/queries", `{"query":"SELECT 1"}`)
	if code != 400 || !strings.Contains(string(b), "useLegacySql: false") {
		t.Fatalf("legacy SQL: %d %s", code, b)
	}
	code, b = do(t, base, "POST", "/bigquery/v2/projects/p/queries", `{"query":"SELECT 1 AS a, 'x' b","useLegacySql":false,"maxResults":5}`)
	var qr struct {
		JobComplete  bool
		TotalRows    string
		JobReference struct{ JobID string }
		Rows         []struct{ F []struct{ V any } }
		Schema       struct{ Fields []struct{ Name, Type string } }
	}
	if err := json.Unmarshal(b, &qr); code != 200 || err != nil {
		t.Fatalf("query: %d %s", code, b)
	}
	if !qr.JobComplete || qr.TotalRows != "1" || len(qr.Rows) != 1 || qr.Rows[0].F[0].V != "1" || qr.Rows[0].F[1].V != "x" ||
		qr.Schema.Fields[0].Name != "a" || qr.Schema.Fields[0].Type != "INTEGER" || qr.Schema.Fields[1].Name != "b" {
		t.Fatalf("query answer %s", b)
	}
	id := qr.JobReference.JobID
	code, b = do(t, base, "GET", "/projects/p/queries/"+id+"?startIndex=1", "")
	if code != 200 || !strings.Contains(string(b), `"totalRows":"1"`) || strings.Contains(string(b), `"v":"1"`) {
		t.Fatalf("getQueryResults past the end: %d %s", code, b)
	}
	code, b = do(t, base, "GET", "/projects/p/queries/"+id+"?pageToken=bogus", "")
	if code != 400 {
		t.Fatalf("bad page token: %d %s", code, b)
	}
	code, b = do(t, base, "POST", "/projects/p/queries", `{"query":"SELECT\n  nope","useLegacySql":false}`)
	if code != 400 || !strings.Contains(string(b), `Unrecognized name: nope at [2:3]`) || !strings.Contains(string(b), `"reason":"invalidQuery"`) {
		t.Fatalf("bad query: %d %s", code, b)
	}
	code, b = do(t, base, "POST", "/projects/p/jobs", `{"configuration":{"load":{}}}`)
	if code != 400 || !strings.Contains(string(b), "not supported yet by bqstore: load jobs") {
		t.Fatalf("load job: %d %s", code, b)
	}
	code, b = do(t, base, "GET", "/projects/p/jobs?stateFilter=done", "")
	if code != 200 || !strings.Contains(string(b), id) {
		t.Fatalf("jobs.list: %d %s", code, b)
	}
	if code, b = do(t, base, "DELETE", "/projects/p/jobs/"+id+"/delete", ""); code != 204 {
		t.Fatalf("jobs.delete: %d %s", code, b)
	}
	if code, b = do(t, base, "GET", "/projects/p/jobs/"+id, ""); code != 404 {
		t.Fatalf("jobs.get after delete: %d %s", code, b)
	}
}

// incompleteSeen maps an asyncEnv's URL to a channel closed once the
// server answered jobComplete false.
var incompleteSeen sync.Map

func incomplete(base string) <-chan struct{} {
	ch, _ := incompleteSeen.Load(base)
	return ch.(chan struct{})
}

// asyncEnv serves the REST handler over a jobs store whose jobs wait, once
// RUNNING, until gate is closed (or they are cancelled).
func asyncEnv(t *testing.T) (base string, client *bigquery.Client, gate chan struct{}) {
	t.Helper()
	cat, err := catalog.Open(t.TempDir(), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gate = make(chan struct{})
	js := jobs.New(cat, jobs.Options{BeforeRun: func(ctx context.Context, project, id string) {
		select {
		case <-gate:
		case <-ctx.Done():
		}
	}})
	t.Cleanup(func() { js.Close() })
	h := rest.New(cat, rest.Options{Jobs: js, QueryTimeout: time.Millisecond})
	seen := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		maps.Copy(w.Header(), rec.Header())
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
		if bytes.Contains(rec.Body.Bytes(), []byte(`"jobComplete":false`)) {
			once.Do(func() { close(seen) })
		}
	}))
	incompleteSeen.Store(srv.URL, seen)
	t.Cleanup(srv.Close)
	c, err := bigquery.NewClient(context.Background(), "p", option.WithEndpoint(srv.URL), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return srv.URL, c, gate
}

// TestQueryAsyncREST: jobs.query answers jobComplete false with the job's
// reference when the job is not done within timeoutMs; getQueryResults
// too, then the rows once it is; jobs.insert answers at once (RUNNING or
// PENDING); jobs.cancel stops a running job, which ends DONE with the
// reason "stopped".
func TestQueryAsyncREST(t *testing.T) {
	base, _, gate := asyncEnv(t)
	code, b := do(t, base, "POST", "/projects/p/queries", `{"query":"SELECT 7 AS x","useLegacySql":false,"timeoutMs":1}`)
	var qr struct {
		JobComplete  bool
		TotalRows    *string
		Rows         []struct{ F []struct{ V any } }
		JobReference struct{ ProjectID, JobID, Location string }
	}
	if err := json.Unmarshal(b, &qr); code != 200 || err != nil || qr.JobComplete || qr.TotalRows != nil || qr.JobReference.JobID == "" {
		t.Fatalf("jobs.query of a job not done: %d %s", code, b)
	}
	id := qr.JobReference.JobID
	code, b = do(t, base, "GET", "/projects/p/queries/"+id+"?timeoutMs=0", "")
	if code != 200 || !strings.Contains(string(b), `"jobComplete":false`) {
		t.Fatalf("getQueryResults of a job not done: %d %s", code, b)
	}
	code, b = do(t, base, "GET", "/projects/p/jobs/"+id, "")
	if code != 200 || !strings.Contains(string(b), `"state":"RUNNING"`) && !strings.Contains(string(b), `"state":"PENDING"`) {
		t.Fatalf("jobs.get of a job not done: %d %s", code, b)
	}
	close(gate)
	code, b = do(t, base, "GET", "/projects/p/queries/"+id, "")
	qr.TotalRows = nil
	if err := json.Unmarshal(b, &qr); code != 200 || err != nil || !qr.JobComplete || qr.TotalRows == nil || *qr.TotalRows != "1" || qr.Rows[0].F[0].V != "7" {
		t.Fatalf("getQueryResults once done: %d %s", code, b)
	}
}

// TestQueryCancelREST: jobs.cancel of a running job; the job ends DONE
// with errorResult reason "stopped", and getQueryResults answers that
// error.
func TestQueryCancelREST(t *testing.T) {
	base, _, _ := asyncEnv(t)
	code, b := do(t, base, "POST", "/projects/p/jobs", `{"jobReference":{"jobId":"slow"},"configuration":{"query":{"query":"SELECT 1","useLegacySql":false}}}`)
	if code != 200 || strings.Contains(string(b), `"state":"DONE"`) {
		t.Fatalf("jobs.insert: %d %s, want the job not done", code, b)
	}
	code, b = do(t, base, "POST", "/projects/p/jobs/slow/cancel", "")
	if code != 200 || !strings.Contains(string(b), `"kind":"bigquery#jobCancelResponse"`) {
		t.Fatalf("jobs.cancel: %d %s", code, b)
	}
	code, b = do(t, base, "GET", "/projects/p/queries/slow", "")
	if code != 400 || !strings.Contains(string(b), `"reason":"stopped"`) || !strings.Contains(string(b), "Job execution was cancelled: User requested cancellation") {
		t.Fatalf("getQueryResults of a cancelled job: %d %s", code, b)
	}
	code, b = do(t, base, "GET", "/projects/p/jobs/slow", "")
	if code != 200 || !strings.Contains(string(b), `"state":"DONE"`) || !strings.Contains(string(b), `"errorResult":{"reason":"stopped"`) {
		t.Fatalf("jobs.get of a cancelled job: %d %s", code, b)
	}
}

// TestQueryPollingOfficialClient: the Go client's Query.Read polls a job
// that is not done within jobs.query's timeout to its end; Job.Cancel
// ends a running job, and Wait reports BigQuery's "stopped" error.
func TestQueryPollingOfficialClient(t *testing.T) {
	base, c, gate := asyncEnv(t)
	ctx := context.Background()
	type result struct {
		rows [][]bigquery.Value
		err  error
	}
	done := make(chan result, 1)
	go func() {
		it, err := c.Query("SELECT 'late' AS s").Read(ctx)
		if err != nil {
			done <- result{err: err}
			return
		}
		var rows [][]bigquery.Value
		for {
			var row []bigquery.Value
			err := it.Next(&row)
			if errors.Is(err, iterator.Done) {
				break
			}
			if err != nil {
				done <- result{err: err}
				return
			}
			rows = append(rows, row)
		}
		done <- result{rows: rows}
	}()
	<-incomplete(base) // the client was told jobComplete false
	close(gate)
	r := <-done
	if r.err != nil || len(r.rows) != 1 || r.rows[0][0] != "late" {
		t.Fatalf("Read: %v %v", r.rows, r.err)
	}

	_, c, _ = asyncEnv(t)
	q := c.Query("SELECT 1")
	q.JobID = "to_cancel"
	job, err := q.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	// Wait polls getQueryResults, which answers the job's error.
	_, err = job.Wait(ctx)
	var ge *googleapi.Error
	if !errors.As(err, &ge) || len(ge.Errors) == 0 || ge.Errors[0].Reason != "stopped" {
		t.Fatalf("wait for a cancelled job: %v, want the reason stopped", err)
	}
	st, err := job.Status(ctx)
	var be *bigquery.Error
	if err != nil || !st.Done() || !errors.As(st.Err(), &be) || be.Reason != "stopped" {
		t.Fatalf("status of a cancelled job: %+v %v, want DONE with the reason stopped", st, err)
	}
}

// TestJobFailedByRestartOfficialClient: a job RUNNING when the server
// stopped is DONE with an internal error after the restart; the Go client's
// Read and Wait return that error at once (getQueryResults answers the
// non-retryable shape BigQuery uses for a failed job, 400
// jobInternalError), rather than retrying until the context ends.
func TestJobFailedByRestartOfficialClient(t *testing.T) {
	dir := t.TempDir()
	cat, err := catalog.Open(t.TempDir(), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	js, err := jobs.Open(cat, jobs.Options{Dir: dir, BeforeRun: func(ctx context.Context, project, id string) {
		close(started)
		<-ctx.Done()
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Insert("p", "held", "US", jobs.Query{SQL: "SELECT 1"}); err != nil {
		t.Fatal(err)
	}
	<-started
	if err := js.Close(); err != nil { // the job stops RUNNING with the server
		t.Fatal(err)
	}
	js, err = jobs.Open(cat, jobs.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { js.Close() })
	srv := httptest.NewServer(rest.New(cat, rest.Options{Jobs: js}))
	t.Cleanup(srv.Close)
	c, err := bigquery.NewClient(context.Background(), "p", option.WithEndpoint(srv.URL), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	job, err := c.JobFromID(ctx, "held")
	if err != nil {
		t.Fatal(err)
	}
	st, err := job.Status(ctx)
	if err != nil || st.Err() == nil {
		t.Fatalf("status: %+v %v, want DONE with an error", st, err)
	}
	var ge *googleapi.Error
	_, err = job.Read(ctx)
	if ctx.Err() != nil || !errors.As(err, &ge) || ge.Code != http.StatusBadRequest || len(ge.Errors) == 0 || ge.Errors[0].Reason != "jobInternalError" {
		t.Fatalf("Read: %v (ctx %v), want the job's error, 400 jobInternalError", err, ctx.Err())
	}
	_, err = job.Wait(ctx)
	if ctx.Err() != nil || !errors.As(err, &ge) || ge.Errors[0].Reason != "jobInternalError" {
		t.Fatalf("Wait: %v (ctx %v), want the job's error", err, ctx.Err())
	}
}

// TestQueryParamsSurviveRestart: a job's parameterMode and queryParameters
// are kept in the jobs log: after a restart jobs.get still shows them (the
// Go client's job.Config()).
func TestQueryParamsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	cat, err := catalog.Open(t.TempDir(), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	serve := func() *bigquery.Client {
		js, err := jobs.Open(cat, jobs.Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(rest.New(cat, rest.Options{Jobs: js}))
		c, err := bigquery.NewClient(context.Background(), "p", option.WithEndpoint(srv.URL), option.WithoutAuthentication())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(); srv.Close(); js.Close() })
		return c
	}
	ctx := context.Background()
	q := serve().Query("SELECT @a + 1 AS x, 'p' IN UNNEST(@b) AS y")
	q.JobID = "with_params"
	q.Parameters = []bigquery.QueryParameter{{Name: "a", Value: 41}, {Name: "b", Value: []string{"p", "q"}}}
	job, err := q.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := job.Wait(ctx); err != nil {
		t.Fatalf("wait: %v", err)
	} else if st.Err() != nil {
		t.Fatalf("job: %v", st.Err())
	}

	job, err = serve().JobFromID(ctx, "with_params")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := job.Config()
	if err != nil {
		t.Fatal(err)
	}
	ps := cfg.(*bigquery.QueryConfig).Parameters
	if len(ps) != 2 || ps[0].Name != "a" || ps[0].Value != int64(41) || ps[1].Name != "b" {
		t.Fatalf("parameters after a restart: %+v, want a=41 and b", ps)
	}
	if vs, ok := ps[1].Value.([]any); !ok || len(vs) != 2 || vs[0] != "p" || vs[1] != "q" {
		t.Fatalf("parameter b after a restart: %#v, want [p q]", ps[1].Value)
	}
}

// TestQueryRequestIDIdempotent: jobs.query with a requestId the server has
// seen, for the same request, is the job that request started, not a new
// one: the Go client sends a requestId and retries jobs.query on
// transport errors and 5xx ("We control request ID, so we can always
// runWithRetry"), so a lost answer to an INSERT ran it again. Another
// query under the same requestId is another request: a new job.
func TestQueryRequestIDIdempotent(t *testing.T) {
	e := newEnv(t)
	base := e.srv.URL
	jobOf := func(body string) string {
		t.Helper()
		code, b := do(t, base, "POST", "/projects/p/queries", body)
		var qr struct {
			JobComplete  bool
			JobReference struct{ JobID string }
		}
		if err := json.Unmarshal(b, &qr); code != 200 || err != nil || !qr.JobComplete || qr.JobReference.JobID == "" {
			t.Fatalf("jobs.query %s: %d %s", body, code, b)
		}
		return qr.JobReference.JobID
	}
	first := jobOf(`{"query":"SELECT 1 AS x","useLegacySql":false,"requestId":"r-1"}`)
	if again := jobOf(`{"query":"SELECT 1 AS x","useLegacySql":false,"requestId":"r-1","timeoutMs":5000}`); again != first {
		t.Fatalf("a retried jobs.query (same requestId, same request) started job %s, want the first one's %s", again, first)
	}
	if other := jobOf(`{"query":"SELECT 2 AS x","useLegacySql":false,"requestId":"r-1"}`); other == first {
		t.Fatalf("another query under the same requestId is job %s, the first one's", other)
	}
	if plain := jobOf(`{"query":"SELECT 1 AS x","useLegacySql":false}`); plain == first {
		t.Fatalf("a jobs.query without requestId is job %s, the first one's", plain)
	}
	code, b := do(t, base, "GET", "/projects/p/jobs", "")
	if code != 200 || strings.Count(string(b), `"jobId":"`+first+`"`) != 1 || strings.Count(string(b), `"kind":"bigquery#job"`) != 3 {
		t.Fatalf("jobs.list: %d %s, want 3 jobs, %s once", code, b, first)
	}
}

// TestJobsListPagingStable: jobs.list pages newest first; a job started
// while a client pages through the list neither repeats nor hides a job
// on the next page (the page token was an offset into a list that had
// moved by then: the next page began with the last job of the previous).
func TestJobsListPagingStable(t *testing.T) {
	cat, err := catalog.Open(t.TempDir(), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { // a second later at each call: jobs are created in order
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	}
	h := rest.New(cat, rest.Options{Clock: clock})
	t.Cleanup(func() { h.Close() })
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	base := srv.URL
	for _, id := range []string{"j1", "j2", "j3"} {
		if code, b := do(t, base, "POST", "/projects/p/jobs", `{"jobReference":{"jobId":"`+id+`"},"configuration":{"query":{"query":"SELECT 1","useLegacySql":false}}}`); code != 200 {
			t.Fatalf("jobs.insert %s: %d %s", id, code, b)
		}
	}
	type page struct {
		NextPageToken string
		Jobs          []struct{ JobReference struct{ JobID string } }
	}
	list := func(q string) page {
		t.Helper()
		code, b := do(t, base, "GET", "/projects/p/jobs?maxResults=2"+q, "")
		var p page
		if err := json.Unmarshal(b, &p); code != 200 || err != nil {
			t.Fatalf("jobs.list: %d %s", code, b)
		}
		return p
	}
	p1 := list("")
	if len(p1.Jobs) != 2 || p1.NextPageToken == "" {
		t.Fatalf("page 1: %+v, want 2 jobs and a token", p1)
	}
	if code, b := do(t, base, "POST", "/projects/p/jobs", `{"jobReference":{"jobId":"j4"},"configuration":{"query":{"query":"SELECT 1","useLegacySql":false}}}`); code != 200 {
		t.Fatalf("jobs.insert j4: %d %s", code, b)
	}
	p2 := list("&pageToken=" + p1.NextPageToken)
	var got []string
	for _, p := range []page{p1, p2} {
		for _, j := range p.Jobs {
			got = append(got, j.JobReference.JobID)
		}
	}
	if strings.Join(got, ",") != "j3,j2,j1" || p2.NextPageToken != "" {
		t.Fatalf("pages: %v (next %q), want j3,j2,j1 and no more", got, p2.NextPageToken)
	}
}

// TestJobTimeoutREST: configuration.jobTimeoutMs (jobs.insert) and
// jobTimeoutMs (jobs.query) stop a job that runs longer: it ends DONE with
// BigQuery's reason "timeout". They were accepted and ignored, so a
// runaway query ran on. The jobs here run until cancelled (asyncEnv).
func TestJobTimeoutREST(t *testing.T) {
	base, _, _ := asyncEnv(t)
	code, b := do(t, base, "POST", "/projects/p/jobs", `{"jobReference":{"jobId":"slow"},"configuration":{"jobTimeoutMs":"1","query":{"query":"SELECT 1","useLegacySql":false}}}`)
	if code != 200 || !strings.Contains(string(b), `"jobTimeoutMs":"1"`) {
		t.Fatalf("jobs.insert: %d %s, want the job with its jobTimeoutMs", code, b)
	}
	code, b = do(t, base, "GET", "/projects/p/queries/slow?timeoutMs=600000", "")
	if code != 400 || !strings.Contains(string(b), `"reason":"timeout"`) {
		t.Fatalf("getQueryResults of a job past its jobTimeoutMs: %d %s", code, b)
	}
	code, b = do(t, base, "GET", "/projects/p/jobs/slow", "")
	if code != 200 || !strings.Contains(string(b), `"state":"DONE"`) || !strings.Contains(string(b), `"errorResult":{"reason":"timeout"`) {
		t.Fatalf("jobs.get: %d %s", code, b)
	}
	code, b = do(t, base, "POST", "/projects/p/queries", `{"query":"SELECT 2","useLegacySql":false,"jobTimeoutMs":"1","timeoutMs":600000}`)
	if code != 400 || !strings.Contains(string(b), `"reason":"timeout"`) {
		t.Fatalf("jobs.query past its jobTimeoutMs: %d %s", code, b)
	}
}

// TestQueryResultsPageBytes: a page of query results holds about 10 MB
// of rows (queryMaxPageBytes) however large the rows are: rows were
// formatted 256 at a time before the size was checked, so 1 MB rows made
// one 30 MB page (and 10 MB rows a 2.5 GB one, built in memory).
func TestQueryResultsPageBytes(t *testing.T) {
	e := newEnv(t)
	base := e.srv.URL
	code, b := do(t, base, "POST", "/projects/p/queries", `{"query":"SELECT n, REPEAT('x', 1000000) AS s FROM UNNEST([1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30]) AS n","useLegacySql":false}`)
	var qr struct {
		TotalRows    string
		PageToken    string
		Rows         []json.RawMessage
		JobReference struct{ JobID string }
	}
	if err := json.Unmarshal(b, &qr); code != 200 || err != nil {
		t.Fatalf("jobs.query: %d %.300s", code, b)
	}
	if len(b) > 11<<20 || qr.PageToken == "" || len(qr.Rows) == 0 {
		t.Fatalf("first page: %d bytes, %d rows, token %q; want at most ~10 MB and a token", len(b), len(qr.Rows), qr.PageToken)
	}
	seen := len(qr.Rows)
	for qr.PageToken != "" {
		code, b = do(t, base, "GET", "/projects/p/queries/"+qr.JobReference.JobID+"?pageToken="+qr.PageToken, "")
		qr.PageToken, qr.Rows = "", nil
		if err := json.Unmarshal(b, &qr); code != 200 || err != nil || len(b) > 11<<20 || len(qr.Rows) == 0 {
			t.Fatalf("next page: %d, %d bytes, %d rows", code, len(b), len(qr.Rows))
		}
		seen += len(qr.Rows)
	}
	if seen != 30 {
		t.Fatalf("%d rows over the pages, want 30", seen)
	}
}
