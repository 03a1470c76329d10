package cli

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/bqstore/bqstore/internal/schema"
)

// FuzzAppendJSONString: the output is valid JSON that decodes to what
// encoding/json makes of the same bytes (invalid UTF-8 as U+FFFD).
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", "quote \" and \\ backslash", "ctl \x00\x01\x1f\n\r\t", "héllo ☃", "bad \xff\xfe utf8", "<html>&"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<16 {
			return
		}
		out := appendJSONString([]byte("x"), b)
		if out[0] != 'x' {
			t.Fatalf("dst prefix lost")
		}
		var got, want string
		if err := json.Unmarshal(out[1:], &got); err != nil {
			t.Fatalf("invalid JSON %q for %q: %v", out[1:], b, err)
		}
		ref, _ := json.Marshal(string(b))
		if err := json.Unmarshal(ref, &want); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("%q decodes to %q, encoding/json gives %q", b, got, want)
		}
	})
}

// FuzzAppendCSV: a field reads back unchanged through encoding/csv.
func FuzzAppendCSV(f *testing.F) {
	for _, s := range []string{"a", "a,b", `say "hi"`, "two\nlines", " edge ", "x\r\ny"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 1<<16 || strings.ContainsRune(s, '\r') || s == "" {
			// encoding/csv folds \r\n to \n inside quotes, and an empty
			// line is no record: neither is a property of the writer.
			return
		}
		line := appendCSV([]byte("k,"), []byte(s))
		recs, err := csv.NewReader(bytes.NewReader(line)).ReadAll()
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if len(recs) != 1 || len(recs[0]) != 2 || recs[0][1] != s {
			t.Fatalf("%q read back as %q", s, recs)
		}
	})
}

func TestExtractProgressLine(t *testing.T) {
	for _, tc := range []struct {
		rows, est, bytes int64
		want             string
	}{
		{0, 1000, 0, "[..............................]   0%  0/1000 rows  0.0 MB  0 rows/s"},
		{500, 1000, 2_000_000, "[###############...............]  50%  500/1000 rows  2.0 MB  250 rows/s"},
		{1500, 1000, 0, "[##############################] 100%  1500/1000 rows  0.0 MB  750 rows/s"},
		{10, 0, 0, "[..............................]   0%  10/0 rows  0.0 MB  5 rows/s"},
	} {
		if got := extractProgressLine(tc.rows, tc.est, tc.bytes, 2*time.Second); got != tc.want {
			t.Errorf("extractProgressLine(%d, %d, %d) =\n %q, want\n %q", tc.rows, tc.est, tc.bytes, got, tc.want)
		}
	}
}

// BenchmarkExtractEncode measures extract's row formatting (run on the
// stream goroutines) for a record of the bench table's shape.
//
//	go test -run '^$' -bench BenchmarkExtractEncode -benchmem ./internal/cli
func BenchmarkExtractEncode(b *testing.B) {
	sch := &schema.Schema{Fields: []*schema.Field{
		{Name: "id", Type: schema.Integer, Mode: schema.Required},
		{Name: "ts", Type: schema.Timestamp},
		{Name: "key", Type: schema.String},
		{Name: "value", Type: schema.Float},
		{Name: "payload", Type: schema.String},
	}}
	as := schema.ToArrow(sch)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer bld.Release()
	const rows = 10000
	for i := 0; i < rows; i++ {
		bld.Field(0).(*array.Int64Builder).Append(int64(i))
		bld.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000_000 + int64(i)))
		bld.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("key-%032d", i))
		bld.Field(3).(*array.Float64Builder).Append(float64(i) / 3)
		bld.Field(4).(*array.StringBuilder).Append(strings.Repeat("payload ", 16))
	}
	rec := bld.NewRecordBatch()
	defer rec.Release()
	for _, format := range []string{"csv", "ndjson"} {
		b.Run("format="+format, func(b *testing.B) {
			s, err := newSink(format, as, io.Discard)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(arrowencSize(rec)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.encode(rec); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
