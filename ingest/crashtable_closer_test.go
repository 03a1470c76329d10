package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"

	"github.com/bqstore/bqstore/ingest"
)

// TestCrashTableHalfClosedPrevious: the process dies at a point of batch 2
// while batch 1 is half closed: its seal was sent and lands, but the
// closer has not seen the reply. Hooks promise that nothing after the
// point runs, and that holds for the closer too: batch 1 is neither
// committed nor marked DONE by the dead run (the restart resolves the
// seal). Every record ends in the table once.
func TestCrashTableHalfClosedPrevious(t *testing.T) {
	e := newEnv(t)
	const n = 200
	src, bad := writeEvents(t, n, 30)
	for _, p := range []ingest.Point{ingest.AfterCreate, ingest.MidAppend, ingest.AfterFinalize} {
		t.Run("point="+string(p), func(t *testing.T) {
			table := e.table(t, fmt.Sprintf("halfclosed_%d", len(p)))
			dir := t.TempDir()
			sealing := make(chan struct{})
			var (
				mu         sync.Mutex
				crashed    bool
				afterCrash []string // hook points reached after the crash
				seal       ingest.State
			)
			hooks := hookFunc(func(pt ingest.Point, _ string, b uint64) error {
				mu.Lock()
				if crashed {
					afterCrash = append(afterCrash, fmt.Sprintf("%s@%d", pt, b))
				}
				mu.Unlock()
				if pt != p || b != 2 {
					return nil
				}
				<-sealing
				mu.Lock()
				crashed = true
				mu.Unlock()
				return errCrash
			})
			r := run{e: e, table: table, source: src, stateDir: filepath.Join(dir, "state"),
				deadLetter: filepath.Join(dir, "dead.ndjson"), hooks: hooks,
				mutate: func(c *ingest.Config) {
					inner := c.Ledger
					c.Ledger = &ledgerFunc{inner: inner, store: func(ctx context.Context, key string, st ingest.State, do func() error) error {
						if !st.Sealed || st.Batch != 1 {
							return do()
						}
						seal = st
						close(sealing)
						// The seal is in flight when the process dies; it
						// lands, and its reply reaches nobody.
						select {
						case <-ctx.Done():
						case <-time.After(5 * time.Second):
						}
						return inner.Store(context.Background(), key, st)
					}}
				}}
			err := r.do(t)
			if !errors.Is(err, errCrash) {
				t.Fatalf("first run: %v, want the injected crash", err)
			}
			mu.Lock()
			if len(afterCrash) > 0 {
				t.Errorf("hook points reached after the crash: %v", afterCrash)
			}
			mu.Unlock()
			ledger, err := ingest.OpenFileLedger(r.stateDir)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ledger.Load(context.Background(), "file:"+src)
			ledger.Close()
			if err != nil {
				t.Fatal(err)
			}
			if !got.Sealed || got.Batch != 1 {
				t.Errorf("state after the crash: %v, want batch 1's seal (no DONE written after the crash)", got)
			}
			ws, err := e.write.GetWriteStream(context.Background(), &storagepb.GetWriteStreamRequest{Name: table + "/streams/" + seal.Streams[0].ID})
			if err != nil {
				t.Fatal(err)
			}
			if ws.GetCommitTime() != nil {
				t.Errorf("batch 1's stream was committed after the crash")
			}
			r.hooks = nil
			if err := r.do(t); err != nil {
				t.Fatalf("restart: %v", err)
			}
			checkExactlyOnce(t, e.readIDs(t, table), n)
			if got := countLines(t, r.deadLetter); got != bad {
				t.Errorf("dead letters: %d lines, want %d", got, bad)
			}
		})
	}
}
