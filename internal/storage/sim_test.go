package storage

// The deterministic crash simulator.
//
// TestSim drives one table from a single goroutine with random
// operations of every kind the engine supports — appends to every stream
// type with and without offsets (in order, retried and out of range),
// pipelined appends that share one fdatasync, stream creation, finalize,
// flush, batch commit, schema changes (and appends at older schema
// versions), a fake clock that steps forward and sometimes jumps past the
// PENDING stream TTL (abandonment) or the time-travel window (stream
// GC), compaction, snapshots now and in the
// past, snapshots held across compactions, partial and projected reads,
// other tables created, appended to and dropped, clean restarts — on an in-memory filesystem with a crash point. When
// the crash point is reached (or at a random moment between operations)
// the machine loses power: vfs.MemFS.PowerLoss keeps what was synced and
// persists each unsynced page whole, in part or not at all,
// independently, and a random prefix of the namespace operations no
// directory sync covered. Sometimes recovery itself is crashed and
// recovered again. Then the simulator recovers and compares the engine
// with a reference model (sim_model_test.go) of what was acknowledged:
//
//   - recovery succeeds on every directory a crash produced;
//   - every acknowledged row is visible exactly once, nothing that was
//     neither acknowledged nor found durable is visible, and the
//     unacknowledged records recovery found durable are a prefix of those
//     in flight (whole records; a batch commit all or nothing);
//   - time travel is exact: a snapshot at any time T returns exactly the
//     rows the model says were visible at T, and the same rows as every
//     earlier snapshot at T (before a crash, a compaction or a restart);
//   - stream metadata (state, offsets, flush watermark, times, schema
//     version) and the schema in force at each time match;
//   - exactly the acknowledged tables exist, with their rows.
//
// The filesystem sees the same operations in the same order for a given
// seed: the driver waits for each operation, and pipelined appends are
// held at a gate (gateFS) until all of them are queued, so the log writer
// always writes them as one group. A seed therefore replays a run (stream
// ids and the table's directory name, which come from crypto/rand,
// differ; they change no decision).
//
// Run:
//
//	go test ./internal/storage -run 'TestSim$'                   # the fixed seeds (-short: fewer)
//	go test ./internal/storage -run 'TestSim$' -sim.seed=N -v    # replay one seed, with its trace
//	go test ./internal/storage -run 'TestSim$' -sim.start=1000 -sim.soak=30m -timeout 0   # a soak
//
// A failure prints the replay command.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/bqstore/bqstore/internal/storage/vfs"
)

var (
	simSeed  = flag.Int64("sim.seed", -1, "TestSim: replay only this seed (with its trace under -v)")
	simStart = flag.Int64("sim.start", 1, "TestSim: first seed")
	simSeeds = flag.Int("sim.seeds", 200, "TestSim: number of seeds (-short: 25)")
	simSoak  = flag.Duration("sim.soak", 0, "TestSim: run seeds from -sim.start on until this much time passed (a soak; overrides -sim.seeds)")
	simSteps = flag.Int("sim.steps", 150, "TestSim: operations per seed")
	simFull  = flag.Bool("sim.full", false, "TestSim: also run what is narrowed while known findings are open (see simNarrowed)")
)

// simNarrowed reports whether a known finding of issue 11, fixed by
// another change not yet on main, still narrows the simulator: the
// simulator keeps the check, but avoids the operation that triggers it.
// -sim.full runs it anyway (to test a fix). Remove an entry once its fix
// is on main.
func simNarrowed(finding int) bool {
	if *simFull {
		return false
	}
	// None now. Findings 1 (a torn seal made Open fail) and 4 (an
	// unsynced group persisted out of order was read as corruption)
	// were narrowed here until their fixes reached main.
	_ = finding
	return false
}

func TestSim(t *testing.T) {
	if *simSeed >= 0 {
		st, err := runSim(*simSeed, *simSteps, t.Logf)
		if err != nil {
			t.Fatalf("seed %d: %v", *simSeed, err)
		}
		t.Logf("%+v", st)
		return
	}
	n := *simSeeds
	if testing.Short() {
		n = min(n, 25)
	}
	start := time.Now()
	ran := 0
	var total simStats
	for seed := *simStart; ; seed++ {
		if *simSoak > 0 {
			if time.Since(start) >= *simSoak {
				break
			}
		} else if ran >= n {
			break
		}
		st, err := runSim(seed, *simSteps, nil)
		if err != nil {
			t.Fatalf("seed %d: %v\nreplay: go test ./internal/storage -run 'TestSim$' -sim.seed=%d -v", seed, err, seed)
		}
		total.add(st)
		ran++
	}
	t.Logf("%d seeds from %d in %v: %+v", ran, *simStart, time.Since(start).Round(time.Millisecond), total)
}

// simStats count what the runs did, to show the simulator reaches what
// it means to test.
type simStats struct {
	Crashes, RecoveryCrashes, InFlight, Adopted, TornTails int
	Collected                                              int // requests that found a stream collected (gc.go)
	Rolls, Compactions, FailStops, Checks                  int64
}

func (s *simStats) add(o simStats) {
	s.Crashes += o.Crashes
	s.RecoveryCrashes += o.RecoveryCrashes
	s.InFlight += o.InFlight
	s.Adopted += o.Adopted
	s.TornTails += o.TornTails
	s.Rolls += o.Rolls
	s.Compactions += o.Compactions
	s.FailStops += o.FailStops
	s.Checks += o.Checks
	s.Collected += o.Collected
}

// countHandler counts the engine's torn-tail truncations.
type countHandler struct{ torn *int }

func (h countHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h countHandler) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "torn") {
		*h.torn++
	}
	return nil
}
func (h countHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h countHandler) WithGroup(string) slog.Handler      { return h }

// simError is a failed check; runSim recovers it.
type simError struct{ msg string }

// gateFS holds every file write while closed, so that the driver can
// queue several appends before the log writer writes the first: they
// then always form one group, whatever the goroutine scheduling.
type gateFS struct {
	vfs.FS
	mu     sync.Mutex
	cond   *sync.Cond
	closed bool
}

func newGateFS(fs vfs.FS) *gateFS {
	g := &gateFS{FS: fs}
	g.cond = sync.NewCond(&g.mu)
	return g
}

func (g *gateFS) set(closed bool) {
	g.mu.Lock()
	g.closed = closed
	g.cond.Broadcast()
	g.mu.Unlock()
}

type gateFile struct {
	vfs.File
	g *gateFS
}

func (f gateFile) Write(p []byte) (int, error) {
	f.g.mu.Lock()
	for f.g.closed {
		f.g.cond.Wait()
	}
	f.g.mu.Unlock()
	return f.File.Write(p)
}

func (g *gateFS) wrap(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return gateFile{File: f, g: g}, nil
}

func (g *gateFS) Create(name string) (vfs.File, error)     { return g.wrap(g.FS.Create(name)) }
func (g *gateFS) OpenAppend(name string) (vfs.File, error) { return g.wrap(g.FS.OpenAppend(name)) }

const simTable = "p/d/sim"

// sim is one run.
type sim struct {
	seed  int64
	rng   *rand.Rand
	logf  func(string, ...any) // nil: no trace
	clk   *fakeClock
	opts  Options
	mem   *vfs.MemFS
	gate  *gateFS
	db    *DB
	tb    *Table
	m     *simModel
	held  []simHeld
	ids   int64 // next row id
	trace []string
	// inflight: records queued whose acknowledgement was lost to the
	// crash, in log order.
	inflight []simInflight
	// queuedTS is the timestamp of the last record queued (acknowledged
	// or not); readTS the latest snapshot time taken: later records are
	// stamped after both.
	queuedTS, readTS int64
	// lostCreate: a CreateStream whose acknowledgement a crash took;
	// ghosts: such streams recovery found durable (ids unknown).
	lostCreate *simStream
	ghosts     []*simStream
	// others: the other tables (sim_tables_test.go); otherInflight: an
	// operation on one whose acknowledgement a crash took.
	others        map[string]*simOther
	otherInflight *simOtherOp
	// maybeTS bounds the timestamp of any record attempted (it may have
	// reached a checkpoint even if the record was lost).
	maybeTS int64
	st      simStats
	steps   int
}

type simHeld struct {
	s   *Snapshot
	ts  int64
	ids []int64
}

type simInflight struct {
	kind    string // "append", "finalize", "flush", "commit", "schema"
	s       *simStream
	first   int64   // append
	ids     []int64 // append
	w       int64   // flush: the new watermark
	streams []*simStream
	version int           // schema
	schema  *arrow.Schema // schema
	ts      int64
}

func (w *sim) failf(format string, args ...any) {
	panic(simError{fmt.Sprintf(format, args...)})
}

func (w *sim) tracef(format string, args ...any) {
	line := fmt.Sprintf("step %d: ", w.steps) + fmt.Sprintf(format, args...)
	if w.logf != nil {
		w.logf("%s", line)
	}
	w.trace = append(w.trace, line)
	if len(w.trace) > 40 {
		w.trace = w.trace[len(w.trace)-40:]
	}
}

func (w *sim) now() int64 { return w.clk.Now().UnixMicro() }

// runSim runs one seed and returns the first failed check (with the last
// steps of the trace).
func runSim(seed int64, steps int, logf func(string, ...any)) (st simStats, err error) {
	w := &sim{seed: seed, rng: rand.New(rand.NewPCG(uint64(seed), 0x5eed)), logf: logf, clk: newFakeClock(), others: map[string]*simOther{}}
	w.opts = Options{
		Clock:            w.clk.Now,
		SegmentSize:      []int64{2 << 10, 4 << 10, 8 << 10, 64 << 10}[w.rng.IntN(4)],
		PendingStreamTTL: time.Hour,
		TimeTravel:       []time.Duration{3 * time.Hour, 10000 * time.Hour}[w.rng.IntN(2)],
		Logger:           slog.New(countHandler{torn: &w.st.TornTails}),
	}
	defer func() {
		for _, h := range w.held {
			h.s.Release()
		}
		if w.gate != nil {
			w.gate.set(false) // a check failed while appends were held
		}
		if w.db != nil {
			_ = w.db.Close()
		}
		st = w.st
		if r := recover(); r != nil {
			se, ok := r.(simError)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("%s\nsegment size %d, time travel %v; last steps:\n  %s", se.msg, w.opts.SegmentSize, w.opts.TimeTravel, strings.Join(w.trace, "\n  "))
		}
	}()
	w.mem = vfs.NewMem()
	w.open(w.mem)
	ctx := context.Background()
	tb, err := w.db.CreateTable(ctx, simTable, testSchema)
	if err != nil {
		w.failf("create table: %v", err)
	}
	w.tb = tb
	w.m = newSimModel(w.now(), w.opts.PendingStreamTTL.Microseconds(), w.opts.TimeTravel.Microseconds())
	w.m.lastTS = w.now()
	w.armCrash()
	for w.steps = 0; w.steps < steps; w.steps++ {
		w.step()
	}
	// The end: a last power loss; everything acknowledged must be there.
	w.crash("final power loss")
	return w.st, nil
}

func (w *sim) open(fs *vfs.MemFS) {
	w.mem = fs
	w.gate = newGateFS(fs)
	o := w.opts
	o.FS = w.gate
	db, err := Open("db", &o)
	if err != nil {
		w.failf("recovery failed: %v", err)
	}
	w.db = db
}

// armCrash sets the crash point of this epoch.
func (w *sim) armCrash() {
	if w.rng.IntN(5) == 0 {
		w.mem.SetCrashAfter(-1)
		return
	}
	w.mem.SetCrashAfter(1 + w.rng.IntN(120))
}

// lost reports whether err is the machine dying (the crash point reached
// or the table fail-stopped by it).
func lost(err error) bool {
	return errors.Is(err, vfs.ErrInjected) || errors.Is(err, ErrFailStop)
}

// step runs one random operation.
func (w *sim) step() {
	// Most operations start at a later clock; some keep the clock of the
	// previous one: a snapshot taken then fixes T = now, and a record
	// stamped after it must still get a later timestamp (finding 5).
	if w.rng.IntN(5) != 0 {
		w.clk.Advance(time.Duration(1+w.rng.IntN(5000)) * time.Millisecond)
	}
	switch p := w.rng.IntN(100); {
	case p < 28:
		w.opAppend()
	case p < 38:
		w.opAppendGroup()
	case p < 45:
		w.opCreateStream()
	case p < 51:
		w.opFinalize()
	case p < 57:
		w.opFlush()
	case p < 63:
		w.opCommit()
	case p < 65:
		d := w.opts.PendingStreamTTL + time.Duration(w.rng.IntN(3*3600))*time.Second
		w.tracef("clock jumps %v", d)
		w.clk.Advance(d)
	case p < 71:
		w.opCompact()
	case p < 77:
		w.opSnapshot()
	case p < 83:
		w.opTimeTravel()
	case p < 87:
		w.opHold()
	case p < 90:
		w.opReadHeld()
	case p < 93:
		w.opSchema()
	case p < 94:
		w.opRelease()
	case p < 96:
		w.crash("power loss between operations")
	case p < 97:
		w.restart()
	case p < 99:
		w.opOther()
	default:
		w.verify("check")
	}
}

// TestSimDeterministic runs one seed twice and compares the traces: the
// same seed must make the same run (stream ids and the table directory,
// from crypto/rand, are replaced by their order of appearance).
func TestSimDeterministic(t *testing.T) {
	run := func() []string {
		var lines []string
		ids := map[string]string{}
		re := regexp.MustCompile(`\b[0-9a-f]{24}\b|t-[0-9a-f]{16}\b`)
		if _, err := runSim(7, *simSteps, func(format string, args ...any) {
			line := re.ReplaceAllStringFunc(fmt.Sprintf(format, args...), func(id string) string {
				if _, ok := ids[id]; !ok {
					ids[id] = fmt.Sprintf("stream%d", len(ids))
				}
				return ids[id]
			})
			lines = append(lines, line)
		}); err != nil {
			t.Fatal(err)
		}
		return lines
	}
	a, b := run(), run()
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			t.Fatalf("runs of one seed differ at line %d:\n%s\n%s", i, a[i], b[i])
		}
	}
	if len(a) != len(b) {
		t.Fatalf("runs of one seed differ: %d and %d lines", len(a), len(b))
	}
	t.Logf("%d identical lines", len(a))
}
