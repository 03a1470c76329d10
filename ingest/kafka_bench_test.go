package ingest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/bqstore/bqstore/ingest"
	"github.com/bqstore/bqstore/ingest/rows"
	"github.com/bqstore/bqstore/internal/testkit"
)

// BenchmarkKafkaPipeline drains a backlog of 1.2 KB events from kfake (4
// partitions) into an in-process bqstore server: the postmortem's event
// size, broker, pipeline and server sharing this machine's cores.
//
//	go test -run '^$' -bench BenchmarkKafkaPipeline -benchtime 3x ./ingest
func BenchmarkKafkaPipeline(b *testing.B) {
	const events, parts = 40000, 4
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(parts, "events"))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	pcl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		b.Fatal(err)
	}
	pad := strings.Repeat("p", 1100)
	var size int64
	recs := make([]*kgo.Record, 0, events)
	for i := range events {
		v := fmt.Appendf(nil, `{"id":%d,"name":"%s","ts":%d,"tags":["a"]}`, i, pad, 1700000000000000+i)
		size += int64(len(v))
		recs = append(recs, &kgo.Record{Topic: "events", Value: v})
	}
	if err := pcl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		b.Fatal(err)
	}
	pcl.Close()
	recs = nil

	srv := testkit.Start(b)
	bq, err := bigquery.NewClient(ctx, project, testkit.RESTOptions(srv.HTTPAddr())...)
	if err != nil {
		b.Fatal(err)
	}
	defer bq.Close()
	if err := bq.Dataset("d").Create(ctx, nil); err != nil {
		b.Fatal(err)
	}
	conn, err := grpc.NewClient(srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	write := storagepb.NewBigQueryWriteClient(conn)
	acl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		b.Fatal(err)
	}
	defer acl.Close()
	adm := kadm.NewClient(acl)
	ends, err := adm.ListEndOffsets(ctx, "events")
	if err != nil {
		b.Fatal(err)
	}

	b.SetBytes(size)
	b.ReportAllocs()
	i := 0
	var elapsed time.Duration
	for b.Loop() {
		i++
		name, group := fmt.Sprintf("kbench_%d", i), fmt.Sprintf("bench%d", i)
		if err := bq.Dataset("d").Table(name).Create(ctx, &bigquery.TableMetadata{Schema: eventSchema}); err != nil {
			b.Fatal(err)
		}
		rctx, cancel := context.WithCancel(ctx)
		errc := make(chan error, 1)
		t0 := time.Now()
		go func() {
			errc <- ingest.Run(rctx, ingest.Config{
				Start:  ingest.StartEarliest,
				Client: write, Table: fmt.Sprintf("projects/%s/datasets/d/tables/%s", project, name),
				Source:  &ingest.KafkaSource{Brokers: c.ListenAddrs(), Topic: "events", Group: group},
				Unknown: rows.UnknownReject, MaxBatchAge: 500 * time.Millisecond, MaxBatchBytes: 16 << 20,
			})
		}()
		for {
			offs, err := adm.FetchOffsets(ctx, group)
			done := err == nil
			ends.Each(func(e kadm.ListedOffset) {
				if o, ok := offs.Lookup(e.Topic, e.Partition); !ok || o.At != e.Offset {
					done = false
				}
			})
			if done {
				break
			}
			select {
			case err := <-errc:
				b.Fatalf("pipeline stopped: %v", err)
			case <-time.After(5 * time.Millisecond):
			}
		}
		elapsed += time.Since(t0)
		cancel()
		<-errc
	}
	b.ReportMetric(float64(events*i)/elapsed.Seconds(), "events/s")
}
