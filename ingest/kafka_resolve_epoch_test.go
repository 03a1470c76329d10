package ingest_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bqstore/bqstore/ingest"
)

// TestKafkaResolveCommitsEpoch (KIP-320): a restart that resolves a sealed
// batch stores DONE at the seal's end without having read a record of the
// range. It must still commit the leader epoch of the range's last record,
// not -1 (unknown): a resume from a state without an epoch cannot tell a
// log truncated below it (an unclean election) from the log it read, and
// would read on at an offset that now names other records.
func TestKafkaResolveCommitsEpoch(t *testing.T) {
	e := newEnv(t)
	table := e.table(t, "resolve_epoch")
	const group = "resolve-epoch"
	k := newKafkaCluster(t, 1, 0)
	// A leader election first: the records are written under epoch 1, so
	// an epoch found by chance (0, the zero value) does not pass.
	if err := k.c.MoveTopicPartition(k.topic, 0, k.c.LeaderFor(k.topic, 0)); err != nil {
		t.Fatal(err)
	}
	produceIDs(t, k, 0, 100)

	cfg, _ := k.config(e, table, group, nil)
	cfg.Hooks = &crashAt{point: ingest.AfterSeal, batch: 2, settled: true}
	if err := ingest.Run(context.Background(), cfg); !errors.Is(err, errCrash) {
		t.Fatalf("first run: %v, want the injected crash after the seal", err)
	}

	// The restart resolves the seal of batch 2: its DONE is the commit to
	// look at.
	var mu sync.Mutex
	var to int64
	doneEpoch := int32(-2) // not seen
	k.c.ControlKey(int16(kmsg.OffsetCommit), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		k.c.KeepControl()
		st, ok := commitState(kr, 0)
		if !ok || st.Sealed || st.Batch != 2 {
			return nil, nil, false
		}
		for _, rt := range kr.(*kmsg.OffsetCommitRequest).Topics {
			for _, rp := range rt.Partitions {
				mu.Lock()
				to, doneEpoch = rp.Offset, rp.LeaderEpoch
				mu.Unlock()
			}
		}
		return nil, nil, false
	})
	cfg, _ = k.config(e, table, group, nil)
	if err := runUntilCommittedWithin(t, k, cfg, group, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if doneEpoch != 1 {
		t.Fatalf("the resolve's DONE at offset %d committed leader epoch %d, want 1 (the epoch of record %d)", to, doneEpoch, to-1)
	}
	checkExactlyOnce(t, e.readIDs(t, table), 100)
}
