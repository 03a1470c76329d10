package storage

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/bqstore/bqstore/internal/storage/vfs"
)

// wideTable builds a table of cols int64 columns holding batches
// one-row batches on the default stream.
func wideTable(tb testing.TB, batches, cols int) (*DB, *Table) {
	tb.Helper()
	ctx := context.Background()
	fields := make([]arrow.Field, cols)
	for i := range fields {
		fields[i] = arrow.Field{Name: fmt.Sprintf("c%d", i), Type: arrow.PrimitiveTypes.Int64}
	}
	schema := arrow.NewSchema(fields, nil)
	db, err := Open("db", &Options{FS: vfs.NewMem()})
	if err != nil {
		tb.Fatal(err)
	}
	t, err := db.CreateTable(ctx, "t", schema)
	if err != nil {
		tb.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range cols {
		b.Field(i).(*array.Int64Builder).Append(int64(i))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	// Pipelined, so that many appends share a group commit.
	const window = 512
	var pending []*PendingAppend
	for i := range batches {
		p, err := t.AppendAsync(ctx, AppendRequest{Stream: DefaultStreamID, Offset: -1, Batch: rec})
		if err != nil {
			tb.Fatal(err)
		}
		pending = append(pending, p)
		if len(pending) == window || i == batches-1 {
			for _, p := range pending {
				if _, err := p.Wait(ctx); err != nil {
					tb.Fatal(err)
				}
			}
			pending = pending[:0]
		}
	}
	return db, t
}

// TestSnapshotAllocs: taking a snapshot allocates a plan, not a copy of
// every batch's zone maps (it used to allocate O(batches x columns) under
// the table lock: about 2.6 KB per batch at 20 columns).
func TestSnapshotAllocs(t *testing.T) {
	const batches = 2000
	db, tb := wideTable(t, batches, 20)
	defer db.Close()
	allocs := testing.AllocsPerRun(20, func() {
		s, err := tb.Snapshot(time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if s.NumRows() != batches {
			t.Fatalf("NumRows %d", s.NumRows())
		}
		s.Release()
	})
	// A constant number of allocations; nothing per batch.
	if allocs > 16 {
		t.Fatalf("Snapshot of %d batches: %.0f allocations", batches, allocs)
	}
}

// BenchmarkSnapshot measures taking (and releasing) a snapshot of a table
// of many small batches, and Table.Stats, which REST table GETs use.
//
//	go test -run '^$' -bench 'Snapshot' -benchmem -count 10 ./internal/storage/
func BenchmarkSnapshot(b *testing.B) {
	for _, n := range []int{1000, 20000} {
		db, tb := wideTable(b, n, 20)
		b.Run(fmt.Sprintf("batches=%d/cols=20", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s, err := tb.Snapshot(time.Time{})
				if err != nil {
					b.Fatal(err)
				}
				s.Release()
			}
		})
		b.Run(fmt.Sprintf("batches=%d/cols=20/stats", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if rows, _ := tb.Stats(); rows != int64(n) {
					b.Fatalf("Stats rows %d", rows)
				}
			}
		})
		db.Close()
	}
}

// TestStatsMatchSnapshot: the counters Table.Stats serves follow every
// kind of record, a compaction and a restart, and agree with a snapshot.
func TestStatsMatchSnapshot(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	clk := newFakeClock()
	opts := &Options{FS: fs, Clock: clk.Now, SegmentSize: 4096, PendingStreamTTL: time.Hour}
	db, err := Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	check := func(tb *Table, label string) {
		t.Helper()
		rows, bytes := tb.Stats()
		s, err := tb.Snapshot(time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Release()
		if rows != s.NumRows() {
			t.Fatalf("%s: Stats rows %d, snapshot %d", label, rows, s.NumRows())
		}
		if lo, hi := s.NumBytes()*3/4, s.NumBytes()*5/4; bytes < lo || bytes > hi {
			t.Fatalf("%s: Stats bytes %d, snapshot %d", label, bytes, s.NumBytes())
		}
	}
	times := compactFixture(t, db, clk)
	tb, _ := db.Table("t")
	check(tb, "fixture")
	_ = times
	clk.Advance(2 * time.Hour) // the uncommitted PENDING stream expires
	if _, err := tb.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	check(tb, "compacted")
	db.Close()
	db, err = Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tb, _ = db.Table("t")
	check(tb, "reopened")
	appendRows(t, tb, DefaultStreamID, -1, 50_000, 7)
	check(tb, "appended")
}
