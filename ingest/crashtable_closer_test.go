package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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
						// lands, and its reply reaches nobody. The crash
						// cancels the run, and the run waits for its closer,
						// so ctx ends (no timeout: under load a timer could
						// fire first and hand the reply to a live closer).
						<-ctx.Done()
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

// lostCommitReply is the real Write client, except that the first
// BatchCommitWriteStreams naming a stream of interest is applied and its
// reply lost (UNAVAILABLE), and then die is called. It counts the
// commits and GetWriteStream calls that name each stream.
type lostCommitReply struct {
	storagepb.BigQueryWriteClient
	want func(name string) bool
	die  func()

	mu      sync.Mutex
	lost    string // the stream whose commit reply was lost
	commits map[string]int
	gets    map[string]int
}

func (c *lostCommitReply) BatchCommitWriteStreams(ctx context.Context, req *storagepb.BatchCommitWriteStreamsRequest, opts ...grpc.CallOption) (*storagepb.BatchCommitWriteStreamsResponse, error) {
	resp, err := c.BigQueryWriteClient.BatchCommitWriteStreams(ctx, req, opts...)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range req.GetWriteStreams() {
		c.commits[n]++
	}
	if err != nil || c.lost != "" {
		return resp, err
	}
	for _, n := range req.GetWriteStreams() {
		if c.want(n) {
			c.lost = n
			if c.die != nil {
				c.die()
			}
			return nil, status.Error(codes.Unavailable, "reply lost")
		}
	}
	return resp, err
}

func (c *lostCommitReply) GetWriteStream(ctx context.Context, req *storagepb.GetWriteStreamRequest, opts ...grpc.CallOption) (*storagepb.WriteStream, error) {
	c.mu.Lock()
	c.gets[req.GetName()]++
	c.mu.Unlock()
	return c.BigQueryWriteClient.GetWriteStream(ctx, req, opts...)
}

// TestCrashTableRow6LostCommitReply: BatchCommitWriteStreams of batch 2
// is applied and its reply lost (crash table row 6), proven to take that
// path:
//
//   - retry: the committer retries; the server answers
//     STREAM_ALREADY_COMMITTED; GetWriteStream confirms the commit_time;
//     the batch is reported with that commit_time and DONE follows.
//   - restart: the process dies with the reply lost; the restart finds the
//     seal, sees commit_time set through GetWriteStream and writes DONE
//     without committing the stream again.
//
// Every record ends in the table once.
func TestCrashTableRow6LostCommitReply(t *testing.T) {
	e := newEnv(t)
	const n = 200
	src, _ := writeEvents(t, n, 0)
	for _, restart := range []bool{false, true} {
		name := "retry"
		if restart {
			name = "restart"
		}
		t.Run(name, func(t *testing.T) {
			table := e.table(t, "row6_"+name)
			dir := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var sealed2 string
			client := &lostCommitReply{BigQueryWriteClient: e.write, commits: map[string]int{}, gets: map[string]int{},
				want: func(name string) bool { return name == sealed2 }}
			if restart {
				client.die = cancel
			}
			var commits []ingest.Committed
			r := run{e: e, table: table, source: src, stateDir: filepath.Join(dir, "state"), deadLetter: filepath.Join(dir, "dead.ndjson"),
				mutate: func(c *ingest.Config) {
					c.Client = client
					c.OnCommit = func(cm ingest.Committed) { commits = append(commits, cm) }
					inner := c.Ledger
					c.Ledger = &ledgerFunc{inner: inner, store: func(sctx context.Context, key string, st ingest.State, do func() error) error {
						if st.Sealed && st.Batch == 2 {
							client.mu.Lock()
							sealed2 = table + "/streams/" + st.Streams[0].ID
							client.mu.Unlock()
						}
						return do()
					}}
				}}
			err := r.doCtx(t, ctx)
			client.mu.Lock()
			lost := client.lost
			client.mu.Unlock()
			if lost == "" || lost != sealed2 {
				t.Fatalf("no commit reply of batch 2 was lost (lost %q, sealed %q; run: %v)", lost, sealed2, err)
			}
			if restart {
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("first run: %v, want it to die after the lost reply", err)
				}
				client.die = nil
				commits = nil
				if err := r.do(t); err != nil {
					t.Fatalf("restart: %v", err)
				}
			} else if err != nil {
				t.Fatalf("Run: %v", err)
			}
			ws, err := e.write.GetWriteStream(context.Background(), &storagepb.GetWriteStreamRequest{Name: lost})
			if err != nil {
				t.Fatal(err)
			}
			client.mu.Lock()
			nCommits, nGets := client.commits[lost], client.gets[lost]
			client.mu.Unlock()
			wantCommits := 2 // the lost reply, then STREAM_ALREADY_COMMITTED
			if restart {
				wantCommits = 1 // the restart commits nothing again
			}
			if nCommits != wantCommits || nGets < 1 {
				t.Errorf("batch 2's stream: %d BatchCommit calls and %d GetWriteStream calls, want %d and at least 1", nCommits, nGets, wantCommits)
			}
			var b2 *ingest.Committed
			for i := range commits {
				if commits[i].Batch == 2 {
					b2 = &commits[i]
				}
			}
			if b2 == nil || !b2.Time.Equal(ws.GetCommitTime().AsTime()) {
				t.Errorf("batch 2 reported as %+v, want the stream's commit_time %v", b2, ws.GetCommitTime().AsTime())
			}
			checkExactlyOnce(t, e.readIDs(t, table), n)
		})
	}
}
