package jobs

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/bqstore/bqstore/internal/catalog"
)

// TestAlterRenameTo: ALTER TABLE RENAME TO gives the table (its rows,
// schema and metadata) the new name in its dataset; the old name is gone;
// an existing name, or another dataset, is refused and changes nothing;
// IF EXISTS on a missing table skips.
func TestAlterRenameTo(t *testing.T) {
	s, cat := newEngineStore(t)
	mustRun(t, s, "mk", "CREATE TABLE d.t (x INT64) OPTIONS(description='dt'); INSERT INTO d.t VALUES (1), (2); CREATE TABLE d.other (y STRING); CREATE SCHEMA e")
	old, err := cat.Table("p", "d", "t")
	if err != nil {
		t.Fatal(err)
	}
	j := mustRun(t, s, "ren", "ALTER TABLE d.t RENAME TO u")
	if j.Stats.StatementType != "ALTER_TABLE" || j.Stats.DDLOperation != "ALTER" || j.Stats.DDLTargetTable == nil || *j.Stats.DDLTargetTable != (TableRef{"p", "d", "t"}) {
		t.Fatalf("stats %+v", j.Stats)
	}
	u, err := cat.Table("p", "d", "u")
	if err != nil || u.ID != old.ID || u.Description != "dt" || tableRows(t, s, cat, "u") != 2 {
		t.Fatalf("renamed table: %+v %v", u, err)
	}
	if _, err := cat.Table("p", "d", "t"); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("old name: %v, want not found", err)
	}
	for _, tc := range []struct{ sql, want string }{
		{"ALTER TABLE d.u RENAME TO other", "Already Exists: Table p:d.other"},
		{"ALTER TABLE d.u RENAME TO e.u", "ALTER TABLE RENAME TO cannot move table p:d.u to another dataset at [1:27]"},
		{"ALTER TABLE d.t RENAME TO v", "Not found: Table p:d.t"},
	} {
		j := runJob(t, s, "bad", Query{SQL: tc.sql})
		if j.Err == nil || !strings.Contains(j.Err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.sql, j.Err, tc.want)
		}
		if err := s.Delete("p", "bad"); err != nil {
			t.Fatal(err)
		}
	}
	if tableRows(t, s, cat, "u") != 2 {
		t.Fatal("a refused rename changed the table")
	}
	if j := mustRun(t, s, "skip", "ALTER TABLE IF EXISTS d.t RENAME TO w"); j.Stats.DDLOperation != "SKIP" {
		t.Fatalf("IF EXISTS on a missing table: %+v", j.Stats)
	}
}

// TestTempTables: CREATE TEMP TABLE in a script makes a table the rest
// of the script names without a dataset (before a permanent table of the
// default dataset with that name), which INSERT, CTAS, SELECT and DROP
// reach; it is gone when the script ends, whether it succeeded or not.
// Alone (not in a script) it is BigQuery's "requires a script or
// session" error.
func TestTempTables(t *testing.T) {
	s, cat := newEngineStore(t)
	mustRun(t, s, "mk", "CREATE TABLE d.t (x INT64); INSERT INTO d.t VALUES (100)")
	q := Query{DefaultDataset: "d", SQL: `CREATE TEMP TABLE t (x INT64);
		INSERT INTO t VALUES (1), (2);
		CREATE TEMPORARY TABLE u AS SELECT x * 10 AS y FROM t;
		CREATE TEMP TABLE gone AS SELECT 1 AS z; DROP TABLE gone;
		SELECT SUM(y) + (SELECT SUM(x) FROM d.t) AS s FROM u`}
	j := runJob(t, s, "script", q)
	if j.Err != nil {
		t.Fatal(j.Err)
	}
	rows, err := s.Rows(j)
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	err = rows.Read(context.Background(), 0, rows.Total, func(rec arrow.RecordBatch) error {
		for i := range int(rec.NumRows()) {
			got = append(got, rec.Column(0).(*array.Int64).Value(i))
		}
		return nil
	})
	rows.Close()
	if err != nil || len(got) != 1 || got[0] != 130 {
		t.Fatalf("result %v %v, want 130 (temp u 10+20, d.t 100)", got, err)
	}
	if n := tableRows(t, s, cat, "t"); n != 1 {
		t.Fatalf("d.t has %d rows, want its 1: the script's INSERT INTO t went to the temp table", n)
	}
	noTemps := func() {
		t.Helper()
		ts, _ := cat.ListTables("p", AnonDataset("p", "US"))
		for _, x := range ts {
			if !strings.HasPrefix(x.TableID, "anon") {
				t.Errorf("left after the script: %s", x.FullID())
			}
		}
	}
	noTemps()
	// A failing script drops its temp tables too.
	j = runJob(t, s, "fails", Query{SQL: "CREATE TEMP TABLE t AS SELECT 1 AS x; SELECT 1 / 0 FROM t"})
	if j.Err == nil {
		t.Fatal("1 / 0 succeeded")
	}
	noTemps()
	// Another job does not see them.
	j = runJob(t, s, "other", Query{SQL: "CREATE TEMP TABLE t AS SELECT 1 AS x; SELECT 1"})
	if j.Err != nil {
		t.Fatal(j.Err)
	}
	if j = runJob(t, s, "after", Query{SQL: "SELECT * FROM t"}); j.Err == nil || !strings.Contains(j.Err.Error(), "must be qualified with a dataset") {
		t.Fatalf("temp table of another job: %v", j.Err)
	}
	for _, tc := range []struct{ sql, want string }{
		{"CREATE TEMP TABLE t (x INT64)", "Use of CREATE TEMPORARY TABLE requires a script or session"},
		{"CREATE TEMP TABLE t (x INT64); CREATE TEMP TABLE t (y INT64)", "Already Exists: Table t"},
	} {
		j := runJob(t, s, "bad", Query{SQL: tc.sql})
		if j.Err == nil || !strings.Contains(j.Err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.sql, j.Err, tc.want)
		}
		if err := s.Delete("p", "bad"); err != nil {
			t.Fatal(err)
		}
	}
	noTemps()
}

// TestAlterColumnWidening: SET DATA TYPE to a type BigQuery widens to
// (INT64 to NUMERIC, BIGNUMERIC or FLOAT64; NUMERIC to BIGNUMERIC or
// FLOAT64) is a positioned "not supported yet" (the engine keeps a
// column's stored type), not the "Provided Schema does not match" error
// BigQuery gives for a change it refuses, which it answered before; a
// refused change keeps that error; a longer STRING works.
func TestAlterColumnWidening(t *testing.T) {
	s, _ := newEngineStore(t)
	mustRun(t, s, "mk", "CREATE TABLE d.t (i INT64, n NUMERIC, b BIGNUMERIC, s STRING(5))")
	for _, tc := range []struct{ sql, want string }{
		{"ALTER TABLE d.t ALTER COLUMN i SET DATA TYPE NUMERIC", "not supported yet by bqstore: ALTER COLUMN SET DATA TYPE from INT64 to NUMERIC at [1:17]"},
		{"ALTER TABLE d.t ALTER COLUMN i SET DATA TYPE FLOAT64", "not supported yet by bqstore: ALTER COLUMN SET DATA TYPE from INT64 to FLOAT64 at [1:17]"},
		{"ALTER TABLE d.t ALTER COLUMN n SET DATA TYPE BIGNUMERIC", "not supported yet by bqstore: ALTER COLUMN SET DATA TYPE from NUMERIC to BIGNUMERIC at [1:17]"},
		{"ALTER TABLE d.t ALTER COLUMN b SET DATA TYPE FLOAT64", "Provided Schema does not match Table p:d.t. Field b has changed type from BIGNUMERIC to FLOAT"},
	} {
		j := runJob(t, s, "w", Query{SQL: tc.sql})
		if j.Err == nil || j.Err.Error() != tc.want {
			t.Errorf("%s: %v, want %q", tc.sql, j.Err, tc.want)
		}
		if err := s.Delete("p", "w"); err != nil {
			t.Fatal(err)
		}
	}
	mustRun(t, s, "len", "ALTER TABLE d.t ALTER COLUMN s SET DATA TYPE STRING(10)")
}
