package storage

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bqstore/bqstore/internal/storage/vfs"
)

// TestCompactionSwapDurableBeforeGC: compaction drops the rows of an
// abandoned stream, and the next seal collects the stream (no batch holds
// its rows any more). The seal's checkpoint, without the stream, must not
// become durable while the compaction's rename is not: else a power loss
// brings back the old files, holding the abandoned rows of a stream the
// state no longer names, and a snapshot plans those never-committed rows
// as visible. Here the compaction's directory sync fails (and every later
// one), the table goes on to seal, and the power comes off.
func TestCompactionSwapDurableBeforeGC(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	clk := newFakeClock()
	opts := &Options{FS: fs, Clock: clk.Now, SegmentSize: 4096, PendingStreamTTL: time.Hour}
	db, err := Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := db.CreateTable(ctx, "t", testSchema)
	x, _ := tb.CreateStream(ctx, StreamPending) // never committed
	var want []int64
	id := int64(1)
	roll := func() {
		for n := numFiles(tb); numFiles(tb) == n; id++ {
			appendRows(t, tb, DefaultStreamID, -1, id, 1)
			want = append(want, id)
		}
	}
	appendRows(t, tb, x.ID, 0, 10_000, 5)
	roll()
	roll()
	clk.Advance(2 * time.Hour) // x expires: Compact abandons it and drops its rows
	var failDirSync atomic.Bool
	fs.SetInjector(func(op vfs.Op, name string) error {
		if op == vfs.OpSyncDir && failDirSync.Load() {
			return errors.New("injected: syncdir failed")
		}
		return nil
	})
	failDirSync.Store(true)
	st, err := tb.Compact(ctx)
	t.Logf("Compact: %+v %v", st, err)
	// Append until the table seals (or refuses: fail-stop).
	for n := numFiles(tb); numFiles(tb) == n; id++ {
		rec := makeBatch(testSchema, id, 1)
		_, err := tb.Append(ctx, AppendRequest{Stream: DefaultStreamID, Offset: -1, Batch: rec, SchemaVersion: 1})
		rec.Release()
		if err != nil {
			t.Logf("append: %v", err)
			break
		}
		want = append(want, id)
	}
	crashed := fs.PowerLoss(nil)
	db.Close()
	db, err = Open("db", &Options{FS: crashed, Clock: clk.Now, SegmentSize: 4096, PendingStreamTTL: time.Hour})
	if err != nil {
		t.Fatalf("Open after the power loss: %v", err)
	}
	defer db.Close()
	tb, err = db.Table("t")
	if err != nil {
		t.Fatal(err)
	}
	got := tableIDs(t, tb, time.Time{})
	slices.Sort(got)
	for _, v := range got {
		if v >= 10_000 {
			t.Fatalf("row %d of the abandoned stream %s is visible after the power loss (%d rows visible)", v, x.ID, len(got))
		}
	}
	for _, v := range want {
		if _, ok := slices.BinarySearch(got, v); !ok {
			t.Fatalf("acknowledged row %d lost", v)
		}
	}
}
