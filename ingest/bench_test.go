package ingest_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
func BenchmarkFilePipeline(b *testing.B) {
	for _, rows := range []int64{5000, 1000} {
		b.Run(fmt.Sprintf("batch-rows=%d", rows), func(b *testing.B) { benchmarkFilePipeline(b, rows) })
	}
}

func benchmarkFilePipeline(b *testing.B, batchRows int64) {
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
	write := storagepb.NewBigQueryWriteClient(conn)

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
		err = ingest.Run(ctx, ingest.Config{
			Start:  ingest.StartEarliest,
			Client: write, Table: fmt.Sprintf("projects/%s/datasets/d/tables/%s", project, name),
			Source: &ingest.FileSource{Path: src}, Ledger: ledger, Unknown: rows.UnknownReject,
			MaxBatchRows: batchRows, MaxBatchAge: time.Second, Metrics: m,
		})
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
}
