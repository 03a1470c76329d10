package sql

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/bqstore/bqstore/internal/schema"
)

// go test -run '^$' -bench BenchmarkQuery -benchmem ./internal/sql/
//
// The executor's memory (issue 16), old against new:
//
//	go test -run '^$' -bench 'BenchmarkQuery/q=(grouphigh|distinct|window|windowhigh)$' -benchmem -count 6 ./internal/sql/ > new.txt
//	go run golang.org/x/perf/cmd/benchstat@latest old.txt new.txt
//
// In-memory tables (batches of 8192 rows): the operators' own cost, not
// the engine's scan.
func BenchmarkQuery(b *testing.B) {
	const n = 200_000
	mk := func(keys int) *memTable {
		t := &memTable{schema: &schema.Schema{Fields: []*schema.Field{
			{Name: "k", Type: schema.Integer}, {Name: "v", Type: schema.Integer}, {Name: "s", Type: schema.String}}}, batch: 8192}
		for i := 0; i < n; i++ {
			t.rows = append(t.rows, []any{int64(i % keys), int64(i), fmt.Sprintf("s%d", i%97)})
		}
		return t
	}
	tables := map[string]*memTable{"a": mk(n), "b": mk(n)}
	resolve := func(_ context.Context, nm TableName) (Table, error) { return tables[strings.ToLower(nm.Table)], nil }
	for _, q := range []struct{ name, sql string }{
		{"agg", "SELECT COUNT(*), SUM(v), MAX(s) FROM a"},
		{"aggnum", "SELECT COUNT(*), SUM(v), MIN(k), MAX(k) FROM a"}, // bench query's agg: fastagg.go
		{"group", "SELECT s, COUNT(*), SUM(v) FROM a GROUP BY s"},
		// High cardinality: one group per row (issue 16's GROUP BY a
		// high-cardinality key), then COUNT(DISTINCT) of 200,000 values
		// and ROW_NUMBER over as many partitions as rows.
		{"grouphigh", "SELECT COUNT(*) FROM (SELECT k, COUNT(*) AS c, SUM(v) AS t, MIN(s) AS m FROM a GROUP BY k)"},
		{"distinct", "SELECT COUNT(DISTINCT k) FROM a"},
		{"windowhigh", "SELECT COUNT(*) FROM (SELECT ROW_NUMBER() OVER (PARTITION BY k ORDER BY v) AS rn FROM a) WHERE rn = 1"},
		{"hashjoin", "SELECT COUNT(*) FROM a JOIN b ON a.k = b.k"},
		{"window", "SELECT COUNT(*) FROM (SELECT ROW_NUMBER() OVER (PARTITION BY s ORDER BY v DESC) AS rn FROM a) WHERE rn = 1"},
		{"orderlimit", "SELECT v FROM a ORDER BY v DESC LIMIT 10"},
	} {
		b.Run("q="+q.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Run(context.Background(), q.sql, resolve, Options{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
