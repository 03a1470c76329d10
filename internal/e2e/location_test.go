package e2e

import (
	"net/http"
	"strings"
	"testing"
)

// TestQueryLocationFromData: the Go client sends no location unless told
// (Client.Location); a query reading an EU dataset then runs in EU, as
// BigQuery infers it from the datasets referenced (jobs.query answers
// jobReference.location EU, which the client then polls with); a query
// joining an EU and a US dataset fails with BigQuery's 404 "Not found:
// Dataset ... was not found in location EU". Before, every job ran in US
// whatever it read.
func TestQueryLocationFromData(t *testing.T) {
	e := newEnv(t)
	runStatement(t, e, "CREATE SCHEMA eu OPTIONS(location = 'EU')")
	runStatement(t, e, "CREATE TABLE eu.t AS SELECT 1 AS x")
	e.fillSimple("t_us", 3)
	job, err := e.bq.Query("SELECT x FROM eu.t").Run(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if job.Location() != "EU" {
		t.Fatalf("a query of an EU dataset ran in %q, want EU", job.Location())
	}
	if st, err := job.Wait(e.ctx); err != nil || st.Err() != nil {
		t.Fatalf("%v %v", err, st.Err())
	}
	rows, _ := queryRows(t, e, e.bq.Query("SELECT COUNT(*) FROM eu.t"))
	if rows[0][0] != int64(1) {
		t.Fatalf("rows %v", rows)
	}
	_, err = e.bq.Query("SELECT a.x FROM eu.t a CROSS JOIN d.t_us b").Read(e.ctx)
	if !isHTTP(err, http.StatusNotFound, "notFound") || !strings.Contains(err.Error(), "Not found: Dataset "+project+":d was not found in location EU") {
		t.Fatalf("a query of EU and US datasets: %v", err)
	}
}
