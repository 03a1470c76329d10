package ingest_test

// Focused tests for rows 10-16 of the crash table (docs/ingest-protocol.md):
// rebalances before and after the seal, a zombie member, a
// cooperative revoke mid-batch, ambiguous OffsetCommit replies and a broker
// restart, and a sealed stream the server does not know. Rows 1-9 are in
// pipeline_test.go and kafka_test.go, row 15 in kill_test.go, row 17 in
// retention_test.go. Each test ends by reading the table through the Read
// API.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bqstore/bqstore/ingest"
)

// TestCrashTableRow14BrokerRestart: the only broker (the group coordinator)
// stops right after a seal was acknowledged and comes back on the same port
// from its data directory. The seal survives the restart (committed offsets
// and their metadata are durable); the pipeline's kafka client reconnects
// and its DONE reaches the restarted broker. (kfake reloads the group with
// its members; a coordinator that forgot the member would fence the DONE,
// and the partition's next owner would resolve the seal: the zombie test's
// path.) Every record ends in the table once.
func TestCrashTableRow14BrokerRestart(t *testing.T) {
	e := newEnv(t)
	table := e.table(t, "row14_restart")
	const n, group = 200, "restart"
	const key = "kafka:events/0"
	dir := t.TempDir()
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(1, "events"), kfake.DataDir(dir),
		kfake.GroupMinSessionTimeout(100 * time.Millisecond)}
	c1, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	addr := c1.ListenAddrs()[0]
	port, err := strconv.Atoi(addr[strings.LastIndexByte(addr, ':')+1:])
	if err != nil {
		t.Fatal(err)
	}
	k := &kafkaEnv{c: c1, topic: "events", parts: 1}
	produce(t, k, n)

	held := make(chan ingest.State, 1)
	resume := make(chan struct{})
	cfg, src := k.config(e, table, group, nil)
	src.Opts = append(src.Opts, kgo.SessionTimeout(time.Second))
	var once sync.Once
	cfg.Ledger = &ledgerFunc{inner: src.Ledger(), store: func(ctx context.Context, key string, st ingest.State, do func() error) error {
		if err := do(); err != nil || !st.Sealed || st.Batch != 2 {
			return err
		}
		once.Do(func() {
			held <- st
			select {
			case <-resume:
			case <-ctx.Done():
			}
		})
		return nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- ingest.Run(ctx, cfg) }()
	var seal ingest.State
	select {
	case seal = <-held:
	case err := <-errc:
		t.Fatalf("Run stopped before its second seal: %v", err)
	}
	c1.Close()
	c2, err := kfake.NewCluster(append(opts, kfake.Ports(port))...)
	if err != nil {
		t.Fatalf("restarting the broker on port %d: %v", port, err)
	}
	t.Cleanup(c2.Close)
	k.c = c2

	// The seal is what the restarted coordinator holds for the partition.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c2.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	offs, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	cl.Close()
	if err != nil {
		t.Fatal(err)
	}
	o, _ := offs.Lookup(k.topic, 0)
	got, err := ingest.DecodeState([]byte(o.Metadata))
	if err != nil || !got.Sealed || got.Batch != seal.Batch || o.At != seal.Offset || !reflect.DeepEqual(got.Streams, seal.Streams) {
		t.Fatalf("after the restart %s holds offset %d %q (%v), want the seal %v", key, o.At, o.Metadata, err, seal)
	}

	close(resume)
	waitAllCommitted(t, k, group, errc)
	cancel()
	if err := <-errc; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
	checkExactlyOnce(t, e.readIDs(t, table), n)
}

func produce(t *testing.T, k *kafkaEnv, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.c.ListenAddrs()...), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs := make([]*kgo.Record, n)
	for i := range n {
		recs[i] = &kgo.Record{Topic: k.topic, Value: fmt.Appendf(nil, `{"id":%d,"name":"k%d","tags":[]}`, i, i)}
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// commitState decodes the partition state an OffsetCommit carries for
// partition p, if it carries one.
func commitState(kr kmsg.Request, p int32) (ingest.State, bool) {
	req, ok := kr.(*kmsg.OffsetCommitRequest)
	if !ok {
		return ingest.State{}, false
	}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			if rp.Partition != p || rp.Metadata == nil {
				continue
			}
			st, err := ingest.DecodeState([]byte(*rp.Metadata))
			if err != nil {
				return ingest.State{}, false
			}
			return st, true
		}
	}
	return ingest.State{}, false
}

// TestCrashTableRow14AmbiguousOffsetCommit: the group coordinator applies
// an OffsetCommit and then answers REQUEST_TIMED_OUT (what a coordinator
// restart or a lost reply looks like), once for a seal and once for a DONE.
// Both are read back with an OffsetFetch, found stored, and the run goes
// on without stopping. Every record ends in the table once.
func TestCrashTableRow14AmbiguousOffsetCommit(t *testing.T) {
	e := newEnv(t)
	table := e.table(t, "row14")
	const n = 300
	k := newKafka(t, 2, n, 0)
	const group = "row14"
	seal := k.c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Group: group, Err: kerr.RequestTimedOut,
		When: func(kr kmsg.Request) bool {
			st, ok := commitState(kr, 0)
			return ok && st.Sealed && st.Batch == 2
		}})
	done := k.c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Group: group, Err: kerr.RequestTimedOut,
		When: func(kr kmsg.Request) bool {
			st, ok := commitState(kr, 1)
			return ok && !st.Sealed && st.Batch == 3
		}})

	cfg, _ := k.config(e, table, group, nil)
	if err := runUntilCommitted(t, k, cfg, group); err != nil {
		t.Fatalf("Run stopped: %v, want the ambiguous replies read back", err)
	}
	if seal.Hits() != 1 || done.Hits() != 1 {
		t.Fatalf("faults answered %d seals and %d DONEs, want 1 each", seal.Hits(), done.Hits())
	}
	checkExactlyOnce(t, e.readIDs(t, table), n)
}

// TestCrashTableRow16SealedStreamNotFound: a seal names a stream the server
// does not know, either because the seal was tampered with (a stream id
// that never existed) or because the server restarted on a fresh data dir.
// The commit outcome of the range cannot be known, so the run fails
// closed: it stops with an error naming the partition, the stream and the
// range, commits nothing, and leaves the seal as it was (a rerun fails the
// same way).
func TestCrashTableRow16SealedStreamNotFound(t *testing.T) {
	const n = 200
	src, _ := writeEvents(t, n, 0)
	key := "file:" + src
	for _, tc := range []struct {
		name string
		// after returns the server and table the second run uses, and the
		// seal to put in the ledger instead of the one the crash left.
		after func(t *testing.T, e *env, seal ingest.State) (*env, ingest.State)
		// firstBatch: the second run's table holds the first batch (40
		// rows, committed before the crash); otherwise it is empty.
		firstBatch bool
	}{
		{"bogus-stream-id", func(t *testing.T, e *env, seal ingest.State) (*env, ingest.State) {
			id := seal.Streams[0].ID
			seal.Streams = []ingest.SealedStream{{Table: 0, ID: strings.Repeat("0", len(id)), Rows: seal.Streams[0].Rows}}
			return e, seal
		}, true},
		{"fresh-server", func(t *testing.T, _ *env, seal ingest.State) (*env, ingest.State) {
			fresh := newEnv(t)
			fresh.table(t, "row16_fresh_server")
			return fresh, seal
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			name := "row16_" + strings.ReplaceAll(tc.name, "-", "_")
			table := e.table(t, name)
			dir := t.TempDir()
			r := run{e: e, table: table, source: src, stateDir: filepath.Join(dir, "state"),
				deadLetter: filepath.Join(dir, "dead.ndjson"), hooks: &crashAt{point: ingest.AfterSeal, batch: 2}}
			if err := r.do(t); !errors.Is(err, errCrash) {
				t.Fatalf("first run: %v, want the injected crash after the seal", err)
			}
			ledger, err := ingest.OpenFileLedger(r.stateDir)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			seal, err := ledger.Load(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if !seal.Sealed || seal.Batch != 2 || len(seal.Streams) != 1 {
				t.Fatalf("state after the crash: %v, want the seal of batch 2", seal)
			}
			var want ingest.State
			r.e, want = tc.after(t, e, seal)
			if err := ledger.Store(ctx, key, want); err != nil {
				t.Fatal(err)
			}
			if err := ledger.Close(); err != nil { // the runs below take the state dir's lock
				t.Fatal(err)
			}
			r.hooks = nil
			for i := range 2 {
				err := r.do(t)
				if err == nil {
					t.Fatalf("run %d after the seal lost its stream succeeded, want it to fail closed", i+1)
				}
				for _, part := range []string{"not found", key, want.Streams[0].ID,
					fmt.Sprintf("[%d, %d)", want.Offset, want.To)} {
					if !strings.Contains(err.Error(), part) {
						t.Fatalf("run %d: %v, want an error naming %q", i+1, err, part)
					}
				}
				if i == 0 {
					t.Logf("fails closed: %v", err)
				}
				got, err := ledger.Load(ctx, key)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("state after failing closed: %v, want the seal untouched: %v", got, want)
				}
			}
			ids := r.e.readIDs(t, table)
			if tc.firstBatch {
				// Batch 1 (ids 0-39) was committed before the crash; nothing
				// of the sealed range or past it was committed.
				checkExactlyOnce(t, ids, 40)
			} else if len(ids) != 0 {
				t.Fatalf("the fresh server's table holds %d rows, want none", len(ids))
			}
		})
	}
}

// TestCrashTableRow16KafkaFreshServer: row 16 with the seal in Kafka. The
// pipeline crashes right after sealing a partition's second batch; the
// BigQuery server is then replaced by one on a fresh data dir (same table,
// none of the streams). The restart fails closed: the partition pauses
// with an error naming it and the stream (on Health), and the group's
// committed offset and seal stay as they were.
func TestCrashTableRow16KafkaFreshServer(t *testing.T) {
	e := newEnv(t)
	table := e.table(t, "row16_kafka")
	const n, group = 200, "row16"
	const key = "kafka:events/0"
	k := newKafkaCluster(t, 1, n)
	cfg, _ := k.config(e, table, group, nil)
	cfg.Hooks = &crashAt{point: ingest.AfterSeal, batch: 2}
	if err := ingest.Run(context.Background(), cfg); !errors.Is(err, errCrash) {
		t.Fatalf("first run: %v, want the injected crash after the seal", err)
	}
	before := committedState(t, k, group)
	if !before.Sealed || before.Batch != 2 {
		t.Fatalf("state after the crash: %v, want the seal of batch 2", before)
	}

	fresh := newEnv(t)
	fresh.table(t, "row16_kafka")
	cfg, _ = k.config(fresh, table, group, nil)
	// The partition pauses (the run goes on with the others).
	err := runUntilPaused(t, cfg, key).Err
	for _, part := range []string{"not found", key, before.Streams[0].ID, fmt.Sprintf("[%d, %d)", before.Offset, before.To)} {
		if !strings.Contains(err.Error(), part) {
			t.Fatalf("Run: %v, want an error naming %q", err, part)
		}
	}
	if after := committedState(t, k, group); !reflect.DeepEqual(after, before) {
		t.Fatalf("state after failing closed: %v, want the seal untouched: %v", after, before)
	}
	if ids := fresh.readIDs(t, table); len(ids) != 0 {
		t.Fatalf("the fresh server's table holds %d rows, want none", len(ids))
	}
}

// committedState reads partition 0's state from the group's committed
// offset and metadata.
func committedState(t *testing.T, k *kafkaEnv, group string) ingest.State {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	offs, err := kadm.NewClient(cl).FetchOffsets(context.Background(), group)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := offs.Lookup(k.topic, 0)
	if !ok {
		t.Fatalf("group %s has no committed offset for %s/0", group, k.topic)
	}
	st, err := ingest.DecodeState([]byte(o.Metadata))
	if err != nil {
		t.Fatalf("committed metadata %q: %v", o.Metadata, err)
	}
	if st.Offset != o.At {
		t.Fatalf("committed offset %d, state %v", o.At, st)
	}
	return st
}

// ledgerFunc wraps a pipeline's Ledger so a test can watch the states it
// loads and step in around the states it stores (store gets the worker's
// context and do, which stores st in the wrapped ledger).
type ledgerFunc struct {
	inner ingest.Ledger
	load  func(key string, st ingest.State)
	store func(ctx context.Context, key string, st ingest.State, do func() error) error
}

func (l *ledgerFunc) Load(ctx context.Context, key string) (ingest.State, error) {
	st, err := l.inner.Load(ctx, key)
	if err == nil && l.load != nil {
		l.load(key, st)
	}
	return st, err
}

func (l *ledgerFunc) Store(ctx context.Context, key string, st ingest.State) error {
	do := func() error { return l.inner.Store(ctx, key, st) }
	if l.store == nil {
		return do()
	}
	return l.store(ctx, key, st, do)
}

// TestCrashTableRows10To13CooperativeRebalance: member A owns both
// partitions and holds each in its second batch; member B joins and the
// cooperative rebalance revokes one partition from A mid-batch (row 13).
// A still owns it inside the revoke callback (B gets it only in the next
// generation), and the revoke waits for A's worker:
//
//   - revoked before the seal (rows 10 and 13, unsealed: drop): A's batch
//     2 is finalized but never sealed; B loads IDLE at the batch's start X
//     and replays it into its own streams; A's stream is never committed.
//   - revoked after the seal (rows 11 and 13, sealed: finish): A commits
//     its sealed batch and writes DONE inside the revoke callback; B loads
//     IDLE at the seal's end Y.
//
// The other partition stays with A and goes on. The table holds every
// record once.
func TestCrashTableRows10To13CooperativeRebalance(t *testing.T) {
	for _, sealed := range []bool{false, true} {
		name := "revoked-before-seal"
		if sealed {
			name = "revoked-after-seal"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			table := e.table(t, "row13_"+strings.ReplaceAll(name, "-", "_"))
			const n, group = 300, "coop"
			k := newKafka(t, 2, n, 0)

			var (
				mu         sync.Mutex
				heldAt     = map[string]bool{}
				seals      = map[string]ingest.State{}   // A's seal of batch 2 (sealed case)
				aStored    = map[string][]ingest.State{} // every state A stored
				aCommitted = map[string][]uint64{}       // batches A committed
				revoking   []string
				revokeCh   = map[string]chan struct{}{"kafka:events/0": make(chan struct{}), "kafka:events/1": make(chan struct{})}
				bLoaded    = map[string]ingest.State{}
				allHeld    = make(chan struct{})
				rebalanced = make(chan struct{}) // B loaded its first partition
			)
			// hold keeps A's worker (unsealed) or closer (sealed) of key
			// in batch 2 until key's revoke starts, or, for the partition
			// A keeps, until B got the other one.
			hold := func(key string) {
				mu.Lock()
				heldAt[key] = true
				if len(heldAt) == 2 {
					close(allHeld)
				}
				mu.Unlock()
				select {
				case <-revokeCh[key]:
				case <-rebalanced:
				}
			}
			cfgA, srcA := k.config(e, table, group, nil)
			cfgA.Hooks = hookFunc(func(p ingest.Point, key string, b uint64) error {
				switch {
				case p == ingest.OnRevoke:
					mu.Lock()
					revoking = append(revoking, key)
					mu.Unlock()
					close(revokeCh[key])
				case !sealed && p == ingest.AfterFinalize && b == 2:
					hold(key)
				}
				return nil
			})
			cfgA.OnCommit = func(c ingest.Committed) {
				mu.Lock()
				aCommitted[c.Partition] = append(aCommitted[c.Partition], c.Batch)
				mu.Unlock()
			}
			cfgA.Ledger = &ledgerFunc{inner: srcA.Ledger(), store: func(ctx context.Context, key string, st ingest.State, do func() error) error {
				mu.Lock()
				aStored[key] = append(aStored[key], st)
				mu.Unlock()
				if !sealed || !st.Sealed || st.Batch != 2 {
					return do()
				}
				if err := do(); err != nil {
					return err
				}
				mu.Lock()
				seals[key] = st
				mu.Unlock()
				hold(key)
				return nil
			}}
			cfgB, srcB := k.config(e, table, group, nil)
			cfgB.Ledger = &ledgerFunc{inner: srcB.Ledger(), load: func(key string, st ingest.State) {
				mu.Lock()
				defer mu.Unlock()
				if _, ok := bLoaded[key]; ok {
					return
				}
				if len(bLoaded) == 0 {
					close(rebalanced)
				}
				bLoaded[key] = st
			}}

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			errA, errB := make(chan error, 1), make(chan error, 1)
			go func() { errA <- ingest.Run(ctx, cfgA) }()
			select {
			case <-allHeld:
			case err := <-errA:
				t.Fatalf("A stopped before reaching its second batches: %v", err)
			}
			go func() { errB <- ingest.Run(ctx, cfgB) }()
			waitAllCommitted(t, k, group, errA, errB)
			cancel()
			for who, errc := range map[string]chan error{"A": errA, "B": errB} {
				if err := <-errc; err != nil && !errors.Is(err, context.Canceled) {
					t.Errorf("Run %s: %v", who, err)
				}
			}

			mu.Lock()
			defer mu.Unlock()
			if len(revoking) != 1 {
				t.Fatalf("partitions revoked from A: %v, want exactly one", revoking)
			}
			p := revoking[0]
			got := bLoaded[p]
			stored := aStored[p]
			if !sealed {
				for _, st := range stored {
					if st.Sealed && st.Batch == 2 {
						t.Fatalf("A sealed batch 2 of %s (%v) after its revoke started", p, st)
					}
				}
				last := stored[len(stored)-1]
				if got.Sealed || got.Batch != 1 || got.Offset != last.Offset || last.Sealed || last.Batch != 1 {
					t.Fatalf("B loaded %v for %s, want IDLE{b:1 x:%d}, A's last state (%v)", got, p, last.Offset, last)
				}
			} else {
				seal := seals[p]
				if !slices.Contains(aCommitted[p], 2) {
					t.Fatalf("A did not commit its sealed batch 2 of %s inside the revoke (A committed %v)", p, aCommitted[p])
				}
				if got.Sealed || got.Batch != 2 || got.Offset != seal.To {
					t.Fatalf("B loaded %v for %s, want IDLE{b:2 x:%d}: A's DONE written inside the revoke", got, p, seal.To)
				}
			}
			checkExactlyOnce(t, e.readIDs(t, table), n)
		})
	}
}

// TestCrashTableRows10To12Zombie: member A holds one partition at its
// second batch, then freezes as a GC pause or a network partition would:
// its heartbeats stop reaching the coordinator (the test answers them
// itself, so A believes it is still a member), its session expires, and B
// gets the partition. When A comes back it acts on its stale membership:
//
//   - held before the seal (rows 10 and 12): B loaded IDLE at X and
//     replayed the batch; A's seal is refused by the coordinator
//     (UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION, ErrFenced), so its
//     finalized stream is never committed.
//   - held after the seal (rows 11 and 12): B loaded A's seal and committed
//     A's stream; A's own BatchCommit of it gets STREAM_ALREADY_COMMITTED,
//     which A confirms with GetWriteStream (same commit_time as B's
//     commit), and A's DONE is refused.
//
// Either way the committed offset stays where B put it and the table holds
// every record once.
func TestCrashTableRows10To12Zombie(t *testing.T) {
	for _, sealed := range []bool{false, true} {
		name := "held-before-seal"
		if sealed {
			name = "held-after-seal"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			table := e.table(t, "row12_"+strings.ReplaceAll(name, "-", "_"))
			const n, group = 200, "zombie"
			const key = "kafka:events/0"
			k := newKafkaCluster(t, 1, n, kfake.GroupMinSessionTimeout(100*time.Millisecond))

			// Once frozen, A's heartbeats are answered here, never reaching
			// the group: A's session expires while A thinks it is fine.
			var (
				mu         sync.Mutex
				lastMember string
				frozen     string
			)
			k.c.ControlKey(int16(kmsg.Heartbeat), func(kr kmsg.Request) (kmsg.Response, error, bool) {
				k.c.KeepControl()
				req := kr.(*kmsg.HeartbeatRequest)
				mu.Lock()
				defer mu.Unlock()
				if frozen == "" || req.MemberID != frozen {
					return nil, nil, false
				}
				resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
				resp.SetVersion(req.Version)
				return resp, nil, true
			})
			// Before B joins, every member commit is A's (its seal and DONE
			// of batch 1).
			k.c.ControlKey(int16(kmsg.OffsetCommit), func(kr kmsg.Request) (kmsg.Response, error, bool) {
				k.c.KeepControl()
				mu.Lock()
				defer mu.Unlock()
				if req := kr.(*kmsg.OffsetCommitRequest); frozen == "" && req.MemberID != "" {
					lastMember = req.MemberID
				}
				return nil, nil, false
			})

			var (
				held       = make(chan ingest.State, 1)
				resume     = make(chan struct{})
				aRefused   = make(chan error, 1) // A's first store after resuming
				aCommitted = make(chan ingest.Committed, 1)
				bLoaded    = make(chan ingest.State, 1)
				bCommitted = make(chan ingest.Committed, 1)
			)
			cfgA, srcA := k.config(e, table, group, nil)
			srcA.Opts = append(srcA.Opts, kgo.SessionTimeout(time.Second))
			resumed := false
			// A's first store after resuming is its DONE of batch 2, or
			// its seal of batch 3 when that carries the DONE (batch 3 was
			// waiting: docs/ingest-protocol.md, "One write for DONE k and
			// seal k+1").
			cfgA.Ledger = &ledgerFunc{inner: srcA.Ledger(), store: func(ctx context.Context, key string, st ingest.State, do func() error) error {
				if st.Batch < 2 {
					return do()
				}
				if st.Batch == 2 && st.Sealed && !resumed {
					var err error
					if sealed {
						err = do()
					}
					held <- st
					<-resume
					resumed = true
					if sealed || err != nil {
						return err
					}
				}
				err := do()
				select {
				case aRefused <- err:
				default:
				}
				return err
			}}
			cfgA.OnCommit = func(c ingest.Committed) {
				if c.Batch == 2 {
					aCommitted <- c
				}
			}
			cfgB, srcB := k.config(e, table, group, nil)
			cfgB.Ledger = &ledgerFunc{inner: srcB.Ledger(), load: func(_ string, st ingest.State) {
				select {
				case bLoaded <- st:
				default:
				}
			}}
			cfgB.OnCommit = func(c ingest.Committed) {
				if c.Batch == 2 {
					bCommitted <- c
				}
			}

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			errA, errB := make(chan error, 1), make(chan error, 1)
			go func() { errA <- ingest.Run(ctx, cfgA) }()
			var seal ingest.State
			select {
			case seal = <-held:
			case err := <-errA:
				t.Fatalf("A stopped before its second batch: %v", err)
			}
			mu.Lock()
			frozen = lastMember
			mu.Unlock()
			if frozen == "" {
				t.Fatal("A committed nothing as a member before its second batch")
			}
			go func() { errB <- ingest.Run(ctx, cfgB) }()
			waitAllCommitted(t, k, group, errA, errB)

			got := <-bLoaded
			// A's seal was not sent. B finds A's DONE of batch 1, or A's
			// seal of batch 1 ending at X when batch 2 was waiting (that
			// seal would have carried the DONE): committed, B resolves it.
			idleAtX := !got.Sealed && got.Offset == seal.Offset
			sealToX := got.Sealed && got.Batch+1 == seal.Batch && got.To == seal.Offset
			if !sealed && !idleAtX && !sealToX {
				t.Fatalf("B loaded %v, want IDLE at %d or batch %d's seal ending there (A's seal was not sent)", got, seal.Offset, seal.Batch-1)
			}
			if sealed && (!got.Sealed || got.To != seal.To || !reflect.DeepEqual(got.Streams, seal.Streams)) {
				t.Fatalf("B loaded %v %+v, want A's seal %v %+v", got, got.Streams, seal, seal.Streams)
			}

			close(resume)
			var err error
			select {
			case err = <-aRefused:
			case err = <-errA:
				t.Fatalf("A stopped without storing again: %v", err)
			}
			if !errors.Is(err, ingest.ErrFenced) ||
				!(errors.Is(err, kerr.UnknownMemberID) || errors.Is(err, kerr.IllegalGeneration) ||
					strings.Contains(err.Error(), kerr.UnknownMemberID.Message) || strings.Contains(err.Error(), kerr.IllegalGeneration.Message)) {
				t.Fatalf("zombie A's OffsetCommit: %v, want ErrFenced (UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION)", err)
			}
			if sealed {
				a, b := <-aCommitted, <-bCommitted
				if !a.Time.Equal(b.Time) || a.Time.IsZero() {
					t.Fatalf("A's commit of its sealed stream reports commit_time %v, B's %v: want the one commit", a.Time, b.Time)
				}
			} else {
				select {
				case c := <-aCommitted:
					t.Fatalf("zombie A committed %+v without a seal", c)
				default:
				}
			}
			// A's refused write changed nothing: the group still has B's
			// IDLE state at the end of the partition.
			t.Logf("zombie A refused: %v", err)
			if st := committedState(t, k, group); st.Sealed || st.Offset != n {
				t.Fatalf("state after A's refused write: %v, want B's IDLE state at %d", st, n)
			}
			cancel()
			for who, errc := range map[string]chan error{"A": errA, "B": errB} {
				if err := <-errc; err != nil && !errors.Is(err, context.Canceled) {
					t.Errorf("Run %s: %v", who, err)
				}
			}
			checkExactlyOnce(t, e.readIDs(t, table), n)
		})
	}
}

// newKafkaCluster is newKafka with extra cluster options and no bad
// records.
func newKafkaCluster(t *testing.T, parts int32, n int, opts ...kfake.Opt) *kafkaEnv {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(parts, "events")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	k := &kafkaEnv{c: c, topic: "events", parts: parts}
	produce(t, k, n)
	return k
}

// waitAllCommitted waits until the group's committed offsets reach the end
// of every partition; any Run ending first fails the test.
func waitAllCommitted(t *testing.T, k *kafkaEnv, group string, errcs ...chan error) {
	t.Helper()
	stopped := make(chan error, len(errcs))
	done := make(chan struct{})
	defer close(done)
	for _, errc := range errcs {
		go func() {
			select {
			case err := <-errc:
				errc <- err // put it back for the caller
				stopped <- err
			case <-done:
			}
		}()
	}
	k.waitCommitted(t, group, stopped)
}

// runUntilCommitted runs the pipeline until the group's committed offsets
// reach the end of every partition (nil) or the run stops (its error).
func runUntilCommitted(t *testing.T, k *kafkaEnv, cfg ingest.Config, group string) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- ingest.Run(ctx, cfg) }()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, k.topic)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(60 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if offs, err := adm.FetchOffsets(ctx, group); err == nil {
			all := true
			ends.Each(func(e kadm.ListedOffset) {
				if o, ok := offs.Lookup(e.Topic, e.Partition); !ok || o.At != e.Offset {
					all = false
				}
			})
			if all {
				cancel()
				if err := <-errc; err != nil && !errors.Is(err, context.Canceled) {
					return err
				}
				return nil
			}
		}
		select {
		case err := <-errc:
			if err == nil {
				err = errors.New("the pipeline ended before committing everything")
			}
			return err
		case <-deadline:
			cancel()
			<-errc
			t.Fatal("the committed offsets never reached the ends of the partitions")
		case <-tick.C:
		}
	}
}
