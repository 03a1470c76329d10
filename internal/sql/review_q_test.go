package sql

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/bqstore/bqstore/internal/schema"
)

// TestMemoryBudgetReviewQ: values an operator accumulates per group or per
// row are charged to Options.MaxMemory as the result rows and groups are.
// STRING_AGG over a 10,000-row table of 1 MB strings took a server to
// 23 GB and the kernel's OOM killer under the default 256 MiB budget.
func TestMemoryBudgetReviewQ(t *testing.T) {
	const n = 2000
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = []any{int64(i), fmt.Sprintf("name-%06d", i)}
	}
	tbl := &memTable{schema: &schema.Schema{Fields: []*schema.Field{
		{Name: "k", Type: schema.Integer}, {Name: "s", Type: schema.String}}}, rows: rows, batch: 500}
	resolve := func(_ context.Context, _ TableName) (Table, error) { return tbl, nil }
	const small = 256 << 10
	for _, q := range []string{
		// 2,000 x 1.1 KB = 2.2 MB in one aggregate state.
		"SELECT LENGTH(STRING_AGG(REPEAT(s, 100), '')) FROM t",
		"SELECT k, LENGTH(STRING_AGG(REPEAT(s, 100), '')) FROM t GROUP BY k",
	} {
		_, err := Run(context.Background(), q, resolve, Options{MaxMemory: small})
		var re *ResourcesError
		if !errors.As(err, &re) {
			t.Errorf("%s: err = %v, want *ResourcesError", q, err)
		}
	}
}
