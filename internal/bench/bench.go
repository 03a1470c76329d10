// Package bench is the load generator behind `bqstore bench`: it drives a
// server (bqstore, another emulator, or real BigQuery) through Google's
// official Go clients only (managedwriter, the read client, the REST
// client), so that the same measurement means the same thing everywhere.
package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"cloud.google.com/go/bigquery"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Target says where the server is and how to talk to it.
type Target struct {
	// Endpoint is the Storage API's gRPC address (host:port).
	Endpoint string
	// API is the REST v2 base URL (http://127.0.0.1:9050); empty means
	// Google's default endpoint.
	API string
	// Insecure selects plaintext gRPC without credentials (for local
	// servers); otherwise TLS with Application Default Credentials.
	Insecure bool
	// Project, Dataset and Table name the table; Table empty means a new
	// table named after the run.
	Project, Dataset, Table string
	// ServerPID, when set, is sampled for CPU time and peak RSS (local
	// servers only).
	ServerPID int
	// Window, when positive, sets the client's HTTP/2 stream window (and
	// four times it for the connection), instead of grpc-go's dynamic
	// default.
	Window int
	// Cleanup drops the table at the end of the run when the run created
	// it, so benchmark tables do not pile up.
	Cleanup bool
}

func (t Target) grpcOptions() []option.ClientOption {
	var opts []option.ClientOption
	if t.Endpoint != "" {
		opts = append(opts, option.WithEndpoint(t.Endpoint))
	}
	if t.Insecure {
		opts = append(opts, option.WithoutAuthentication(),
			option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	}
	if t.Window > 0 {
		opts = append(opts,
			option.WithGRPCDialOption(grpc.WithInitialWindowSize(int32(t.Window))),
			option.WithGRPCDialOption(grpc.WithInitialConnWindowSize(int32(4*t.Window))),
			option.WithGRPCDialOption(grpc.WithReadBufferSize(1<<20)))
	}
	return opts
}

func (t Target) restOptions() []option.ClientOption {
	var opts []option.ClientOption
	if t.API != "" {
		opts = append(opts, option.WithEndpoint(t.API))
	}
	if t.Insecure {
		opts = append(opts, option.WithoutAuthentication())
	}
	return opts
}

func (t Target) tablePath() string {
	return fmt.Sprintf("projects/%s/datasets/%s/tables/%s", t.Project, t.Dataset, t.Table)
}

// Result is what a run measured. Durations are in seconds in JSON.
type Result struct {
	Workload    string  `json:"workload"`
	Mode        string  `json:"mode,omitempty"`
	Format      string  `json:"format,omitempty"`
	Streams     int     `json:"streams"`
	Rows        int64   `json:"rows"`
	Bytes       int64   `json:"bytes"`
	Seconds     float64 `json:"seconds"`
	RowsPerSec  float64 `json:"rows_per_sec"`
	MBPerSec    float64 `json:"mb_per_sec"`
	LatencyP50  float64 `json:"latency_p50_s,omitempty"`
	LatencyP90  float64 `json:"latency_p90_s,omitempty"`
	LatencyP99  float64 `json:"latency_p99_s,omitempty"`
	LatencyMax  float64 `json:"latency_max_s,omitempty"`
	ClientCPU   float64 `json:"client_cpu_s"`
	ServerCPU   float64 `json:"server_cpu_s,omitempty"`
	ServerRSSMB float64 `json:"server_peak_rss_mb,omitempty"`
	Verified    bool    `json:"verified"`
	// VerifyError says why the verification failed ("" when it passed or
	// did not run).
	VerifyError string `json:"verify_error,omitempty"`
	Table       string `json:"table"`
}

// Print writes the human summary, or one JSON line.
func (r *Result) Print(w io.Writer, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(r)
	}
	fmt.Fprintf(w, "%s", r.Workload)
	if r.Mode != "" {
		fmt.Fprintf(w, " mode=%s", r.Mode)
	}
	if r.Format != "" {
		fmt.Fprintf(w, " format=%s", r.Format)
	}
	fmt.Fprintf(w, " streams=%d table=%s\n", r.Streams, r.Table)
	fmt.Fprintf(w, "  rows       %d in %.2fs: %.0f rows/s, %.1f MB/s\n", r.Rows, r.Seconds, r.RowsPerSec, r.MBPerSec)
	if r.LatencyMax > 0 {
		fmt.Fprintf(w, "  latency    p50 %s  p90 %s  p99 %s  max %s\n", ms(r.LatencyP50), ms(r.LatencyP90), ms(r.LatencyP99), ms(r.LatencyMax))
	}
	fmt.Fprintf(w, "  client CPU %.2fs (%.0f%% of one core)\n", r.ClientCPU, 100*r.ClientCPU/r.Seconds)
	if r.ServerCPU > 0 {
		fmt.Fprintf(w, "  server CPU %.2fs (%.0f%% of one core), peak RSS %.0f MB\n", r.ServerCPU, 100*r.ServerCPU/r.Seconds, r.ServerRSSMB)
	}
	verified := "yes"
	switch {
	case r.VerifyError != "":
		verified = "FAILED: " + r.VerifyError
	case !r.Verified:
		verified = "no (--verify=false)"
	}
	fmt.Fprintf(w, "  verified   %s\n", verified)
	return nil
}

func ms(s float64) string { return strconv.FormatFloat(s*1000, 'f', 1, 64) + "ms" }

// percentiles fills the latency fields from samples (seconds).
func (r *Result) percentiles(samples []float64) {
	if len(samples) == 0 {
		return
	}
	sort.Float64s(samples)
	q := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(samples)))) - 1
		return samples[max(0, min(i, len(samples)-1))]
	}
	r.LatencyP50, r.LatencyP90, r.LatencyP99 = q(0.50), q(0.90), q(0.99)
	r.LatencyMax = samples[len(samples)-1]
}

func (r *Result) finish(start time.Time, cpu0 time.Duration, srv0 procSample, pid int) {
	r.Seconds = time.Since(start).Seconds()
	r.RowsPerSec = float64(r.Rows) / r.Seconds
	r.MBPerSec = float64(r.Bytes) / r.Seconds / 1e6
	r.ClientCPU = (selfCPU() - cpu0).Seconds()
	if pid > 0 {
		s := sampleProc(pid)
		r.ServerCPU = (s.cpu - srv0.cpu).Seconds()
		r.ServerRSSMB = float64(s.peakRSS) / (1 << 20)
	}
}

// ensureTable creates the dataset (if missing) and the table (if
// missing: created says so).
func ensureTable(ctx context.Context, t *Target, sch bigquery.Schema) (created bool, err error) {
	bq, err := bigquery.NewClient(ctx, t.Project, t.restOptions()...)
	if err != nil {
		return false, err
	}
	defer bq.Close()
	ds := bq.Dataset(t.Dataset)
	if _, err := ds.Metadata(ctx); err != nil {
		if err := ds.Create(ctx, &bigquery.DatasetMetadata{}); err != nil && !strings.Contains(err.Error(), "409") {
			return false, fmt.Errorf("create dataset %s: %w", t.Dataset, err)
		}
	}
	if t.Table == "" {
		t.Table = fmt.Sprintf("bench_%d", time.Now().UnixNano())
	}
	if _, err := ds.Table(t.Table).Metadata(ctx); err == nil {
		return false, nil
	}
	if err := ds.Table(t.Table).Create(ctx, &bigquery.TableMetadata{Schema: sch}); err != nil {
		return false, fmt.Errorf("create table %s: %w", t.Table, err)
	}
	return true, nil
}

// dropTable deletes the table (Target.Cleanup).
func dropTable(t Target) error {
	// Also after the run's context ended (Ctrl-C): the table goes anyway.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bq, err := bigquery.NewClient(ctx, t.Project, t.restOptions()...)
	if err != nil {
		return err
	}
	defer bq.Close()
	if err := bq.Dataset(t.Dataset).Table(t.Table).Delete(ctx); err != nil {
		return fmt.Errorf("cleanup: delete table %s.%s: %w", t.Dataset, t.Table, err)
	}
	return nil
}

// CheckServerPID says why pid cannot be the server whose CPU and memory
// a run samples (nil when it can): no such process, or a go command
// (after `go run ./cmd/bqstore serve &`, $! names go run, not the server
// it started). Any other process may be the server under test (another
// emulator, too).
func CheckServerPID(pid int) error {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return fmt.Errorf("--server-pid %d: no process to sample (%v)", pid, err)
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	if filepath.Base(args[0]) == "go" {
		return fmt.Errorf("--server-pid %d is %q, not the server: $! after `go run ./cmd/bqstore serve &` names the go command; build the server (go build -o bin/bqstore ./cmd/bqstore) and give its pid",
			pid, strings.Join(args, " "))
	}
	return nil
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type procSample struct {
	cpu     time.Duration
	peakRSS int64 // bytes
}

// sampleProc reads a local process's CPU time and peak RSS from /proc.
func sampleProc(pid int) procSample {
	var s procSample
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// Fields after the command name (which may contain spaces).
		if i := strings.LastIndexByte(string(b), ')'); i > 0 {
			f := strings.Fields(string(b)[i+2:])
			if len(f) > 13 {
				ut, _ := strconv.ParseInt(f[11], 10, 64)
				st, _ := strconv.ParseInt(f[12], 10, 64)
				s.cpu = time.Duration(ut+st) * time.Second / 100 // USER_HZ
			}
		}
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "VmHWM:") {
				f := strings.Fields(line)
				if len(f) >= 2 {
					kb, _ := strconv.ParseInt(f[1], 10, 64)
					s.peakRSS = kb << 10
				}
			}
		}
	}
	return s
}
