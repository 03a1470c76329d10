package storage

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/bqstore/bqstore/internal/storage/vfs"
)

// compactFixture builds a table with many small batches over several
// sealed files: every stream type, a schema change, and a PENDING stream
// that is never committed. It returns the times after each step.
func compactFixture(t *testing.T, db *DB, clk *fakeClock) []time.Time {
	t.Helper()
	ctx := context.Background()
	tb, err := db.CreateTable(ctx, "t", testSchema)
	if err != nil {
		t.Fatal(err)
	}
	var times []time.Time
	step := func() {
		clk.Advance(time.Second)
		times = append(times, clk.Now())
	}
	c, _ := tb.CreateStream(ctx, StreamCommitted)
	p, _ := tb.CreateStream(ctx, StreamPending)
	gone, _ := tb.CreateStream(ctx, StreamPending)
	b, _ := tb.CreateStream(ctx, StreamBuffered)
	id := int64(0)
	for i := range int64(12) {
		appendRows(t, tb, DefaultStreamID, -1, id, 3)
		id += 3
		step()
		appendRows(t, tb, c.ID, i*2, id, 2)
		id += 2
		appendRows(t, tb, p.ID, i, id, 1)
		id++
		appendRows(t, tb, gone.ID, i, id, 1)
		id++
		appendRows(t, tb, b.ID, i*2, id, 2)
		id += 2
		step()
		if i%3 == 2 {
			if _, err := tb.Flush(ctx, b.ID, i*2); err != nil {
				t.Fatal(err)
			}
			step()
		}
		if i == 6 {
			v, s := tb.Schema()
			fields := append(s.Fields(), arrow.Field{Name: "extra", Type: arrow.BinaryTypes.String, Nullable: true})
			if err := tb.SetSchema(ctx, v+1, arrow.NewSchema(fields, nil)); err != nil {
				t.Fatal(err)
			}
			step()
		}
	}
	if _, err := tb.Finalize(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tb.BatchCommit(ctx, []string{p.ID}); err != nil {
		t.Fatal(err)
	}
	step()
	return times
}

// views reads the sorted ids visible at each time.
func views(t *testing.T, tb *Table, times []time.Time) []string {
	t.Helper()
	out := make([]string, len(times))
	for i, at := range times {
		ids := tableIDs(t, tb, at)
		slices.Sort(ids)
		out[i] = fmt.Sprint(ids)
	}
	return out
}

func TestCompactionPreservesSnapshots(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	clk := newFakeClock()
	opts := &Options{FS: fs, Clock: clk.Now, SegmentSize: 4096, PendingStreamTTL: time.Hour}
	db, err := Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	times := compactFixture(t, db, clk)
	tb, _ := db.Table("t")
	before := views(t, tb, times)
	old, err := tb.Snapshot(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	oldIDs := readIDs(t, old)
	clk.Advance(2 * time.Hour) // the uncommitted PENDING stream expires
	st, err := tb.Compact(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("compaction: %+v", st)
	if st.FilesIn < 2 || st.BatchesOut >= st.BatchesIn || st.RowsDropped == 0 {
		t.Fatalf("compaction did too little: %+v", st)
	}
	if got := views(t, tb, times); !slices.Equal(got, before) {
		t.Fatalf("compaction changed what snapshots return:\nbefore %v\nafter  %v", before, got)
	}
	if got := readIDs(t, old); !slices.Equal(got, oldIDs) {
		t.Fatalf("a snapshot taken before compaction changed")
	}
	old.Release()
	names, _ := fs.List(tb.dir)
	t.Logf("files after compaction: %v", names)
	// More data, a second compaction over the compacted file.
	appendRows(t, tb, DefaultStreamID, -1, 10_000, 500)
	appendRows(t, tb, DefaultStreamID, -1, 20_000, 500)
	clk.Advance(time.Second)
	times = append(times, clk.Now())
	before = views(t, tb, times)
	if _, err := tb.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if got := views(t, tb, times); !slices.Equal(got, before) {
		t.Fatalf("second compaction changed what snapshots return")
	}
	db.Close()
	db, err = Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tb, _ = db.Table("t")
	if got := views(t, tb, times); !slices.Equal(got, before) {
		t.Fatalf("after restart snapshots differ:\nbefore %v\nafter  %v", before, got)
	}
}

// TestCompactionCrash crashes a compaction after each of its writes and
// checks that recovery yields the same snapshots at every time.
func TestCompactionCrash(t *testing.T) {
	ctx := context.Background()
	base := vfs.NewMem()
	clk := newFakeClock()
	opts := func(fs vfs.FS) *Options {
		return &Options{FS: fs, Clock: clk.Now, SegmentSize: 4096, PendingStreamTTL: time.Hour}
	}
	db, err := Open("db", opts(base))
	if err != nil {
		t.Fatal(err)
	}
	times := compactFixture(t, db, clk)
	tb, _ := db.Table("t")
	want := views(t, tb, times)
	db.Close()
	clk.Advance(2 * time.Hour)
	// Count the compaction's operations.
	probe := base.CrashClone(nil)
	db, err = Open("db", opts(probe))
	if err != nil {
		t.Fatal(err)
	}
	tb, _ = db.Table("t")
	start := probe.Ops()
	if _, err := tb.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	total := probe.Ops() - start
	db.Close()
	seed := uint64(7)
	t.Logf("compaction does %d mutating operations; seed %d", total, seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	for k := 0; k <= total; k++ {
		fs := base.CrashClone(nil)
		db, err := Open("db", opts(fs))
		if err != nil {
			t.Fatal(err)
		}
		tb, _ := db.Table("t")
		fs.SetCrashAfter(k)
		_, _ = tb.Compact(ctx)
		db.Close()
		crashed := fs.CrashClone(rng)
		db, err = Open("db", opts(crashed))
		if err != nil {
			t.Fatalf("k=%d: recovery: %v", k, err)
		}
		tb, _ = db.Table("t")
		if got := views(t, tb, times); !slices.Equal(got, want) {
			t.Fatalf("k=%d: snapshots differ after a crash during compaction", k)
		}
		db.Close()
	}
}
