package jobs

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/sql"
)

// TestQueryResultStreams: a scan's result far larger than the query's
// memory budget streams into the anonymous table batch by batch (before,
// the executor held every row and failed with resourcesExceeded); a
// LIMIT stops at its rows; a sort of the same rows still fails with
// resourcesExceeded, the budget's error rather than a row cap.
func TestQueryResultStreams(t *testing.T) {
	const n = 100_000
	s, cat, db := engineStore(t, Options{MaxMemory: 2 << 20})
	fillTable(t, cat, db, "big", n)
	if _, err := s.Insert("p", "scan", "US", Query{SQL: "SELECT x, s, x * 2 AS y FROM d.big WHERE x >= 10"}); err != nil {
		t.Fatal(err)
	}
	j := wait(t, s, "scan")
	if j.Err != nil {
		t.Fatalf("a streamed scan of %d rows under a 2 MiB budget: %v", n, j.Err)
	}
	if j.NumRows != n-10 {
		t.Fatalf("NumRows %d, want %d", j.NumRows, n-10)
	}
	rows := readAll(t, s, j)
	if len(rows) != n-10 {
		t.Fatalf("%d rows read back, want %d", len(rows), n-10)
	}
	for i, row := range rows {
		x := int64(i + 10)
		if row[0] != x || row[1] != fmt.Sprintf("row-%d", x) || row[2] != 2*x {
			t.Fatalf("row %d: %v", i, row)
		}
	}
	if _, err := s.Insert("p", "limit", "US", Query{SQL: "SELECT x FROM d.big LIMIT 5 OFFSET 7"}); err != nil {
		t.Fatal(err)
	}
	j = wait(t, s, "limit")
	if j.Err != nil || j.NumRows != 5 {
		t.Fatalf("LIMIT 5 OFFSET 7: %d rows, %v", j.NumRows, j.Err)
	}
	if got := readAll(t, s, j); fmt.Sprint(got) != "[[7] [8] [9] [10] [11]]" {
		t.Fatalf("LIMIT 5 OFFSET 7: %v", got)
	}
	// Billed as BigQuery bills it: the columns read, whole, LIMIT or not.
	if _, err := s.Insert("p", "nolimit", "US", Query{SQL: "SELECT x FROM d.big"}); err != nil {
		t.Fatal(err)
	}
	if all := wait(t, s, "nolimit"); all.Err != nil || all.BytesProcessed != 8*n || j.BytesProcessed != all.BytesProcessed {
		t.Fatalf("bytes processed: LIMIT %d, whole %d (%v), want %d", j.BytesProcessed, all.BytesProcessed, all.Err, 8*n)
	}
	if _, err := s.Insert("p", "sort", "US", Query{SQL: "SELECT x, s FROM d.big ORDER BY s"}); err != nil {
		t.Fatal(err)
	}
	var re *sql.ResourcesError
	if j := wait(t, s, "sort"); !errors.As(j.Err, &re) {
		t.Fatalf("a sort of %d rows under 2 MiB: %v, want resourcesExceeded", n, j.Err)
	}
}

// TestQueryFailsMidwayNoRows: a query that fails after it streamed most
// of its rows leaves its destination as it was (WRITE_APPEND and
// WRITE_TRUNCATE) and no anonymous table behind.
func TestQueryFailsMidwayNoRows(t *testing.T) {
	const n = 50_000
	s, cat, db := engineStore(t, Options{})
	fillTable(t, cat, db, "big", n)
	fillTable(t, cat, db, "dst", 3)
	dst := &TableRef{Project: "p", Dataset: "d", Table: "dst"}
	// A failing CAST at row n-100: "Bad int64 value: midway".
	failing := fmt.Sprintf("SELECT x, IF(CAST(IF(x = %d, 'midway', '1') AS INT64) = 1, s, NULL) AS s FROM d.big", n-100)
	for _, c := range []struct {
		id   string
		dest *TableRef
		disp string
	}{{"anon", nil, ""}, {"append", dst, WriteAppend}, {"truncate", dst, WriteTruncate}} {
		if _, err := s.Insert("p", c.id, "US", Query{SQL: failing, Destination: c.dest, WriteDisposition: c.disp}); err != nil {
			t.Fatal(err)
		}
		j := wait(t, s, c.id)
		if j.Err == nil || !strings.Contains(j.Err.Error(), "midway") {
			t.Fatalf("%s: err %v, want the query's ERROR", c.id, j.Err)
		}
		ct, err := cat.Table("p", "d", "dst")
		if err != nil {
			t.Fatal(err)
		}
		if got, err := s.numRows(ct); err != nil || got != 3 {
			t.Fatalf("%s: destination has %d rows (%v), want its 3", c.id, got, err)
		}
		a := anonRef("p", "US", c.id)
		if _, err := cat.Table(a.Project, a.Dataset, a.Table); !errors.Is(err, catalog.ErrNotFound) {
			t.Fatalf("%s: anonymous table after the failure: %v, want not found", c.id, err)
		}
	}
	// The same query without the failure appends every row.
	ok := fmt.Sprintf("SELECT x, IF(x = %d, 'fine', s) AS s FROM d.big", n-100)
	if _, err := s.Insert("p", "ok", "US", Query{SQL: ok, Destination: dst, WriteDisposition: WriteAppend}); err != nil {
		t.Fatal(err)
	}
	if j := wait(t, s, "ok"); j.Err != nil || j.Destination != *dst {
		t.Fatalf("ok: %v %+v", j.Err, j.Destination)
	}
	ct, _ := cat.Table("p", "d", "dst")
	if got, err := s.numRows(ct); err != nil || got != n+3 {
		t.Fatalf("destination has %d rows (%v), want %d", got, err, n+3)
	}
	a := anonRef("p", "US", "ok")
	if _, err := cat.Table(a.Project, a.Dataset, a.Table); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("the anonymous table of a destination query: %v, want dropped", err)
	}
}

// TestQueryCancelledMidwayNoRows: a job cancelled while its rows stream
// (after its first append) ends cancelled, and leaves neither rows in its
// destination nor its anonymous table.
func TestQueryCancelledMidwayNoRows(t *testing.T) {
	const n = 50_000
	var s *Store
	cancelled := map[string]bool{}
	s, cat, db := engineStore(t, Options{afterResultAppend: func(id string) {
		if !cancelled[id] {
			cancelled[id] = true
			if _, err := s.Cancel("p", id); err != nil {
				t.Error(err)
			}
		}
	}})
	fillTable(t, cat, db, "big", n)
	fillTable(t, cat, db, "dst", 3)
	dst := &TableRef{Project: "p", Dataset: "d", Table: "dst"}
	for _, c := range []struct {
		id   string
		dest *TableRef
		disp string
	}{{"anon", nil, ""}, {"append", dst, WriteAppend}, {"truncate", dst, WriteTruncate}} {
		if _, err := s.Insert("p", c.id, "US", Query{SQL: "SELECT x, s FROM d.big", Destination: c.dest, WriteDisposition: c.disp}); err != nil {
			t.Fatal(err)
		}
		j := wait(t, s, c.id)
		var se *StoppedError
		if !errors.As(j.Err, &se) || !cancelled[c.id] {
			t.Fatalf("%s: err %v (cancelled after an append: %v), want the cancellation", c.id, j.Err, cancelled[c.id])
		}
		ct, err := cat.Table("p", "d", "dst")
		if err != nil {
			t.Fatal(err)
		}
		if got, err := s.numRows(ct); err != nil || got != 3 {
			t.Fatalf("%s: destination has %d rows (%v), want its 3", c.id, got, err)
		}
		a := anonRef("p", "US", c.id)
		if _, err := cat.Table(a.Project, a.Dataset, a.Table); !errors.Is(err, catalog.ErrNotFound) {
			t.Fatalf("%s: anonymous table after the cancel: %v, want not found", c.id, err)
		}
	}
}

// TestScriptResultStreams: a script's result (its last statement, a
// query, or with FIRST_SELECT its first query) streams
// into the anonymous table as a lone query's does, and its other
// queries' rows are not held either: a script whose queries scan far
// more rows than the memory budget holds runs (before, every query of a
// script held its rows and the script failed with resourcesExceeded).
// A script that fails after its result streamed leaves no anonymous
// table behind.
func TestScriptResultStreams(t *testing.T) {
	const n = 100_000
	s, cat, db := engineStore(t, Options{MaxMemory: 2 << 20})
	fillTable(t, cat, db, "big", n)
	script := "SELECT s FROM d.big; CREATE TABLE d.t2 (a INT64); INSERT INTO d.t2 VALUES (1); SELECT x, s FROM d.big WHERE x >= 10"
	if _, err := s.Insert("p", "script", "US", Query{SQL: script}); err != nil {
		t.Fatal(err)
	}
	j := wait(t, s, "script")
	if j.Err != nil {
		t.Fatalf("a script of two scans of %d rows under a 2 MiB budget: %v", n, j.Err)
	}
	if j.NumRows != n-10 || j.Stats.StatementType != "SCRIPT" {
		t.Fatalf("NumRows %d, statement type %s; want %d, SCRIPT", j.NumRows, j.Stats.StatementType, n-10)
	}
	rows := readAll(t, s, j)
	if len(rows) != n-10 {
		t.Fatalf("%d rows read back, want %d", len(rows), n-10)
	}
	for i, row := range rows {
		if x := int64(i + 10); row[0] != x || row[1] != fmt.Sprintf("row-%d", x) {
			t.Fatalf("row %d: %v", i, row)
		}
	}
	// The result's query fails midway; then a result streamed (the
	// first query's, FIRST_SELECT) and a later statement failed: no
	// result, no anonymous table.
	if _, err := s.Insert("p", "fails", "US", Query{SQL: "SELECT x FROM d.big; SELECT CAST('late' AS INT64) FROM d.big WHERE x = 5"}); err != nil {
		t.Fatal(err)
	}
	if j := wait(t, s, "fails"); j.Err == nil || !strings.Contains(j.Err.Error(), "late") {
		t.Fatalf("a script whose last query fails: %v", j.Err)
	}
	if _, err := s.Insert("p", "fails2", "US", Query{SQL: "SELECT x FROM d.big; INSERT INTO d.nosuch VALUES (1)", KeyResult: KeyResultFirstSelect}); err != nil {
		t.Fatal(err)
	}
	j = wait(t, s, "fails2")
	if j.Err == nil {
		t.Fatal("a script inserting into a missing table succeeded")
	}
	ref := anonRef("p", "US", "fails2")
	if _, err := cat.Table(ref.Project, ref.Dataset, ref.Table); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("the anonymous table of a failed script: %v, want not found", err)
	}
}
