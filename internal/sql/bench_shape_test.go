package sql

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/bqstore/bqstore/internal/schema"
)

// go test -run '^$' -bench BenchmarkBenchQueries -benchtime 1x ./internal/sql/
//
// The queries of `bqstore bench query` (internal/bench/query.go's
// benchQueries: keep them in step) over an in-memory Arrow table of its
// shape (bench write's id, key, cat and value columns) of 2,000,000 rows,
// under the default budget: peak-MiB is the most the query's operators
// held as the budget counts it (Result.PeakMemory), which the server's
// RSS in bench query's output does not show.
func BenchmarkBenchQueries(b *testing.B) {
	const n = 2_000_000
	tbl := benchShapeTable(n)
	resolve := func(context.Context, TableName) (Table, error) { return tbl, nil }
	for _, q := range []struct{ name, sql string }{
		{"agg", "SELECT COUNT(*), SUM(value), MIN(id), MAX(id) FROM t"},
		{"filter", fmt.Sprintf("SELECT COUNT(*), SUM(value) FROM t WHERE id < %d", n/100)},
		{"groupby", "SELECT COUNT(*), MAX(c) FROM (SELECT id - MOD(id, 4) AS k, COUNT(*) AS c FROM t GROUP BY k)"},
		{"join", "SELECT COUNT(*), SUM(a.value) FROM t a JOIN (SELECT id FROM t WHERE MOD(id, 10) = 0) b ON a.id = b.id"},
		{"orderby", "SELECT id, value FROM t ORDER BY value DESC LIMIT 10"},
		{"window", "SELECT COUNT(*) FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY cat ORDER BY value) AS rn FROM t) WHERE rn <= 10"},
		{"distinct", "SELECT COUNT(DISTINCT key) FROM t"},
	} {
		b.Run("q="+q.name, func(b *testing.B) {
			var peak int64
			for b.Loop() {
				res, err := Run(context.Background(), q.sql, resolve, Options{})
				if err != nil {
					b.Fatal(err)
				}
				peak = max(peak, res.PeakMemory)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
			b.ReportMetric(float64(peak)*100/DefaultMaxMemory, "%budget")
		})
	}
}

// arrowTable is a table of prebuilt Arrow batches.
type arrowTable struct {
	schema *schema.Schema
	recs   []arrow.RecordBatch
}

func (t *arrowTable) Schema() *schema.Schema { return t.schema }

func (t *arrowTable) Close() {}

func (t *arrowTable) Scan(ctx context.Context, cols []string, fn func(arrow.RecordBatch) error) error {
	idx := make([]int, len(cols))
	fields := make([]arrow.Field, len(cols))
	for k, c := range cols {
		idx[k] = schema.IndexNames(t.schema.Fields).Lookup(c)
		if idx[k] < 0 {
			return fmt.Errorf("no column %s", c)
		}
		fields[k] = t.recs[0].Schema().Field(idx[k])
	}
	sub := arrow.NewSchema(fields, nil)
	arrs := make([]arrow.Array, len(cols))
	for _, r := range t.recs {
		for k, i := range idx {
			arrs[k] = r.Column(i)
		}
		rec := array.NewRecordBatch(sub, arrs, r.NumRows())
		err := fn(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// benchShapeTable builds n rows of bench write's columns id, key, cat
// and value, as internal/bench's rowEncoder makes them, in batches of
// 8,192 rows.
func benchShapeTable(n int) *arrowTable {
	s := &schema.Schema{Fields: []*schema.Field{
		{Name: "id", Type: schema.Integer}, {Name: "key", Type: schema.String},
		{Name: "cat", Type: schema.String}, {Name: "value", Type: schema.Float}}}
	cats := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"}
	t := &arrowTable{schema: s}
	as := schema.ToArrow(s)
	for lo := 0; lo < n; lo += 8192 {
		rb := array.NewRecordBuilder(memory.DefaultAllocator, as)
		for id := lo; id < min(n, lo+8192); id++ {
			rb.Field(0).(*array.Int64Builder).Append(int64(id))
			rb.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("key-%032d", id))
			rb.Field(2).(*array.StringBuilder).Append(cats[id%len(cats)])
			rb.Field(3).(*array.Float64Builder).Append(math.Float64frombits(uint64(id) * 0x9e3779b97f4a7c15 >> 11))
		}
		t.recs = append(t.recs, rb.NewRecordBatch())
		rb.Release()
	}
	return t
}
