package avroenc

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bqstore/bqstore/internal/testkit/arrowgen"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/bqstore/bqstore/internal/schema"
)

func benchTable() *schema.Schema {
	return &schema.Schema{Fields: []*schema.Field{
		{Name: "id", Type: schema.Integer, Mode: schema.Required},
		{Name: "amount", Type: schema.Float, Mode: schema.Nullable},
		{Name: "ts", Type: schema.Timestamp, Mode: schema.Nullable},
		{Name: "category", Type: schema.String, Mode: schema.Nullable},
	}}
}

func benchRecord(s *schema.Schema, rows int) arrow.Record {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema.ToArrow(s))
	defer b.Release()
	cats := []string{"alpha", "beta", "gamma", "delta-category", "epsilon"}
	for i := range rows {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.Float64Builder).Append(float64(i) * 1.25)
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(1700000000000000 + int64(i)*1000))
		b.Field(3).(*array.StringBuilder).Append(cats[i%len(cats)])
	}
	return b.NewRecord()
}

// BenchmarkEncode measures Avro row encoding; bytes are the Avro output.
//
//	go test -run '^$' -bench Encode -benchmem ./internal/readapi/avroenc/
func BenchmarkEncode(b *testing.B) {
	const rows = 64 << 10
	for _, tc := range []struct {
		name string
		s    *schema.Schema
		rec  func(*schema.Schema) arrow.Record
	}{
		{"narrow", benchTable(), func(s *schema.Schema) arrow.Record { return benchRecord(s, rows) }},
		{"alltypes", arrowgen.AllTypes(), func(s *schema.Schema) arrow.Record {
			return arrowgen.Record(s, rand.New(rand.NewPCG(1, 0)), rows/8)
		}},
	} {
		rec := tc.rec(tc.s)
		enc := NewEncoder(tc.s)
		out, err := enc.Encode(rec, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("schema=%s/rows=%d", tc.name, rec.NumRows()), func(b *testing.B) {
			b.SetBytes(int64(len(out)))
			b.ReportAllocs()
			buf := make([]byte, 0, len(out))
			for b.Loop() {
				if buf, err = enc.Encode(rec, buf[:0]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(rec.NumRows())*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
		rec.Release()
	}
}
