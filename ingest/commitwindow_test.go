package ingest_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/bqstore/bqstore/ingest"
)

// TestCommitWindowClosesWhenEveryWorkerWaits: a file has one partition,
// so once its batch is at the committer no other request can come, and
// the window closes at once. Before, every batch waited the whole
// CommitWindow (50 ms by default: the floor under a 1,000-row batch's
// latency, 18.5k rows/s from one file); with a window of an hour this
// run of 5 batches did not finish within the minute.
func TestCommitWindowClosesWhenEveryWorkerWaits(t *testing.T) {
	e := newEnv(t)
	table := e.table(t, "window")
	const n = 200
	src, bad := writeEvents(t, n, 50)
	dir := t.TempDir()
	r := run{e: e, table: table, source: src, stateDir: filepath.Join(dir, "state"), deadLetter: filepath.Join(dir, "dead.ndjson"),
		timeout: time.Minute, mutate: func(c *ingest.Config) { c.CommitWindow = time.Hour }}
	if err := r.do(t); err != nil {
		t.Fatalf("Run: %v (the committer waited for a window no other partition could fill?)", err)
	}
	checkExactlyOnce(t, e.readIDs(t, table), n)
	if got := countLines(t, r.deadLetter); got != bad {
		t.Errorf("dead letters: %d lines, want %d", got, bad)
	}
}
