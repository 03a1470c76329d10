package sql

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/bqstore/bqstore/internal/schema"
)

// TestWindowAggMemoryCharged: an analytic aggregate over a running frame
// makes a value per row as large as its frame (quadratic in the
// partition), and nothing was charged to Options.MaxMemory while they
// were built: under a 256 KiB budget the STRING_AGG query allocated
// about 2 GB before failing (review-q #2). Now each value is charged as
// it is made; the bound is on bytes allocated, not time.
func TestWindowAggMemoryCharged(t *testing.T) {
	const n = 2000
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = []any{int64(i), fmt.Sprintf("name-%06d", i)}
	}
	tbl := &memTable{schema: &schema.Schema{Fields: []*schema.Field{
		{Name: "k", Type: schema.Integer}, {Name: "s", Type: schema.String}}}, rows: rows, batch: 500}
	resolve := func(_ context.Context, _ TableName) (Table, error) { return tbl, nil }
	for _, q := range []string{
		"SELECT MAX(LENGTH(x)) FROM (SELECT STRING_AGG(REPEAT(s, 10), '') OVER (ORDER BY k) AS x FROM t)",
		"SELECT MAX(ARRAY_LENGTH(x)) FROM (SELECT ARRAY_AGG(REPEAT(s, 10)) OVER (ORDER BY k) AS x FROM t)",
		"SELECT MAX(ARRAY_LENGTH(x)) FROM (SELECT ARRAY_AGG(s) OVER (ORDER BY k ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS x FROM t)",
		"SELECT MAX(LENGTH(x)) FROM (SELECT FIRST_VALUE(REPEAT(s, 100)) OVER (ORDER BY k) AS x FROM t)",
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Run(context.Background(), q, resolve, Options{MaxMemory: 256 << 10})
		runtime.ReadMemStats(&after)
		var re *ResourcesError
		if !errors.As(err, &re) {
			t.Fatalf("%s: err = %v, want *ResourcesError", q, err)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
			t.Fatalf("%s: allocated %d MB under a 256 KiB budget before failing", q, got>>20)
		}
	}
}

// TestResultColumnTooLarge: a STRING column past Arrow's 32-bit offsets
// (2 GiB in one batch) is a resources error, not a panic (review-q #2:
// "slice bounds out of range [:-2093867296]"). The limit is lowered for
// the test.
func TestResultColumnTooLarge(t *testing.T) {
	defer func(old int) { maxColumnBytes = old }(maxColumnBytes)
	maxColumnBytes = 100
	s := &schema.Schema{Fields: []*schema.Field{{Name: "x", Type: schema.String}}}
	_, err := buildRecord(s, 3, func(_, _ int) any { return string(make([]byte, 40)) })
	var re *ResourcesError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v, want *ResourcesError", err)
	}
	rec, err := buildRecord(s, 2, func(_, _ int) any { return string(make([]byte, 40)) })
	if err != nil {
		t.Fatal(err)
	}
	rec.Release()
}
