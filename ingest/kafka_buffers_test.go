package ingest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/grpc"
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

// stuckAppends is a Write client whose streams are created (with a
// schema) and whose AppendRows never connects: workers read a request's
// worth of records and then wait, so the records fetched for them pile up.
type stuckAppends struct {
	storagepb.BigQueryWriteClient
	n atomic.Int64
}

func (c *stuckAppends) CreateWriteStream(_ context.Context, req *storagepb.CreateWriteStreamRequest, _ ...grpc.CallOption) (*storagepb.WriteStream, error) {
	return &storagepb.WriteStream{
		Name: fmt.Sprintf("%s/streams/s%d", req.GetParent(), c.n.Add(1)), Type: storagepb.WriteStream_PENDING,
		TableSchema: &storagepb.TableSchema{Fields: []*storagepb.TableFieldSchema{
			{Name: "id", Type: storagepb.TableFieldSchema_INT64, Mode: storagepb.TableFieldSchema_NULLABLE},
			{Name: "pad", Type: storagepb.TableFieldSchema_STRING, Mode: storagepb.TableFieldSchema_NULLABLE}}},
	}, nil
}

func (c *stuckAppends) AppendRows(ctx context.Context, _ ...grpc.CallOption) (storagepb.BigQueryWrite_AppendRowsClient, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestKafkaMemoryBudgetBoundsFetchBuffers: Config.MemoryBudget bounds the
// Kafka side too. Four partitions of 256 KiB each, workers that cannot
// append, a budget of 512 KiB: the Kafka source gets half, so its fetches
// are at most 2 x 32 KiB and fetching pauses once the records waiting for
// the workers pass 128 KiB. Before, each partition buffered up to 8 MiB
// (MaxBuffered) whatever the budget, with franz-go's 50 MiB fetches: the
// whole megabyte was buffered.
func TestKafkaMemoryBudgetBoundsFetchBuffers(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "events"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pcl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.ProducerBatchMaxBytes(8<<10), kgo.ProducerBatchCompression(kgo.NoCompression())) // fetch limits count compressed bytes
	if err != nil {
		t.Fatal(err)
	}
	const n, size = 1024, 1 << 10
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: "events", Value: fmt.Appendf(nil, `{"id":%d,"pad":"%0*d"}`, i, size-32, 0)})
	}
	if err := pcl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	pcl.Close()

	const budget = 512 << 10
	src := &KafkaSource{Brokers: c.ListenAddrs(), Topic: "events", Group: "budget",
		Opts: []kgo.Opt{kgo.SessionTimeout(6 * time.Second), kgo.HeartbeatInterval(100 * time.Millisecond)}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		errc <- Run(ctx, Config{Client: &stuckAppends{}, Table: "projects/p/datasets/d/tables/t", Source: src,
			Start: StartEarliest, MemoryBudget: budget, RequestBytes: 16 << 10, MaxBatchAge: time.Hour,
			Backoff: Backoff{Base: time.Millisecond, Max: 10 * time.Millisecond}})
	}()
	// Wait until fetching stopped (every partition paused) or the
	// records buffered pass the source's share of the budget.
	share := int64(budget / 2)
	var total int64
	halted := false // a worker failed
	waitFor(t, "fetching to pause or pass the budget", func() bool {
		select {
		case err := <-errc:
			t.Fatalf("Run stopped: %v", err)
		default:
		}
		src.mu.Lock()
		defer src.mu.Unlock()
		total = 0
		paused := 0
		for _, kp := range src.mu.parts {
			kp.mu.Lock()
			total += kp.mu.queued
			if kp.mu.paused {
				paused++
			}
			halted = halted || kp.mu.halted
			kp.mu.Unlock()
		}
		return halted || total > share || (len(src.mu.parts) == 4 && paused == 4 && total > 0)
	})
	if halted {
		t.Fatal("a partition halted: its worker failed")
	}
	if total > share {
		t.Fatalf("%d bytes of Kafka records buffered, over the source's share (%d) of the %d-byte memory budget", total, share, budget)
	}
	if got := src.cl.OptValue(kgo.FetchMaxBytes).(int32); int64(got) > share/4 {
		t.Fatalf("FetchMaxBytes %d, want at most %d", got, share/4)
	}
	if got := src.cl.OptValue(kgo.MaxConcurrentFetches).(int); got != 2 {
		t.Fatalf("MaxConcurrentFetches %d, want 2", got)
	}
	cancel()
	<-errc
}
