package storage

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The kill test re-executes the test binary as a child that runs the
// crash scenario against a real directory and reports every
// acknowledgement on stdout, then kills it with SIGKILL at a random
// moment. Lines written to the pipe before the kill reach the parent.
// killSegmentSize makes the kill test seal (and compact) files often.
const killSegmentSize = 64 << 10

const (
	childDirEnv  = "BQSTORE_STORAGE_KILL_CHILD_DIR"
	childBaseEnv = "BQSTORE_STORAGE_KILL_CHILD_BASE"
)

// runChild runs the child role if the environment asks for it; it
// returns true after the child finished.
func runChild() bool {
	dir := os.Getenv(childDirEnv)
	if dir == "" {
		return false
	}
	base, _ := strconv.ParseInt(os.Getenv(childBaseEnv), 10, 64)
	db, err := Open(dir, &Options{SegmentSize: killSegmentSize})
	if err != nil {
		fmt.Fprintf(os.Stderr, "child: open: %v\n", err)
		os.Exit(2)
	}
	var mu sync.Mutex
	l := newLedger()
	l.emit = func(line string) {
		mu.Lock()
		defer mu.Unlock()
		_, _ = os.Stdout.WriteString(line) // unbuffered: one write(2) per line
	}
	fmt.Println("ready - ")
	crashScenario(db, l, 1_000_000, base, 25)
	_ = db.Close()
	os.Exit(0)
	return true
}

// TestKill9 runs 20 cycles of: start the engine in a child process under
// concurrent load of every stream type (with small log files, so files
// are sealed and compacted under load), SIGKILL it at a random moment,
// recover in the parent and check every acknowledged row is visible
// exactly once and nothing uncommitted or partial is.
func TestKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("kill test skipped in -short mode")
	}
	dir := t.TempDir()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	l := newLedger()
	const cycles = 20
	for cycle := range cycles {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childDirEnv+"="+dir, fmt.Sprintf("%s=%d", childBaseEnv, int64(cycle+1)*100_000_000))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		if !sc.Scan() {
			_ = cmd.Wait()
			t.Fatalf("cycle %d: child did not start: %v", cycle, sc.Err())
		}
		lines := make(chan string, 1024)
		readDone := make(chan error, 1)
		go func() {
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
			readDone <- sc.Err()
		}()
		timer := time.NewTimer(time.Duration(20+rng.IntN(250)) * time.Millisecond)
		n := 0
	collect:
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					break collect
				}
				if err := l.parse(line); err != nil {
					t.Fatal(err)
				}
				n++
			case <-timer.C:
				_ = cmd.Process.Signal(syscall.SIGKILL)
			}
		}
		timer.Stop()
		if err := <-readDone; err != nil {
			t.Fatalf("cycle %d: reading child: %v", cycle, err)
		}
		_ = cmd.Wait()
		db, err := Open(dir, &Options{SegmentSize: killSegmentSize})
		if err != nil {
			t.Fatalf("cycle %d: recovery: %v", cycle, err)
		}
		checkRecovered(t, db, l, fmt.Sprintf("cycle %d (%d acks)", cycle, n))
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d rows acknowledged over %d kill cycles", len(l.must), cycles)
}
