package protorows

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bqstore/bqstore/internal/schema"
)

// benchTable is the reference row of docs/PERFORMANCE.md: int64 id, int64 timestamp, a
// ~36 B string, a ~8 B string, a double and a 1100 B payload.
func benchTable() *schema.Schema {
	return &schema.Schema{Fields: []*schema.Field{
		{Name: "id", Type: schema.Integer, Mode: schema.Required},
		{Name: "ts", Type: schema.Timestamp},
		{Name: "uuid", Type: schema.String},
		{Name: "kind", Type: schema.String},
		{Name: "amount", Type: schema.Float},
		{Name: "payload", Type: schema.String},
	}}
}

// benchRows returns about 1 MB of serialized rows.
func benchRows(tb testing.TB) (*Decoder, [][]byte, int) {
	tbl := benchTable()
	md, dp := adaptDescriptor(tb, tbl, false)
	d := mustCompile(tb, dp, tbl)
	payload := strings.Repeat("x", 1100)
	var rows [][]byte
	total := 0
	for i := 0; total < 1<<20; i++ {
		b := newMsg(tb, md).
			set("id", int64(i)).
			set("ts", int64(1_700_000_000_000_000+i)).
			set("uuid", fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)).
			set("kind", "category").
			set("amount", float64(i)*0.25).
			set("payload", payload).bytes()
		rows = append(rows, b)
		total += len(b)
	}
	return d, rows, total
}

// BenchmarkDecode measures proto rows -> Arrow record for ~1 MB requests
// of 1.2 KB rows.
//
//	go test -run '^$' -bench Decode -benchmem ./internal/schema/protorows/
func BenchmarkDecode(b *testing.B) {
	d, rows, total := benchRows(b)
	b.SetBytes(int64(total))
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		rec, rowErrs, err := d.Decode(rows, MissingValues{})
		if err != nil || rowErrs != nil {
			b.Fatal(err, rowErrs)
		}
		rec.Release()
	}
	b.ReportMetric(float64(len(rows))*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	// Throughput per CPU-second of the whole process (GC included): the
	// figure that matters on a loaded machine, where wall-clock MB/s
	// measures the neighbours.
	if cpu := (cpuTime() - cpu0).Seconds(); cpu > 0 {
		b.ReportMetric(float64(total)*float64(b.N)/cpu/1e6, "MB/cpu-s")
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestDecodeAllocs guards the hot path: allocations per request do not grow
// with the number of rows.
func TestDecodeAllocs(t *testing.T) {
	d, rows, _ := benchRows(t)
	rows = rows[:len(rows)/4]
	decode := func() {
		rec, _, err := d.Decode(rows, MissingValues{})
		if err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	decode()
	small := testing.AllocsPerRun(10, decode)
	rows = rows[:1]
	if one := testing.AllocsPerRun(10, decode); small > one+4 {
		t.Fatalf("%v allocations for %d rows, %v for one row", small, len(rows), one)
	}
	if small > 64 {
		t.Fatalf("%v allocations per request", small)
	}
}
