package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

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
