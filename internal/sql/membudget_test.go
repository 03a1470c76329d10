package sql

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bqstore/bqstore/internal/schema"
)

// TestMemoryBudget: a query whose operators hold more than
// Options.MaxMemory fails with a *ResourcesError (BigQuery's
// "Resources exceeded during query execution"); the same query runs
// with a large enough budget, and small queries run under the small one.
func TestMemoryBudget(t *testing.T) {
	const n = 20000
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = []any{int64(i), fmt.Sprintf("name-%06d", i)}
	}
	tbl := &memTable{schema: &schema.Schema{Fields: []*schema.Field{
		{Name: "k", Type: schema.Integer}, {Name: "s", Type: schema.String}}}, rows: rows, batch: 1000}
	resolve := func(_ context.Context, _ TableName) (Table, error) { return tbl, nil }
	const small = 256 << 10
	for _, q := range []string{
		"SELECT k, COUNT(*) FROM t GROUP BY k",
		"SELECT a.k, b.s FROM t a CROSS JOIN (SELECT * FROM t WHERE k < 10) b",
		"SELECT COUNT(*) FROM t a JOIN t b ON a.s = b.s",
		"SELECT k, s FROM t ORDER BY s DESC",
		"SELECT COUNT(DISTINCT s) FROM t",
	} {
		_, err := Run(context.Background(), q, resolve, Options{MaxMemory: small})
		var re *ResourcesError
		if !errors.As(err, &re) {
			t.Errorf("%s: err = %v, want *ResourcesError", q, err)
			continue
		}
		if !strings.HasPrefix(err.Error(), "Resources exceeded during query execution") {
			t.Errorf("%s: message %q", q, err)
		}
		if _, err := Run(context.Background(), q, resolve, Options{MaxMemory: 1 << 30}); err != nil {
			t.Errorf("%s with 1 GiB: %v", q, err)
		}
	}
	res, err := Run(context.Background(), "SELECT COUNT(*), MAX(s) FROM t WHERE k < 10", resolve, Options{MaxMemory: small})
	if err != nil || len(res.Rows) != 1 {
		t.Fatalf("small query under the small budget: %v %v", res, err)
	}
}
