package e2e

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/bigquery/storage/managedwriter"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
)

// queryRows runs q through the Go client and returns its rows.
func queryRows(t *testing.T, e *env, q *bigquery.Query) ([][]bigquery.Value, *bigquery.RowIterator) {
	t.Helper()
	it, err := q.Read(e.ctx)
	if err != nil {
		t.Fatalf("%s: %v", q.Q, err)
	}
	var out [][]bigquery.Value
	for {
		var row []bigquery.Value
		err := it.Next(&row)
		if errors.Is(err, iterator.Done) {
			return out, it
		}
		if err != nil {
			t.Fatalf("%s: %v", q.Q, err)
		}
		out = append(out, row)
	}
}

// TestQueryOfficialClient: rows written through the Storage Write API are
// checked with client.Query, on the jobs.query fast path and, with a job
// id, through jobs.insert + jobs.getQueryResults (paged).
func TestQueryOfficialClient(t *testing.T) {
	e := newEnv(t)
	tp := e.table("t_query", simpleSchema)
	dp, md := descriptor(t, simpleSchema)
	ms, err := e.mw.NewManagedStream(e.ctx, managedwriter.WithDestinationTable(tp), managedwriter.WithSchemaDescriptor(dp))
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	e.appendSimple(tp, md, ms, 0, 50)
	e.appendSimple(tp, md, ms, 40, 20) // ids 40..49 twice

	// The fast path (jobs.query).
	rows, it := queryRows(t, e, e.bq.Query("SELECT COUNT(*), COUNT(DISTINCT id) FROM d.t_query"))
	if len(rows) != 1 || rows[0][0] != int64(70) || rows[0][1] != int64(60) {
		t.Fatalf("COUNT(*), COUNT(DISTINCT id) = %v, want [[70 60]]", rows)
	}
	if len(it.Schema) != 2 || it.Schema[0].Name != "f0_" || it.Schema[0].Type != bigquery.IntegerFieldType {
		t.Fatalf("schema %+v", it.Schema)
	}

	// A job id: jobs.insert, then getQueryResults page by page.
	q := e.bq.Query("SELECT id, COUNT(*) AS n FROM `d.t_query` GROUP BY id HAVING COUNT(*) > 1 ORDER BY id DESC")
	q.JobID = "dups_job"
	job, err := q.Run(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, err := job.Wait(e.ctx)
	if err != nil || st.Err() != nil {
		t.Fatalf("wait: %v %v", err, st.Err())
	}
	qs := st.Statistics.Details.(*bigquery.QueryStatistics)
	if st.Statistics.TotalBytesProcessed != 70*8 || qs.StatementType != "SELECT" {
		t.Fatalf("statistics: bytes %d, statement %q; want 560 (the id column), SELECT", st.Statistics.TotalBytesProcessed, qs.StatementType)
	}
	it, err = job.Read(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	it.PageInfo().MaxSize = 3
	var ids []int64
	for {
		var row []bigquery.Value
		err := it.Next(&row)
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if row[1] != int64(2) {
			t.Fatalf("row %v, want n = 2", row)
		}
		ids = append(ids, row[0].(int64))
	}
	if len(ids) != 10 || ids[0] != 49 || ids[9] != 40 {
		t.Fatalf("ids %v, want 49..40", ids)
	}
	if _, err := e.bq.JobFromID(e.ctx, "dups_job"); err != nil {
		t.Fatalf("jobs.get: %v", err)
	}
	if _, err := q.Run(e.ctx); !isHTTP(err, http.StatusConflict, "duplicate") {
		t.Fatalf("a repeated job id: %v, want 409 duplicate", err)
	}

	// defaultDataset, WHERE, ORDER BY, LIMIT.
	q = e.bq.Query("SELECT id, score FROM t_query WHERE id < 3 ORDER BY id LIMIT 2")
	q.DefaultDatasetID = "d"
	rows, _ = queryRows(t, e, q)
	if len(rows) != 2 || rows[0][0] != int64(0) || rows[1][1] != 0.5 {
		t.Fatalf("rows %v", rows)
	}

	// Errors are BigQuery's: invalidQuery with the position.
	_, err = e.bq.Query("SELECT nope FROM d.t_query").Read(e.ctx)
	if !isHTTP(err, http.StatusBadRequest, "invalidQuery") || !strings.Contains(err.Error(), "Unrecognized name: nope at [1:8]") {
		t.Fatalf("unknown column: %v", err)
	}
	_, err = e.bq.Query("SELECT * FROM d.missing").Read(e.ctx)
	if !isHTTP(err, http.StatusNotFound, "notFound") {
		t.Fatalf("missing table: %v", err)
	}
	// A failed job: jobs.insert succeeds, the job's status holds the error.
	q = e.bq.Query("SELECT COUNT(*) FROM d.t_query WHERE 1 / (id - id) > 0")
	q.JobID = "div_job"
	job, err = q.Run(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Wait reads getQueryResults, which answers the job's error (as
	// BigQuery does); jobs.get has it in status.errorResult.
	if _, err := job.Wait(e.ctx); !isHTTP(err, http.StatusBadRequest, "invalidQuery") || !strings.Contains(err.Error(), "division by zero") {
		t.Fatalf("wait: %v, want invalidQuery division by zero", err)
	}
	job, err = e.bq.JobFromID(e.ctx, "div_job")
	if err != nil {
		t.Fatal(err)
	}
	if st := job.LastStatus(); st.State != bigquery.Done || st.Err() == nil || !strings.Contains(st.Err().Error(), "division by zero: 1 / 0 at [1:40]") {
		t.Fatalf("jobs.get status %+v", st)
	}
	// maximumBytesBilled: BigQuery bills at least 10 MB for a query that
	// reads a table, so a lower limit fails it, with the bytes required,
	// and a limit at the minimum lets it run.
	q = e.bq.Query("SELECT COUNT(*) FROM d.t_query")
	q.MaxBytesBilled = 1000
	_, err = q.Read(e.ctx)
	if !isHTTP(err, http.StatusBadRequest, "bytesBilledLimitExceeded") || !strings.Contains(err.Error(), "Query exceeded limit for bytes billed: 1000. 10485760 or higher required.") {
		t.Fatalf("maximumBytesBilled 1000: %v, want bytesBilledLimitExceeded", err)
	}
	q.MaxBytesBilled = 10 << 20
	if rows, _ := queryRows(t, e, q); len(rows) != 1 {
		t.Fatalf("maximumBytesBilled at the minimum: %v", rows)
	}
}

func isHTTP(err error, code int, reason string) bool {
	var ge *googleapi.Error
	if !errors.As(err, &ge) || ge.Code != code {
		return false
	}
	for _, it := range ge.Errors {
		if it.Reason == reason {
			return true
		}
	}
	return false
}
