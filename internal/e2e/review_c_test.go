package e2e

import (
	"errors"
	"strings"
	"testing"

	"cloud.google.com/go/bigquery"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
)

// Review tests (review-c: a user's first hour with the official clients
// against jobs, queries and tables). Each test's comment says what it
// found on main when it was written, what BigQuery does and the source.

// TestReviewCArrayKeywordLiteral: GoogleSQL's array literal takes an
// optional ARRAY keyword, with or without an element type: BigQuery's
// lexical reference ("Array literals ... The ARRAY keyword is optional,
// and an explicit element type T is also optional") lists [1, 2, 3],
// ARRAY[1, 2, 3] and ARRAY<string>['x', 'y', 'xy']. Found: ARRAY<T>[...]
// works but ARRAY[1, 2, 3] (what users coming from PostgreSQL write, and
// bq mk --view bodies copied from BigQuery's docs) is refused with the
// self-contradicting 'Syntax error: Expected "(" or "<" or "[" but got
// "[" at [1:14]'. Severity HIGH (a valid query refused).
func TestReviewCArrayKeywordLiteral(t *testing.T) {
	e := newEnv(t)
	e.fillSimple("t_rc_arr", 3)
	for _, sql := range []string{
		"SELECT ARRAY[1, 2, 3] AS a",
		"SELECT ARRAY['x', 'y', 'xy'] AS a",
		"SELECT id, ARRAY[id, id * 10] AS a FROM d.t_rc_arr ORDER BY id LIMIT 1",
	} {
		it, err := e.bq.Query(sql).Read(e.ctx)
		if err != nil {
			t.Errorf("%s: %v", sql, err)
			continue
		}
		var row []bigquery.Value
		if err := it.Next(&row); err != nil {
			t.Errorf("%s: %v", sql, err)
			continue
		}
		if arr, ok := row[len(row)-1].([]bigquery.Value); !ok || len(arr) < 2 {
			t.Errorf("%s: %#v, want an ARRAY value", sql, row)
		}
	}
}

// TestReviewCViewBytesProcessed: querying a view costs the bytes of the
// base-table columns its inlined query reads, as the same query written
// without the view (BigQuery's pricing docs: "you are charged for the
// columns ... read"; a view is a logical view, expanded into the query).
// Found: the bytes of the view's computed output columns are added as if
// they were stored: with view `SELECT id, [1, 2] AS a FROM t` over 10
// rows, `SELECT * FROM v` reports 80 (id) + 160 (a: 10 x 2 x 8) = 240
// bytes and `SELECT a FROM v` 160, where `SELECT id, [1, 2] AS a FROM t`
// reports 80; dry runs (bq query --dry_run, Go Query.DryRun) and jobs
// agree with each other, so maximumBytesBilled refuses a query over a view
// that BigQuery would run. Severity MEDIUM (a wrong statistic the clients
// print and a limit enforced on it).
func TestReviewCViewBytesProcessed(t *testing.T) {
	e := newEnv(t)
	e.fillSimple("t_rc_vb", 10)
	if _, err := queryRows2(e, "CREATE VIEW d.v_rc_vb AS SELECT id, [1, 2] AS a FROM d.t_rc_vb"); err != nil {
		t.Fatal(err)
	}
	bytesOf := func(sql string, dry bool) int64 {
		t.Helper()
		q := e.bq.Query(sql)
		q.DryRun = dry
		job, err := q.Run(e.ctx)
		if err != nil {
			t.Fatalf("%s (dry run %v): %v", sql, dry, err)
		}
		st := job.LastStatus()
		if !dry {
			if st, err = job.Wait(e.ctx); err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
		}
		return st.Statistics.TotalBytesProcessed
	}
	for _, dry := range []bool{true, false} {
		inlined := bytesOf("SELECT id, [1, 2] AS a FROM d.t_rc_vb", dry)
		if inlined != 80 {
			t.Fatalf("inlined query (dry run %v): %d bytes, want 80 (10 INT64 ids)", dry, inlined)
		}
		if got := bytesOf("SELECT * FROM d.v_rc_vb", dry); got != inlined {
			t.Errorf("SELECT * FROM the view (dry run %v): totalBytesProcessed %d, want %d as the inlined query", dry, got, inlined)
		}
		if got := bytesOf("SELECT id FROM d.v_rc_vb", dry); got != 80 {
			t.Errorf("SELECT id FROM the view (dry run %v): totalBytesProcessed %d, want 80", dry, got)
		}
		// a is computed, not read: only the scan's row count is needed.
		if got := bytesOf("SELECT a FROM d.v_rc_vb", dry); got > 80 {
			t.Errorf("SELECT a FROM the view (dry run %v): totalBytesProcessed %d, want at most 80 (a is computed, no column of a is stored)", dry, got)
		}
	}
	// maximumBytesBilled counts the same bytes: a 10 MB limit (the
	// minimum bill) is enough for a query of a view whose base columns are
	// 80 bytes; it must not be refused because of computed columns.
	q := e.bq.Query("SELECT * FROM d.v_rc_vb")
	q.MaxBytesBilled = 10 << 20
	if _, err := q.Read(e.ctx); err != nil {
		t.Errorf("view query under maximumBytesBilled 10 MiB: %v", err)
	}
}

// queryRows2 runs sql through the Go client (jobs.query) and returns its
// rows, or the error.
func queryRows2(e *env, sql string) ([][]bigquery.Value, error) {
	it, err := e.bq.Query(sql).Read(e.ctx)
	if err != nil {
		return nil, err
	}
	var out [][]bigquery.Value
	for {
		var row []bigquery.Value
		if err := it.Next(&row); err != nil {
			if errors.Is(err, iterator.Done) {
				return out, nil
			}
			return out, err
		}
		out = append(out, row)
	}
}

// TestReviewCQueryLocationMismatch: a query job runs in one location and
// can read only datasets of that location. BigQuery answers a job whose
// location is EU naming a dataset in US with 404 notFound "Not found:
// Dataset p:d was not found in location EU" (the error users meet when
// they set the Go client's q.Location / bq --location wrongly; e.g.
// mozilla/bigquery-etl#1400 "404 Not found: Dataset ...:map was not found
// in location US"). Found: q.Location = "EU" (bq query --location=EU)
// over dataset d, created in US, runs and answers the rows; the job says
// location EU. A user's test of location handling passes here and fails
// on BigQuery. Severity MEDIUM.
func TestReviewCQueryLocationMismatch(t *testing.T) {
	e := newEnv(t)
	e.fillSimple("t_rc_loc", 5)
	if md, err := e.bq.Dataset("d").Metadata(e.ctx); err != nil || md.Location != "US" {
		t.Fatalf("dataset d: %v %+v, want location US", err, md)
	}
	for _, fast := range []bool{true, false} {
		q := e.bq.Query("SELECT COUNT(*) FROM d.t_rc_loc")
		q.Location = "EU"
		if !fast {
			q.JobID = "rc_loc_insert" // jobs.insert + getQueryResults
		}
		_, err := q.Read(e.ctx)
		if !isHTTP(err, 404, "notFound") {
			t.Errorf("query in EU of a US dataset (jobs.query %v): err %v, want 404 notFound", fast, err)
			continue
		}
		if !strings.Contains(err.Error(), "Not found: Dataset local:d was not found in location EU") {
			t.Errorf("query in EU of a US dataset: %v, want BigQuery's message", err)
		}
	}
}

// TestReviewCMissingTableMessage: BigQuery's error for a query naming a
// table that does not exist is 404 notFound "Not found: Table p:d.t was
// not found in location US" (observed in users' reports:
// mozilla/bigquery-etl#1698 "404 Not found: Table
// moz-fx-data-shared-prod:telemetry_derived.scalar_percentiles_v1 was not
// found in location US", bennettoxford/openprescribing#1145 "... was not
// found in location EU"). Found: the code and reason are right but the
// message stops at "Not found: Table local:d.missing" (bq query prints
// it; users grep logs for BigQuery's wording). Severity LOW (wording).
func TestReviewCMissingTableMessage(t *testing.T) {
	e := newEnv(t)
	e.fillSimple("t_rc_mt", 1) // creates dataset d
	_, err := e.bq.Query("SELECT * FROM d.missing").Read(e.ctx)
	var ge *googleapi.Error
	if !errors.As(err, &ge) || !isHTTP(err, 404, "notFound") {
		t.Fatalf("query of a missing table: %v, want 404 notFound", err)
	}
	if want := "Not found: Table local:d.missing was not found in location US"; ge.Message != want {
		t.Errorf("message %q, want %q", ge.Message, want)
	}
}
