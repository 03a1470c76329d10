package ingest_test

// Tests for the fencing rules of docs/ingest-protocol.md (rules 1 and 2): a read-back
// proves only what it names; fencing replies are not all final; a
// coordinator that is busy or moving is retried while the worker still owns
// the partition.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bqstore/bqstore/ingest"
)

// TestFenceSealReadBackNamesOurStream: the seal of batch 2 fails
// ambiguously, and meanwhile a new owner sealed the same batch number and
// the same range with its own stream (it computed the same batch and
// offset from the same IDLE state). The read-back finds a seal with our
// batch and offset that names another stream: it is not ours. The worker
// is fenced: it must not commit its own stream (the new owner commits
// its), nor write DONE over the new owner's seal.
func TestFenceSealReadBackNamesOurStream(t *testing.T) {
	e := newEnv(t)
	table := e.table(t, "fence_zombie")
	const n = 200
	src, _ := writeEvents(t, n, 0)
	dir := t.TempDir()
	stateDir := filepath.Join(dir, "state")
	var ours, theirs ingest.State
	r := run{e: e, table: table, source: src, stateDir: stateDir, deadLetter: filepath.Join(dir, "dead.ndjson"),
		mutate: func(c *ingest.Config) {
			ledger := c.Ledger
			c.Ledger = &ledgerFunc{inner: ledger, store: func(ctx context.Context, key string, st ingest.State, do func() error) error {
				if !st.Sealed || st.Batch != 2 || ours.Sealed {
					return do()
				}
				// The new owner's seal lands; ours never does, and its reply is lost.
				ours = st
				theirs = st
				theirs.Streams = []ingest.SealedStream{{Table: 0, ID: "zzzz-new-owner-stream", Rows: st.Streams[0].Rows}}
				theirs.Owner = "new-owner"
				if err := ledger.Store(ctx, key, theirs); err != nil {
					return err
				}
				return errors.New("OffsetCommit: i/o timeout (reply lost)")
			}}
		}}
	err := r.do(t)
	if !ours.Sealed {
		t.Fatalf("the run never sealed batch 2 (err %v)", err)
	}
	if !errors.Is(err, ingest.ErrFenced) {
		t.Fatalf("Run: %v, want ErrFenced (the read-back names another owner's stream)", err)
	}
	ws, gerr := e.write.GetWriteStream(context.Background(), &storagepb.GetWriteStreamRequest{
		Name: table + "/streams/" + ours.Streams[0].ID})
	if gerr != nil {
		t.Fatal(gerr)
	}
	if ws.GetCommitTime() != nil {
		t.Fatalf("the fenced worker committed its own stream %s (a duplicate of the new owner's batch)", ours.Streams[0].ID)
	}
	ledger, err := ingest.OpenFileLedger(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	defer ledger.Close()
	got, err := ledger.Load(context.Background(), "file:"+src)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, theirs) {
		t.Fatalf("state after the fenced worker stopped: %v %+v, want the new owner's seal untouched", got, got.Streams)
	}
	// Batch 1 (ids 0-39) only.
	checkExactlyOnce(t, e.readIDs(t, table), 40)
}

// TestFenceSealReadBackExactMatch: the seal of batch 2 is applied and its
// reply lost; the read-back finds exactly our seal (stream, range, owner)
// and the run goes on.
func TestFenceSealReadBackExactMatch(t *testing.T) {
	e := newEnv(t)
	table := e.table(t, "fence_exact")
	const n = 200
	src, _ := writeEvents(t, n, 0)
	dir := t.TempDir()
	lost := 0
	r := run{e: e, table: table, source: src, stateDir: filepath.Join(dir, "state"), deadLetter: filepath.Join(dir, "dead.ndjson"),
		mutate: func(c *ingest.Config) {
			c.Ledger = &ledgerFunc{inner: c.Ledger, store: func(ctx context.Context, key string, st ingest.State, do func() error) error {
				if err := do(); err != nil || st.Batch != 2 {
					return err
				}
				lost++
				return errAmbiguous
			}}
		}}
	if err := r.do(t); err != nil {
		t.Fatalf("Run: %v, want the lost replies read back", err)
	}
	if lost != 2 {
		t.Fatalf("%d replies lost, want 2 (seal and DONE of batch 2)", lost)
	}
	checkExactlyOnce(t, e.readIDs(t, table), n)
}

var errAmbiguous = errors.New("reply lost")

// kafkaFaultOn returns a fault for the seal (sealed true) or DONE of batch
// b of partition p of group.
func kafkaFaultOn(group string, p int32, b uint64, sealed bool, err *kerr.Error) kfake.Fault {
	return kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Group: group, Err: err,
		When: func(kr kmsg.Request) bool {
			st, ok := commitState(kr, p)
			return ok && st.Sealed == sealed && st.Batch == b
		}}
}

// kafkaFaultOnDone fails the first DONE (an unsealed state after batch 1
// or later) stored for partition p.
func kafkaFaultOnDone(group string, p int32, err *kerr.Error) kfake.Fault {
	return kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Group: group, Err: err,
		When: func(kr kmsg.Request) bool {
			st, ok := commitState(kr, p)
			return ok && !st.Sealed && st.Batch >= 1
		}}
}

// TestFenceKafkaRetryableCommitErrors: a seal (partition 0) and a DONE
// (partition 1) are refused with an error that does not mean the
// partition moved: ILLEGAL_GENERATION (a cooperative rebalance bumped the
// generation; the member keeps both partitions), REBALANCE_IN_PROGRESS,
// NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS. The worker re-reads the
// state, finds it not stored, and writes it again with the current
// generation: the run neither stops nor stalls, and every record lands
// once.
func TestFenceKafkaRetryableCommitErrors(t *testing.T) {
	for _, code := range []*kerr.Error{kerr.IllegalGeneration, kerr.RebalanceInProgress, kerr.NotCoordinator, kerr.CoordinatorLoadInProgress} {
		t.Run("err="+code.Message, func(t *testing.T) {
			e := newEnv(t)
			table := e.table(t, "fence_"+strings.ToLower(code.Message))
			const n, group = 300, "retry"
			k := newKafka(t, 2, n, 0)
			seal := k.c.Fault(kafkaFaultOn(group, 0, 2, true, code))
			// Not DONE of a fixed batch: a DONE is skipped when the
			// next batch's seal is waiting and carries it (see "One
			// write for DONE k and seal k+1" in docs/ingest-protocol.md),
			// so the first DONE stored, whichever batch it ends; the
			// partition's last batch always writes one.
			done := k.c.Fault(kafkaFaultOnDone(group, 1, code))
			cfg, _ := k.config(e, table, group, nil)
			if err := runUntilCommittedWithin(t, k, cfg, group, 20*time.Second); err != nil {
				t.Fatalf("Run stopped: %v, want %s retried", err, code.Message)
			}
			if seal.Hits() < 1 || done.Hits() < 1 {
				t.Fatalf("faults answered %d seals and %d DONEs, want 1 each", seal.Hits(), done.Hits())
			}
			checkExactlyOnce(t, e.readIDs(t, table), n)
		})
	}
}

// TestFenceKafkaResolveDoneRetried: a restart resolves a sealed batch and
// its DONE is refused with REBALANCE_IN_PROGRESS: retried, not fatal.
func TestFenceKafkaResolveDoneRetried(t *testing.T) {
	e := newEnv(t)
	table := e.table(t, "fence_resolve")
	const n, group = 200, "resolve"
	k := newKafkaCluster(t, 1, n)
	cfg, _ := k.config(e, table, group, nil)
	cfg.Hooks = &crashAt{point: ingest.AfterSeal, batch: 2}
	if err := ingest.Run(context.Background(), cfg); !errors.Is(err, errCrash) {
		t.Fatalf("first run: %v, want the injected crash after the seal", err)
	}
	f := k.c.Fault(kafkaFaultOn(group, 0, 2, false, kerr.RebalanceInProgress))
	cfg, _ = k.config(e, table, group, nil)
	if err := runUntilCommittedWithin(t, k, cfg, group, 20*time.Second); err != nil {
		t.Fatalf("Run stopped: %v, want the resolve's DONE retried", err)
	}
	if f.Hits() != 1 {
		t.Fatalf("fault hit %d times, want 1", f.Hits())
	}
	checkExactlyOnce(t, e.readIDs(t, table), n)
}

// runUntilCommittedWithin is runUntilCommitted with a deadline that fails
// the test with a clear message (a stalled partition).
func runUntilCommittedWithin(t *testing.T, k *kafkaEnv, cfg ingest.Config, group string, d time.Duration) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- ingest.Run(ctx, cfg) }()
	stopped := make(chan error, 1)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		select {
		case err := <-errc:
			stopped <- err
		case <-ctx.Done():
			stopped <- <-errc
		}
	}()
	if err := k.waitCommittedWithin(group, stopped, d); err != nil {
		cancel()
		<-finished
		return err
	}
	cancel()
	<-finished
	if err := <-stopped; err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// waitCommittedWithin waits until the group's committed offsets reach the
// end of every partition; it returns the run's error if the run stops
// first, or a stall error after d.
func (k *kafkaEnv) waitCommittedWithin(group string, stopped chan error, d time.Duration) error {
	ctx := context.Background()
	deadline := time.After(d)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		lag, err := k.lag(ctx, group)
		if err == nil && lag == 0 {
			return nil
		}
		select {
		case err := <-stopped:
			stopped <- err
			if err == nil {
				err = errors.New("the pipeline ended before committing everything")
			}
			return err
		case <-deadline:
			return fmt.Errorf("stalled: lag %d after %v (%v)", lag, d, err)
		case <-tick.C:
		}
	}
}

// lag is the records of the topic not yet covered by the group's committed
// offsets, over every partition.
func (k *kafkaEnv) lag(ctx context.Context, group string) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.c.ListenAddrs()...))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, k.topic)
	if err != nil {
		return 0, err
	}
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return 0, err
	}
	var lag int64
	ends.Each(func(e kadm.ListedOffset) {
		at := int64(0)
		if o, ok := offs.Lookup(e.Topic, e.Partition); ok && o.At >= 0 {
			at = o.At
		}
		lag += max(0, e.Offset-at)
	})
	return lag, nil
}
