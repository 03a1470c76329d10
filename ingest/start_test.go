package ingest_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bqstore/bqstore/ingest"
)

// TestFileStartRequired: with no stored state (a first run, or a wiped
// state directory) and no start position, the run refuses to guess (before,
// a wiped state directory meant a silent replay of the whole file); a
// start position is stored, so a restart continues from it.
func TestFileStartRequired(t *testing.T) {
	e := newEnv(t)
	table := e.table(t, "start_file")
	const n = 100
	src, _ := writeEvents(t, n, 0)
	dir := t.TempDir()
	r := run{e: e, table: table, source: src, stateDir: filepath.Join(dir, "state"), deadLetter: filepath.Join(dir, "dead.ndjson")}
	if err := r.do(t); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, e.readIDs(t, table), n)
	// The state directory is wiped: the rerun must not ingest everything again.
	if err := os.RemoveAll(r.stateDir); err != nil {
		t.Fatal(err)
	}
	r.mutate = func(c *ingest.Config) { c.Start = ingest.StartPosition{} }
	err := r.do(t)
	if !errors.Is(err, ingest.ErrNoStart) || !strings.Contains(err.Error(), "--start earliest") {
		t.Fatalf("run without a state or a start: %v, want ErrNoStart naming the flag", err)
	}
	checkExactlyOnce(t, e.readIDs(t, table), n)
	// Told to start at the end, it ingests nothing, and stores where it is.
	r.mutate = func(c *ingest.Config) { c.Start = ingest.StartLatest }
	if err := r.do(t); err != nil {
		t.Fatal(err)
	}
	r.mutate = func(c *ingest.Config) { c.Start = ingest.StartPosition{} }
	if err := r.do(t); err != nil {
		t.Fatalf("rerun with a stored state and no start: %v", err)
	}
	checkExactlyOnce(t, e.readIDs(t, table), n)
	// A byte offset must start a line.
	if _, err := ingest.ParseStart("12x"); err == nil {
		t.Error("ParseStart accepted 12x")
	}
	for s, want := range map[string]string{"earliest": "earliest", "latest": "latest", "42": "42", "2026-12-01T10:00:00Z": "2026-12-01T10:00:00Z"} {
		if p, err := ingest.ParseStart(s); err != nil || p.String() != want {
			t.Errorf("ParseStart(%q) = %v, %v", s, p, err)
		}
	}
}

// TestKafkaStartRequired: a group with no committed offsets needs a start
// position (before, it silently read every partition from its log start,
// which is also what happens after the group's offsets expire); and a
// partition without a state while others have one fails closed unless the
// start is earliest.
func TestKafkaStartRequired(t *testing.T) {
	e := newEnv(t)
	table := e.table(t, "start_kafka")
	const n = 40
	k := newKafka(t, 2, n, 0)
	cfg, _ := k.config(e, table, "fresh", nil)
	cfg.Start = ingest.StartPosition{}
	if err := ingest.Run(context.Background(), cfg); !errors.Is(err, ingest.ErrNoStart) {
		t.Fatalf("fresh group without a start: %v, want ErrNoStart", err)
	}
	if got := e.readIDs(t, table); len(got) != 0 {
		t.Fatalf("%d ids ingested without a start position", len(got))
	}
	// Partition 0 has a state, partition 1 lost its own.
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: k.topic, Partition: 0, At: 0, LeaderEpoch: -1, Metadata: `{"v":1,"b":0,"x":0}`})
	if _, err := kadm.NewClient(cl).CommitOffsets(context.Background(), "mixed", offs); err != nil {
		t.Fatal(err)
	}
	for _, start := range []ingest.StartPosition{{}, ingest.StartLatest} {
		cfg, _ := k.config(e, table, "mixed", nil)
		cfg.Start = start
		err := ingest.Run(context.Background(), cfg)
		if !errors.Is(err, ingest.ErrNoStart) || !strings.Contains(err.Error(), "kafka:events/1") {
			t.Fatalf("start %v with partition 1's state lost: %v, want ErrNoStart naming it", start, err)
		}
	}
	cfg, _ = k.config(e, table, "mixed", nil)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- ingest.Run(ctx, cfg) }()
	k.waitCommitted(t, "mixed", errc)
	cancel()
	<-errc
	checkExactlyOnce(t, e.readIDs(t, table), n)
}

// TestStateBoundToTable: a state dir used for one table, then run with
// another --table, must not take the old offset as the new table's (the
// new table would silently get nothing of the ranges already done).
func TestStateBoundToTable(t *testing.T) {
	e := newEnv(t)
	first := e.table(t, "bound_a")
	second := e.table(t, "bound_b")
	const n = 60
	src, _ := writeEvents(t, n, 0)
	dir := t.TempDir()
	r := run{e: e, table: first, source: src, stateDir: filepath.Join(dir, "state"), deadLetter: filepath.Join(dir, "dead.ndjson")}
	if err := r.do(t); err != nil {
		t.Fatal(err)
	}
	r.table = second
	err := r.do(t)
	if err == nil || !strings.Contains(err.Error(), "another destination") {
		t.Fatalf("rerun into another table with the same state: %v, want an error (the new table holds %d ids)", err, len(e.readIDs(t, second)))
	}
	r.table = first
	if err := r.do(t); err != nil {
		t.Fatalf("rerun into the original table: %v", err)
	}
	checkExactlyOnce(t, e.readIDs(t, first), n)
}

// TestFileReplacedFailsClosed: a file rotated or replaced after a run is
// not the file its state describes; reading on at the stored offset would
// skip the new file's first records, so the run fails closed. A file that
// only grew continues.
func TestFileReplacedFailsClosed(t *testing.T) {
	e := newEnv(t)
	table := e.table(t, "replaced")
	dir := t.TempDir()
	src := filepath.Join(dir, "in.ndjson")
	write := func(ids ...int) string {
		var b strings.Builder
		for _, id := range ids {
			b.WriteString(`{"id":` + strconv.Itoa(id) + `}` + "\n")
		}
		return b.String()
	}
	if err := os.WriteFile(src, []byte(write(1, 2, 3)), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run{e: e, table: table, source: src, stateDir: filepath.Join(dir, "state"), deadLetter: filepath.Join(dir, "dead.ndjson")}
	if err := r.do(t); err != nil {
		t.Fatal(err)
	}
	// The file grows: the next run reads only what was added.
	f, err := os.OpenFile(src, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(write(4))
	f.Close()
	if err := r.do(t); err != nil {
		t.Fatalf("after the file grew: %v", err)
	}
	// Rotated: a new file (new inode, other records) under the same name.
	tmp := filepath.Join(dir, "new.ndjson")
	if err := os.WriteFile(tmp, []byte(write(7, 8, 9, 10, 11, 12)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, src); err != nil {
		t.Fatal(err)
	}
	err = r.do(t)
	if !errors.Is(err, ingest.ErrSourceChanged) {
		t.Fatalf("run over a replaced file: %v, want ErrSourceChanged (table %v)", err, e.readIDs(t, table))
	}
	got := e.readIDs(t, table)
	if len(got) != 4 || got[1] != 1 || got[4] != 1 {
		t.Fatalf("table %v, want ids 1-4 once", got)
	}
}
