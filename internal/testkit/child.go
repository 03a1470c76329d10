package testkit

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bqstore/bqstore/internal/cli"
)

// childEnv makes a test binary act as `bqstore` (see RunChildIfRequested).
const childEnv = "BQSTORE_TESTKIT_CHILD_ARGS"

// RunChildIfRequested must be called first in TestMain of a package that
// uses StartChild: when the test binary was started as a child server it
// runs the bqstore command line instead of the tests and exits.
func RunChildIfRequested() {
	args, ok := os.LookupEnv(childEnv)
	if !ok {
		return
	}
	ctx, stop := signalContext()
	code := cli.Main(ctx, strings.Split(args, "\x1f"), os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Child is a bqstore server running as a child process (the test binary
// re-executed), so that tests can kill -9 it.
type Child struct {
	Cmd      *exec.Cmd
	DataDir  string
	GRPCAddr string
	HTTPAddr string
	// AdminAddr is the admin port (/admin/faults, /debug/pprof).
	AdminAddr string

	mu     sync.Mutex
	log    strings.Builder
	exited chan struct{}
	err    error
}

var listenRE = regexp.MustCompile(`grpc=(127\.0\.0\.1:\d+) http=(127\.0\.0\.1:\d+)(?: admin=(127\.0\.0\.1:\d+))?`)

// StartChild starts `bqstore serve` on dataDir as a child process on
// loopback ports chosen at random, waits until it prints its addresses and
// kills it when the test ends. extra are more serve flags.
func StartChild(t testing.TB, dataDir string, extra ...string) *Child {
	t.Helper()
	args := append([]string{"serve", "--data-dir", dataDir, "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--log-level", "info"}, extra...)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+strings.Join(args, "\x1f"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatalf("testkit: start child: %v", err)
	}
	c := &Child{Cmd: cmd, DataDir: dataDir, exited: make(chan struct{})}
	addrs := make(chan [3]string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			c.mu.Lock()
			c.log.WriteString(line + "\n")
			c.mu.Unlock()
			if m := listenRE.FindStringSubmatch(line); m != nil && !sent {
				addrs <- [3]string{m[1], m[2], m[3]}
				sent = true
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		c.err = cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() { c.Kill() })
	select {
	case a := <-addrs:
		c.GRPCAddr, c.HTTPAddr, c.AdminAddr = a[0], a[1], a[2]
	case <-c.exited:
		t.Fatalf("testkit: child exited before listening: %v\n%s", c.err, c.Log())
	case <-time.After(60 * time.Second):
		c.Kill()
		t.Fatalf("testkit: child did not report its addresses within 60s\n%s", c.Log())
	}
	return c
}

// Log returns what the child printed so far.
func (c *Child) Log() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.log.String()
}

// Kill sends SIGKILL and waits for the process to exit (idempotent).
func (c *Child) Kill() {
	select {
	case <-c.exited:
		return
	default:
	}
	_ = c.Cmd.Process.Signal(syscall.SIGKILL)
	<-c.exited
}

// Terminate sends SIGTERM and waits for exit; it returns the exit error
// (nil for exit code 0).
func (c *Child) Terminate(ctx context.Context) error {
	_ = c.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
		return c.err
	case <-ctx.Done():
		c.Kill()
		return fmt.Errorf("testkit: child did not exit after SIGTERM: %w", ctx.Err())
	}
}
