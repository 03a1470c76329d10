package ingest_test

// One focused test per remaining row of the crash table (EXACTLY-ONCE.md
// section 3.6): rows 14 and 16. Rows 1-9 are in pipeline_test.go and
// kafka_test.go, row 17 in retention_test.go.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bqstore/bqstore/ingest"
)

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
