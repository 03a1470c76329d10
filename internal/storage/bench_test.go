package storage

// Benchmarks of the engine beside the raw disk figure they are measured
// against. Run (on a quiet machine, on the disk under test):
//
//	go test -run '^$' -bench 'RawGroupCommit|Append|Scan' -benchtime 200x -count 5 ./internal/storage/
//
// BenchmarkRawGroupCommit is write(2)+fdatasync of 1 MB records to a
// plain file with the same group-commit shape as the engine (one writer
// goroutine drains every queued record, writes them, syncs once, acks);
// BenchmarkAppend is the engine's durable Append of ~1 MB Arrow batches
// of 1.2 KB rows. Their ratio at equal stream counts is the engine's
// overhead over the disk.

import (
	"context"
	"fmt"
	"path"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/bqstore/bqstore/internal/storage/vfs"
)

// benchSchema is the reference row of docs/PERFORMANCE.md: 6 fields, ~1176 B as Arrow.
var benchSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "key", Type: arrow.BinaryTypes.String},
	{Name: "cat", Type: arrow.BinaryTypes.String},
	{Name: "amount", Type: arrow.PrimitiveTypes.Float64},
	{Name: "payload", Type: arrow.BinaryTypes.String},
}, nil)

const benchRowsPerBatch = 870 // ~1 MB batches

func benchBatch(from int64) arrow.Record {
	b := array.NewRecordBuilder(memory.DefaultAllocator, benchSchema)
	defer b.Release()
	payload := make([]byte, 1100)
	for i := range payload {
		payload[i] = 'a' + byte(i%26)
	}
	ps := string(payload)
	for i := from; i < from+benchRowsPerBatch; i++ {
		b.Field(0).(*array.Int64Builder).Append(i)
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000_000 + i))
		b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("%036d", i))
		b.Field(3).(*array.StringBuilder).Append([]string{"alpha", "beta", "gamma", "delta"}[i%4] + "123")
		b.Field(4).(*array.Float64Builder).Append(float64(i) * 0.5)
		b.Field(5).(*array.StringBuilder).Append(ps)
	}
	return b.NewRecordBatch()
}

func batchBytes(rec arrow.Record) int64 { return int64(recordBytes(rec)) }

// recordBytes estimates the IPC size of a record.
func recordBytes(rec arrow.Record) int {
	n := 0
	var walk func(d arrow.ArrayData)
	walk = func(d arrow.ArrayData) {
		for _, b := range d.Buffers() {
			if b != nil {
				n += b.Len() + 8
			}
		}
		for _, c := range d.Children() {
			walk(c)
		}
	}
	for _, c := range rec.Columns() {
		walk(c.Data())
	}
	return n
}

func BenchmarkRawGroupCommit(b *testing.B) {
	for _, writers := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			f, err := vfs.Default.Create(path.Join(b.TempDir(), "raw.log"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			type req struct {
				buf  []byte
				done chan error
			}
			queue := make(chan req, writers)
			stop := make(chan struct{})
			var loop sync.WaitGroup
			loop.Go(func() {
				for {
					var group []req
					select {
					case r := <-queue:
						group = append(group, r)
					case <-stop:
						return
					}
				drain:
					for {
						select {
						case r := <-queue:
							group = append(group, r)
						default:
							break drain
						}
					}
					var err error
					for _, r := range group {
						if _, werr := f.Write(r.buf); werr != nil && err == nil {
							err = werr
						}
					}
					if serr := f.Sync(); serr != nil && err == nil {
						err = serr
					}
					for _, r := range group {
						r.done <- err
					}
				}
			})
			bufs := make([][]byte, writers)
			for i := range bufs {
				bufs[i] = make([]byte, 1<<20)
			}
			b.SetBytes(int64(writers) << 20)
			b.ReportAllocs()
			for b.Loop() {
				var wg sync.WaitGroup
				for w := range writers {
					wg.Go(func() {
						done := make(chan error, 1)
						queue <- req{buf: bufs[w], done: done}
						if err := <-done; err != nil {
							b.Error(err)
						}
					})
				}
				wg.Wait()
			}
			close(stop)
			loop.Wait()
		})
	}
}

// rawCommitter is the raw group-commit loop of BenchmarkRawGroupCommit,
// reusable: one goroutine writes and fdatasyncs everything queued.
type rawCommitter struct {
	f     vfs.File
	queue chan rawReq
	stop  chan struct{}
	wg    sync.WaitGroup
}

type rawReq struct {
	buf  []byte
	done chan error
}

func newRawCommitter(f vfs.File, depth int) *rawCommitter {
	c := &rawCommitter{f: f, queue: make(chan rawReq, depth), stop: make(chan struct{})}
	c.wg.Go(func() {
		for {
			var group []rawReq
			select {
			case r := <-c.queue:
				group = append(group, r)
			case <-c.stop:
				return
			}
		drain:
			for {
				select {
				case r := <-c.queue:
					group = append(group, r)
				default:
					break drain
				}
			}
			var err error
			for _, r := range group {
				if _, werr := c.f.Write(r.buf); werr != nil && err == nil {
					err = werr
				}
			}
			if serr := c.f.Sync(); serr != nil && err == nil {
				err = serr
			}
			for _, r := range group {
				r.done <- err
			}
		}
	})
	return c
}

func (c *rawCommitter) commit(buf []byte) error {
	done := make(chan error, 1)
	c.queue <- rawReq{buf: buf, done: done}
	return <-done
}

func (c *rawCommitter) close() {
	close(c.stop)
	c.wg.Wait()
}

// BenchmarkAppendVsRaw alternates, within one run, a round of engine
// appends (N streams, one ~1 MB batch each) and a round of raw group
// commits of the same bytes (N writers), timing each, so that the ratio
// is measured under the same disk conditions (neighbours' load drifts
// too much between separate benchmark runs on shared machines).
func BenchmarkAppendVsRaw(b *testing.B) {
	ctx := context.Background()
	for _, streams := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("streams=%d", streams), func(b *testing.B) {
			dir := b.TempDir()
			db, err := Open(path.Join(dir, "db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			tb, err := db.CreateTable(ctx, "bench", benchSchema)
			if err != nil {
				b.Fatal(err)
			}
			ids := make([]string, streams)
			for i := range ids {
				s, err := tb.CreateStream(ctx, StreamCommitted)
				if err != nil {
					b.Fatal(err)
				}
				ids[i] = s.ID
			}
			rec := benchBatch(0)
			defer rec.Release()
			f, err := vfs.Default.Create(path.Join(dir, "raw.log"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			raw := newRawCommitter(f, streams)
			defer raw.close()
			size := batchBytes(rec)
			buf := make([]byte, size)
			var engine, disk time.Duration
			b.SetBytes(2 * int64(streams) * size)
			b.ReportAllocs()
			for b.Loop() {
				start := time.Now()
				var wg sync.WaitGroup
				for _, id := range ids {
					wg.Go(func() {
						if _, err := tb.Append(ctx, AppendRequest{Stream: id, Offset: -1, Batch: rec}); err != nil {
							b.Error(err)
						}
					})
				}
				wg.Wait()
				mid := time.Now()
				for range streams {
					wg.Go(func() {
						if err := raw.commit(buf); err != nil {
							b.Error(err)
						}
					})
				}
				wg.Wait()
				engine += mid.Sub(start)
				disk += time.Since(mid)
			}
			mb := float64(b.N*streams) * float64(size) / 1e6
			b.ReportMetric(mb/engine.Seconds(), "engine-MB/s")
			b.ReportMetric(mb/disk.Seconds(), "raw-MB/s")
			b.ReportMetric(disk.Seconds()/engine.Seconds(), "engine/raw")
		})
	}
}

func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	for _, streams := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("streams=%d", streams), func(b *testing.B) {
			db, err := Open(b.TempDir(), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			tb, err := db.CreateTable(ctx, "bench", benchSchema)
			if err != nil {
				b.Fatal(err)
			}
			ids := make([]string, streams)
			for i := range ids {
				s, err := tb.CreateStream(ctx, StreamCommitted)
				if err != nil {
					b.Fatal(err)
				}
				ids[i] = s.ID
			}
			rec := benchBatch(0)
			defer rec.Release()
			b.SetBytes(int64(streams) * batchBytes(rec))
			b.ReportAllocs()
			before := db.Metrics()
			for b.Loop() {
				var wg sync.WaitGroup
				for _, id := range ids {
					wg.Go(func() {
						if _, err := tb.Append(ctx, AppendRequest{Stream: id, Offset: -1, Batch: rec}); err != nil {
							b.Error(err)
						}
					})
				}
				wg.Wait()
			}
			m := db.Metrics()
			b.ReportMetric(float64(m.SyncedFrames-before.SyncedFrames)/float64(max(1, m.Syncs-before.Syncs)), "batches/fsync")
			b.ReportMetric(float64(b.N*streams*benchRowsPerBatch)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

func BenchmarkScan(b *testing.B) {
	ctx := context.Background()
	db, err := Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	tb, err := db.CreateTable(ctx, "bench", benchSchema)
	if err != nil {
		b.Fatal(err)
	}
	rec := benchBatch(0)
	defer rec.Release()
	const batches = 64
	for range batches {
		if _, err := tb.Append(ctx, AppendRequest{Stream: DefaultStreamID, Offset: -1, Batch: rec}); err != nil {
			b.Fatal(err)
		}
	}
	// The same-run reference: pread of the table's log file in 1 MB
	// pieces into one reused buffer (what the page cache can deliver).
	b.Run("columns=raw-pread", func(b *testing.B) {
		s, err := tb.Snapshot(time.Time{})
		if err != nil {
			b.Fatal(err)
		}
		f := s.Chunks()[0].f.f
		size, _ := f.Size()
		s.Release()
		buf := make([]byte, 1<<20)
		b.SetBytes(size)
		b.ReportAllocs()
		for b.Loop() {
			for off := int64(0); off < size; off += int64(len(buf)) {
				if _, err := f.ReadAt(buf, off); err != nil && off+int64(len(buf)) < size {
					b.Fatal(err)
				}
			}
		}
	})
	for _, proj := range []struct {
		name string
		cols []int
	}{{"all", nil}, {"id+amount", []int{0, 4}}} {
		b.Run("columns="+proj.name, func(b *testing.B) {
			b.SetBytes(batches * batchBytes(rec))
			b.ReportAllocs()
			for b.Loop() {
				s, err := tb.Snapshot(time.Time{})
				if err != nil {
					b.Fatal(err)
				}
				var rows int64
				for _, c := range s.Chunks() {
					r, err := s.ReadChunk(ctx, c, 0, c.NumRows, proj.cols)
					if err != nil {
						b.Fatal(err)
					}
					rows += r.NumRows()
					r.Release()
				}
				s.Release()
				if rows != batches*benchRowsPerBatch {
					b.Fatalf("scanned %d rows", rows)
				}
			}
			b.ReportMetric(float64(b.N*batches*benchRowsPerBatch)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
