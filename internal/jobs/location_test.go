package jobs

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/bqstore/bqstore/internal/catalog"
)

// TestJobLocationFromData: a job that names no location runs where the
// data it reads is (BigQuery: "the location is inferred from the datasets
// referenced in the request"); the tables read, a DML or DDL target,
// the destination table and the default dataset decide, in that order
// of appearance; no dataset: "" (the caller's default). A query reading
// a dataset of another location than the job's fails as BigQuery's:
// 404 "Not found: Dataset p:d was not found in location L".
func TestJobLocationFromData(t *testing.T) {
	s, cat, db := engineStore(t, Options{})
	ctx := context.Background()
	if _, err := cat.CreateDataset(ctx, catalog.Dataset{ProjectID: "p", DatasetID: "eu", Location: "EU"}); err != nil {
		t.Fatal(err)
	}
	fillTable(t, cat, db, "t", 3) // p:d.t, in US
	if _, err := s.Insert("p", "mk", "EU", Query{SQL: "CREATE TABLE eu.t AS SELECT 1 AS x"}); err != nil {
		t.Fatal(err)
	}
	if j := wait(t, s, "mk"); j.Err != nil {
		t.Fatal(j.Err)
	}
	for _, c := range []struct {
		name string
		q    Query
		want string
	}{
		{"no table", Query{SQL: "SELECT 1"}, ""},
		{"an EU table", Query{SQL: "SELECT x FROM eu.t"}, "EU"},
		{"a US table", Query{SQL: "SELECT x FROM d.t"}, "US"},
		{"EU through a join", Query{SQL: "SELECT 1 FROM (SELECT 1) JOIN eu.t ON true"}, "EU"},
		{"an INSERT's target", Query{SQL: "INSERT INTO eu.t (x) VALUES (2)"}, "EU"},
		{"a CTAS's target", Query{SQL: "CREATE TABLE eu.n AS SELECT 1 AS y"}, "EU"},
		{"a script", Query{SQL: "SELECT 1; SELECT x FROM eu.t"}, "EU"},
		{"the default dataset", Query{SQL: "SELECT 1", DefaultDataset: "eu"}, "EU"},
		{"the destination", Query{SQL: "SELECT 1", Destination: &TableRef{"p", "eu", "out"}}, "EU"},
		{"a missing dataset", Query{SQL: "SELECT * FROM nope.t"}, ""},
		{"a parameter", Query{SQL: "SELECT x FROM eu.t WHERE x = @v"}, "EU"},
	} {
		if got := s.Location(ctx, "p", c.q); got != c.want {
			t.Errorf("%s: location %q, want %q", c.name, got, c.want)
		}
	}
	j := runJob(t, s, "mixed", Query{SQL: "SELECT a.x FROM eu.t a CROSS JOIN d.t b"}) // location US
	if te, ok := j.Err.(*TableError); !ok || !te.NotFound || te.Msg != "Not found: Dataset p:eu was not found in location US" {
		t.Fatalf("a US job reading an EU dataset: %v", j.Err)
	}
	if _, err := s.Insert("p", "eu_job", "EU", Query{SQL: "SELECT a.x FROM eu.t a CROSS JOIN d.t b"}); err != nil {
		t.Fatal(err)
	}
	j = wait(t, s, "eu_job")
	if j.Err == nil || !strings.Contains(j.Err.Error(), "Not found: Dataset p:d was not found in location EU") {
		t.Fatalf("an EU job reading a US dataset: %v", j.Err)
	}
	// A DML or DDL target too.
	for i, sql := range []string{"INSERT INTO eu.t (x) VALUES (3)", "CREATE TABLE eu.z (a INT64)", "CREATE VIEW eu.w AS SELECT 1 AS a", "ALTER TABLE eu.t ADD COLUMN b INT64", "DROP TABLE eu.t"} {
		j := runJob(t, s, fmt.Sprintf("target%d", i), Query{SQL: sql}) // location US
		if j.Err == nil || !strings.Contains(j.Err.Error(), "Not found: Dataset p:eu was not found in location US") {
			t.Errorf("a US job's %s: %v", sql, j.Err)
		}
	}
	if _, err := s.Insert("p", "eu_ok", "eu", Query{SQL: "SELECT x FROM eu.t"}); err != nil {
		t.Fatal(err)
	}
	if j := wait(t, s, "eu_ok"); j.Err != nil {
		t.Fatalf("an eu job (lower case) reading an EU dataset: %v", j.Err)
	}
}

// TestQueryNotFoundNamesLocation: a query naming a table or dataset that
// does not exist fails as BigQuery's, naming the job's location: 404
// "Not found: Table p:d.t was not found in location US" (users' reports:
// mozilla/bigquery-etl#1698), "Not found: Dataset p:d was not found in
// location US" (googleapis/google-cloud-python#15691); before, the
// message stopped at the table or dataset.
func TestQueryNotFoundNamesLocation(t *testing.T) {
	s, cat, db := engineStore(t, Options{})
	fillTable(t, cat, db, "t", 1) // p:d.t, in US
	for i, c := range []struct{ sql, want string }{
		{"SELECT * FROM d.missing", "Not found: Table p:d.missing was not found in location US"},
		{"SELECT * FROM nope.t", "Not found: Dataset p:nope was not found in location US"},
		{"SELECT * FROM `nope.t*`", "Not found: Dataset p:nope was not found in location US"},
		{"SELECT 1; SELECT * FROM d.t JOIN d.gone USING (id)", "Not found: Table p:d.gone was not found in location US"},
	} {
		j := runJob(t, s, fmt.Sprintf("nf%d", i), Query{SQL: c.sql})
		if te, ok := j.Err.(*TableError); !ok || !te.NotFound || te.Msg != c.want {
			t.Errorf("%s: %#v, want NotFound %q", c.sql, j.Err, c.want)
		}
	}
}
