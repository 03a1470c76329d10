package ingest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bqstore/bqstore/ingest"
)

// carriedCommit is one partition state as an OffsetCommit carried it.
type carriedCommit struct {
	st     ingest.State
	offset int64
	epoch  int32 // the OffsetCommit's leader epoch (KIP-320)
	te     int32 // a seal's recorded epoch of its last record, -1 if none
}

// TestCrashTableCarriedSealKafkaEpoch (review of "One write for DONE k
// and seal k+1", Kafka): a leader election falls exactly on the boundary
// of batches 1 and 2 (records 0-49 under leader epoch 0, 50-199 under
// epoch 1), and batch 2 is waiting when batch 1 is committed, so seal 2
// carries DONE 1. The carried state must commit what DONE 1 would have:
// offset 50 under epoch 0, the epoch of record 49 (a resume from it
// checks that record with OffsetForLeaderEpoch), not the epoch of the
// range it seals; the seal records epoch 1 for its own end. The process
// dies at AfterDone of batch 1 (the state is seal 2) or not at all; the
// restart commits every record once.
func TestCrashTableCarriedSealKafkaEpoch(t *testing.T) {
	e := newEnv(t)
	for _, crash := range []ingest.Point{"", ingest.AfterDone} {
		name := "none"
		if crash != "" {
			name = string(crash)
		}
		t.Run("crash="+name, func(t *testing.T) {
			k := newKafkaCluster(t, 1, 0)
			produceIDs(t, k, 0, 50)
			if err := k.c.MoveTopicPartition(k.topic, 0, k.c.LeaderFor(k.topic, 0)); err != nil {
				t.Fatal(err) // a leader election: epoch 1
			}
			produceIDs(t, k, 50, 200)

			var mu sync.Mutex
			var commits []carriedCommit
			k.c.ControlKey(int16(kmsg.OffsetCommit), func(kr kmsg.Request) (kmsg.Response, error, bool) {
				k.c.KeepControl()
				req := kr.(*kmsg.OffsetCommitRequest)
				for _, rt := range req.Topics {
					for _, rp := range rt.Partitions {
						if rp.Metadata == nil {
							continue
						}
						st, err := ingest.DecodeState([]byte(*rp.Metadata))
						if err != nil {
							continue
						}
						var w struct {
							TE *int32 `json:"te"`
						}
						te := int32(-1)
						if json.Unmarshal([]byte(*rp.Metadata), &w) == nil && w.TE != nil {
							te = *w.TE
						}
						mu.Lock()
						commits = append(commits, carriedCommit{st: st, offset: rp.Offset, epoch: rp.LeaderEpoch, te: te})
						mu.Unlock()
					}
				}
				return nil, nil, false
			})

			table := e.table(t, "carried_epoch_"+map[ingest.Point]string{"": "none", ingest.AfterDone: "done"}[crash])
			group := "carried-epoch-" + name
			created3 := make(chan struct{})
			var once sync.Once
			cfg, _ := k.config(e, table, group, nil)
			// Batches close at 50 rows only, so the boundaries are 50,
			// 100, 150 and 200.
			cfg.MaxBatchAge = time.Minute
			cfg.Hooks = hookFunc(func(p ingest.Point, _ string, b uint64) error {
				if p == ingest.AfterCreate && b == 3 {
					once.Do(func() { close(created3) })
				}
				if p == ingest.AfterCommit && b == 1 {
					// Batch 2 waits at the closer once batch 3 has a stream.
					select {
					case <-created3:
					case <-time.After(30 * time.Second):
						return errors.New("batch 3 never created its stream")
					}
				}
				if p == crash && b == 1 {
					return errCrash
				}
				return nil
			})
			var err error
			if crash == "" {
				err = runUntilCommitted(t, k, cfg, group)
			} else {
				err = ingest.Run(context.Background(), cfg)
			}
			switch {
			case crash == "" && err != nil:
				t.Fatalf("Run: %v", err)
			case crash != "" && !errors.Is(err, errCrash):
				t.Fatalf("first run: %v, want the injected crash at %s", err, crash)
			}

			mu.Lock()
			var seal2 *carriedCommit
			for i, c := range commits {
				if !c.st.Sealed && c.st.Batch == 1 {
					t.Errorf("DONE of batch 1 stored on its own (%+v): batch 2 was waiting, its seal should carry it", c)
				}
				if c.st.Sealed && c.st.Batch == 2 && seal2 == nil {
					seal2 = &commits[i]
				}
			}
			mu.Unlock()
			if seal2 == nil {
				t.Fatalf("seal 2 never committed: %+v", commits)
			}
			if seal2.offset != 50 || seal2.st.Offset != 50 || seal2.st.To != 100 {
				t.Errorf("seal 2 committed offset %d, state %v; want offset 50, range [50, 100)", seal2.offset, seal2.st)
			}
			if seal2.epoch != 0 {
				t.Errorf("seal 2 (carrying DONE 1) committed leader epoch %d, want 0: the epoch of record 49, as DONE 1 would", seal2.epoch)
			}
			if seal2.te != 1 {
				t.Errorf("seal 2 records epoch %d for its last record, want 1", seal2.te)
			}

			if crash != "" {
				// The state is seal 2 carrying DONE 1: the restart resolves
				// it and reads on from 100.
				cfg, _ := k.config(e, table, group, nil)
				cfg.MaxBatchAge = time.Minute
				if err := runUntilCommitted(t, k, cfg, group); err != nil {
					t.Fatalf("restart: %v", err)
				}
			}
			checkExactlyOnce(t, e.readIDs(t, table), 200)
			cl, err := kgo.NewClient(kgo.SeedBrokers(k.c.ListenAddrs()...))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			offs, err := kadm.NewClient(cl).FetchOffsets(context.Background(), group)
			if err != nil {
				t.Fatal(err)
			}
			if o, ok := offs.Lookup(k.topic, 0); !ok || o.At != 200 || o.LeaderEpoch != 1 {
				t.Errorf("final committed offset %+v, want 200 under epoch 1", o)
			}
		})
	}
}

// revokeSource wraps a source's partitions as Revokers whose revoke the
// test starts (closing revoke).
type revokeSource struct {
	ingest.Source
	revoke chan struct{}
}

func (s *revokeSource) Run(ctx context.Context, assign func(context.Context, ingest.Partition) error) error {
	return s.Source.Run(ctx, func(ctx context.Context, p ingest.Partition) error {
		return assign(ctx, revokePartition{p, s.revoke})
	})
}

type revokePartition struct {
	ingest.Partition
	revoke chan struct{}
}

func (p revokePartition) Revoking() <-chan struct{} { return p.revoke }

// TestCrashTableRow13RevokeWhileDoneOwed (review of "One write for DONE
// k and seal k+1"): batch 2 is committed while batch 3 waits at the
// closer, so DONE 2 is left to seal 3; then the partition is revoked
// before seal 3 is stored. The revoke drops batch 3 (not sealed), so no
// seal comes to carry DONE 2: the closer stores it on its own before the
// worker gives the partition up, and the next owner reads on from the end
// of batch 2 (not from seal 2 and not past it).
func TestCrashTableRow13RevokeWhileDoneOwed(t *testing.T) {
	e := newEnv(t)
	table := e.table(t, "revoke_owed")
	const n = 200 // 5 batches of 40
	src, _ := writeEvents(t, n, 0)
	dir := t.TempDir()
	log := &stateLog{}
	revoke := make(chan struct{})
	revoked := make(chan struct{})
	created4 := make(chan struct{})
	var once4 sync.Once
	hooks := hookFunc(func(p ingest.Point, _ string, b uint64) error {
		log.add(fmt.Sprintf("%s b%d", p, b))
		switch {
		case p == ingest.AfterCreate && b == 4:
			once4.Do(func() { close(created4) })
		case p == ingest.OnRevoke:
			close(revoked)
		case p == ingest.AfterCommit && b == 2:
			// Batch 3 waits at the closer once batch 4 has a stream; the
			// revoke starts (and the worker is draining) before the
			// closer goes on.
			select {
			case <-created4:
			case <-time.After(30 * time.Second):
				return errors.New("batch 4 never created its stream")
			}
			close(revoke)
			<-revoked
		}
		return nil
	})
	var last ingest.State
	r := run{e: e, table: table, source: src, stateDir: filepath.Join(dir, "state"),
		deadLetter: filepath.Join(dir, "dead.ndjson"), hooks: hooks,
		wrapSource: func(s ingest.Source) ingest.Source { return &revokeSource{Source: s, revoke: revoke} },
		mutate: func(c *ingest.Config) {
			inner := c.Ledger
			c.Ledger = &ledgerFunc{inner: inner, store: func(ctx context.Context, key string, st ingest.State, do func() error) error {
				err := do()
				if err == nil {
					log.add(stateEvent(st))
					last = st
				}
				return err
			}}
		}}
	if err := r.do(t); err != nil {
		t.Fatalf("revoked run: %v", err)
	}
	events := log.list()
	if slices.Contains(events, "store SEALED b3") {
		t.Fatalf("batch 3 sealed after the revoke: %v", events)
	}
	if last.Sealed || last.Batch != 2 {
		t.Fatalf("the revoked run's last state is %v, want DONE of batch 2 stored on its own (events %v)", last, events)
	}
	if !slices.Contains(events, "after-done b2") {
		t.Errorf("no after-done of batch 2: %v", events)
	}
	if got := len(e.readIDs(t, table)); got != 80 {
		t.Fatalf("after the revoke the table holds %d rows, want 80 (batches 1 and 2)", got)
	}
	// The next owner (a run without the revoke) reads on from batch 2's end.
	r.wrapSource = nil
	r.hooks = nil
	if err := r.do(t); err != nil {
		t.Fatalf("second run: %v", err)
	}
	checkExactlyOnce(t, e.readIDs(t, table), n)
}

// TestCrashTableCarriedSealDeadLetterTable (review of "One write for
// DONE k and seal k+1", with a dead-letter table): every batch seals a
// data stream and a dead-letter stream. Batch 3 waits at the closer when
// batch 2's two streams are committed, so seal 3 carries DONE 2. The
// process dies after seal 3 is stored (AfterDone of batch 2), between
// seal 3's data and dead-letter commits, or after seal 3's commits (the
// state is then seal 3, committed, still carrying DONE 2); the restart
// leaves every record once in the table and every bad one once in the
// dead-letter table.
func TestCrashTableCarriedSealDeadLetterTable(t *testing.T) {
	e := newEnv(t)
	const n = 200
	src, bad := writeEvents(t, n, 10)
	type crashPoint struct {
		p ingest.Point
		b uint64
	}
	for i, crash := range []crashPoint{{ingest.AfterDone, 2}, {ingest.BetweenCommits, 3}, {ingest.AfterCommit, 3}} {
		t.Run(fmt.Sprintf("%s-b%d", crash.p, crash.b), func(t *testing.T) {
			table := e.table(t, fmt.Sprintf("carried_dlt_%d", i))
			dlt := e.deadLetterTable(t, fmt.Sprintf("carried_dlt_dead_%d", i))
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
					select {
					case <-created4:
					case <-time.After(30 * time.Second):
						return errors.New("batch 4 never created its stream")
					}
				}
				if p == crash.p && b == crash.b {
					return errCrash
				}
				return nil
			})
			r := run{e: e, table: table, source: src, stateDir: filepath.Join(dir, "state"),
				deadLetter: filepath.Join(dir, "unused.ndjson"), hooks: hooks,
				mutate: func(c *ingest.Config) {
					c.DeadLetters, c.DeadLetterTable = nil, dlt
					inner := c.Ledger
					c.Ledger = &ledgerFunc{inner: inner, store: func(ctx context.Context, key string, st ingest.State, do func() error) error {
						err := do()
						if err == nil {
							log.add(stateEvent(st))
						}
						return err
					}}
				}}
			if err := r.do(t); !errors.Is(err, errCrash) {
				t.Fatalf("first run: %v, want the injected crash", err)
			}
			events := log.list()
			if slices.Contains(events, "store IDLE b2") {
				t.Fatalf("DONE 2 stored on its own: batch 3 was waiting (%v)", events)
			}
			if !slices.Contains(events, "store SEALED b3") {
				t.Fatalf("seal 3 never stored: %v", events)
			}
			r.hooks = nil
			if err := r.do(t); err != nil {
				t.Fatalf("restart: %v", err)
			}
			checkExactlyOnce(t, e.readIDs(t, table), n)
			checkDeadLettersOnce(t, e.readDeadLetters(t, dlt, `"id":"not-a-number-`), bad)
		})
	}
}
