package ingest_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"go.uber.org/goleak"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/bqstore/bqstore/ingest"
	"github.com/bqstore/bqstore/ingest/rows"
	"github.com/bqstore/bqstore/internal/server"
	"github.com/bqstore/bqstore/internal/testkit"
)

func TestMain(m *testing.M) {
	testkit.RunChildIfRequested()
	runIngestChildIfRequested()
	runNemesisMemberIfRequested()
	goleak.VerifyTestMain(m,
		// Started once per process by the official clients' dependencies.
		goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
		goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
	)
}

// env is a bqstore server in process, a dataset, and clients for it.
type env struct {
	srv   *testkit.Server
	bq    *bigquery.Client
	write storagepb.BigQueryWriteClient
}

const project = "p"

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t)
}

func newEnvWith(t *testing.T, mutate ...func(*server.Config)) *env {
	t.Helper()
	srv := testkit.Start(t, mutate...)
	ctx := context.Background()
	bq, err := bigquery.NewClient(ctx, project, testkit.RESTOptions(srv.HTTPAddr())...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bq.Close() })
	if err := bq.EnableStorageReadClient(ctx, testkit.GRPCOptions(srv.GRPCAddr())...); err != nil {
		t.Fatal(err)
	}
	if err := bq.Dataset("d").Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &env{srv: srv, bq: bq, write: storagepb.NewBigQueryWriteClient(conn)}
}

var eventSchema = bigquery.Schema{
	{Name: "id", Type: bigquery.IntegerFieldType, Required: true},
	{Name: "name", Type: bigquery.StringFieldType},
	{Name: "ts", Type: bigquery.TimestampFieldType},
	{Name: "tags", Type: bigquery.StringFieldType, Repeated: true},
}

// table creates a table and returns its Storage API name.
func (e *env) table(t *testing.T, name string) string {
	t.Helper()
	ctx := context.Background()
	if err := e.bq.Dataset("d").Table(name).Create(ctx, &bigquery.TableMetadata{Schema: eventSchema}); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("projects/%s/datasets/d/tables/%s", project, name)
}

// writeEvents writes n events with ids 0..n-1 and, every badEvery records,
// one record that does not fit the schema.
func writeEvents(t *testing.T, n, badEvery int) (path string, bad int) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "events.ndjson")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i := range n {
		fmt.Fprintf(w, `{"id":%d,"name":"event-%d","ts":"2026-11-30T02:00:%02d.%06dZ","tags":["a","b%d"]}`+"\n", i, i, i%60, i, i%3)
		if badEvery > 0 && i%badEvery == badEvery-1 {
			fmt.Fprintf(w, `{"id":"not-a-number-%d"}`+"\n", i)
			bad++
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path, bad
}

// readIDs reads the table through the Storage Read API and counts each id.
func (e *env) readIDs(t *testing.T, table string) map[int64]int {
	t.Helper()
	name := table[strings.LastIndexByte(table, '/')+1:]
	it := e.bq.Dataset("d").Table(name).Read(context.Background())
	got := map[int64]int{}
	for {
		var row []bigquery.Value
		err := testkit.NextRow(it, &row)
		if err == iterator.Done {
			break
		}
		if err != nil {
			t.Fatalf("read %s: %v", table, err)
		}
		got[row[0].(int64)]++
	}
	return got
}

func checkExactlyOnce(t *testing.T, got map[int64]int, n int) {
	t.Helper()
	missing, dup := 0, 0
	for i := range int64(n) {
		switch c := got[i]; {
		case c == 0:
			missing++
		case c > 1:
			dup++
		}
	}
	if missing > 0 || dup > 0 || len(got) != n {
		t.Fatalf("table holds %d distinct ids, want %d: %d missing, %d duplicated", len(got), n, missing, dup)
	}
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

type run struct {
	e          *env
	table      string
	source     string
	stateDir   string
	deadLetter string
	hooks      ingest.Hooks
	mutate     func(*ingest.Config)
	wrapSource func(ingest.Source) ingest.Source
	complete   bool          // FileSource.Complete
	timeout    time.Duration // bounds the run (0: none)
	wrapLedger func(ingest.Ledger) ingest.Ledger
}

func (r run) do(t *testing.T) error {
	t.Helper()
	return r.doCtx(t, context.Background())
}

// doCtx is do with the run's context derived from ctx.
func (r run) doCtx(t *testing.T, ctx context.Context) error {
	t.Helper()
	ledger, err := ingest.OpenFileLedger(r.stateDir)
	if err != nil {
		t.Fatal(err)
	}
	defer ledger.Close()
	dl, err := ingest.OpenDeadLetters(r.deadLetter)
	if err != nil {
		t.Fatal(err)
	}
	defer dl.Close()
	var src ingest.Source = &ingest.FileSource{Path: r.source, Complete: r.complete}
	if r.wrapSource != nil {
		src = r.wrapSource(src)
	}
	var l ingest.Ledger = ledger
	if r.wrapLedger != nil {
		l = r.wrapLedger(ledger)
	}
	cfg := ingest.Config{
		Start:  ingest.StartEarliest,
		Client: r.e.write, Table: r.table, Source: src, Ledger: l, DeadLetters: dl,
		Unknown:      rows.UnknownReject,
		MaxBatchRows: 40, RequestBytes: 1 << 10, MemoryBudget: 1 << 20,
		CommitWindow: time.Millisecond,
		Backoff:      ingest.Backoff{Base: time.Millisecond, Max: 10 * time.Millisecond},
		Hooks:        r.hooks,
	}
	if r.mutate != nil {
		r.mutate(&cfg)
	}
	if r.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.timeout)
		defer cancel()
	}
	return ingest.Run(ctx, cfg)
}

func TestFileExactlyOnce(t *testing.T) {
	e := newEnv(t)
	table := e.table(t, "events")
	const n = 500
	src, bad := writeEvents(t, n, 50)
	dir := t.TempDir()
	m := ingest.NewMetrics(nil)
	st, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	var lagAfterFirst float64
	lagProbe := hookFunc(func(p ingest.Point, partition string, batch uint64) error {
		if p == ingest.AfterDone && batch == 1 {
			lagAfterFirst = gaugeValue(t, m.Lag.WithLabelValues(partition))
		}
		return nil
	})
	r := run{e: e, table: table, source: src, stateDir: filepath.Join(dir, "state"), deadLetter: filepath.Join(dir, "dead.ndjson"),
		hooks: lagProbe, mutate: func(c *ingest.Config) { c.Metrics = m }}
	if err := r.do(t); err != nil {
		t.Fatal(err)
	}
	if lagAfterFirst <= 0 || lagAfterFirst >= float64(st.Size()) {
		t.Errorf("lag after the first batch = %v bytes, want in (0, %d)", lagAfterFirst, st.Size())
	}
	// Every stream was committed, except at most the one created ahead
	// when the file ended.
	if got := gaugeValue(t, m.ActiveStreams); got < 0 || got > 1 {
		t.Errorf("active streams after the run = %v, want 0 or 1", got)
	}
	if got := counterValue(t, m.RowsCommitted); got != n {
		t.Errorf("rows committed metric = %v, want %d", got, n)
	}
	if got := counterValue(t, m.DeadLetters); got != float64(bad) {
		t.Errorf("dead letters metric = %v, want %d", got, bad)
	}
	checkExactlyOnce(t, e.readIDs(t, table), n)
	if got := countLines(t, r.deadLetter); got != bad {
		t.Errorf("dead letters: %d lines, want %d", got, bad)
	}
	// A second run finds everything done and appends nothing.
	r.hooks, r.mutate = nil, nil
	if err := r.do(t); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, e.readIDs(t, table), n)
	if got := countLines(t, r.deadLetter); got != bad {
		t.Errorf("dead letters after a rerun: %d lines, want %d", got, bad)
	}
}

// crashAt fails once at a point of a batch, as a process crash would.
type crashAt struct {
	point ingest.Point
	batch uint64
	// settled makes the crash wait until batch-1 is DONE (one partition
	// only): no earlier batch is half closed when it fires, and a crash
	// stops the closer too.
	settled  bool
	fired    atomic.Bool
	once     sync.Once
	prevDone chan struct{}
}

var errCrash = errors.New("crash")

func (c *crashAt) At(p ingest.Point, _ string, batch uint64) error {
	c.once.Do(func() { c.prevDone = make(chan struct{}) })
	if c.settled && p == ingest.AfterDone && batch+1 == c.batch {
		close(c.prevDone)
	}
	if p == c.point && batch == c.batch && c.fired.CompareAndSwap(false, true) {
		if c.settled && c.batch > 1 {
			<-c.prevDone
		}
		return errCrash
	}
	return nil
}

// TestCrashTable crashes at every failure point (rows 1-9 of the crash
// table in docs/ingest-protocol.md), restarts, and checks that the table and the
// dead-letter file hold every record exactly once.
func TestCrashTable(t *testing.T) {
	e := newEnv(t)
	const n = 200
	src, bad := writeEvents(t, n, 30)
	for _, b := range []uint64{1, 2} {
		for _, p := range ingest.Points {
			t.Run(fmt.Sprintf("batch=%d/point=%s", b, p), func(t *testing.T) {
				crashTableRun(t, e, src, bad, n, b, p)
			})
		}
	}
}

// crashTableRun crashes a file run at point p of batch b, restarts it,
// and checks the table and the dead letters.
func crashTableRun(t *testing.T, e *env, src string, bad, n int, b uint64, p ingest.Point) {
	table := e.table(t, fmt.Sprintf("crash_b%d_%s", b, strings.ReplaceAll(string(p), "-", "_")))
	dir := t.TempDir()
	c := &crashAt{point: p, batch: b}
	r := run{e: e, table: table, source: src, stateDir: filepath.Join(dir, "state"),
		deadLetter: filepath.Join(dir, "dead.ndjson"), hooks: c}
	err := r.do(t)
	var ce *ingest.CrashError
	if !errors.As(err, &ce) || !errors.Is(err, errCrash) || ce.Point != p {
		t.Fatalf("first run: err = %v, want the injected crash at %s", err, p)
	}
	r.hooks = nil
	if err := r.do(t); err != nil {
		t.Fatalf("restart: %v", err)
	}
	checkExactlyOnce(t, e.readIDs(t, table), n)
	if got := countLines(t, r.deadLetter); got != bad {
		t.Errorf("dead letters: %d lines, want %d", got, bad)
	}
}

// hangingClient is the real Write client whose first FinalizeWriteStream
// hangs until its context ends: a hung connection.
type hangingClient struct {
	storagepb.BigQueryWriteClient
	hung atomic.Bool
}

func (c *hangingClient) FinalizeWriteStream(ctx context.Context, req *storagepb.FinalizeWriteStreamRequest, opts ...grpc.CallOption) (*storagepb.FinalizeWriteStreamResponse, error) {
	if c.hung.CompareAndSwap(false, true) {
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	return c.BigQueryWriteClient.FinalizeWriteStream(ctx, req, opts...)
}

// TestStalledWorkerLosesLease: a worker whose connection hangs loses its
// lease; its stream is never sealed or committed, its range is replayed,
// and the run completes (no deadlock) with every record exactly once.
func TestStalledWorkerLosesLease(t *testing.T) {
	e := newEnv(t)
	table := e.table(t, "stall")
	const n = 120
	src, _ := writeEvents(t, n, 0)
	dir := t.TempDir()
	hc := &hangingClient{BigQueryWriteClient: e.write}
	m := ingest.NewMetrics(nil)
	r := run{e: e, table: table, source: src, stateDir: filepath.Join(dir, "state"),
		deadLetter: filepath.Join(dir, "dead.ndjson"),
		mutate: func(c *ingest.Config) {
			c.Client = hc
			c.Lease = 300 * time.Millisecond
			c.Metrics = m
		}}
	if err := r.do(t); err != nil {
		t.Fatal(err)
	}
	if !hc.hung.Load() {
		t.Fatal("the connection never hung")
	}
	if got := counterValue(t, m.BatchesAbandoned); got < 1 {
		t.Errorf("batches abandoned = %v, want >= 1", got)
	}
	checkExactlyOnce(t, e.readIDs(t, table), n)
}

// slowSource makes the first read wait until its context ends: a source
// with nothing to read closes the batch at its age bound, with no loss.
type slowSource struct {
	ingest.Source
	at     int
	waited atomic.Bool
}

func (s *slowSource) Run(ctx context.Context, assign func(context.Context, ingest.Partition) error) error {
	return s.Source.Run(ctx, func(ctx context.Context, p ingest.Partition) error {
		return assign(ctx, slowPartition{p, s})
	})
}

type slowPartition struct {
	ingest.Partition
	s *slowSource
}

func (p slowPartition) Open(ctx context.Context, from int64) (ingest.RecordReader, error) {
	r, err := p.Partition.Open(ctx, from)
	return &slowReader{RecordReader: r, s: p.s}, err
}

type slowReader struct {
	ingest.RecordReader
	s *slowSource
	n int
}

func (r *slowReader) Next(ctx context.Context) ([]byte, int64, error) {
	r.n++
	if r.n == r.s.at && r.s.waited.CompareAndSwap(false, true) {
		<-ctx.Done()
		return nil, 0, ctx.Err()
	}
	return r.RecordReader.Next(ctx)
}

func TestSlowSourceClosesBatchAtAge(t *testing.T) {
	e := newEnv(t)
	table := e.table(t, "slow")
	const n = 100
	src, _ := writeEvents(t, n, 0)
	dir := t.TempDir()
	slow := &slowSource{at: 30}
	r := run{e: e, table: table, source: src, stateDir: filepath.Join(dir, "state"),
		deadLetter: filepath.Join(dir, "dead.ndjson"),
		wrapSource: func(s ingest.Source) ingest.Source { slow.Source = s; return slow },
		mutate:     func(c *ingest.Config) { c.MaxBatchAge = 50 * time.Millisecond; c.MaxBatchRows = 1000 }}
	if err := r.do(t); err != nil {
		t.Fatal(err)
	}
	if !slow.waited.Load() {
		t.Fatal("the source never waited")
	}
	checkExactlyOnce(t, e.readIDs(t, table), n)
}

func TestSchemaMismatchGoesToDeadLetters(t *testing.T) {
	e := newEnv(t)
	table := e.table(t, "dead")
	dir := t.TempDir()
	src := filepath.Join(dir, "in.ndjson")
	in := `{"id":1}` + "\n" + `{"id":2,"extra":true}` + "\n" + `not json` + "\n\n" + `{"id":3,"ts":"yesterday"}` + "\n" + `{"id":4}`
	if err := os.WriteFile(src, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	// The input ends without a newline: told it is complete, the last
	// line is a record.
	r := run{e: e, table: table, source: src, stateDir: filepath.Join(dir, "state"), deadLetter: filepath.Join(dir, "dead.ndjson"), complete: true}
	if err := r.do(t); err != nil {
		t.Fatal(err)
	}
	got := e.readIDs(t, table)
	if len(got) != 2 || got[1] != 1 || got[4] != 1 {
		t.Errorf("table ids %v, want 1 and 4", got)
	}
	b, err := os.ReadFile(r.deadLetter)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3 {
		t.Fatalf("dead letters:\n%s", b)
	}
	for i, want := range []string{`"extra"`, `not json`, `"ts"`} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("dead letter %d = %s, want it to name %s", i, lines[i], want)
		}
	}
	// Without a sink, a record that does not fit stops the pipeline.
	table2 := e.table(t, "dead2")
	r2 := run{e: e, table: table2, source: src, stateDir: filepath.Join(dir, "state2"), deadLetter: filepath.Join(dir, "dead2.ndjson"), complete: true,
		mutate: func(c *ingest.Config) { c.DeadLetters = nil }}
	err = r2.do(t)
	var re *rows.RecordError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v, want a RecordError", err)
	}
}

// TestFileBeingAppended: a run that finds a half-written last line leaves
// it alone; once the writer finishes it, the next run ingests the whole
// record (before, it became two dead letters: the half line and the rest).
func TestFileBeingAppended(t *testing.T) {
	e := newEnv(t)
	table := e.table(t, "appended")
	dir := t.TempDir()
	src := filepath.Join(dir, "in.ndjson")
	if err := os.WriteFile(src, []byte(`{"id":1}`+"\n"+`{"id":2,"na`), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run{e: e, table: table, source: src, stateDir: filepath.Join(dir, "state"), deadLetter: filepath.Join(dir, "dead.ndjson")}
	if err := r.do(t); err != nil {
		t.Fatal(err)
	}
	if got := e.readIDs(t, table); len(got) != 1 || got[1] != 1 {
		t.Fatalf("after the first run: ids %v, want only 1", got)
	}
	f, err := os.OpenFile(src, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`me":"two"}` + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := r.do(t); err != nil {
		t.Fatal(err)
	}
	if got := e.readIDs(t, table); len(got) != 2 || got[1] != 1 || got[2] != 1 {
		t.Fatalf("after the second run: ids %v, want 1 and 2 once each", got)
	}
	if n := countLines(t, r.deadLetter); n != 0 {
		b, _ := os.ReadFile(r.deadLetter)
		t.Fatalf("%d dead letters, want none:\n%s", n, b)
	}
}
