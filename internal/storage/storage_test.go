package storage

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.uber.org/goleak"

	"github.com/bqstore/bqstore/internal/storage/vfs"
)

func TestMain(m *testing.M) {
	if runChild() {
		return
	}
	goleak.VerifyTestMain(m)
}

var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// makeBatch builds rows with ids [from, from+n).
func makeBatch(schema *arrow.Schema, from, n int64) arrow.Record {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := from; i < from+n; i++ {
		b.Field(0).(*array.Int64Builder).Append(i)
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("row-%d", i))
		for j := 2; j < schema.NumFields(); j++ {
			b.Field(j).AppendNull()
		}
	}
	return b.NewRecordBatch()
}

// fakeClock is a manual clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// readIDs reads every visible id of a snapshot, in plan order.
func readIDs(t testing.TB, s *Snapshot) []int64 {
	t.Helper()
	var ids []int64
	for _, c := range s.Chunks() {
		rec, err := s.ReadChunk(context.Background(), c, 0, c.NumRows, []int{0})
		if err != nil {
			t.Fatalf("ReadChunk: %v", err)
		}
		col := rec.Column(0).(*array.Int64)
		for i := range col.Len() {
			ids = append(ids, col.Value(i))
		}
		rec.Release()
	}
	return ids
}

func tableIDs(t testing.TB, tb *Table, at time.Time) []int64 {
	t.Helper()
	s, err := tb.Snapshot(at)
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	defer s.Release()
	return readIDs(t, s)
}

func appendRows(t testing.TB, tb *Table, stream string, offset, from, n int64) AppendResult {
	t.Helper()
	rec := makeBatch(testSchema, from, n)
	defer rec.Release()
	res, err := tb.Append(context.Background(), AppendRequest{Stream: stream, Offset: offset, Batch: rec, SchemaVersion: 1})
	if err != nil {
		t.Fatalf("Append(%s, %d): %v", stream, offset, err)
	}
	return res
}

func forEachFS(t *testing.T, f func(t *testing.T, fs vfs.FS, dir string)) {
	t.Run("fs=mem", func(t *testing.T) { f(t, vfs.NewMem(), "db") })
	t.Run("fs=disk", func(t *testing.T) { f(t, vfs.Default, t.TempDir()) })
}

func TestLifecycle(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		ctx := context.Background()
		clk := newFakeClock()
		db, err := Open(dir, &Options{FS: fs, Clock: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		tb, err := db.CreateTable(ctx, "p/d/t", testSchema)
		if err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
		appendRows(t, tb, DefaultStreamID, -1, 0, 3)
		cs, err := tb.CreateStream(ctx, StreamCommitted)
		if err != nil {
			t.Fatal(err)
		}
		ps, _ := tb.CreateStream(ctx, StreamPending)
		bs, _ := tb.CreateStream(ctx, StreamBuffered)
		appendRows(t, tb, cs.ID, 0, 10, 2)
		appendRows(t, tb, ps.ID, 0, 20, 2)
		appendRows(t, tb, bs.ID, 0, 30, 4)
		if _, err := tb.Append(ctx, AppendRequest{Stream: cs.ID, Offset: 0, Batch: makeBatch(testSchema, 0, 1)}); !errors.Is(err, ErrOffsetExists) {
			t.Fatalf("retry at 0: %v, want ErrOffsetExists", err)
		}
		if _, err := tb.Append(ctx, AppendRequest{Stream: cs.ID, Offset: 5, Batch: makeBatch(testSchema, 0, 1)}); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("append at 5: %v, want ErrOffsetOutOfRange", err)
		}
		got := tableIDs(t, tb, time.Time{})
		if want := []int64{0, 1, 2, 10, 11}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("visible %v, want %v", got, want)
		}
		clk.Advance(time.Second)
		if w, err := tb.Flush(ctx, bs.ID, 1); err != nil || w != 2 {
			t.Fatalf("Flush = %d, %v", w, err)
		}
		if n, err := tb.Finalize(ctx, ps.ID); err != nil || n != 2 {
			t.Fatalf("Finalize = %d, %v", n, err)
		}
		if n, err := tb.Finalize(ctx, ps.ID); err != nil || n != 2 {
			t.Fatalf("Finalize again = %d, %v", n, err)
		}
		before := clk.Now()
		clk.Advance(time.Second)
		ct, serrs, err := tb.BatchCommit(ctx, []string{ps.ID})
		if err != nil || len(serrs) != 0 {
			t.Fatalf("BatchCommit: %v %v", serrs, err)
		}
		want := []int64{0, 1, 2, 10, 11, 20, 21, 30, 31}
		if got := tableIDs(t, tb, time.Time{}); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("visible %v, want %v", got, want)
		}
		if got := tableIDs(t, tb, before); fmt.Sprint(got) != "[0 1 2 10 11 30 31]" {
			t.Fatalf("visible before commit %v", got)
		}
		if got := tableIDs(t, tb, ct); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("visible at commit %v", got)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		db, err = Open(dir, &Options{FS: fs, Clock: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		tb, err = db.Table("p/d/t")
		if err != nil {
			t.Fatal(err)
		}
		if got := tableIDs(t, tb, time.Time{}); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("after reopen visible %v, want %v", got, want)
		}
		info, err := tb.Stream(bs.ID)
		if err != nil || info.NextOffset != 4 || info.FlushedOffset != 2 || info.Type != StreamBuffered {
			t.Fatalf("Stream = %+v, %v", info, err)
		}
	})
}
