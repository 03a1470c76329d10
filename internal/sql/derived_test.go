package sql

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/bqstore/bqstore/internal/schema"
)

// TestDerivedTableBudget: a derived table (a FROM subquery, a WITH entry
// read in FROM) is held as Arrow record batches charged by their size,
// not as a row of Go values per row: over heldTable's 200,000 rows, two
// INT64 columns are 3.2 MB of Arrow but were charged 22 MB as []any rows
// (48 bytes a row and 32 a cell), so under a 12 MiB budget each of these
// queries failed with resourcesExceeded ("rows of the SELECT"), the
// windowed one as `bqstore bench query --rows 2000000`'s window query
// did at 256 MiB. The answer is the one without a budget.
func TestDerivedTableBudget(t *testing.T) {
	resolve := heldTable()
	for _, q := range []string{
		"SELECT COUNT(*), SUM(k), MAX(v) FROM (SELECT k, v FROM t) WHERE v < 10",
		"WITH d AS (SELECT k, v FROM t WHERE k >= 0) SELECT COUNT(*), SUM(k) FROM d WHERE v < 10",
		"SELECT COUNT(*), SUM(k) FROM (SELECT k, ROW_NUMBER() OVER (PARTITION BY v ORDER BY k) AS rn FROM t) WHERE rn <= 10",
		"SELECT COUNT(*), MAX(c) FROM (SELECT v, COUNT(*) AS c FROM (SELECT k, v FROM t) GROUP BY v)",
	} {
		want, err := Run(context.Background(), q, resolve, Options{MaxMemory: -1})
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		const budget = 12 << 20
		got, err := Run(context.Background(), q, resolve, Options{MaxMemory: budget})
		var re *ResourcesError
		if errors.As(err, &re) {
			t.Errorf("%s under %d bytes: %v", q, budget, err)
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if g, w := fmt.Sprint(got.Rows), fmt.Sprint(want.Rows); g != w {
			t.Errorf("%s: got %s under the budget, %s without", q, g, w)
		}
		t.Logf("%s: peak %d", q, got.PeakMemory)
	}
}

// TestDerivedMemoryHeld: what a held derived table is charged is what it
// holds, within a quarter: the live heap is measured (runtime.GC, then
// MemStats.HeapAlloc against the same before the query) once the table
// is held, for one appended to as its block runs and one converted from
// the rows of a sort. No timing.
func TestDerivedMemoryHeld(t *testing.T) {
	resolve := heldTable()
	var live, charged int64
	var base runtime.MemStats
	testHookDerivedHeld = func(c int64) {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		live, charged = int64(m.HeapAlloc)-int64(base.HeapAlloc), c
	}
	defer func() { testHookDerivedHeld = nil }()
	for _, q := range []string{
		"SELECT COUNT(*) FROM (SELECT k, v, s FROM t)",
		"SELECT COUNT(*) FROM (SELECT k, s, CONCAT(s, s) AS s2 FROM t ORDER BY v LIMIT 150000)",
	} {
		runtime.GC()
		runtime.ReadMemStats(&base)
		live, charged = 0, 0
		if _, err := Run(context.Background(), q, resolve, Options{MaxMemory: 1 << 30}); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: charged %d, held %d", q, charged, live)
		if live > charged*5/4 || live < charged*3/4 {
			t.Errorf("%s: charged %d bytes, held %d", q, charged, live)
		}
	}
}

// TestPlainSlicesBigBatch: a relation that hands on all its rows in one
// batch (a window's: 200,000 rows here) is evaluated by the select list
// in slices of plainChunk rows; each row's values are its own (the
// STRING column read through slices' offsets).
func TestPlainSlicesBigBatch(t *testing.T) {
	res, err := Run(context.Background(), "SELECT k, CONCAT(s, '!') AS s2, ROW_NUMBER() OVER (ORDER BY k) AS rn, k * 2 AS k2 FROM t WHERE MOD(v, 3) = 0 ORDER BY k",
		heldTable(), Options{MaxMemory: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) <= plainChunk {
		t.Fatalf("%d rows: not more than a slice", len(res.Rows))
	}
	for i, row := range res.Rows {
		k := row[0].(int64)
		if k%1000%3 != 0 || row[1] != fmt.Sprintf("s%07d!", k) || row[2] != int64(i+1) || row[3] != 2*k {
			t.Fatalf("row %d: %v", i, row)
		}
	}
}

// TestDerivedReleasedPerRun: a correlated subquery runs once per
// distinct outer value; a derived table in its FROM is held for that run
// only, and its charge is released when the run's block ends. It was
// charged again on every run and never released, so 30 runs over a
// 2,000-row derived table (16 KB of INT64 each) passed a 256 KiB budget
// that one run fits many times over.
func TestDerivedReleasedPerRun(t *testing.T) {
	const n = 2_000
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = []any{int64(i)}
	}
	tbl := &memTable{schema: &schema.Schema{Fields: []*schema.Field{{Name: "k", Type: schema.Integer}}}, rows: rows, batch: 512}
	resolve := func(context.Context, TableName) (Table, error) { return tbl, nil }
	const q = "SELECT COUNT(*) FROM t AS a WHERE a.k < 30 AND EXISTS (SELECT 1 FROM (SELECT k FROM t) AS d WHERE d.k = a.k)"
	res, err := Run(context.Background(), q, resolve, Options{MaxMemory: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(res.Rows); got != "[[30]]" {
		t.Errorf("got %s, want [[30]]", got)
	}
}
