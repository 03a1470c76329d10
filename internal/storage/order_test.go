package storage

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bqstore/bqstore/internal/storage/vfs"
)

// syncGate blocks the next fdatasync of a table log file (not of a
// compaction's .tmp file) once armed, until released: a deterministic
// way to hold a record between "written" and "durable and applied".
type syncGate struct {
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func newSyncGate() *syncGate {
	return &syncGate{entered: make(chan struct{}), release: make(chan struct{})}
}

func (g *syncGate) inject(op vfs.Op, name string) error {
	if op == vfs.OpSync && strings.HasSuffix(name, ".log") && g.armed.CompareAndSwap(true, false) {
		close(g.entered)
		<-g.release
	}
	return nil
}

func numFiles(tb *Table) int {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return len(tb.mu.files)
}

// TestBatchCommitRacesExpiry: a BatchCommit admitted before a PENDING
// stream's TTL ran out, but not yet durable when a compaction runs after
// the TTL, must win: the compaction may not abandon a stream whose commit
// is already ordered before it. Before abandonment was a log record, the
// compaction decided expiry from the durable state and the clock and
// marked the stream ABANDONED at its swap: the acknowledged commit then
// failed to apply (fail-stop) and the durable BATCH_COMMIT named an
// ABANDONED stream, so the data dir never opened again.
func TestBatchCommitRacesExpiry(t *testing.T) {
	ctx := context.Background()
	mem := vfs.NewMem()
	gate := newSyncGate()
	clk := newFakeClock()
	opts := &Options{FS: vfs.WithErrors(mem, gate.inject), Clock: clk.Now, SegmentSize: 4096, PendingStreamTTL: time.Hour}
	db, err := Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	tb, err := db.CreateTable(ctx, "t", testSchema)
	if err != nil {
		t.Fatal(err)
	}
	p, err := tb.CreateStream(ctx, StreamPending)
	if err != nil {
		t.Fatal(err)
	}
	var want []int64
	for i := int64(0); numFiles(tb) < 3; i++ {
		appendRows(t, tb, p.ID, i*10, i*10, 10)
		want = append(want, idRange(i*10, 10)...)
	}
	if _, err := tb.Finalize(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour - time.Second) // not expired yet

	type result struct {
		at   time.Time
		errs []StreamError
		err  error
	}
	gate.armed.Store(true)
	done := make(chan result, 1)
	go func() {
		at, errs, err := tb.BatchCommit(ctx, []string{p.ID})
		done <- result{at, errs, err}
	}()
	<-gate.entered // the BATCH_COMMIT is admitted and written, not yet synced

	clk.Advance(2 * time.Second) // the TTL has run out since
	if _, err := tb.Compact(ctx); err != nil {
		t.Fatalf("Compact: %v", err)
	}
	close(gate.release)
	r := <-done
	if r.err != nil || len(r.errs) > 0 {
		t.Fatalf("BatchCommit admitted before the expiry: %v %v", r.err, r.errs)
	}
	if got := tableIDs(t, tb, time.Time{}); !slices.Equal(got, want) {
		t.Fatalf("committed rows visible: %d, want %d", len(got), len(want))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open("db", &Options{FS: mem, Clock: clk.Now, SegmentSize: 4096, PendingStreamTTL: time.Hour})
	if err != nil {
		t.Fatalf("reopen after a commit that raced expiry: %v", err)
	}
	tb, _ = db.Table("t")
	if got := tableIDs(t, tb, time.Time{}); !slices.Equal(got, want) {
		t.Fatalf("after reopen committed rows visible: %d, want %d", len(got), len(want))
	}
}

// TestExpiredStreamIsAbandonedInOrder: once a compaction abandoned an
// expired stream, no later call can touch it, and the abandonment
// survives a restart whatever the clock says then.
func TestExpiredStreamIsAbandonedInOrder(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	clk := newFakeClock()
	opts := &Options{FS: fs, Clock: clk.Now, SegmentSize: 4096, PendingStreamTTL: time.Hour}
	db, err := Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := db.CreateTable(ctx, "t", testSchema)
	p, _ := tb.CreateStream(ctx, StreamPending)
	for i := int64(0); numFiles(tb) < 3; i++ {
		appendRows(t, tb, p.ID, i*10, i*10, 10)
	}
	appendRows(t, tb, DefaultStreamID, -1, 1_000_000, 5)
	if _, err := tb.Finalize(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Hour)
	st, err := tb.Compact(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.RowsDropped == 0 {
		t.Fatalf("nothing dropped: %+v", st)
	}
	if _, err := tb.Finalize(ctx, p.ID); !errorsIsNotFound(err) {
		t.Fatalf("Finalize of an abandoned stream: %v", err)
	}
	if _, errs, err := tb.BatchCommit(ctx, []string{p.ID}); err != nil || len(errs) != 1 || !errorsIsNotFound(errs[0].Err) {
		t.Fatalf("BatchCommit of an abandoned stream: %v %v", errs, err)
	}
	db.Close()
	// A clock that went back does not revive the stream.
	clk2 := newFakeClock()
	db, err = Open("db", &Options{FS: fs, Clock: clk2.Now, SegmentSize: 4096, PendingStreamTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tb, _ = db.Table("t")
	if _, err := tb.Stream(p.ID); !errorsIsNotFound(err) {
		t.Fatalf("abandoned stream after restart: %v", err)
	}
	if _, errs, err := tb.BatchCommit(ctx, []string{p.ID}); err != nil || len(errs) != 1 || !errorsIsNotFound(errs[0].Err) {
		t.Fatalf("BatchCommit of an abandoned stream after restart, clock before its TTL: %v %v", errs, err)
	}
	if got := tableIDs(t, tb, time.Time{}); !slices.Equal(got, idRange(1_000_000, 5)) {
		t.Fatalf("visible after restart: %v", got)
	}
}

// TestCompactionKeepsLogOrder: a listing pages through a snapshot by row
// position (REST page tokens carry the snapshot time and the next row
// index), so compaction between two pages must not move rows: the plan
// of a snapshot at T must list the same rows in the same order before
// and after. Rows of interleaved streams are the case that regrouping by
// stream broke.
func TestCompactionKeepsLogOrder(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	db, err := Open("db", &Options{FS: vfs.NewMem(), Clock: clk.Now, SegmentSize: 4096, PendingStreamTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tb, _ := db.CreateTable(ctx, "t", testSchema)
	a, _ := tb.CreateStream(ctx, StreamCommitted)
	b, _ := tb.CreateStream(ctx, StreamCommitted)
	id := int64(0)
	for i := int64(0); numFiles(tb) < 4; i++ {
		// Two appends in a row per stream, so that compaction has
		// adjacent batches to merge.
		appendRows(t, tb, a.ID, i*4, id, 2)
		appendRows(t, tb, a.ID, i*4+2, id+2, 2)
		appendRows(t, tb, DefaultStreamID, -1, id+4, 1)
		appendRows(t, tb, b.ID, i*6, id+5, 3)
		clk.Advance(time.Millisecond)
		appendRows(t, tb, b.ID, i*6+3, id+8, 3)
		id += 11
	}
	at := clk.Now()
	s, err := tb.Snapshot(at)
	if err != nil {
		t.Fatal(err)
	}
	before := readIDs(t, s)
	s.Release()
	if !slices.IsSorted(before) {
		t.Fatalf("plan is not in log order: %v", before)
	}
	// The first page is read before the compaction, the rest after it.
	page := int64(len(before) / 3)
	if st, err := tb.Compact(ctx); err != nil || st.BatchesOut >= st.BatchesIn {
		t.Fatalf("Compact: %+v %v", st, err)
	}
	s, err = tb.Snapshot(at)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	after := readIDs(t, s)
	if !slices.Equal(after, before) {
		t.Fatalf("compaction moved rows of a snapshot: page 2 starts with %v, want %v", after[page:page+5], before[page:page+5])
	}
}

// TestSnapshotTimeIsFinal: two snapshots at the same time see the same
// rows, even when the clock has not moved between them and records were
// stamped meanwhile.
func TestSnapshotTimeIsFinal(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	db, err := Open("db", &Options{FS: vfs.NewMem(), Clock: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tb, _ := db.CreateTable(ctx, "t", testSchema)
	appendRows(t, tb, DefaultStreamID, -1, 0, 3)
	clk.Advance(time.Second)
	s1, err := tb.Snapshot(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Release()
	res := appendRows(t, tb, DefaultStreamID, -1, 3, 3) // same clock reading
	if !res.Time.After(s1.Time()) {
		t.Errorf("append after a snapshot at %v stamped %v", s1.Time(), res.Time)
	}
	s2, err := tb.Snapshot(s1.Time())
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Release()
	if a, b := readIDs(t, s1), readIDs(t, s2); !slices.Equal(a, b) {
		t.Fatalf("two snapshots at %v differ: %v vs %v", s1.Time(), a, b)
	}
}

func errorsIsNotFound(err error) bool { return errors.Is(err, ErrStreamNotFound) }

// TestStreamGC: streams whose rows are all visible since before the
// time-travel window (and abandoned streams whose rows compaction
// dropped) leave the stream table and the checkpoints at the next seal;
// their rows stay visible, before and after a restart.
func TestStreamGC(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	clk := newFakeClock()
	opts := &Options{FS: fs, Clock: clk.Now, SegmentSize: 4096, PendingStreamTTL: time.Hour, TimeTravel: 2 * time.Hour}
	db, err := Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := db.CreateTable(ctx, "t", testSchema)
	c, _ := tb.CreateStream(ctx, StreamCommitted)
	p, _ := tb.CreateStream(ctx, StreamPending)
	x, _ := tb.CreateStream(ctx, StreamPending) // never committed
	b, _ := tb.CreateStream(ctx, StreamBuffered)
	open, _ := tb.CreateStream(ctx, StreamCommitted) // stays open
	var want []int64
	for i := int64(0); i < 4; i++ {
		appendRows(t, tb, c.ID, i*2, 100+i*2, 2)
		appendRows(t, tb, p.ID, i*2, 200+i*2, 2)
		appendRows(t, tb, x.ID, i*2, 300+i*2, 2)
		appendRows(t, tb, b.ID, i*2, 400+i*2, 2)
		appendRows(t, tb, open.ID, i, 500+i, 1)
		clk.Advance(time.Second)
		if _, err := tb.Flush(ctx, b.ID, i*2+1); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{c.ID, p.ID, b.ID} {
		if _, err := tb.Finalize(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, errs, err := tb.BatchCommit(ctx, []string{p.ID}); err != nil || errs != nil {
		t.Fatal(err, errs)
	}
	want = tableIDs(t, tb, time.Time{})
	if len(want) != 28 {
		t.Fatalf("visible %d rows", len(want))
	}
	// Past the window: abandon x and drop its rows, then seal.
	clk.Advance(3 * time.Hour)
	id := int64(1000)
	roll := func() {
		for n := numFiles(tb); numFiles(tb) == n; id++ {
			appendRows(t, tb, DefaultStreamID, -1, id, 1)
			want = append(want, id)
		}
	}
	roll()
	if st, err := tb.Compact(ctx); err != nil || st.RowsDropped != 8 {
		t.Fatalf("Compact: %+v %v", st, err)
	}
	roll()
	tb.mu.Lock()
	left := tb.mu.durable.IDs()
	tb.mu.Unlock()
	if !slices.Equal(left, []string{open.ID}) {
		t.Fatalf("streams left after the seal: %v, want only the open one %v", left, open.ID)
	}
	for _, s := range []string{c.ID, p.ID, x.ID, b.ID} {
		if _, err := tb.Stream(s); !errorsIsNotFound(err) {
			t.Fatalf("collected stream %s: %v", s, err)
		}
	}
	if rows, _ := tb.Stats(); rows != int64(len(want)) {
		t.Fatalf("Stats rows %d, want %d", rows, len(want))
	}
	check := func(label string) {
		t.Helper()
		got := tableIDs(t, tb, time.Time{})
		slices.Sort(got)
		w := slices.Clone(want)
		slices.Sort(w)
		if !slices.Equal(got, w) {
			t.Fatalf("%s: visible %d rows, want %d", label, len(got), len(w))
		}
	}
	check("after collection")
	if _, err := tb.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	check("after compaction")
	db.Close()
	db, err = Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tb, _ = db.Table("t")
	check("after restart")
	tb.mu.Lock()
	n := tb.mu.durable.Len()
	tb.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d streams after restart", n)
	}
}
