package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/bqstore/bqstore/ingest"
)

// crashingLedger fails the seal of one batch once, for good (as a crash
// between the dead letters' fsync and the seal would).
type crashingLedger struct {
	ingest.Ledger
	batch uint64
	fired atomic.Bool
}

// Identity forwards the wrapped ledger's (it binds the dead-letter file).
func (l *crashingLedger) Identity() string {
	return l.Ledger.(interface{ Identity() string }).Identity()
}

func (l *crashingLedger) Store(ctx context.Context, p string, s ingest.State) error {
	if s.Sealed && s.Batch == l.batch && l.fired.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: %w", ingest.ErrStoreFinal, errCrash)
	}
	return l.Ledger.Store(ctx, p, s)
}

// TestDeadLettersCrashInFirstBatch: the first batch's dead letters are
// durable, then the run dies before its seal. The restart replays the
// batch; its dead letters must not be written twice (the initial state
// recorded no dead-letter size, so nothing was truncated).
func TestDeadLettersCrashInFirstBatch(t *testing.T) {
	e := newEnv(t)
	table := e.table(t, "dl_first")
	const n = 100
	src, bad := writeEvents(t, n, 10)
	dir := t.TempDir()
	r := run{e: e, table: table, source: src, stateDir: filepath.Join(dir, "state"), deadLetter: filepath.Join(dir, "dead.ndjson"),
		wrapLedger: func(l ingest.Ledger) ingest.Ledger { return &crashingLedger{Ledger: l, batch: 1} }}
	if err := r.do(t); !errors.Is(err, errCrash) {
		t.Fatalf("first run: %v, want the crash at the first seal", err)
	}
	if got := countLines(t, r.deadLetter); got == 0 {
		t.Fatal("no dead letter was durable before the crash: the test proves nothing")
	}
	r.wrapLedger = nil
	if err := r.do(t); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, e.readIDs(t, table), n)
	if got := countLines(t, r.deadLetter); got != bad {
		t.Fatalf("dead letters: %d lines, want %d", got, bad)
	}
}

// TestDeadLettersSharedFile: two sources (two state directories) pointed
// at one dead-letter file. The first crashed mid-run; if the second could
// append, the first's recovery would truncate the second's lines. The
// second is refused, naming the file's owner, and the first recovers with
// its dead letters exactly once.
func TestDeadLettersSharedFile(t *testing.T) {
	e := newEnv(t)
	const n = 200
	srcA, badA := writeEvents(t, n, 10)
	srcB, _ := writeEvents(t, n, 7)
	dir := t.TempDir()
	dead := filepath.Join(dir, "dead.ndjson")
	a := run{e: e, table: e.table(t, "dl_a"), source: srcA, stateDir: filepath.Join(dir, "stateA"), deadLetter: dead,
		wrapLedger: func(l ingest.Ledger) ingest.Ledger { return &crashingLedger{Ledger: l, batch: 3} }}
	if err := a.do(t); !errors.Is(err, errCrash) {
		t.Fatalf("run A: %v, want the crash", err)
	}
	b := run{e: e, table: e.table(t, "dl_b"), source: srcB, stateDir: filepath.Join(dir, "stateB"), deadLetter: dead}
	err := b.do(t)
	if !errors.Is(err, ingest.ErrDeadLettersInUse) {
		t.Fatalf("run B on A's dead-letter file: %v, want ErrDeadLettersInUse", err)
	}
	a.wrapLedger = nil
	if err := a.do(t); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, e.readIDs(t, a.table), n)
	if got := countLines(t, dead); got != badA {
		t.Fatalf("dead letters: %d lines, want A's %d", got, badA)
	}
	// Held open by a run, the file cannot be opened by another.
	d, err := ingest.OpenDeadLetters(dead)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := ingest.OpenDeadLetters(dead); !errors.Is(err, ingest.ErrDeadLettersInUse) {
		t.Fatalf("second open of a dead-letter file in use: %v, want ErrDeadLettersInUse", err)
	}
}
