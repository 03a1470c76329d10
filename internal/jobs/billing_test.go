package jobs

import (
	"context"
	"errors"
	"testing"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/storage"
)

// newEngineStore is a Store over a storage engine and a catalog that
// creates and drops the engine's tables, with dataset p:d.
func newEngineStore(t *testing.T) (*Store, *catalog.Catalog) {
	t.Helper()
	ctx := context.Background()
	db, err := storage.Open(t.TempDir(), &storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cat, err := catalog.Open(t.TempDir(), catalog.Options{Observer: engineObserver{db}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cat.CreateDataset(ctx, catalog.Dataset{ProjectID: "p", DatasetID: "d", Location: "US"}); err != nil {
		t.Fatal(err)
	}
	s := New(cat, Options{DB: db})
	t.Cleanup(func() { s.Close() })
	return s, cat
}

// runJob runs q as job id and returns it when done.
func runJob(t *testing.T, s *Store, id string, q Query) Job {
	t.Helper()
	if _, err := s.Insert("p", id, "US", q); err != nil {
		t.Fatal(err)
	}
	return wait(t, s, id)
}

// mustRun runs q and fails the test if the job fails.
func mustRun(t *testing.T, s *Store, id, sql string) Job {
	t.Helper()
	j := runJob(t, s, id, Query{SQL: sql})
	if j.Err != nil {
		t.Fatalf("%s: %v", sql, j.Err)
	}
	return j
}

// tableRows is the committed rows of p:d.name.
func tableRows(t *testing.T, s *Store, cat *catalog.Catalog, name string) int64 {
	t.Helper()
	ct, err := cat.Table("p", "d", name)
	if err != nil {
		t.Fatalf("table %s: %v", name, err)
	}
	n, err := s.numRows(ct)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestMaxBytesBilledDML: maximumBytesBilled applies to the query of an
// INSERT ... SELECT and a CREATE TABLE AS SELECT as to a SELECT, and is
// checked before anything is committed: over the limit, the INSERT adds
// no row and the CTAS creates no table (before, both committed and the
// job succeeded).
func TestMaxBytesBilledDML(t *testing.T) {
	s, cat := newEngineStore(t)
	mustRun(t, s, "mk", "CREATE TABLE d.src (x INT64); INSERT INTO d.src VALUES (1), (2)")
	for _, tc := range []struct{ id, sql string }{
		{"ins", "INSERT INTO d.src SELECT x FROM d.src"},
		{"ctas", "CREATE TABLE d.c AS SELECT x FROM d.src"},
		{"ctas_replace", "CREATE OR REPLACE TABLE d.src AS SELECT x FROM d.src UNION ALL SELECT 3"},
		{"script", "SELECT 1; INSERT INTO d.src SELECT x FROM d.src"},
	} {
		j := runJob(t, s, tc.id, Query{SQL: tc.sql, MaxBytesBilled: 1000})
		var be *BytesBilledError
		if !errors.As(j.Err, &be) || be.Limit != 1000 || be.Required != 10<<20 {
			t.Errorf("%s: error %v, want bytes billed 1000 < %d", tc.sql, j.Err, 10<<20)
		}
		if n := tableRows(t, s, cat, "src"); n != 2 {
			t.Errorf("%s over the limit: d.src has %d rows, want 2", tc.sql, n)
		}
		if _, err := cat.Table("p", "d", "c"); !errors.Is(err, catalog.ErrNotFound) {
			t.Errorf("%s over the limit: d.c: %v, want not found", tc.sql, err)
		}
	}
	// A destination table is not touched either.
	j := runJob(t, s, "dest", Query{SQL: "SELECT x FROM d.src WHERE x > 1", MaxBytesBilled: 1000,
		Destination: &TableRef{"p", "d", "src"}, WriteDisposition: WriteTruncate})
	var be *BytesBilledError
	if !errors.As(j.Err, &be) {
		t.Errorf("WRITE_TRUNCATE over the limit: %v, want bytes billed", j.Err)
	}
	if n := tableRows(t, s, cat, "src"); n != 2 {
		t.Errorf("WRITE_TRUNCATE over the limit: d.src has %d rows, want 2", n)
	}
	j = runJob(t, s, "ins_ok", Query{SQL: "INSERT INTO d.src SELECT x FROM d.src", MaxBytesBilled: 10 << 20})
	if j.Err != nil || j.Stats.AffectedRows != 2 {
		t.Fatalf("INSERT at the limit: %+v %v", j.Stats, j.Err)
	}
	j = runJob(t, s, "ctas_ok", Query{SQL: "CREATE TABLE d.c AS SELECT x FROM d.src", MaxBytesBilled: 10 << 20})
	if j.Err != nil || tableRows(t, s, cat, "c") != 4 {
		t.Fatalf("CTAS at the limit: %v", j.Err)
	}
}
