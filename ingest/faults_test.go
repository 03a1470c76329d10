package ingest_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/bqstore/bqstore/ingest"
	"github.com/bqstore/bqstore/internal/faults"
	"github.com/bqstore/bqstore/internal/server"
)

// TestFaultStorm runs the pipeline against a server injecting the
// postmortem's failures at once (docs/faults.md): RESOURCE_EXHAUSTED on
// appends and stream creation, lost append acknowledgements, a hung
// connection, lost finalize and commit replies. Every record must land
// exactly once.
func TestFaultStorm(t *testing.T) {
	spec, err := faults.Parse("quota:rpc=AppendRows,p=0.05;quota:rpc=CreateWriteStream,p=0.3;" +
		"append.reset:when=after,p=0.03;append.stall:duration=3s,times=1;" +
		"finalize.drop_reply:p=0.3;commit.drop_reply:p=0.4")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, func(c *server.Config) { c.Faults, c.FaultSeed = spec, 7 })
	table := e.table(t, "storm")
	const n = 600
	src, bad := writeEvents(t, n, 100)
	dir := t.TempDir()
	m := ingest.NewMetrics(nil)
	r := run{e: e, table: table, source: src, stateDir: filepath.Join(dir, "state"),
		deadLetter: filepath.Join(dir, "dead.ndjson"),
		mutate: func(c *ingest.Config) {
			c.Lease = time.Second
			c.Metrics = m
		}}
	if err := r.do(t); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, e.readIDs(t, table), n)
	if got := countLines(t, r.deadLetter); got != bad {
		t.Errorf("dead letters: %d, want %d", got, bad)
	}
	if got := counterValue(t, m.BatchesAbandoned); got < 1 {
		t.Errorf("no batch was abandoned: were the faults injected?")
	}
	t.Logf("abandoned batches: %v", counterValue(t, m.BatchesAbandoned))
}

// TestMemoryBudgetPauses gives the pipeline a budget of two requests
// against a server that answers appends slowly: sending waits for
// acknowledgements (the time is counted), nothing is lost or duplicated.
func TestMemoryBudgetPauses(t *testing.T) {
	spec, err := faults.Parse("append.latency:dist=fixed,mean=20ms")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, func(c *server.Config) { c.Faults = spec })
	table := e.table(t, "budget")
	const n = 300
	src, _ := writeEvents(t, n, 0)
	dir := t.TempDir()
	m := ingest.NewMetrics(nil)
	r := run{e: e, table: table, source: src, stateDir: filepath.Join(dir, "state"),
		deadLetter: filepath.Join(dir, "dead.ndjson"),
		mutate: func(c *ingest.Config) {
			c.RequestBytes = 1 << 10
			c.MemoryBudget = 2 << 10
			c.MaxBatchRows = 100
			c.Metrics = m
		}}
	if err := r.do(t); err != nil {
		t.Fatal(err)
	}
	if got := counterValue(t, m.BudgetPaused); got <= 0 {
		t.Errorf("paused by the memory budget for %v s, want > 0", got)
	}
	checkExactlyOnce(t, e.readIDs(t, table), n)
}
