package ingest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/bqstore/bqstore/ingest"
)

// TestServerRowErrorsBecomeDeadLetters: the server checks what the local
// mapper does not (here a STRING column's maximum length) and refuses
// rows with row_errors. Those records must become dead letters and the
// rest commit exactly once; before, the batch was replayed forever.
func TestServerRowErrorsBecomeDeadLetters(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if err := e.bq.Dataset("d").Table("maxlen").Create(ctx, &bigquery.TableMetadata{Schema: bigquery.Schema{
		{Name: "id", Type: bigquery.IntegerFieldType, Required: true},
		{Name: "name", Type: bigquery.StringFieldType, MaxLength: 5},
	}}); err != nil {
		t.Fatal(err)
	}
	table := "projects/" + project + "/datasets/d/tables/maxlen"
	dir := t.TempDir()
	src := filepath.Join(dir, "in.ndjson")
	var in strings.Builder
	const n = 100
	bad := 0
	for i := range n {
		name := "ok"
		if i%10 == 3 {
			name, bad = "far too long", bad+1
		}
		fmt.Fprintf(&in, `{"id":%d,"name":%q}`+"\n", i, name)
	}
	if err := os.WriteFile(src, []byte(in.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	m := ingest.NewMetrics(nil)
	r := run{e: e, table: table, source: src, stateDir: filepath.Join(dir, "state"), deadLetter: filepath.Join(dir, "dead.ndjson"),
		timeout: 30 * time.Second, mutate: func(c *ingest.Config) { c.Metrics = m }}
	if err := r.do(t); err != nil {
		t.Fatalf("run: %v (batches abandoned %v)", err, counterValue(t, m.BatchesAbandoned))
	}
	got := e.readIDs(t, table)
	for i := range int64(n) {
		want := 1
		if i%10 == 3 {
			want = 0
		}
		if got[i] != want {
			t.Fatalf("id %d present %d times, want %d (table %v)", i, got[i], want, got)
		}
	}
	b, _ := os.ReadFile(r.deadLetter)
	if c := strings.Count(string(b), "\n"); c != bad || !strings.Contains(string(b), "rejected by the server") {
		t.Fatalf("dead letters (%d, want %d):\n%s", c, bad, b)
	}
	if got := counterValue(t, m.RowsRejected); got != float64(bad) {
		t.Errorf("rows rejected metric %v, want %d", got, bad)
	}
}

// TestReplayCapFailsClosed: a batch the server refuses as a whole, every
// time, without naming rows, stops the run after MaxReplays attempts with
// an error naming the partition and offset, instead of looping.
func TestReplayCapFailsClosed(t *testing.T) {
	e := newEnv(t)
	table := e.table(t, "refused")
	src, _ := writeEvents(t, 50, 0)
	dir := t.TempDir()
	rc := &refusingClient{BigQueryWriteClient: e.write}
	r := run{e: e, table: table, source: src, stateDir: filepath.Join(dir, "state"), deadLetter: filepath.Join(dir, "dead.ndjson"),
		timeout: 30 * time.Second, mutate: func(c *ingest.Config) { c.Client = rc; c.MaxReplays = 4 }}
	err := r.do(t)
	if err == nil || !strings.Contains(err.Error(), "abandoned 4 times") || !strings.Contains(err.Error(), "offset 0") {
		t.Fatalf("err = %v, want the replay cap naming offset 0", err)
	}
	if len(e.readIDs(t, table)) != 0 {
		t.Fatal("rows committed")
	}
}

// refusingClient fails every AppendRows call.
type refusingClient struct {
	storagepb.BigQueryWriteClient
}

func (c *refusingClient) AppendRows(ctx context.Context, opts ...grpc.CallOption) (storagepb.BigQueryWrite_AppendRowsClient, error) {
	return nil, fmt.Errorf("refused")
}

// sizeRecorder records the encoded size of the rows of every AppendRows request.
type sizeRecorder struct {
	storagepb.BigQueryWriteClient
	mu   sync.Mutex
	reqs [][2]int // {rows, encoded row bytes}
}

func (c *sizeRecorder) AppendRows(ctx context.Context, opts ...grpc.CallOption) (storagepb.BigQueryWrite_AppendRowsClient, error) {
	s, err := c.BigQueryWriteClient.AppendRows(ctx, opts...)
	return &recordingStream{s, c}, err
}

type recordingStream struct {
	storagepb.BigQueryWrite_AppendRowsClient
	c *sizeRecorder
}

func (s *recordingStream) Send(req *storagepb.AppendRowsRequest) error {
	rows := req.GetProtoRows().GetRows().GetSerializedRows()
	size := 0
	for _, r := range rows {
		size += 1 + protowire.SizeBytes(len(r))
	}
	s.c.mu.Lock()
	s.c.reqs = append(s.c.reqs, [2]int{len(rows), size})
	s.c.mu.Unlock()
	return s.BigQueryWrite_AppendRowsClient.Send(req)
}

// TestRequestNeverCrossesTheLimit: a request is flushed before a row that
// would take it past RequestBytes (before, the size was checked after
// adding the row, so a request could reach twice the target, past 10 MB at
// the largest setting), and a row no request can carry is a dead letter.
func TestRequestNeverCrossesTheLimit(t *testing.T) {
	e := newEnv(t)
	table := e.table(t, "sized")
	dir := t.TempDir()
	src := filepath.Join(dir, "in.ndjson")
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	const n = 60
	for i := range n {
		fmt.Fprintf(f, `{"id":%d,"name":"%s"}`+"\n", i, strings.Repeat("x", 300+i*7))
		if i == 30 {
			// Fits a line (MaxRecordBytes) but not one request.
			fmt.Fprintf(f, `{"id":%d,"name":"%s"}`+"\n", 1000, strings.Repeat("y", 10_000_000))
		}
	}
	f.Close()
	rec := &sizeRecorder{BigQueryWriteClient: e.write}
	const reqBytes = 1 << 10
	r := run{e: e, table: table, source: src, stateDir: filepath.Join(dir, "state"), deadLetter: filepath.Join(dir, "dead.ndjson"),
		timeout: 60 * time.Second, mutate: func(c *ingest.Config) { c.Client = rec; c.RequestBytes = reqBytes; c.MemoryBudget = 64 << 20 }}
	if err := r.do(t); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, e.readIDs(t, table), n)
	b, _ := os.ReadFile(r.deadLetter)
	if c := strings.Count(string(b), "\n"); c != 1 || !strings.Contains(string(b), "over the") {
		t.Fatalf("dead letters: %d lines, want the oversized row:\n%.300s", c, b)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for i, q := range rec.reqs {
		if q[0] > 1 && q[1] > reqBytes {
			t.Errorf("request %d: %d rows, %d bytes: over RequestBytes %d", i, q[0], q[1], reqBytes)
		}
	}
}
