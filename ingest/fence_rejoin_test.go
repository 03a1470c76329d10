package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bqstore/bqstore/ingest"
)

// produceIDs writes events with ids [from, to) to the topic.
func produceIDs(t *testing.T, k *kafkaEnv, from, to int) {
	t.Helper()
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, `{"id":%d,"name":"k%d","tags":[]}`, i, i)})
	}
	produceTo(t, k, recs)
}

// groupMembers returns the member ids of a stable group (nil while it
// rebalances).
func groupMembers(ctx context.Context, adm *kadm.Client, group string) ([]string, error) {
	gs, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return nil, err
	}
	g := gs[group]
	if g.Err != nil {
		return nil, g.Err
	}
	if g.State != "Stable" {
		return nil, nil
	}
	var ids []string
	for _, m := range g.Members {
		ids = append(ids, m.MemberID)
	}
	return ids, nil
}

// waitFor polls cond every 10 ms until it holds, failing the test after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v", what, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestFenceKafkaRejoinAsNewMember is the stall the nemesis found (seed
// 162), step by step. Member A holds the only partition. Member B joins;
// A's JoinGroup for that rebalance is held past the rebalance timeout (A
// is paused mid-rebalance), so the group drops A and gives the partition
// to B, which ingests new records and stores its state. A's worker never
// heard that the partition moved: it reads the same records, its seal is
// refused and the read-back finds B's state, so it is fenced. B then
// leaves, and A's held JoinGroup is answered UNKNOWN_MEMBER_ID: franz-go
// joins again as a new member without calling the lost callback, and the
// group hands the partition back to A, which franz-go sees as kept (no
// callback either). The fenced worker must not wait for a callback that
// never comes: the partition is taken over from its stored state, the
// records produced afterwards are committed (lag zero), each once.
func TestFenceKafkaRejoinAsNewMember(t *testing.T) {
	e := newEnv(t)
	table := e.table(t, "fence_rejoin")
	const group = "rejoin"
	k := newKafkaCluster(t, 1, 0, kfake.GroupMinSessionTimeout(100*time.Millisecond))
	produceIDs(t, k, 0, 100)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	acl, err := kgo.NewClient(kgo.SeedBrokers(k.c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer acl.Close()
	adm := kadm.NewClient(acl)
	// Short group timeouts: the group drops a member that does not join a
	// rebalance within a second.
	fast := []kgo.Opt{kgo.SessionTimeout(2 * time.Second), kgo.RebalanceTimeout(time.Second),
		kgo.HeartbeatInterval(100 * time.Millisecond)}

	// Member A ingests the first records alone.
	cfgA, srcA := k.config(e, table, group, nil)
	srcA.Opts = append(srcA.Opts, fast...)
	metricsA := ingest.NewMetrics(prometheus.NewRegistry())
	cfgA.Metrics = metricsA
	actx, acancel := context.WithCancel(ctx)
	defer acancel()
	errA := make(chan error, 1)
	go func() { errA <- ingest.Run(actx, cfgA) }()
	k.waitCommitted(t, group, errA)
	var memberA string
	waitFor(t, 20*time.Second, "member A alone in a stable group", func() bool {
		ids, err := groupMembers(ctx, adm, group)
		if err == nil && len(ids) == 1 {
			memberA = ids[0]
		}
		return memberA != ""
	})

	// A's next JoinGroup is held until released: A is paused mid-rebalance.
	release := make(chan struct{})
	var releaseOnce sync.Once
	defer releaseOnce.Do(func() { close(release) })
	held := make(chan struct{})
	k.c.ControlKey(int16(kmsg.JoinGroup), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		if kr.(*kmsg.JoinGroupRequest).MemberID != memberA {
			return nil, nil, false
		}
		k.c.DropControl()
		close(held)
		k.c.SleepControl(func() { <-release })
		return nil, nil, false // the cluster answers it now: A is gone
	})

	// Member B joins: A heartbeats into the rebalance and its JoinGroup is
	// held; the group drops A after its rebalance timeout and gives the
	// partition to B.
	cfgB, srcB := k.config(e, table, group, nil)
	srcB.Opts = append(srcB.Opts, fast...)
	bctx, bcancel := context.WithCancel(ctx)
	defer bcancel()
	errB := make(chan error, 1)
	go func() { errB <- ingest.Run(bctx, cfgB) }()
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("member A never joined the rebalance")
	}
	waitFor(t, 20*time.Second, "member B alone in a stable group", func() bool {
		ids, err := groupMembers(ctx, adm, group)
		return err == nil && len(ids) == 1 && ids[0] != memberA
	})

	// New records: B commits them; A's worker, still reading the partition,
	// batches them too and is fenced (B's state).
	produceIDs(t, k, 100, 200)
	k.waitCommitted(t, group, errB)
	waitFor(t, 20*time.Second, "member A's worker fenced", func() bool {
		return counterValue(t, metricsA.Fenced) > 0
	})

	// B leaves; A's JoinGroup goes on (UNKNOWN_MEMBER_ID: franz-go joins
	// again as a new member) and the group gives A the partition back.
	bcancel()
	if err := <-errB; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("member B: %v", err)
	}
	releaseOnce.Do(func() { close(release) })
	waitFor(t, 20*time.Second, "member A back in a stable group", func() bool {
		ids, err := groupMembers(ctx, adm, group)
		return err == nil && len(ids) == 1 && ids[0] != memberA
	})

	// Records produced now must be committed by A: no stall.
	produceIDs(t, k, 200, 300)
	stopped := make(chan error, 1)
	go func() {
		select {
		case err := <-errA:
			stopped <- err
		case <-ctx.Done():
		}
	}()
	if err := k.waitCommittedWithin(group, stopped, 20*time.Second); err != nil {
		t.Fatalf("member A, given the partition back as a new member: %v", err)
	}
	acancel()
	checkExactlyOnce(t, e.readIDs(t, table), 300)
}
