package filter

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/bqstore/bqstore/internal/schema"
)

const benchRows = 64 * 1024

func benchSchema() *schema.Schema {
	return &schema.Schema{Fields: []*schema.Field{
		{Name: "amount", Type: schema.Integer},
		{Name: "category", Type: schema.String},
		{Name: "payload", Type: schema.String},
	}}
}

// benchRecord builds benchRows rows; payloadLen 0 leaves payload empty.
func benchRecord(payloadLen int) (arrow.RecordBatch, int64) {
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "amount", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "category", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "payload", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	defer b.Release()
	r := rand.New(rand.NewPCG(7, 7))
	cats := []string{"alpha", "beta", "gamma", "delta"}
	const letters = "abcdefghijklmnopqrstuvwxyz"
	buf := make([]byte, payloadLen)
	var bytes int64
	for i := 0; i < benchRows; i++ {
		b.Field(0).(*array.Int64Builder).Append(r.Int64N(1000))
		c := cats[r.IntN(len(cats))]
		b.Field(1).(*array.StringBuilder).Append(c)
		for j := range buf {
			buf[j] = letters[r.IntN(len(letters))]
		}
		b.Field(2).(*array.StringBuilder).Append(string(buf))
		bytes += 8 + int64(len(c)) + int64(len(buf))
	}
	return b.NewRecordBatch(), bytes
}

func runFilterBench(b *testing.B, expr string, rec arrow.RecordBatch, bytes int64) {
	f, err := Compile(expr, benchSchema())
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(bytes)
	b.ReportAllocs()
	selected := 0
	for b.Loop() {
		sel, err := f.Eval(rec)
		if err != nil {
			b.Fatal(err)
		}
		selected = sel.Len() - sel.NullN()
		sel.Release()
	}
	if selected != benchRows {
		b.Fatalf("selection has %d values", selected)
	}
	b.ReportMetric(float64(benchRows)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mrows/s")
}

func BenchmarkEval(b *testing.B) {
	b.Run("expr=amount_and_category", func(b *testing.B) {
		rec, _ := benchRecord(0)
		defer rec.Release()
		// Bytes of the two referenced columns: 8 + the category string.
		var n int64
		cat := rec.Column(1).(*array.String)
		for i := 0; i < benchRows; i++ {
			n += 8 + int64(len(cat.Value(i)))
		}
		runFilterBench(b, "amount > 500 AND category = 'alpha'", rec, n)
	})
	b.Run("expr=amount_gt", func(b *testing.B) {
		rec, _ := benchRecord(0)
		defer rec.Release()
		runFilterBench(b, "amount > 500", rec, 8*benchRows)
	})
	b.Run("expr=amount_arith", func(b *testing.B) {
		rec, _ := benchRecord(0)
		defer rec.Release()
		runFilterBench(b, "amount * 2 + 1 > 999", rec, 8*benchRows)
	})
	b.Run("expr=in_lists", func(b *testing.B) {
		rec, _ := benchRecord(0)
		defer rec.Release()
		runFilterBench(b, "amount IN (1, 5, 17, 400, 999) OR category NOT IN ('beta', 'gamma')", rec, 8*benchRows)
	})
	b.Run("expr=payload_like_contains", func(b *testing.B) {
		rec, _ := benchRecord(1100)
		defer rec.Release()
		n := int64(len(rec.Column(2).(*array.String).ValueBytes()))
		runFilterBench(b, "payload LIKE '%abc%'", rec, n)
	})
	b.Run("expr=payload_like_general", func(b *testing.B) {
		rec, _ := benchRecord(1100)
		defer rec.Release()
		n := int64(len(rec.Column(2).(*array.String).ValueBytes()))
		runFilterBench(b, "payload LIKE '%ab_c%'", rec, n)
	})
}

// BenchmarkCaseMapping: UPPER and LOWER on ASCII text (the fast path)
// and on text with non-ASCII letters (full Unicode case mapping).
//
//	go test -run '^$' -bench CaseMapping -count 10 -benchmem ./internal/filter/
func BenchmarkCaseMapping(b *testing.B) {
	for _, fn := range []string{"UPPER", "LOWER"} {
		b.Run("fn="+fn+"/text=ascii", func(b *testing.B) {
			rec, _ := benchRecord(64)
			defer rec.Release()
			n := int64(len(rec.Column(2).(*array.String).ValueBytes()))
			runFilterBench(b, fn+"(payload) != ''", rec, n)
		})
		b.Run("fn="+fn+"/text=latin", func(b *testing.B) {
			rec, _ := benchRecord(64)
			defer rec.Release()
			n := int64(len(rec.Column(2).(*array.String).ValueBytes()))
			runFilterBench(b, fn+"(CONCAT(payload, 'éÉ')) != ''", rec, n)
		})
	}
}

func BenchmarkParse(b *testing.B) {
	expr := "int_field > 5 AND date_field = CAST('2014-9-27' as DATE) AND " + strings.Repeat("(str LIKE 'a%' OR str IN ('x', 'y')) AND ", 10) + "TRUE"
	b.SetBytes(int64(len(expr)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(expr); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEvalNumeric(b *testing.B) {
	sch := arrow.NewSchema([]arrow.Field{{Name: "n", Type: &arrow.Decimal128Type{Precision: 38, Scale: 9}, Nullable: true}}, nil)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	r := rand.New(rand.NewPCG(9, 9))
	for i := 0; i < benchRows; i++ {
		rb.Field(0).(*array.Decimal128Builder).Append(decimal128.FromI64(r.Int64N(10_000_000_000)))
	}
	rec := rb.NewRecordBatch()
	rb.Release()
	defer rec.Release()
	ts := &schema.Schema{Fields: []*schema.Field{{Name: "n", Type: schema.Numeric}}}
	for _, expr := range []string{"n BETWEEN 1.0 AND 5.0", "n > NUMERIC '5'"} {
		f, err := Compile(expr, ts)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("expr="+strings.ReplaceAll(expr, " ", "_"), func(b *testing.B) {
			b.SetBytes(16 * benchRows)
			b.ReportAllocs()
			for b.Loop() {
				sel, err := f.Eval(rec)
				if err != nil {
					b.Fatal(err)
				}
				sel.Release()
			}
			b.ReportMetric(float64(benchRows)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mrows/s")
		})
	}
}
