package ingest_test

import (
	"context"
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

// produceIDsSpread writes events with ids [from, to) to the topic's
// partitions in turn (id i to partition i % parts).
func produceIDsSpread(t *testing.T, k *kafkaEnv, from, to int) {
	t.Helper()
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		recs = append(recs, &kgo.Record{Partition: int32(i) % k.parts, Value: fmt.Appendf(nil, `{"id":%d,"name":"k%d","tags":[]}`, i, i)})
	}
	produceTo(t, k, recs)
}

// TestFenceKafkaRejoinWhileOtherOwns (review of the seed-162 fix): as in
// TestFenceKafkaRejoinAsNewMember, member A is dropped mid-rebalance and
// B takes both partitions, and A's workers are fenced; but B stays. A
// joins again as a new member still claiming both partitions (franz-go
// kept its old assignment) under its old generation, while B owns them
// under a newer one. A's old workers must stop without storing anything
// under the new membership, and A may start a partition only once the
// group hands it over (cooperative: after B's revoke): records produced
// before, during and after are committed once each, and nothing stalls.
func TestFenceKafkaRejoinWhileOtherOwns(t *testing.T) {
	e := newEnv(t)
	table := e.table(t, "fence_rejoin_stay")
	const group = "rejoin-stay"
	k := newKafkaCluster(t, 2, 0, kfake.GroupMinSessionTimeout(100*time.Millisecond))
	produceIDsSpread(t, k, 0, 100)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	acl, err := kgo.NewClient(kgo.SeedBrokers(k.c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer acl.Close()
	adm := kadm.NewClient(acl)
	fast := []kgo.Opt{kgo.SessionTimeout(2 * time.Second), kgo.RebalanceTimeout(time.Second),
		kgo.HeartbeatInterval(100 * time.Millisecond)}

	// Every state A stores, with the member id its OffsetCommit named.
	var mu sync.Mutex
	var memberA string
	var rejoined bool
	var aAfterRejoin []string // states A's old membership stored after it was dropped
	k.c.ControlKey(int16(kmsg.OffsetCommit), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		k.c.KeepControl()
		req := kr.(*kmsg.OffsetCommitRequest)
		mu.Lock()
		defer mu.Unlock()
		if rejoined && req.MemberID == memberA {
			for _, rt := range req.Topics {
				for _, rp := range rt.Partitions {
					aAfterRejoin = append(aAfterRejoin, fmt.Sprintf("p%d@%d", rp.Partition, rp.Offset))
				}
			}
		}
		return nil, nil, false
	})

	cfgA, srcA := k.config(e, table, group, nil)
	srcA.Opts = append(srcA.Opts, fast...)
	metricsA := ingest.NewMetrics(prometheus.NewRegistry())
	cfgA.Metrics = metricsA
	actx, acancel := context.WithCancel(ctx)
	defer acancel()
	errA := make(chan error, 1)
	go func() { errA <- ingest.Run(actx, cfgA) }()
	k.waitCommitted(t, group, errA)
	waitFor(t, 20*time.Second, "member A alone in a stable group", func() bool {
		ids, err := groupMembers(ctx, adm, group)
		if err == nil && len(ids) == 1 {
			mu.Lock()
			memberA = ids[0]
			mu.Unlock()
			return true
		}
		return false
	})

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
		return nil, nil, false
	})

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
	produceIDsSpread(t, k, 100, 200)
	k.waitCommitted(t, group, errB)
	waitFor(t, 20*time.Second, "member A's workers fenced", func() bool {
		return counterValue(t, metricsA.Fenced) > 0
	})

	// A's JoinGroup goes on while B stays: A joins as a new member.
	mu.Lock()
	rejoined = true
	mu.Unlock()
	releaseOnce.Do(func() { close(release) })
	// Records keep coming while the group settles.
	for i := 200; i < 400; i += 20 {
		produceIDsSpread(t, k, i, i+20)
		time.Sleep(20 * time.Millisecond)
	}
	waitFor(t, 20*time.Second, "A (as a new member) and B in a stable group", func() bool {
		ids, err := groupMembers(ctx, adm, group)
		return err == nil && len(ids) == 2
	})
	produceIDsSpread(t, k, 400, 500)
	stopped := make(chan error, 2)
	for _, c := range []chan error{errA, errB} {
		go func() {
			select {
			case err := <-c:
				stopped <- err
			case <-ctx.Done():
			}
		}()
	}
	if err := k.waitCommittedWithin(group, stopped, 30*time.Second); err != nil {
		t.Fatalf("after A joined again beside B: %v", err)
	}
	acancel()
	bcancel()
	mu.Lock()
	if len(aAfterRejoin) > 0 {
		t.Errorf("A's old membership stored states after it was dropped: %v", aAfterRejoin)
	}
	mu.Unlock()
	checkExactlyOnce(t, e.readIDs(t, table), 500)
}
