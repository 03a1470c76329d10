package rowjson

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bqstore/bqstore/internal/testkit/arrowgen"
)

// BenchmarkAppendRows measures tabledata.list row formatting; bytes are the
// JSON produced.
//
//	go test -run '^$' -bench AppendRows -benchmem ./internal/rowjson/
func BenchmarkAppendRows(b *testing.B) {
	s := arrowgen.AllTypes()
	const rows = 2000
	rec := arrowgen.Record(s, rand.New(rand.NewPCG(1, 0)), rows)
	defer rec.Release()
	f := NewFormatter(s, Options{UseInt64Timestamp: true})
	out, err := f.AppendRows(nil, rec, 0, rows)
	if err != nil {
		b.Fatal(err)
	}
	b.Run(fmt.Sprintf("schema=alltypes/rows=%d", rows), func(b *testing.B) {
		b.SetBytes(int64(len(out)))
		b.ReportAllocs()
		buf := make([]byte, 0, len(out))
		for b.Loop() {
			if buf, err = f.AppendRows(buf[:0], rec, 0, rows); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})
}
