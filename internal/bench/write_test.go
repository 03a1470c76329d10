package bench_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"

	"github.com/bqstore/bqstore/internal/bench"
	"github.com/bqstore/bqstore/internal/testkit"
)

// TestWriteExistingTable: a second run into the same table verifies the
// rows it wrote, instead of failing on the first run's rows (and printing
// "verified no (skipped)" next to the failure).
func TestWriteExistingTable(t *testing.T) {
	srv := testkit.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := bench.WriteConfig{
		Target: bench.Target{Endpoint: srv.GRPCAddr(), API: "http://" + srv.HTTPAddr(), Insecure: true,
			Project: "local", Dataset: "bench", Table: "again"},
		Rows: 500, RowBytes: 200, RequestBytes: 16 << 10, Streams: 2, Mode: "pending", Verify: true,
	}
	for run := range 2 {
		res, err := bench.Write(ctx, cfg)
		var out bytes.Buffer
		if res != nil {
			res.Print(&out, false)
		}
		if err != nil {
			t.Fatalf("run %d: %v\n%s", run, err, out.String())
		}
		if !res.Verified || !strings.Contains(out.String(), "verified   yes") {
			t.Fatalf("run %d: not verified:\n%s", run, out.String())
		}
	}
}

// TestWriteCleanup: --cleanup drops the table the run created, and a
// failed verification is not printed as skipped.
func TestWriteCleanup(t *testing.T) {
	srv := testkit.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := bench.WriteConfig{
		Target: bench.Target{Endpoint: srv.GRPCAddr(), API: "http://" + srv.HTTPAddr(), Insecure: true,
			Project: "local", Dataset: "bench", Cleanup: true},
		Rows: 100, RowBytes: 200, RequestBytes: 16 << 10, Streams: 1, Mode: "default", Verify: true,
	}
	res, err := bench.Write(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	bq, err := bigquery.NewClient(ctx, "local", testkit.RESTOptions(srv.HTTPAddr())...)
	if err != nil {
		t.Fatal(err)
	}
	defer bq.Close()
	name := res.Table[strings.LastIndexByte(res.Table, '/')+1:]
	if _, err := bq.Dataset("bench").Table(name).Metadata(ctx); err == nil {
		t.Fatalf("table %s left behind by --cleanup", res.Table)
	}

	var out bytes.Buffer
	(&bench.Result{Workload: "write", VerifyError: "table holds 2 rows"}).Print(&out, false)
	if !strings.Contains(out.String(), "verified   FAILED: table holds 2 rows") {
		t.Errorf("a failed verification prints:\n%s", out.String())
	}
	out.Reset()
	(&bench.Result{Workload: "write"}).Print(&out, false)
	if !strings.Contains(out.String(), "verified   no (--verify=false)") {
		t.Errorf("an unverified run prints:\n%s", out.String())
	}
}

// TestServerPIDCheck: what $! names after `go run ./cmd/bqstore serve &`
// (the go command) is reported, not silently sampled.
func TestServerPIDCheck(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command")
	}
	b, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	goCmd := filepath.Join(t.TempDir(), "go")
	if err := os.WriteFile(goCmd, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goCmd, "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	// Start returns once execve passed its point of no return, but the
	// kernel sets the new command line up after that: until it is there,
	// /proc/PID/cmdline reads empty (CI saw this once). Wait for it.
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 0 {
			break
		}
		runtime.Gosched()
	}
	if err := bench.CheckServerPID(cmd.Process.Pid); err == nil || !strings.Contains(err.Error(), "go run") {
		t.Errorf("CheckServerPID(a go command) = %v, want an error explaining go run", err)
	}
	if err := bench.CheckServerPID(os.Getpid()); err != nil {
		t.Errorf("CheckServerPID(this process) = %v, want nil", err)
	}
	if err := bench.CheckServerPID(1 << 30); err == nil || !strings.Contains(err.Error(), "no process") {
		t.Errorf("CheckServerPID(no such pid) = %v", err)
	}
}
