package ingest_test

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/bqstore/bqstore/ingest"
	"github.com/bqstore/bqstore/ingest/rows"
	"github.com/bqstore/bqstore/internal/testkit"
)

// BenchmarkFilePipeline ingests a file of 1.2 KB events (the postmortem's
// size) into an in-process bqstore server, end to end: read, map, append
// (pipelined, 1 MiB requests), finalize, seal, commit.
//
//	go test -run '^$' -bench BenchmarkFilePipeline -benchtime 3x ./ingest
//
// batch-rows=1000 is the small-batch case (per-batch latency dominates).
//
// create-rate=20 is the default CreateWriteStream rate limit (BigQuery's
// best practices); create-rate=0 lifts it (bqstore serve has no such
// quota by default), which shows what the pipeline itself costs. Each run
// reports the mean latency of the per-batch round trips (create,
// finalize, commit, state store) in ms.
func BenchmarkFilePipeline(b *testing.B) {
	for _, rows := range []int64{5000, 1000} {
		for _, rate := range []float64{20, 0} {
			b.Run(fmt.Sprintf("batch-rows=%d/create-rate=%g", rows, rate), func(b *testing.B) { benchmarkFilePipeline(b, rows, rate) })
		}
	}
}

// timing sums the latencies of one kind of call.
type timing struct {
	mu sync.Mutex
	n  int
	d  time.Duration
}

func (t *timing) since(t0 time.Time) {
	t.mu.Lock()
	t.n++
	t.d += time.Since(t0)
	t.mu.Unlock()
}

func (t *timing) report(b *testing.B, name string) {
	if t.n > 0 {
		b.ReportMetric(float64(t.d.Microseconds())/1000/float64(t.n), name+"-ms")
	}
}

// timedClient times the per-batch unary calls of the Write API.
type timedClient struct {
	storagepb.BigQueryWriteClient
	create, finalize, commit timing
}

func (c *timedClient) CreateWriteStream(ctx context.Context, in *storagepb.CreateWriteStreamRequest, opts ...grpc.CallOption) (*storagepb.WriteStream, error) {
	defer c.create.since(time.Now())
	return c.BigQueryWriteClient.CreateWriteStream(ctx, in, opts...)
}

func (c *timedClient) FinalizeWriteStream(ctx context.Context, in *storagepb.FinalizeWriteStreamRequest, opts ...grpc.CallOption) (*storagepb.FinalizeWriteStreamResponse, error) {
	defer c.finalize.since(time.Now())
	return c.BigQueryWriteClient.FinalizeWriteStream(ctx, in, opts...)
}

func (c *timedClient) BatchCommitWriteStreams(ctx context.Context, in *storagepb.BatchCommitWriteStreamsRequest, opts ...grpc.CallOption) (*storagepb.BatchCommitWriteStreamsResponse, error) {
	defer c.commit.since(time.Now())
	return c.BigQueryWriteClient.BatchCommitWriteStreams(ctx, in, opts...)
}

// timedLedger times the state stores (each a write, two fsyncs and a rename).
type timedLedger struct {
	ingest.Ledger
	store timing
}

func (l *timedLedger) Store(ctx context.Context, partition string, s ingest.State) error {
	defer l.store.since(time.Now())
	return l.Ledger.Store(ctx, partition, s)
}

func benchmarkFilePipeline(b *testing.B, batchRows int64, createRate float64) {
	const events = 20000
	srv := testkit.Start(b)
	ctx := context.Background()
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
	write := &timedClient{BigQueryWriteClient: storagepb.NewBigQueryWriteClient(conn)}
	var stores timing

	dir := b.TempDir()
	src := filepath.Join(dir, "events.ndjson")
	f, err := os.Create(src)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	pad := strings.Repeat("p", 1100)
	for i := range events {
		fmt.Fprintf(w, `{"id":%d,"name":"%s","ts":"2026-11-30T02:00:00.%06dZ","tags":["a","b"]}`+"\n", i, pad, i%1000000)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	st, _ := os.Stat(src)

	b.SetBytes(st.Size())
	b.ReportAllocs()
	i := 0
	var e2v []float64
	for b.Loop() {
		i++
		name := fmt.Sprintf("bench_%d", i)
		if err := bq.Dataset("d").Table(name).Create(ctx, &bigquery.TableMetadata{Schema: eventSchema}); err != nil {
			b.Fatal(err)
		}
		ledger, err := ingest.OpenFileLedger(filepath.Join(dir, name))
		if err != nil {
			b.Fatal(err)
		}
		defer ledger.Close()
		m := ingest.NewMetrics(nil)
		rate := createRate
		if rate == 0 {
			rate = math.Inf(1)
		}
		tl := &timedLedger{Ledger: ledger}
		err = ingest.Run(ctx, ingest.Config{
			Start:  ingest.StartEarliest,
			Client: write, Table: fmt.Sprintf("projects/%s/datasets/d/tables/%s", project, name),
			Source: &ingest.FileSource{Path: src}, Ledger: tl, Unknown: rows.UnknownReject,
			MaxBatchRows: batchRows, MaxBatchAge: time.Second, Metrics: m, CreateRate: rate,
		})
		stores.n += tl.store.n
		stores.d += tl.store.d
		if err != nil {
			b.Fatal(err)
		}
		var h dto.Metric
		if err := m.EventToVisible.Write(&h); err != nil {
			b.Fatal(err)
		}
		e2v = append(e2v, h.GetHistogram().GetSampleSum()/float64(h.GetHistogram().GetSampleCount()))
	}
	b.ReportMetric(float64(events*b.N)/b.Elapsed().Seconds(), "events/s")
	var sum float64
	for _, v := range e2v {
		sum += v
	}
	b.ReportMetric(sum/float64(len(e2v)), "mean-batch-read-to-visible-s")
	write.create.report(b, "create")
	write.finalize.report(b, "finalize")
	write.commit.report(b, "commit")
	stores.report(b, "store")
	// 1 is a seal per batch, DONE carried by the next seal; 2 a DONE of
	// its own each (the first state, the start position, is left out).
	runs := len(e2v)
	b.ReportMetric(float64(stores.n-runs)/float64(runs*int(events/batchRows)), "stores/batch")
}
