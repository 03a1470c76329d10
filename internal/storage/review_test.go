package storage

import (
	"context"
	"errors"
	"path"
	"runtime"
	"slices"
	"strings"
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

// TestQuarantineKeepsReplacedFiles: files that a compacted file replaces
// (left by a crash before their deletion) are deleted only once the
// compacted file proved readable. If it does not (a damaged footer), the
// table is quarantined with every file as it was, the replaced files
// included: they hold the same acknowledged rows, and Open (or fsck
// --repair) must not delete them on the word of a file it cannot read.
func TestQuarantineKeepsReplacedFiles(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	opts := &Options{FS: fs, SegmentSize: 4096}
	db, err := Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := db.CreateTable(ctx, "t", testSchema)
	id := int64(0)
	for range 3 {
		for n := numFiles(tb); numFiles(tb) == n; id++ {
			appendRows(t, tb, DefaultStreamID, -1, id, 1)
		}
	}
	dir := tb.dir
	tb.mu.Lock()
	var sealed []string
	for _, f := range tb.mu.files[:len(tb.mu.files)-1] {
		sealed = append(sealed, f.name)
	}
	tb.mu.Unlock()
	old := map[string][]byte{}
	for _, name := range sealed[:len(sealed)-1] {
		old[name] = readMemFile(t, fs, name)
	}
	if st, err := tb.Compact(ctx); err != nil || st.FilesIn != len(sealed) {
		t.Fatalf("Compact: %+v %v", st, err)
	}
	db.Close()
	// A crash before the replaced files were deleted; then the compacted
	// file's trailer is damaged.
	for name, data := range old {
		writeMemFile(t, fs, name, data)
	}
	compacted := sealed[len(sealed)-1]
	data := readMemFile(t, fs, compacted)
	data[len(data)-3] ^= 0xff
	writeMemFile(t, fs, compacted, data)

	db, err = Open("db", opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer db.Close()
	if _, err := db.Table("t"); !errors.Is(err, ErrQuarantined) {
		t.Fatalf("Table: %v, want quarantined", err)
	}
	for name := range old {
		if !fs.Exists(name) {
			t.Errorf("%s (replaced by the damaged compacted file %s) was deleted", name, path.Base(compacted))
		}
	}
	_ = dir
}

// TestStreamGCWindowIsTheLogs: a seal collects a stream only when its
// rows became visible before the time-travel window of every snapshot
// that can still be taken. Snapshots bound the window by the log's last
// timestamp (now = max(clock, last ts)), so the collection must too: a
// seal that read a clock ahead of the last record (the clock read late,
// or stepped back afterwards) collected a PENDING stream whose commit a
// snapshot inside the window still has to hide, and the snapshot then
// planned the stream's rows as visible before their commit.
func TestStreamGCWindowIsTheLogs(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	var ahead atomic.Bool // the seal's clock read is 3 h ahead
	clock := func() time.Time {
		now := clk.Now()
		if ahead.Load() {
			if pc, _, _, ok := runtime.Caller(1); ok && strings.HasSuffix(runtime.FuncForPC(pc).Name(), ".(*Table).roll") {
				return now.Add(3 * time.Hour)
			}
		}
		return now
	}
	db, err := Open("db", &Options{FS: vfs.NewMem(), Clock: clock, SegmentSize: 4096, PendingStreamTTL: 24 * time.Hour, TimeTravel: 3 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tb, _ := db.CreateTable(ctx, "t", testSchema)
	p, _ := tb.CreateStream(ctx, StreamPending)
	appendRows(t, tb, p.ID, 0, 10_000, 5)
	t0 := clk.Now()
	clk.Advance(time.Hour)
	if _, err := tb.Finalize(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	if _, errs, err := tb.BatchCommit(ctx, []string{p.ID}); err != nil || errs != nil {
		t.Fatal(err, errs)
	}
	clk.Advance(time.Hour)
	ahead.Store(true)
	id := int64(1)
	for n := numFiles(tb); numFiles(tb) == n; id++ {
		appendRows(t, tb, DefaultStreamID, -1, id, 1)
	}
	ahead.Store(false)
	before := tableIDs(t, tb, t0.Add(30*time.Minute)) // inside the window; before the commit
	for _, v := range before {
		if v >= 10_000 {
			t.Fatalf("snapshot before the commit of %s shows its row %d", p.ID, v)
		}
	}
	after := tableIDs(t, tb, t0.Add(90*time.Minute))
	if n := len(after); n != 5 {
		t.Fatalf("snapshot after the commit shows %d rows, want the 5 committed", n)
	}
}
