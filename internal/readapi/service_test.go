package readapi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"

	"github.com/bqstore/bqstore/internal/apierr"
	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/storage"
)

var testSchema = &schema.Schema{Fields: []*schema.Field{{Name: "id", Type: schema.Integer, Mode: schema.Required}}}

// fakeTables knows table t1 with testSchema.
type fakeTables struct{}

func (fakeTables) LookupTable(ctx context.Context, project, dataset, table string) (TableInfo, error) {
	return TableInfo{ID: "t1"}, nil
}

func (fakeTables) SchemaVersion(ctx context.Context, tableID string, version int) (*schema.Schema, error) {
	return testSchema, nil
}

// testService is a Service over an engine with one empty table, whose
// sessions are inserted by hand (the plan's contents do not matter to the
// bookkeeping under test).
type testService struct {
	*Service
	t   *testing.T
	now time.Time
	tbl *storage.Table
}

func newTestService(t *testing.T, opts Options) *testService {
	t.Helper()
	db, err := storage.Open(t.TempDir(), &storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	tbl, err := db.CreateTable(context.Background(), "t1", schema.ToArrow(testSchema))
	if err != nil {
		t.Fatal(err)
	}
	ts := &testService{t: t, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), tbl: tbl}
	opts.Clock = func() time.Time { return ts.now }
	opts.Dir = t.TempDir()
	ts.Service, err = New(fakeTables{}, db, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ts.Close)
	return ts
}

// add registers an open session with a plan of the given cost.
func (ts *testService) add(id string, cost int64) *session {
	ts.t.Helper()
	snap, err := ts.tbl.Snapshot(time.Time{})
	if err != nil {
		ts.t.Fatal(err)
	}
	p := &plan{meta: &sessionMeta{ID: id, Project: "p", Location: "us", TableID: "t1", Format: "ARROW",
		Created: ts.now, Expire: ts.now.Add(ts.opts.SessionTTL)}, snap: snap, cost: cost, prefix: []int64{0},
		streams: map[string]rowRange{}, byRange: map[rowRange]string{}, done: map[string]bool{}}
	if err := ts.addSession(p); err != nil {
		ts.t.Fatalf("add %s: %v", id, err)
	}
	return ts.mu.sessions[id]
}

func (ts *testService) isOpen(sess *session) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return sess.plan != nil
}

// TestSweepClosesIdleAndRemovesExpired: the janitor's pass releases the
// plan of a session idle for IdleClose (keeping the session), and removes
// a session (and its file) an hour past its expiry.
func TestSweepClosesIdleAndRemovesExpired(t *testing.T) {
	ts := newTestService(t, Options{IdleClose: 5 * time.Minute})
	a := ts.add("a", 100)
	ts.now = ts.now.Add(4 * time.Minute)
	ts.sweep()
	if !ts.isOpen(a) {
		t.Fatal("closed before IdleClose")
	}
	ts.now = ts.now.Add(time.Minute)
	ts.sweep()
	if ts.isOpen(a) {
		t.Fatal("still open after IdleClose")
	}
	if ts.mu.openBytes != 0 {
		t.Fatalf("openBytes %d after closing every session", ts.mu.openBytes)
	}
	if _, err := ts.store.get("a"); err != nil {
		t.Fatalf("closed session's file: %v", err)
	}
	ts.now = ts.now.Add(ts.opts.SessionTTL + expireGrace)
	ts.sweep()
	if ts.mu.sessions["a"] != nil || ts.mu.perProject["p"] != 0 {
		t.Fatal("expired session kept")
	}
	if _, err := ts.store.get("a"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("expired session's file: %v, want removed", err)
	}
}

// TestOpenSessionsMemoryBoundWhenBusy: idle sessions make room, but a
// session being read is never closed under its reader: when only busy
// sessions hold the memory, one more is RESOURCE_EXHAUSTED.
func TestOpenSessionsMemoryBoundWhenBusy(t *testing.T) {
	ts := newTestService(t, Options{MaxSessionMemory: 1000})
	a := ts.add("a", 600)
	b := ts.add("b", 600) // closes idle a
	if ts.isOpen(a) || !ts.isOpen(b) {
		t.Fatal("a should have been closed to make room for b")
	}
	ts.mu.Lock()
	b.readers++ // b is being read
	ts.mu.Unlock()
	snap, err := ts.tbl.Snapshot(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	err = ts.addSession(&plan{meta: &sessionMeta{ID: "c", Project: "p"}, snap: snap, cost: 600})
	if ae, ok := errors.AsType[*apierr.Error](err); !ok || ae.Code != codes.ResourceExhausted {
		t.Fatalf("third session while b is read: %v, want RESOURCE_EXHAUSTED", err)
	}
	if !ts.isOpen(b) {
		t.Fatal("b closed under its reader")
	}
	ts.close(b, "")
	ts.add("d", 600) // b is idle now
	if ts.isOpen(b) {
		t.Fatal("idle b kept open past the bound")
	}
}

// TestPlanRowsDoNotDependOnPruning: a session's streams are ranges of plan
// rows, and a re-opened session must find the same plan. Zone maps change
// when compaction merges batches, so pruning must not change the plan row
// space: a pruned batch is skipped by readers, not removed from the plan.
func TestPlanRowsDoNotDependOnPruning(t *testing.T) {
	ts := newTestService(t, Options{})
	ctx := context.Background()
	for first := int64(0); first < 200; first += 100 {
		b := array.NewInt64Builder(memory.DefaultAllocator)
		for i := first; i < first+100; i++ {
			b.Append(i)
		}
		col := b.NewArray()
		rec := array.NewRecordBatch(schema.ToArrow(testSchema), []arrow.Array{col}, 100)
		if _, err := ts.tbl.Append(ctx, storage.AppendRequest{Stream: storage.DefaultStreamID, Offset: -1, Batch: rec}); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		col.Release()
	}
	for _, expr := range []string{"", "id >= 100", "id < 0"} {
		snap, err := ts.tbl.Snapshot(time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		p, err := ts.buildPlan(ctx, &sessionMeta{ID: "x", TableID: "t1", Format: "ARROW", RowRestriction: expr}, snap)
		if err != nil {
			t.Fatal(err)
		}
		if p.total() != 200 {
			t.Errorf("row_restriction %q: %d plan rows, want the snapshot's 200", expr, p.total())
		}
		snap.Release()
	}
}

// TestPlanCostWideTable: a plan's cost is what the session holds: its
// chunk list (a Chunk, a prefix sum and a pruning flag per chunk), its
// filter and schemas. The zone maps its chunks point at belong to the
// table's batch index, shared by every snapshot; charging them to each
// session (columns x 96 bytes per chunk: 19 MB for 100 batches of a
// 2,000-column table) closed sessions for memory they did not hold.
func TestPlanCostWideTable(t *testing.T) {
	const cols, batches = 2000, 100
	wide := &schema.Schema{}
	for i := range cols {
		wide.Fields = append(wide.Fields, &schema.Field{Name: fmt.Sprintf("c%d", i), Type: schema.Integer, Mode: schema.Nullable})
	}
	db, err := storage.Open(t.TempDir(), &storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	tbl, err := db.CreateTable(ctx, "t1", schema.ToArrow(wide))
	if err != nil {
		t.Fatal(err)
	}
	as := schema.ToArrow(wide)
	for i := range batches {
		arrs := make([]arrow.Array, cols)
		for c := range cols {
			b := array.NewInt64Builder(memory.DefaultAllocator)
			b.Append(int64(i * c))
			arrs[c] = b.NewArray()
		}
		rec := array.NewRecordBatch(as, arrs, 1)
		if _, err := tbl.Append(ctx, storage.AppendRequest{Stream: storage.DefaultStreamID, Offset: -1, Batch: rec}); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		for _, a := range arrs {
			a.Release()
		}
	}
	svc, err := New(wideTables{wide}, db, Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	snap, err := tbl.Snapshot(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	p, err := svc.buildPlan(ctx, &sessionMeta{ID: "x", TableID: "t1", Format: "ARROW", RowRestriction: "c1 > 5"}, snap)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.chunks) != batches {
		t.Fatalf("%d chunks, want %d", len(p.chunks), batches)
	}
	held := int64(len(p.arrowSchema)) + 64<<10 + batches*512
	if p.cost > held {
		t.Errorf("plan cost %d bytes for %d chunks of %d columns, want at most %d (schemas, filter and %d bytes per chunk)", p.cost, batches, cols, held, 512)
	}
}

type wideTables struct{ s *schema.Schema }

func (w wideTables) LookupTable(ctx context.Context, project, dataset, table string) (TableInfo, error) {
	return TableInfo{ID: "t1"}, nil
}

func (w wideTables) SchemaVersion(ctx context.Context, tableID string, version int) (*schema.Schema, error) {
	return w.s, nil
}
