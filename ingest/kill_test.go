package ingest_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"

	"github.com/bqstore/bqstore/ingest"
	"github.com/bqstore/bqstore/ingest/rows"
	"github.com/bqstore/bqstore/internal/testkit"
)

// ingestChildEnv makes the test binary run one ingest pipeline (see
// runIngestChildIfRequested) so that tests can kill -9 it.
const ingestChildEnv = "BQSTORE_INGEST_TEST_CHILD"

// runIngestChildIfRequested runs the pipeline described by the environment
// (endpoint, table, source, state dir, dead-letter file) and exits.
func runIngestChildIfRequested() {
	v, ok := os.LookupEnv(ingestChildEnv)
	if !ok {
		return
	}
	a := strings.Split(v, "\x1f")
	ctx := context.Background()
	err := func() error {
		conn, err := ingest.Dial(ctx, a[0], true, 2)
		if err != nil {
			return err
		}
		defer conn.Close()
		ledger, err := ingest.OpenFileLedger(a[3])
		if err != nil {
			return err
		}
		defer ledger.Close()
		dl, err := ingest.OpenDeadLetters(a[4])
		if err != nil {
			return err
		}
		defer dl.Close()
		return ingest.Run(ctx, ingest.Config{
			Start:  ingest.StartEarliest,
			Client: conn.Write, Table: a[1], Source: &ingest.FileSource{Path: a[2]}, Ledger: ledger, DeadLetters: dl,
			Unknown: rows.UnknownReject, MaxBatchRows: 100, RequestBytes: 8 << 10, CommitWindow: time.Millisecond,
			Backoff: ingest.Backoff{Base: 5 * time.Millisecond, Max: 100 * time.Millisecond},
		})
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ingest child:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// TestKill9 kills the ingest process with SIGKILL at random moments, and
// every fifth cycle the server too, 20 cycles, then lets a last run finish
// and checks that the table and the dead-letter file hold every record
// exactly once.
func TestKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("process-kill cycles are skipped with -short")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("INGEST_KILL_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	t.Logf("seed %d (rerun with INGEST_KILL_SEED)", seed)
	rng := rand.New(rand.NewPCG(seed, 1))

	dataDir := t.TempDir()
	srv := testkit.StartChild(t, dataDir, "--project", project)
	ctx := context.Background()
	bq, err := bigquery.NewClient(ctx, project, testkit.RESTOptions(srv.HTTPAddr)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := bq.Dataset("d").Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := bq.Dataset("d").Table("kill").Create(ctx, &bigquery.TableMetadata{Schema: eventSchema}); err != nil {
		t.Fatal(err)
	}
	bq.Close()
	table := "projects/" + project + "/datasets/d/tables/kill"
	// Enough records that most runs are killed mid-way (about 1.5 s of work).
	const n = 20000
	src, bad := writeEvents(t, n, 997)
	dir := t.TempDir()
	state, dead := filepath.Join(dir, "state"), filepath.Join(dir, "dead.ndjson")

	start := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), ingestChildEnv+"="+strings.Join([]string{srv.GRPCAddr, table, src, state, dead}, "\x1f"))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	killed := 0
	for cycle := range 20 {
		if cycle%5 == 4 {
			srv.Kill()
			srv = testkit.StartChild(t, dataDir, "--project", project)
		}
		cmd := start()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done: // finished (or failed against a dead server) before the kill
		case <-time.After(time.Duration(20+rng.IntN(300)) * time.Millisecond):
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-done
			killed++
		}
	}
	t.Logf("%d of 20 runs killed with SIGKILL", killed)
	cmd := start()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("final run: %v", err)
	}
	e := &env{}
	e.bq, err = bigquery.NewClient(ctx, project, testkit.RESTOptions(srv.HTTPAddr)...)
	if err != nil {
		t.Fatal(err)
	}
	defer e.bq.Close()
	if err := e.bq.EnableStorageReadClient(ctx, testkit.GRPCOptions(srv.GRPCAddr)...); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, e.readIDs(t, table), n)
	if got := countLines(t, dead); got != bad {
		t.Errorf("dead letters: %d lines, want %d", got, bad)
	}
}
