package sql

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/bqstore/bqstore/internal/schema"
)

// TestGroupByMemoryHeld: what a GROUP BY over many groups is charged is
// what it holds. The live heap is measured (runtime.GC, then
// MemStats.HeapAlloc against the same before the query) when the scan
// ends, its groups still held: with a budget too small, the query fails
// with resourcesExceeded holding about the budget, not far above it (it
// held two to three times its budget when each group was a *group of
// []any keys and []acc states, charged per row by an estimate); with a
// budget large enough, the charge and the heap agree within a quarter.
// No timing.
func TestGroupByMemoryHeld(t *testing.T) {
	resolve := heldTable()
	var live, charged int64
	var base runtime.MemStats
	testHookGroupsHeld = func(c int64) {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		live, charged = int64(m.HeapAlloc)-int64(base.HeapAlloc), c
	}
	defer func() { testHookGroupsHeld = nil }()
	run := func(q string, budget int64) error {
		runtime.GC()
		runtime.ReadMemStats(&base)
		live, charged = 0, 0
		_, err := Run(context.Background(), q, resolve, Options{MaxMemory: budget})
		return err
	}
	for _, q := range []string{
		"SELECT k, COUNT(*), SUM(v), MIN(s), AVG(v) FROM t GROUP BY k",
		"SELECT s, MAX(k), COUNT(DISTINCT v) FROM t GROUP BY s",
		"SELECT COUNT(DISTINCT s) FROM t",
	} {
		const budget = 4 << 20
		err := run(q, budget)
		var re *ResourcesError
		if !errors.As(err, &re) {
			t.Fatalf("%s under %d bytes: err = %v, want *ResourcesError", q, budget, err)
		}
		t.Logf("%s: budget %d, held %d at the error", q, budget, live)
		if live > budget*5/4+256<<10 {
			t.Errorf("%s: held %d bytes when it failed with a budget of %d", q, live, budget)
		}
		if err := run(q, 1<<30); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: charged %d, held %d", q, charged, live)
		if live > charged*5/4 || live < charged*3/4 {
			t.Errorf("%s: charged %d bytes, held %d", q, charged, live)
		}
	}
}

// TestWindowMemoryHeld: what a window holds while it computes (the
// input's columns, its partitions' row indices, its sort keys) is what
// the query has charged then, within a quarter (heap measured as in
// TestGroupByMemoryHeld); its partition keys, evaluated a chunk at a
// time, are not held.
func TestWindowMemoryHeld(t *testing.T) {
	resolve := heldTable()
	var live, charged int64
	var base runtime.MemStats
	testHookWindowHeld = func(c int64) {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		live, charged = int64(m.HeapAlloc)-int64(base.HeapAlloc), c
	}
	defer func() { testHookWindowHeld = nil }()
	for _, q := range []string{
		"SELECT COUNT(*) FROM (SELECT ROW_NUMBER() OVER (PARTITION BY k ORDER BY v) AS rn FROM t) WHERE rn = 1",
		"SELECT COUNT(*) FROM (SELECT RANK() OVER (PARTITION BY v ORDER BY s DESC) AS rn FROM t) WHERE rn = 1",
	} {
		runtime.GC()
		runtime.ReadMemStats(&base)
		if _, err := Run(context.Background(), q, resolve, Options{MaxMemory: 1 << 30}); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: charged %d, held %d", q, charged, live)
		if live > charged*5/4 || live < charged*3/4 {
			t.Errorf("%s: charged %d bytes, held %d", q, charged, live)
		}
	}
}

// heldTable resolves every name to one table of 200,000 rows (k unique,
// v with 1,000 values, s unique strings) for the memory-held tests.
func heldTable() Resolver {
	const n = 200_000
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = []any{int64(i), int64(i % 1000), fmt.Sprintf("s%07d", i)}
	}
	tbl := &memTable{schema: &schema.Schema{Fields: []*schema.Field{
		{Name: "k", Type: schema.Integer}, {Name: "v", Type: schema.Integer}, {Name: "s", Type: schema.String}}}, rows: rows, batch: 4096}
	return func(_ context.Context, _ TableName) (Table, error) { return tbl, nil }
}
