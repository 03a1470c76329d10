package ingest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKafkaPauseDoesNotOutliveAssignment: franz-go's fetch pauses outlive
// an assignment. Member A pauses both partitions (their buffers are full:
// its workers read nothing), member B joins and takes one, then leaves,
// and the partition comes back to A. Before, A's new partition started
// "not paused" while the client still had it paused: never fetched again,
// its reader waited for ever (a stall). Now it is read.
func TestKafkaPauseDoesNotOutliveAssignment(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "events"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pcl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := range 200 {
		recs = append(recs, &kgo.Record{Topic: "events", Value: fmt.Appendf(nil, `{"id":%d,"pad":"%0100d"}`, i, 0)})
	}
	if err := pcl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	pcl.Close()

	opts := []kgo.Opt{kgo.SessionTimeout(6 * time.Second), kgo.HeartbeatInterval(100 * time.Millisecond), kgo.RebalanceTimeout(5 * time.Second)}
	a := &KafkaSource{Brokers: c.ListenAddrs(), Topic: "events", Group: "sticky", MaxBuffered: 1, Opts: opts, RevokeGrace: time.Millisecond}
	b := &KafkaSource{Brokers: c.ListenAddrs(), Topic: "events", Group: "sticky", MaxBuffered: 1, Opts: opts, RevokeGrace: time.Millisecond}

	var mu sync.Mutex
	assigned := map[string]int{} // times A was assigned each partition
	var firstA []*kafkaPartition
	read := make(chan error, 4)
	actx, acancel := context.WithCancel(context.Background())
	defer acancel()
	aerr := make(chan error, 1)
	go func() {
		aerr <- a.Run(actx, func(ctx context.Context, p Partition) error {
			mu.Lock()
			assigned[p.Key()]++
			again := assigned[p.Key()] > 1
			if !again {
				firstA = append(firstA, p.(*kafkaPartition))
			}
			mu.Unlock()
			if !again {
				// Seeks (a partition without a committed offset is not
				// fetched before) and reads nothing: the buffer fills,
				// fetching pauses.
				if _, err := p.Open(ctx, 0); err != nil {
					return err
				}
				<-ctx.Done()
				return nil
			}
			r, err := p.Open(ctx, 0)
			if err != nil {
				read <- err
				return nil
			}
			rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			_, _, err = r.Next(rctx)
			read <- err
			<-ctx.Done()
			return nil
		})
	}()
	// Wait until A holds both partitions, paused.
	waitFor(t, "A to pause both partitions", func() bool {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, kp := range firstA {
			kp.mu.Lock()
			if kp.mu.paused && kp.mu.queued > 0 {
				n++
			}
			kp.mu.Unlock()
		}
		return n == 2
	})

	bctx, bcancel := context.WithCancel(context.Background())
	bgot := make(chan struct{}, 2)
	berr := make(chan error, 1)
	go func() {
		berr <- b.Run(bctx, func(ctx context.Context, p Partition) error {
			bgot <- struct{}{}
			<-ctx.Done()
			return nil
		})
	}()
	select {
	case <-bgot:
	case <-time.After(60 * time.Second):
		t.Fatal("B was never assigned a partition")
	}
	bcancel() // B leaves: its partition goes back to A
	if err := <-berr; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("B: %v", err)
	}
	select {
	case err := <-read:
		if err != nil {
			t.Fatalf("the partition back at A: %v, want a record (paused for ever?)", err)
		}
	case err := <-aerr:
		t.Fatalf("A stopped: %v", err)
	case <-time.After(90 * time.Second):
		t.Fatal("the partition never came back to A")
	}
	acancel()
	<-aerr
}

// waitFor polls cond until it holds (at most a minute).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
