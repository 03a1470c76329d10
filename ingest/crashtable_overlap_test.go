package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/bqstore/bqstore/ingest"
)

// The overlapped window: batch k is closed (sealed, committed, DONE) on
// the closer while batch k+1 is appended, and DONE k rides on the next
// state stored when batch k+1 is already waiting for the closer
// (docs/ingest-protocol.md, "One write for DONE k and seal k+1"). These
// tests hold the closer until the worker is where they want it, so the
// window is reached on every run, not by timing.

// stateLog records the states a run stores and the hook points it
// reaches, in one order.
type stateLog struct {
	mu     sync.Mutex
	events []string
}

func (l *stateLog) add(s string) {
	l.mu.Lock()
	l.events = append(l.events, s)
	l.mu.Unlock()
}

func (l *stateLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

func stateEvent(st ingest.State) string {
	if st.Sealed {
		return fmt.Sprintf("store SEALED b%d", st.Batch)
	}
	return fmt.Sprintf("store IDLE b%d", st.Batch)
}

// TestCrashTableDoneCarriedBySeal: the closer reaches AfterCommit of
// batch 2 only once the worker created batch 4's stream, so batch 3 is
// waiting: no DONE of batch 2 is written, seal 3 is stored right over
// seal 2 and carries it (AfterDone of batch 2 follows it, before
// AfterSeal of batch 3). The process dies at AfterCommit 2 (the state is
// seal 2, its streams committed: row 8), at AfterDone 2 (the state is
// seal 3), or not at all; every record ends in the table once.
func TestCrashTableDoneCarriedBySeal(t *testing.T) {
	e := newEnv(t)
	const n = 200 // 5 batches of 40
	src, _ := writeEvents(t, n, 0)
	for _, crash := range []ingest.Point{"", ingest.AfterCommit, ingest.AfterDone} {
		name := "none"
		if crash != "" {
			name = string(crash)
		}
		t.Run("crash="+name, func(t *testing.T) {
			table := e.table(t, "carried_"+map[ingest.Point]string{"": "none", ingest.AfterCommit: "commit", ingest.AfterDone: "done"}[crash])
			dir := t.TempDir()
			log := &stateLog{}
			created4 := make(chan struct{})
			var once sync.Once
			hooks := hookFunc(func(p ingest.Point, _ string, b uint64) error {
				log.add(fmt.Sprintf("%s b%d", p, b))
				if p == ingest.AfterCreate && b == 4 {
					once.Do(func() { close(created4) })
				}
				if p == ingest.AfterCommit && b == 2 {
					// Batch 3 is at the closer once batch 4 has a stream.
					<-created4
				}
				if p == crash && b == 2 {
					return errCrash
				}
				return nil
			})
			r := run{e: e, table: table, source: src, stateDir: filepath.Join(dir, "state"),
				deadLetter: filepath.Join(dir, "dead.ndjson"), hooks: hooks,
				mutate: func(c *ingest.Config) {
					inner := c.Ledger
					c.Ledger = &ledgerFunc{inner: inner, store: func(ctx context.Context, key string, st ingest.State, do func() error) error {
						err := do()
						if err == nil {
							log.add(stateEvent(st))
						}
						return err
					}}
				}}
			err := r.do(t)
			events := log.list()
			switch {
			case crash == "" && err != nil:
				t.Fatalf("Run: %v", err)
			case crash != "" && !errors.Is(err, errCrash):
				t.Fatalf("first run: %v, want the injected crash at %s", err, crash)
			}
			i := slices.Index(events, "store SEALED b2")
			if i < 0 {
				t.Fatalf("seal 2 never stored: %v", events)
			}
			var want []string
			switch crash {
			case ingest.AfterCommit:
				want = []string{"store SEALED b2", "after-seal b2", "after-commit b2"}
			case ingest.AfterDone:
				want = []string{"store SEALED b2", "after-seal b2", "after-commit b2", "store SEALED b3", "after-done b2"}
			default:
				want = []string{"store SEALED b2", "after-seal b2", "after-commit b2", "store SEALED b3", "after-done b2", "after-seal b3"}
			}
			// The worker's hook points (after-create, mid-append,
			// after-finalize) interleave, and so may batch 1's DONE
			// (carried by seal 2 if batch 2 was waiting); the closer's
			// order for batches 2 and 3 is fixed.
			var got []string
			for _, ev := range events[i:] {
				if slices.Contains([]string{"after-create", "mid-append", "after-finalize"}, ev[:strings.LastIndexByte(ev, ' ')]) ||
					strings.HasSuffix(ev, " b1") {
					continue
				}
				got = append(got, ev)
				if len(got) == len(want) {
					break
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("closer steps from seal 2: %v, want %v (all: %v)", got, want, events)
			}

			ledger, err := ingest.OpenFileLedger(r.stateDir)
			if err != nil {
				t.Fatal(err)
			}
			st, err := ledger.Load(context.Background(), "file:"+src)
			ledger.Close()
			if err != nil {
				t.Fatal(err)
			}
			switch crash {
			case ingest.AfterCommit:
				if !st.Sealed || st.Batch != 2 {
					t.Errorf("state after the crash: %v, want seal 2 (committed, no DONE)", st)
				}
				ws, err := e.write.GetWriteStream(context.Background(), &storagepb.GetWriteStreamRequest{Name: table + "/streams/" + st.Streams[0].ID})
				if err != nil || ws.GetCommitTime() == nil {
					t.Errorf("seal 2's stream: %v, %v; want committed", ws, err)
				}
			case ingest.AfterDone:
				if !st.Sealed || st.Batch != 3 {
					t.Errorf("state after the crash: %v, want seal 3 (carrying DONE 2)", st)
				}
			default:
				if st.Sealed || st.Offset == 0 {
					t.Errorf("state after the run: %v, want IDLE at the end", st)
				}
			}
			if crash != "" {
				r.hooks, r.mutate = nil, nil
				if err := r.do(t); err != nil {
					t.Fatalf("restart: %v", err)
				}
			}
			checkExactlyOnce(t, e.readIDs(t, table), n)
		})
	}
}

// heldCommit is the real Write client, except that a BatchCommitWriteStreams
// naming the stream of interest is never applied: it reports that it is
// in flight and fails when its context ends (the process died with it in
// flight).
type heldCommit struct {
	storagepb.BigQueryWriteClient
	mu     sync.Mutex
	stream string
	held   chan struct{}
	once   sync.Once
}

func (c *heldCommit) BatchCommitWriteStreams(ctx context.Context, req *storagepb.BatchCommitWriteStreamsRequest, opts ...grpc.CallOption) (*storagepb.BatchCommitWriteStreamsResponse, error) {
	c.mu.Lock()
	want := c.stream
	c.mu.Unlock()
	if want != "" && slices.Contains(req.GetWriteStreams(), want) {
		c.once.Do(func() { close(c.held) })
		<-ctx.Done()
		return nil, status.Error(codes.Unavailable, "never sent")
	}
	return c.BigQueryWriteClient.BatchCommitWriteStreams(ctx, req, opts...)
}

// TestCrashTableSealedWhileNextHalfAppended: the process dies with batch
// 1 sealed but not committed (its BatchCommit in flight, never applied)
// and batch 2 half appended. Nothing runs after the crash point: batch 1
// is neither committed nor marked DONE by the dead run; the restart
// commits seal 1 and replays batch 2. Every record ends in the table once.
func TestCrashTableSealedWhileNextHalfAppended(t *testing.T) {
	e := newEnv(t)
	const n = 200
	src, bad := writeEvents(t, n, 30)
	table := e.table(t, "sealed_next_half")
	dir := t.TempDir()
	client := &heldCommit{BigQueryWriteClient: e.write, held: make(chan struct{})}
	var (
		mu         sync.Mutex
		crashed    bool
		afterCrash []string
	)
	hooks := hookFunc(func(p ingest.Point, _ string, b uint64) error {
		mu.Lock()
		if crashed {
			afterCrash = append(afterCrash, fmt.Sprintf("%s@%d", p, b))
		}
		mu.Unlock()
		if p != ingest.MidAppend || b != 2 {
			return nil
		}
		<-client.held // batch 1's commit is in flight
		mu.Lock()
		crashed = true
		mu.Unlock()
		return errCrash
	})
	r := run{e: e, table: table, source: src, stateDir: filepath.Join(dir, "state"),
		deadLetter: filepath.Join(dir, "dead.ndjson"), hooks: hooks,
		mutate: func(c *ingest.Config) {
			c.Client = client
			inner := c.Ledger
			c.Ledger = &ledgerFunc{inner: inner, store: func(ctx context.Context, key string, st ingest.State, do func() error) error {
				if st.Sealed && st.Batch == 1 {
					client.mu.Lock()
					client.stream = table + "/streams/" + st.Streams[0].ID
					client.mu.Unlock()
				}
				return do()
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
	st, err := ledger.Load(context.Background(), "file:"+src)
	ledger.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !st.Sealed || st.Batch != 1 {
		t.Fatalf("state after the crash: %v, want seal 1", st)
	}
	ws, err := e.write.GetWriteStream(context.Background(), &storagepb.GetWriteStreamRequest{Name: table + "/streams/" + st.Streams[0].ID})
	if err != nil {
		t.Fatal(err)
	}
	if ws.GetCommitTime() != nil {
		t.Errorf("batch 1's stream was committed by the dead run")
	}
	r.hooks, r.mutate = nil, nil
	if err := r.do(t); err != nil {
		t.Fatalf("restart: %v", err)
	}
	checkExactlyOnce(t, e.readIDs(t, table), n)
	if got := countLines(t, r.deadLetter); got != bad {
		t.Errorf("dead letters: %d lines, want %d", got, bad)
	}
}
