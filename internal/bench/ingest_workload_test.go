package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/bqstore/bqstore/ingest"
	"github.com/bqstore/bqstore/internal/bench"
	"github.com/bqstore/bqstore/internal/testkit"
)

// TestIngestWorkload runs the whole workload briefly against an
// in-process server: every produced event must be committed once and
// found by the Read API, with one latency sample per event.
func TestIngestWorkload(t *testing.T) {
	srv := testkit.Start(t)
	cfg := bench.IngestConfig{
		Target: bench.Target{Endpoint: srv.GRPCAddr(), API: "http://" + srv.HTTPAddr(), Insecure: true,
			Project: "local", Dataset: "bench", Table: "ingest_test"},
		Rate: 2000, RowBytes: 600, Duration: 500 * time.Millisecond, Partitions: 3,
		BatchAge: 100 * time.Millisecond, Drain: time.Minute, Verify: true,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := bench.Ingest(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Verified || res.Rows == 0 || res.Bytes != res.Rows*600 || res.Batches == 0 {
		t.Fatalf("result %+v", res)
	}
	if res.LatencyMax <= 0 || res.LatencyP50 > res.LatencyP99 || res.LatencyP99 > res.LatencyMax {
		t.Fatalf("latencies p50 %v p99 %v max %v", res.LatencyP50, res.LatencyP99, res.LatencyMax)
	}
	var out bytes.Buffer
	if err := res.Print(&out, true); err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(out.Bytes(), &back); err != nil || back["workload"] != "ingest" || back["asked_rate"] != 2000.0 {
		t.Fatalf("JSON line %s: %v", out.Bytes(), err)
	}
}

// announceFunc calls f with every line written to it.
type announceFunc func(line string)

func (f announceFunc) Write(p []byte) (int, error) {
	f(string(p))
	return len(p), nil
}

// TestIngestExternal measures a pipeline the bench does not run: it is
// started from the announced kafka:// source, as bqstore ingest would be,
// and seen only through the group's committed offsets.
func TestIngestExternal(t *testing.T) {
	srv := testkit.Start(t)
	conn, err := grpc.NewClient(srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	pipeErr := make(chan error, 1)
	table := "projects/local/datasets/bench/tables/ingest_ext"
	cfg := bench.IngestConfig{
		Target: bench.Target{Endpoint: srv.GRPCAddr(), API: "http://" + srv.HTTPAddr(), Insecure: true,
			Project: "local", Dataset: "bench", Table: "ingest_ext"},
		Rate: 2000, RowBytes: 400, Duration: 500 * time.Millisecond, Partitions: 2,
		Drain: time.Minute, Verify: true, External: true,
		Announce: announceFunc(func(line string) {
			url, _, ok := strings.Cut(strings.TrimPrefix(line, "source "), " ")
			if !ok {
				return
			}
			src, err := ingest.ParseKafkaURL(url)
			if err != nil {
				pipeErr <- err
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := ingest.Run(pctx, ingest.Config{Start: ingest.StartEarliest, Client: storagepb.NewBigQueryWriteClient(conn), Table: table,
					Source: src, MaxBatchAge: 100 * time.Millisecond})
				if !errors.Is(err, context.Canceled) {
					pipeErr <- err
				}
			}()
		}),
	}
	res, err := bench.Ingest(ctx, cfg)
	stop()
	wg.Wait()
	select {
	case err := <-pipeErr:
		t.Fatalf("pipeline: %v", err)
	default:
	}
	if err != nil {
		t.Fatal(err)
	}
	if !res.Verified || res.Rows == 0 || res.Latency != "offset_poll" || res.LatencyMax <= 0 {
		t.Fatalf("result %+v", res)
	}
}
