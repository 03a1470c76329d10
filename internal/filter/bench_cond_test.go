package filter

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/bqstore/bqstore/internal/schema"
)

// BenchmarkCond evaluates conditional expressions over one batch of 1M
// rows of a random INT64 column (values 0..999, every 16th NULL), the
// cost of evaluating WHEN conditions and COALESCE arguments only on the
// rows still undecided:
//
//	go test -run '^$' -bench BenchmarkCond -count 6 -benchmem ./internal/filter/ > new.txt
//	benchstat old.txt new.txt
func BenchmarkCond(b *testing.B) {
	const rows = 1 << 20
	sch := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	r := rand.New(rand.NewPCG(16, 16))
	xb := rb.Field(0).(*array.Int64Builder)
	for i := 0; i < rows; i++ {
		if i%16 == 0 {
			xb.AppendNull()
			continue
		}
		xb.Append(r.Int64N(1000))
	}
	rec := rb.NewRecordBatch()
	rb.Release()
	defer rec.Release()
	ts := &schema.Schema{Fields: []*schema.Field{{Name: "x", Type: schema.Integer}}}
	for _, bc := range []struct{ name, expr string }{
		{"case3", "CASE WHEN x < 300 THEN 'low' WHEN x < 700 THEN 'mid' WHEN x < 900 THEN 'high' ELSE 'top' END"},
		{"coalesce", "COALESCE(x, x + 1, 0)"},
	} {
		s, err := CompileScalar(bc.expr, ts)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("expr="+bc.name+"/rows=1M", func(b *testing.B) {
			b.SetBytes(8 * rows)
			b.ReportAllocs()
			for b.Loop() {
				ctx := &evalCtx{cx: context.Background(), rec: rec, n: rows, src: s.src, cols: map[string]*vec{}}
				if _, err := s.root.eval(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mrows/s")
		})
	}
}
