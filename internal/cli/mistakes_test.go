package cli_test

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/bqstore/bqstore/internal/cli"
	"github.com/bqstore/bqstore/internal/testkit"
)

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// returnBound is how long a command may take before the test calls it a
// hang. It is not a performance threshold: a wrong endpoint answers within
// a few seconds; before the fix these commands waited for minutes.
const returnBound = 2 * time.Minute

// runBounded runs the command line and fails the test if it does not
// return within returnBound.
func runBounded(t *testing.T, ctx context.Context, args []string, env *cli.Env) int {
	t.Helper()
	done := make(chan int, 1)
	go func() { done <- cli.MainEnv(ctx, args, env) }()
	select {
	case code := <-done:
		return code
	case <-time.After(returnBound):
		t.Fatalf("bqstore %s did not return within %s", strings.Join(args, " "), returnBound)
		return 0
	}
}

// TestMistakesGolden makes the usual mistakes with the gRPC and REST
// commands against a running server and a closed port: each one is a
// clear message, never a hang.
// Regenerate with: go test ./internal/cli -run TestMistakesGolden -rewrite
//
// In commands and output, $GRPC and $HTTP are the server's ports, $DEAD
// a closed port and $TMP a temporary directory.
func TestMistakesGolden(t *testing.T) {
	srv := testkit.Start(t)
	dead := closedPort(t)
	dir := t.TempDir()
	subst := strings.NewReplacer("$GRPC", srv.GRPCAddr(), "$HTTP", srv.HTTPAddr(), "$DEAD", dead, "$TMP", dir)
	unsubst := strings.NewReplacer(srv.GRPCAddr(), "$GRPC", srv.HTTPAddr(), "$HTTP", dead, "$DEAD", dir, "$TMP")
	datadriven.RunTest(t, "testdata/mistakes", func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd != "bqstore" {
			t.Fatalf("unknown directive %s", d.Cmd)
		}
		var out, errb bytes.Buffer
		env := &cli.Env{Stdout: &out, Stderr: &errb, Stdin: strings.NewReader(""), LookupEnv: func(k string) (string, bool) {
			switch k {
			case "BQSTORE_API":
				return "http://" + srv.HTTPAddr(), true
			case "BQSTORE_ENDPOINT":
				return srv.GRPCAddr(), true
			}
			return "", false
		}}
		code := runBounded(t, context.Background(), strings.Fields(subst.Replace(d.Input)), env)
		res := out.String()
		if errb.Len() > 0 {
			res += "stderr: " + errb.String()
		}
		if code != 0 {
			res += "exit " + strconv.Itoa(code) + "\n"
		}
		return unsubst.Replace(res)
	})
}

// TestHelpEverywhere runs -h, --help and help on every command and bench
// workload: each prints its usage and exits 0.
// Regenerate with: go test ./internal/cli -run TestHelpEverywhere -rewrite
func TestHelpEverywhere(t *testing.T) {
	datadriven.RunTest(t, "testdata/help", func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd != "bqstore" {
			t.Fatalf("unknown directive %s", d.Cmd)
		}
		var out, errb bytes.Buffer
		// No environment: the defaults shown are the built-in ones.
		env := &cli.Env{Stdout: &out, Stderr: &errb, Stdin: strings.NewReader("")}
		code := cli.MainEnv(context.Background(), strings.Fields(d.Input), env)
		res := out.String()
		if errb.Len() > 0 {
			res += "stderr: " + errb.String()
		}
		if code != 0 {
			res += "exit " + strconv.Itoa(code) + "\n"
		}
		return res
	})
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine,
// which can wait for text to appear.
type syncBuffer struct {
	mu   sync.Mutex
	b    bytes.Buffer
	cond *sync.Cond
}

func newSyncBuffer() *syncBuffer {
	s := &syncBuffer{}
	s.cond = sync.NewCond(&s.mu)
	return s
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.cond.Broadcast()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitCount waits until sub appears n times, or stop is closed.
func (s *syncBuffer) waitCount(sub string, n int, stop <-chan struct{}) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for strings.Count(s.b.String(), sub) < n {
		select {
		case <-stop:
			return false
		default:
		}
		s.cond.Wait()
	}
	return true
}

// TestIngestUnreachableSaysSo starts ingest against a closed port: it logs
// that it cannot reach the endpoint at once and again at each retry, and
// stops when interrupted.
func TestIngestUnreachableSaysSo(t *testing.T) {
	dead := closedPort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := newSyncBuffer()
	env := &cli.Env{Stdout: &bytes.Buffer{}, Stderr: stderr, Stdin: strings.NewReader("")}
	args := []string{"ingest", "--endpoint", dead, "--table", "d.t", "--source", "file:-", "--state-dir", t.TempDir(), "--start", "earliest"}
	done := make(chan int, 1)
	go func() { done <- cli.MainEnv(ctx, args, env) }()
	stop := make(chan struct{})
	timer := time.AfterFunc(returnBound, func() {
		close(stop)
		stderr.Write(nil) // wake the waiter
	})
	defer timer.Stop()
	want := "cannot reach bqstore at " + dead
	if !stderr.waitCount(want, 2, stop) {
		t.Fatalf("ingest did not report the unreachable endpoint twice within %s; stderr:\n%s", returnBound, stderr.String())
	}
	if !strings.Contains(stderr.String(), "retry_in=") {
		t.Errorf("the retry lines do not say when the next try is:\n%s", stderr.String())
	}
	cancel()
	select {
	case code := <-done:
		if code == 0 {
			t.Errorf("interrupted ingest exited 0")
		}
	case <-time.After(returnBound):
		t.Fatalf("ingest did not return within %s of its interruption", returnBound)
	}
}
