package sql

import (
	"context"
	"fmt"
	"testing"

	"github.com/bqstore/bqstore/internal/schema"
)

// TestTopKMemory: ORDER BY ... LIMIT k keeps k rows, not every row: it
// runs under a budget the sort of every row exceeds (before, it failed
// with resourcesExceeded), its peak memory (the budget's accounting) is
// that of k rows, and its rows are the full sort's, ties in table order.
func TestTopKMemory(t *testing.T) {
	const n = 200_000
	rows := make([][]any, n)
	for i := range rows {
		var g any = int64(i % 1000)
		if i%7 == 0 {
			g = nil
		}
		rows[i] = []any{int64(i), fmt.Sprintf("name-%06d", i), g}
	}
	tbl := &memTable{schema: &schema.Schema{Fields: []*schema.Field{
		{Name: "k", Type: schema.Integer}, {Name: "s", Type: schema.String}, {Name: "g", Type: schema.Integer}}}, rows: rows, batch: 1000}
	resolve := func(_ context.Context, _ TableName) (Table, error) { return tbl, nil }
	const budget = 1 << 20
	for _, c := range []struct{ sql, want string }{
		{"SELECT k, s FROM t ORDER BY s DESC LIMIT 3", "[[199999 name-199999] [199998 name-199998] [199997 name-199997]]"},
		{"SELECT k FROM t ORDER BY g DESC, k LIMIT 3 OFFSET 1", "[[1999] [2999] [3999]]"},
		// Ties on g (NULLs first ascending): the table's order.
		{"SELECT k, g FROM t ORDER BY g LIMIT 4", "[[0 <nil>] [7 <nil>] [14 <nil>] [21 <nil>]]"},
		{"SELECT k FROM t ORDER BY g NULLS LAST LIMIT 2", "[[1000] [2000]]"},
		{"SELECT k FROM t WHERE k > 10 ORDER BY k LIMIT 0", "[]"},
	} {
		res, err := Run(context.Background(), c.sql, resolve, Options{MaxMemory: budget})
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
			continue
		}
		if got := fmt.Sprint(res.Rows); got != c.want {
			t.Errorf("%s: %s, want %s", c.sql, got, c.want)
		}
		if res.PeakMemory > 16<<10 {
			t.Errorf("%s: peak memory %d, want that of a few rows", c.sql, res.PeakMemory)
		}
	}
}
