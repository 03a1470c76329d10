package sql

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/bqstore/bqstore/internal/schema"
)

// go test -run '^$' -bench BenchmarkCorrelated -benchmem ./internal/sql/
//
// A correlated EXISTS over in-memory tables of 10,000 rows each (batches
// of 8192 rows): keys=10000 runs the subquery once per outer row (every
// key distinct), keys=100 once per distinct key (the rest from the
// cache).
func BenchmarkCorrelated(b *testing.B) {
	const n = 10_000
	for _, keys := range []int{100, n} {
		mk := func() *memTable {
			t := &memTable{schema: &schema.Schema{Fields: []*schema.Field{
				{Name: "k", Type: schema.Integer}, {Name: "v", Type: schema.Integer}}}, batch: 8192}
			for i := 0; i < n; i++ {
				t.rows = append(t.rows, []any{int64(i % keys), int64(i)})
			}
			return t
		}
		tables := map[string]*memTable{"a": mk(), "b": mk()}
		resolve := func(_ context.Context, nm TableName) (Table, error) { return tables[strings.ToLower(nm.Table)], nil }
		q := "SELECT COUNT(*) FROM a WHERE EXISTS (SELECT 1 FROM b WHERE b.k = a.k)"
		b.Run(fmt.Sprintf("outer=%d/inner=%d/keys=%d", n, n, keys), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Run(context.Background(), q, resolve, Options{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "outer-rows/s")
		})
	}
}

// go test -run '^$' -bench BenchmarkCorrelatedDerived -benchmem ./internal/sql/
//
// A correlated EXISTS whose FROM is a subquery: 10 outer rows pass the
// outer filter, so the subquery runs 10 times over a 20,000-row derived
// table.
func BenchmarkCorrelatedDerived(b *testing.B) {
	const n = 20_000
	t := &memTable{schema: &schema.Schema{Fields: []*schema.Field{
		{Name: "k", Type: schema.Integer}}}, batch: 8192}
	for i := 0; i < n; i++ {
		t.rows = append(t.rows, []any{int64(i)})
	}
	resolve := func(_ context.Context, nm TableName) (Table, error) { return t, nil }
	q := "SELECT COUNT(*) FROM t a WHERE a.k < 10 AND EXISTS (SELECT 1 FROM (SELECT k FROM t) d WHERE d.k = a.k)"
	b.Run(fmt.Sprintf("rows=%d/runs=10", n), func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Run(context.Background(), q, resolve, Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
