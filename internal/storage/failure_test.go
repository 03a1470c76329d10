package storage

import (
	"context"
	"errors"
	"path"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bqstore/bqstore/internal/storage/vfs"
	"github.com/bqstore/bqstore/internal/storage/wal"
)

// TestFailStop: a failed fdatasync fails the append in flight with
// ErrFailStop and every later request too; reopening recovers what was
// acknowledged before.
func TestFailStop(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	var failSync atomic.Bool
	fs.SetInjector(func(op vfs.Op, name string) error {
		if op == vfs.OpSync && failSync.Load() && strings.HasSuffix(name, ".log") {
			return errors.New("EIO")
		}
		return nil
	})
	db, err := Open("db", &Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := db.CreateTable(ctx, "t", testSchema)
	if err != nil {
		t.Fatal(err)
	}
	appendRows(t, tb, DefaultStreamID, -1, 0, 2)
	failSync.Store(true)
	rec := makeBatch(testSchema, 2, 2)
	defer rec.Release()
	if _, err := tb.Append(ctx, AppendRequest{Stream: DefaultStreamID, Offset: -1, Batch: rec}); !errors.Is(err, ErrFailStop) || !strings.Contains(err.Error(), "EIO") {
		t.Fatalf("append with failing fsync: %v, want ErrFailStop naming the cause", err)
	}
	failSync.Store(false)
	if _, err := tb.Append(ctx, AppendRequest{Stream: DefaultStreamID, Offset: -1, Batch: rec}); !errors.Is(err, ErrFailStop) {
		t.Fatalf("append after fail-stop: %v, want ErrFailStop", err)
	}
	if _, err := tb.CreateStream(ctx, StreamPending); !errors.Is(err, ErrFailStop) {
		t.Fatalf("create stream after fail-stop: %v, want ErrFailStop", err)
	}
	if m := db.Metrics(); m.FailStops != 1 {
		t.Fatalf("FailStops = %d", m.FailStops)
	}
	// Reads of acknowledged data still work.
	if got := tableIDs(t, tb, time.Time{}); len(got) != 2 {
		t.Fatalf("visible after fail-stop: %v", got)
	}
	db.Close()
	db, err = Open("db", &Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tb, _ = db.Table("t")
	got := tableIDs(t, tb, time.Time{})
	// The failed append's bytes reached the file (only the sync failed),
	// so after reopening they may be there; acknowledged rows must be.
	if len(got) < 2 || got[0] != 0 || got[1] != 1 {
		t.Fatalf("after reopen: %v", got)
	}
	appendRows(t, tb, DefaultStreamID, -1, 10, 1)
}

// TestMidFileCorruption: a damaged frame followed by valid ones in the
// active file fails Open with ErrCorruption naming the file and offset; in
// a sealed file (indexed by its footer) the read of that batch fails so.
func TestMidFileCorruption(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		segment int64
	}{{"active", 1 << 20}, {"sealed", 2048}} {
		t.Run("file="+tc.name, func(t *testing.T) {
			fs := vfs.NewMem()
			db, err := Open("db", &Options{FS: fs, SegmentSize: tc.segment})
			if err != nil {
				t.Fatal(err)
			}
			tb, _ := db.CreateTable(ctx, "t", testSchema)
			var offs []int64
			for i := range int64(6) {
				appendRows(t, tb, DefaultStreamID, -1, i*10, 5)
			}
			s, _ := tb.Snapshot(time.Time{})
			for _, c := range s.Chunks() {
				offs = append(offs, c.off)
			}
			file := s.Chunks()[1].f.name
			s.Release()
			db.Close()
			// Damage the payload of the second batch.
			f, err := fs.OpenAppend(file)
			if err != nil {
				t.Fatal(err)
			}
			size, _ := f.Size()
			data := make([]byte, size)
			f.ReadAt(data, 0)
			data[offs[1]+wal.HeaderSize+3] ^= 0x55
			f.Truncate(0)
			f.Write(data)
			f.Sync()
			db, err = Open("db", &Options{FS: fs, SegmentSize: tc.segment})
			if tc.name == "active" {
				// The table is quarantined: Open succeeds, the table's
				// calls fail naming file and offset.
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				_, err = db.Table("t")
				db.Close()
				if !errors.Is(err, ErrQuarantined) {
					t.Fatalf("Table = %v, want ErrQuarantined", err)
				}
			}
			if tc.name == "sealed" {
				// Sealed files are opened from their footer, not scanned:
				// the damage shows when the batch is read.
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				defer db.Close()
				tb, _ := db.Table("t")
				s, _ := tb.Snapshot(time.Time{})
				defer s.Release()
				c := s.Chunks()[1]
				_, err = s.ReadChunk(ctx, c, 0, c.NumRows, nil)
			}
			var ce *wal.CorruptionError
			if !errors.Is(err, ErrCorruption) || !errors.As(err, &ce) || ce.File != file || ce.Offset != offs[1] {
				t.Fatalf("Open = %v, want corruption in %s at %d", err, file, offs[1])
			}
			if !strings.Contains(err.Error(), path.Base(file)) {
				t.Fatalf("error %q does not name the file", err)
			}
		})
	}
}

// TestBackpressure: at the in-flight budget, an append waits and its
// context cancels the wait.
func TestBackpressure(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	release := make(chan struct{})
	var block atomic.Bool
	fs.SetInjector(func(op vfs.Op, name string) error {
		if op == vfs.OpSync && block.Load() && strings.HasSuffix(name, ".log") {
			<-release
		}
		return nil
	})
	db, err := Open("db", &Options{FS: fs, MaxInflightBytes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tb, _ := db.CreateTable(ctx, "t", testSchema)
	block.Store(true)
	var wg sync.WaitGroup
	wg.Go(func() { appendRows(t, tb, DefaultStreamID, -1, 0, 100) }) // > budget: takes all of it
	for db.Metrics().InflightBytes < 1024 {
		runtime.Gosched()
	}
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		rec := makeBatch(testSchema, 100, 1)
		defer rec.Release()
		_, err := tb.Append(cctx, AppendRequest{Stream: DefaultStreamID, Offset: -1, Batch: rec})
		errc <- err
	}()
	for db.Metrics().BudgetWaits < 1 {
		runtime.Gosched()
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting append: %v, want context.Canceled", err)
	}
	block.Store(false)
	close(release)
	wg.Wait()
	if m := db.Metrics(); m.InflightBytes != 0 {
		t.Fatalf("InflightBytes = %d after all appends finished", m.InflightBytes)
	}
	if got := tableIDs(t, tb, time.Time{}); len(got) != 100 {
		t.Fatalf("visible %d rows, want 100", len(got))
	}
}

// TestDropTable removes the files; a snapshot taken before stays
// readable until released.
func TestDropTable(t *testing.T) {
	ctx := context.Background()
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		db, err := Open(dir, &Options{FS: fs})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		tb, _ := db.CreateTable(ctx, "t", testSchema)
		appendRows(t, tb, DefaultStreamID, -1, 0, 3)
		s, err := tb.Snapshot(time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.DropTable(ctx, "t"); err != nil {
			t.Fatal(err)
		}
		if got := readIDs(t, s); len(got) != 3 {
			t.Fatalf("snapshot after drop: %v", got)
		}
		s.Release()
		if _, err := db.Table("t"); !errors.Is(err, ErrTableNotFound) {
			t.Fatalf("Table after drop: %v", err)
		}
		if _, err := tb.Append(ctx, AppendRequest{Stream: DefaultStreamID, Offset: -1, Batch: makeBatch(testSchema, 0, 1)}); !errors.Is(err, ErrTableNotFound) {
			t.Fatalf("append after drop: %v", err)
		}
		names, _ := fs.List(path.Join(dir, tablesDir))
		if len(names) != 0 {
			t.Fatalf("files left after drop: %v", names)
		}
		// Same id again: a new, empty table.
		tb2, err := db.CreateTable(ctx, "t", testSchema)
		if err != nil {
			t.Fatal(err)
		}
		if got := tableIDs(t, tb2, time.Time{}); len(got) != 0 {
			t.Fatalf("recreated table has rows %v", got)
		}
		if ids := db.TableIDs(); len(ids) != 1 || ids[0] != "t" {
			t.Fatalf("TableIDs = %v", ids)
		}
	})
}

// TestConcurrentReadersWriters runs readers against writers of every
// stream type under the race detector: snapshots at a fixed time always
// see the same rows.
func TestConcurrentReadersWriters(t *testing.T) {
	ctx := context.Background()
	db, err := Open("db", &Options{FS: vfs.NewMem(), SegmentSize: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l := newLedger()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(done)
		crashScenario(db, l, 30, 0, 4)
	})
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				tb, err := db.Table("p/d/crash")
				if err != nil {
					runtime.Gosched()
					continue
				}
				s1, err := tb.Snapshot(time.Time{})
				if err != nil {
					t.Error(err)
					return
				}
				a := readIDs(t, s1)
				s2, err := tb.Snapshot(s1.Time())
				if err != nil {
					t.Error(err)
					return
				}
				b := readIDs(t, s2)
				s1.Release()
				s2.Release()
				if len(a) != len(b) {
					t.Errorf("two snapshots at %v: %d and %d rows", s1.Time(), len(a), len(b))
					return
				}
			}
		})
	}
	wg.Wait()
	tb, _ := db.Table("p/d/crash")
	checkRecovered(t, db, l, "live")
	_ = tb
	_ = ctx
}

// TestSingleOpener: a second Open of the same directory fails while the
// first DB is open, and succeeds after Close.
func TestSingleOpener(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		db, err := Open(dir, &Options{FS: fs})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Open(dir, &Options{FS: fs}); !errors.Is(err, vfs.ErrLocked) {
			t.Fatalf("second Open = %v, want vfs.ErrLocked", err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		db, err = Open(dir, &Options{FS: fs})
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
	})
}
