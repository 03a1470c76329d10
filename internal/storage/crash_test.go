package storage

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bqstore/bqstore/internal/storage/vfs"
)

// ledger records what the engine acknowledged during a scenario.
type ledger struct {
	mu sync.Mutex
	// must: ids whose append (and commit / flush, where needed) was
	// acknowledged: they must be visible after recovery.
	must map[int64]bool
	// may: ids that may be visible (appended, acknowledged or not, to a
	// visible-on-append or flushed stream, or to a pending stream whose
	// commit was attempted).
	may map[int64]bool
	// groups: ids of one pending stream: all visible or none.
	groups [][]int64
	// prefixes: ids of one buffered stream, in offset order: a prefix
	// of each is visible.
	prefixes   map[string][]int64
	tableAcked bool
	// emit, if set, receives every entry as a line (the kill test's
	// child reports to its parent this way).
	emit func(line string)
	// probes counts the rows checkRecovered appended.
	probes int64
}

func newLedger() *ledger {
	return &ledger{must: map[int64]bool{}, may: map[int64]bool{}, prefixes: map[string][]int64{}}
}

func (l *ledger) line(kind string, key string, ids []int64) {
	if l.emit == nil {
		return
	}
	l.emit(fmt.Sprintf("%s %s %s\n", kind, key, strings.Trim(fmt.Sprint(ids), "[]")))
}

func (l *ledger) add(must bool, ids ...int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range ids {
		l.may[id] = true
		if must {
			l.must[id] = true
		}
	}
	if must {
		l.line("must", "-", ids)
	} else {
		l.line("may", "-", ids)
	}
}

func (l *ledger) group(ids []int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.groups = append(l.groups, ids)
	l.line("group", "-", ids)
}

func (l *ledger) prefix(key string, ids []int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.prefixes[key] = append(l.prefixes[key], ids...)
	l.line("prefix", key, ids)
}

func (l *ledger) acked() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tableAcked = true
	l.line("table", "-", nil)
}

// parse applies one emitted line.
func (l *ledger) parse(line string) error {
	f := strings.Fields(line)
	if len(f) < 2 {
		return fmt.Errorf("bad ledger line %q", line)
	}
	ids := make([]int64, 0, len(f)-2)
	for _, s := range f[2:] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("bad ledger line %q", line)
		}
		ids = append(ids, v)
	}
	switch f[0] {
	case "must":
		l.add(true, ids...)
	case "may":
		l.add(false, ids...)
	case "group":
		l.group(ids)
	case "prefix":
		l.prefix(f[1], ids)
	case "table":
		l.acked()
	default:
		return fmt.Errorf("bad ledger line %q", line)
	}
	return nil
}

func idRange(from, n int64) []int64 {
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = from + int64(i)
	}
	return ids
}

// Row ids of the scenario: kind*1e10 + base + local.
const (
	kindDefault   = 1e10
	kindCommitted = 2e10
	kindPending   = 3e10
	kindBuffered  = 4e10
	kindProbe     = 5e10
)

// crashScenario runs concurrent writers of every stream type for rounds
// rounds or until the filesystem fails, recording acknowledgements in l.
// base makes the row ids of this run unique. If compactEvery > 0, the
// _default writer also compacts the table every compactEvery rounds.
func crashScenario(db *DB, l *ledger, rounds int, base int64, compactEvery int) {
	runScenario(db, l, rounds, base, compactEvery, false)
}

// crashScenarioSeq runs the writers of crashScenario in one goroutine,
// one step of each in turn, each step waiting for its acknowledgement:
// the filesystem sees the same operations in the same order every run,
// so "crash after the k-th operation" names the same moment every run.
func crashScenarioSeq(db *DB, l *ledger, rounds int, base int64, compactEvery int) {
	runScenario(db, l, rounds, base, compactEvery, true)
}

func runScenario(db *DB, l *ledger, rounds int, base int64, compactEvery int, sequential bool) {
	ctx := context.Background()
	tb, err := db.CreateTable(ctx, "p/d/crash", testSchema)
	if err != nil {
		return
	}
	l.acked()
	app := func(stream string, off, from, n int64) error {
		rec := makeBatch(testSchema, from, n)
		defer rec.Release()
		_, err := tb.Append(ctx, AppendRequest{Stream: stream, Offset: off, Batch: rec})
		return err
	}
	// Each writer is a step function: one step per call, false when it
	// is done or failed.
	var writers []func() bool

	// _default writer.
	var di int64
	writers = append(writers, func() bool {
		if di >= int64(rounds) {
			return false
		}
		i := di
		di++
		from := kindDefault + base + i*10
		l.add(false, idRange(from, 3)...)
		if app(DefaultStreamID, -1, from, 3) != nil {
			return false
		}
		l.add(true, idRange(from, 3)...)
		if compactEvery > 0 && i%int64(compactEvery) == int64(compactEvery-1) {
			if _, err := tb.Compact(ctx); err != nil {
				return false
			}
		}
		return true
	})

	// COMMITTED writer with offsets.
	var cs string
	var ci int64
	writers = append(writers, func() bool {
		if cs == "" {
			s, err := tb.CreateStream(ctx, StreamCommitted)
			if err != nil {
				return false
			}
			cs = s.ID
			return true
		}
		if ci >= int64(rounds) {
			return false
		}
		i := ci
		ci++
		from := kindCommitted + base + i*2
		l.add(false, idRange(from, 2)...)
		if app(cs, i*2, from, 2) != nil {
			return false
		}
		l.add(true, idRange(from, 2)...)
		return true
	})

	// PENDING writers: append, finalize, commit; one stream per round.
	var pp int64
	writers = append(writers, func() bool {
		if pp >= int64(max(1, rounds/3)) {
			return false
		}
		p := pp
		pp++
		s, err := tb.CreateStream(ctx, StreamPending)
		if err != nil {
			return false
		}
		var ids []int64
		for i := range int64(3) {
			from := kindPending + base + p*10 + i*2
			if app(s.ID, i*2, from, 2) != nil {
				return false
			}
			ids = append(ids, idRange(from, 2)...)
		}
		if _, err := tb.Finalize(ctx, s.ID); err != nil {
			return false
		}
		l.group(ids)
		l.add(false, ids...)
		_, serrs, err := tb.BatchCommit(ctx, []string{s.ID})
		if err != nil || len(serrs) > 0 {
			return false
		}
		l.add(true, ids...)
		return true
	})

	// BUFFERED writer: append, flush.
	var bs string
	var bi int64
	var bids []int64
	writers = append(writers, func() bool {
		if bs == "" {
			s, err := tb.CreateStream(ctx, StreamBuffered)
			if err != nil {
				return false
			}
			bs = s.ID
			return true
		}
		if bi >= int64(rounds) {
			return false
		}
		i := bi
		bi++
		from := kindBuffered + base + i*2
		if app(bs, i*2, from, 2) != nil {
			return false
		}
		bids = append(bids, idRange(from, 2)...)
		l.prefix(bs, idRange(from, 2))
		if i%2 == 1 {
			l.add(false, bids...)
			if _, err := tb.Flush(ctx, bs, i*2+1); err != nil {
				return false
			}
			l.add(true, bids...)
		}
		return true
	})

	if !sequential {
		var wg sync.WaitGroup
		for _, w := range writers {
			wg.Go(func() {
				for w() {
				}
			})
		}
		wg.Wait()
		return
	}
	for live := len(writers); live > 0; {
		live = 0
		for i, w := range writers {
			if w == nil {
				continue
			}
			if w() {
				live++
			} else {
				writers[i] = nil
			}
		}
	}
}

// checkRecovered verifies the invariants on a recovered DB.
func checkRecovered(t testing.TB, db *DB, l *ledger, label string) {
	t.Helper()
	tb, err := db.Table("p/d/crash")
	if err != nil {
		if l.tableAcked {
			t.Fatalf("%s: acknowledged table lost: %v", label, err)
		}
		return
	}
	got := tableIDs(t, tb, time.Time{})
	seen := map[int64]bool{}
	for _, id := range got {
		if seen[id] {
			t.Fatalf("%s: row %d visible twice", label, id)
		}
		seen[id] = true
		if !l.may[id] {
			t.Fatalf("%s: row %d visible but never appended to a visible stream", label, id)
		}
	}
	for id := range l.must {
		if !seen[id] {
			t.Fatalf("%s: acknowledged row %d missing (visible: %d rows)", label, id, len(got))
		}
	}
	for _, g := range l.groups {
		n := 0
		for _, id := range g {
			if seen[id] {
				n++
			}
		}
		if n != 0 && n != len(g) {
			t.Fatalf("%s: pending stream partially visible: %d of %d rows", label, n, len(g))
		}
	}
	for _, p := range l.prefixes {
		for i := 1; i < len(p); i++ {
			if seen[p[i]] && !seen[p[i-1]] {
				t.Fatalf("%s: buffered rows not a prefix: %d visible, %d not", label, p[i], p[i-1])
			}
		}
	}
	// The table keeps working after recovery.
	probe := kindProbe + l.probes
	l.probes++
	l.add(true, probe)
	rec := makeBatch(testSchema, probe, 1)
	defer rec.Release()
	if _, err := tb.Append(context.Background(), AppendRequest{Stream: DefaultStreamID, Offset: -1, Batch: rec}); err != nil {
		t.Fatalf("%s: append after recovery: %v", label, err)
	}
}

// TestCrashAtEveryWrite crashes the filesystem after the k-th mutating
// operation, for every k of the scenario, then recovers from what a power
// loss would leave (vfs.MemFS.PowerLoss: synced data, each unsynced page
// persisted whole, in part or not at all, independently, and a prefix of
// the unsynced namespace operations) and checks: every acknowledged row is visible exactly once,
// nothing unacknowledged is partially visible, nothing uncommitted is
// visible.
//
// It is deterministic: the scenario runs its writers in one goroutine
// (crashScenarioSeq), so the k-th operation is the same one every run,
// and the power loss of crash k draws from an rng seeded with (seed, k).
// A failure names k; the same seed replays it.
func TestCrashAtEveryWrite(t *testing.T) {
	const rounds = 6
	for _, tc := range []struct {
		segSize      int64
		compactEvery int
	}{{1 << 20, 0}, {4096, 0}, {4096, 2}} {
		segSize, compactEvery := tc.segSize, tc.compactEvery
		t.Run(fmt.Sprintf("segment=%d/compact-every=%d", segSize, compactEvery), func(t *testing.T) {
			opts := func(fs vfs.FS) *Options {
				return &Options{FS: fs, SegmentSize: segSize}
			}
			// Count the operations of a full run.
			fs := vfs.NewMem()
			db, err := Open("db", opts(fs))
			if err != nil {
				t.Fatal(err)
			}
			l := newLedger()
			crashScenarioSeq(db, l, rounds, 0, compactEvery)
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			total := fs.Ops()
			m := db.Metrics()
			t.Logf("scenario does %d mutating operations, %d syncs, %d frames, %d rolls, %d compactions", total, m.Syncs, m.SyncedFrames, m.Rolls, m.Compactions)
			if segSize < 1<<20 && m.Rolls == 0 {
				t.Fatalf("no log file was sealed")
			}
			if compactEvery > 0 && m.Compactions == 0 {
				t.Fatalf("no compaction replaced files")
			}
			const seed = uint64(42)
			t.Logf("seed %d", seed)
			for k := 0; k <= total+2; k++ {
				rng := rand.New(rand.NewPCG(seed, uint64(k)))
				fs := vfs.NewMem()
				db, err := Open("db", opts(fs))
				if err != nil {
					t.Fatal(err)
				}
				fs.SetCrashAfter(k)
				l := newLedger()
				crashScenarioSeq(db, l, rounds, 0, compactEvery)
				_ = db.Close()
				crashed := fs.PowerLoss(rng)
				db2, err := Open("db", opts(crashed))
				if err != nil {
					t.Fatalf("k=%d: recovery failed: %v", k, err)
				}
				checkRecovered(t, db2, l, fmt.Sprintf("k=%d", k))
				if err := db2.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
