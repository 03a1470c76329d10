package sql

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/bqstore/bqstore/internal/schema"
)

// TestApproxCountDistinct: APPROX_COUNT_DISTINCT is exact for small sets
// (the sparse HyperLogLog++ representation), within BigQuery's error
// bounds for large ones (precision 14: a standard error of 0.81%; we
// allow 3 of them), and holds a fixed-size sketch, not the set: it
// runs under a memory budget that COUNT(DISTINCT) of the same column
// exceeds.
func TestApproxCountDistinct(t *testing.T) {
	const n = 100000
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = []any{int64(i), fmt.Sprintf("value-%07d", i)}
	}
	tbl := &memTable{schema: &schema.Schema{Fields: []*schema.Field{
		{Name: "k", Type: schema.Integer}, {Name: "s", Type: schema.String}}}, rows: rows, batch: 4096}
	resolve := func(_ context.Context, _ TableName) (Table, error) { return tbl, nil }
	count := func(q string, opts Options) (int64, error) {
		res, err := Run(context.Background(), q, resolve, opts)
		if err != nil {
			return 0, err
		}
		return res.Rows[0][0].(int64), nil
	}
	for _, limit := range []int{0, 1, 10, 1000, 4000} {
		for _, col := range []string{"k", "s", "k * 7919 - 3"} {
			q := fmt.Sprintf("SELECT APPROX_COUNT_DISTINCT(%s) FROM t WHERE k < %d", col, limit)
			got, err := count(q, Options{})
			if err != nil || got != int64(limit) {
				t.Errorf("%s = %d, %v; want exactly %d", q, got, err, limit)
			}
		}
	}
	for _, limit := range []int{10000, 30000, 50000, n} {
		for _, col := range []string{"k", "s"} {
			q := fmt.Sprintf("SELECT APPROX_COUNT_DISTINCT(%s) FROM t WHERE k < %d", col, limit)
			got, err := count(q, Options{})
			if rel := math.Abs(float64(got)-float64(limit)) / float64(limit); err != nil || rel > 3*1.04/128 {
				t.Errorf("%s = %d, %v; want %d within %.2f%%", q, got, err, limit, 3*1.04/128*100)
			}
		}
	}
	const small = 256 << 10
	if _, err := count("SELECT APPROX_COUNT_DISTINCT(s) FROM t", Options{MaxMemory: small}); err != nil {
		t.Errorf("APPROX_COUNT_DISTINCT under %d bytes: %v", small, err)
	}
	if _, err := count("SELECT COUNT(DISTINCT s) FROM t", Options{MaxMemory: small}); err == nil {
		t.Errorf("COUNT(DISTINCT s) ran under %d bytes: the budget does not bind", small)
	}
}
