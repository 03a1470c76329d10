package storage

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/bqstore/bqstore/internal/storage/vfs"
)

// checkRows verifies that a record read from a chunk still holds the ids
// it was read with, and its names match.
func checkRows(t *testing.T, rec arrow.Record, want []int64) {
	t.Helper()
	ids := rec.Column(0).(*array.Int64)
	names := rec.Column(1).(*array.String)
	if ids.Len() != len(want) {
		t.Fatalf("record has %d rows, want %d", ids.Len(), len(want))
	}
	for i, w := range want {
		if ids.Value(i) != w || names.Value(i) != "row-"+itoa(w) {
			t.Fatalf("row %d is (%d, %q), want %d: a recycled read buffer was overwritten", i, ids.Value(i), names.Value(i), w)
		}
	}
}

func itoa(v int64) string {
	rec := makeBatch(testSchema, v, 1)
	defer rec.Release()
	return rec.Column(1).(*array.String).Value(0)[len("row-"):]
}

// TestReadBufferRecycling reads chunks concurrently, keeping some records
// alive (and slices of them) while others are released and their pooled
// read buffers reused: every kept record must keep its values.
func TestReadBufferRecycling(t *testing.T) {
	ctx := context.Background()
	db, err := Open("db", &Options{FS: vfs.NewMem(), SegmentSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tb, _ := db.CreateTable(ctx, "t", testSchema)
	for i := range int64(24) {
		appendRows(t, tb, DefaultStreamID, -1, i*1000, 300)
	}
	s, err := tb.Snapshot(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	chunks := s.Chunks()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 99))
			type kept struct {
				rec  arrow.Record
				want []int64
			}
			var live []kept
			for range 300 {
				ci := rng.IntN(len(chunks))
				c := chunks[ci]
				lo := rng.Int64N(c.NumRows)
				hi := lo + rng.Int64N(c.NumRows-lo) + 1
				rec, err := s.ReadChunk(ctx, c, lo, hi, nil)
				if err != nil {
					t.Error(err)
					return
				}
				want := make([]int64, 0, hi-lo)
				for r := lo; r < hi; r++ {
					want = append(want, int64(ci)*1000+r)
				}
				if rng.IntN(3) == 0 {
					// Keep a slice, drop the original reference.
					sl := rec.NewSlice(0, (hi-lo+1)/2)
					rec.Release()
					rec, want = sl, want[:(hi-lo+1)/2]
				}
				live = append(live, kept{rec, want})
				if len(live) > 6 {
					k := rng.IntN(len(live))
					checkRows(t, live[k].rec, live[k].want)
					live[k].rec.Release()
					live = append(live[:k], live[k+1:]...)
				}
			}
			for _, k := range live {
				checkRows(t, k.rec, k.want)
				k.rec.Release()
			}
		})
	}
	wg.Wait()
}
