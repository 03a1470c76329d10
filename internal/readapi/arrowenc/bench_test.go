package arrowenc

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// benchRecord is a typical wide-ish fact table batch: int64, float64,
// timestamp and a short string per row.
func benchRecord(rows int) arrow.Record {
	s := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "ts", Type: tsUTC, Nullable: true},
		{Name: "category", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
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

// BenchmarkRecordBatchMessage measures encoding one batch. Bytes are the
// uncompressed message size.
//
//	go test -run '^$' -bench RecordBatchMessage -benchmem ./internal/readapi/arrowenc/
func BenchmarkRecordBatchMessage(b *testing.B) {
	const rows = 64 << 10
	rec := benchRecord(rows)
	defer rec.Release()
	enc, err := NewEncoder(rec.Schema(), nil)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := enc.RecordBatchMessage(rec, Uncompressed)
	if err != nil {
		b.Fatal(err)
	}
	for _, codec := range codecs {
		for _, sliced := range []bool{false, true} {
			b.Run(fmt.Sprintf("rows=%d/codec=%s/sliced=%v", rows, codec, sliced), func(b *testing.B) {
				r := rec
				if sliced {
					r = rec.NewSlice(3, rows-5)
					defer r.Release()
				}
				var buf []byte
				b.SetBytes(int64(len(raw)))
				b.ReportAllocs()
				var out int
				for b.Loop() {
					buf, err = enc.AppendRecordBatchMessage(buf[:0], r, codec)
					if err != nil {
						b.Fatal(err)
					}
					out = len(buf)
				}
				b.ReportMetric(float64(out)/float64(len(raw)), "ratio")
				b.ReportMetric(float64(r.NumRows())*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			})
		}
	}
	b.Run(fmt.Sprintf("rows=%d/memcpy", rows), func(b *testing.B) {
		dst := make([]byte, len(raw))
		b.SetBytes(int64(len(raw)))
		b.ReportAllocs()
		for b.Loop() {
			copy(dst, raw)
		}
	})
	b.Run(fmt.Sprintf("rows=%d/fresh", rows), func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := enc.RecordBatchMessage(rec, Uncompressed); err != nil {
				b.Fatal(err)
			}
		}
	})
}
