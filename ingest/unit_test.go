package ingest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func TestStateCodec(t *testing.T) {
	for _, s := range []State{
		{DeadLetterEnd: -1},
		{Batch: 7, Offset: 1234, DeadLetterEnd: 99},
		{Batch: 8, Offset: 1234, Sealed: true, To: 5678, DeadLetterEnd: -1, Generation: 3,
			Streams: []SealedStream{{Table: 0, ID: "abc", Rows: 10}, {Table: 2, ID: "def", Rows: 0}}},
		{Batch: 1, Offset: 5, Sealed: true, To: 5, DeadLetterEnd: 0},
	} {
		b, err := s.Encode()
		if err != nil {
			t.Fatalf("%v: %v", s, err)
		}
		got, err := DecodeState(b)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if got.String() != s.String() || got.DeadLetterEnd != s.DeadLetterEnd || got.Generation != s.Generation || len(got.Streams) != len(s.Streams) {
			t.Errorf("round trip %s: got %+v, want %+v", b, got, s)
		}
		for i := range s.Streams {
			if got.Streams[i] != s.Streams[i] {
				t.Errorf("stream %d: %+v, want %+v", i, got.Streams[i], s.Streams[i])
			}
		}
	}
	// The compact form is what docs/ingest-protocol.md describes.
	b, _ := State{Batch: 8, Offset: 10, Sealed: true, To: 20, DeadLetterEnd: -1,
		Streams: []SealedStream{{ID: "s1", Rows: 3}}}.Encode()
	if want := `{"v":1,"b":8,"x":10,"to":20,"s":[{"t":0,"id":"s1","n":3}]}`; string(b) != want {
		t.Errorf("encoded %s, want %s", b, want)
	}
	// Kafka seals carry the leader epoch of their last record (te).
	seal := State{Batch: 8, Offset: 10, Sealed: true, To: 20, DeadLetterEnd: -1, Streams: []SealedStream{{ID: "s1", Rows: 3}}}
	b, _ = seal.encode(4)
	if want := `{"v":1,"b":8,"x":10,"to":20,"te":4,"s":[{"t":0,"id":"s1","n":3}]}`; string(b) != want {
		t.Errorf("encoded %s, want %s", b, want)
	}
	if got, te, err := decodeState(b); err != nil || te != 4 || got.String() != seal.String() {
		t.Errorf("decoded %s: %v, te %d, %v", b, got, te, err)
	}
	if _, te, _ := decodeState([]byte(`{"v":1,"b":8,"x":10,"to":20}`)); te != -1 {
		t.Errorf("a seal without te decodes with epoch %d, want -1", te)
	}
}

func TestStateCodecRejects(t *testing.T) {
	many := State{Sealed: true, DeadLetterEnd: -1}
	for range 200 {
		many.Streams = append(many.Streams, SealedStream{ID: strings.Repeat("x", 30), Rows: 1})
	}
	if _, err := many.Encode(); !errors.Is(err, ErrStateTooLarge) {
		t.Errorf("200 streams: err = %v, want ErrStateTooLarge", err)
	}
	if _, err := (State{Sealed: true, Offset: 5, To: 4}).Encode(); err == nil {
		t.Error("inverted range encoded")
	}
	if _, err := (State{Sealed: true, Streams: []SealedStream{{ID: "projects/p/x"}}}).Encode(); err == nil {
		t.Error("a full stream path encoded")
	}
	for _, bad := range []string{`{`, `{"v":2,"b":1,"x":0}`, `{"v":1,"b":1,"x":-1}`, `{"v":1,"b":1,"x":5,"to":4}`,
		`{"v":1,"b":1,"x":0,"s":[{"t":0,"id":"a","n":1}]}`, `{"v":1,"b":1,"x":0,"zz":1}`,
		`{"v":1,"b":1,"x":0,"to":1,"s":[{"t":0,"id":"","n":1}]}`, `{"v":1,"b":1,"x":0,"te":1}`} {
		if _, err := DecodeState([]byte(bad)); err == nil {
			t.Errorf("DecodeState(%s) accepted", bad)
		}
	}
}

func TestFileLedger(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l, err := OpenFileLedger(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.Load(ctx, "file:/a")
	if err != nil || s.Sealed || s.Offset != 0 || s.DeadLetterEnd != -1 {
		t.Fatalf("initial state %+v, %v", s, err)
	}
	seal := State{Batch: 1, Offset: 0, Sealed: true, To: 9, DeadLetterEnd: -1, Streams: []SealedStream{{ID: "s", Rows: 2}}}
	if err := l.Store(ctx, "file:/a", seal); err != nil {
		t.Fatal(err)
	}
	if err := l.Store(ctx, "file:/b", State{Batch: 4, Offset: 77, DeadLetterEnd: -1}); err != nil {
		t.Fatal(err)
	}
	// A crash between the temp write and the rename leaves a .tmp file:
	// reopening removes it and keeps the old state.
	if err := os.WriteFile(l.path("file:/a")+".tmp", []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, err := OpenFileLedger(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	got, err := l2.Load(ctx, "file:/a")
	if err != nil || got.String() != seal.String() {
		t.Fatalf("reloaded %v, %v; want %v", got, err, seal)
	}
	if got, _ := l2.Load(ctx, "file:/b"); got.Offset != 77 {
		t.Fatalf("partition b: %v", got)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(m) != 0 {
		t.Errorf("temp files left: %v", m)
	}
	// A corrupt state file is an error, never a silent restart from 0.
	if err := os.WriteFile(l.path("file:/c"), []byte("{\"v\":1,"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := l2.Load(ctx, "file:/c"); err == nil {
		t.Error("corrupt state loaded")
	}
}

func TestBackoff(t *testing.T) {
	one := func() float64 { return 0.999999 }
	b := Backoff{Base: 100 * time.Millisecond, Max: 2 * time.Second, Rand: one}
	prev := time.Duration(0)
	for attempt := range 70 {
		d := b.Delay(attempt)
		if d < 0 || d >= 2*time.Second {
			t.Fatalf("attempt %d: delay %v outside [0, cap)", attempt, d)
		}
		if d < prev {
			t.Fatalf("attempt %d: upper bound shrank: %v < %v", attempt, d, prev)
		}
		prev = d
	}
	if d := b.Delay(0); d >= 100*time.Millisecond || d < 99*time.Millisecond {
		t.Errorf("attempt 0 at the top of the jitter: %v", d)
	}
	zero := Backoff{Base: time.Second, Max: time.Minute, Rand: func() float64 { return 0 }}
	if d := zero.Delay(10); d != 0 {
		t.Errorf("full jitter must reach 0, got %v", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (Backoff{Base: time.Hour, Max: time.Hour, Rand: one}).Wait(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait on a cancelled context: %v", err)
	}
}

func TestTokenBucket(t *testing.T) {
	now := time.Unix(0, 0)
	tb := NewTokenBucket(20, 1)
	tb.now = func() time.Time { return now }
	if d := tb.reserve(); d != 0 {
		t.Fatalf("first token waits %v", d)
	}
	if d := tb.reserve(); d != 50*time.Millisecond {
		t.Fatalf("second token at once waits %v, want 50ms", d)
	}
	if d := tb.reserve(); d != 100*time.Millisecond {
		t.Fatalf("third token waits %v, want 100ms", d)
	}
	now = now.Add(time.Second) // refills to the burst, no more
	if d := tb.reserve(); d != 0 {
		t.Fatalf("after a second: wait %v", d)
	}
	if d := tb.reserve(); d != 50*time.Millisecond {
		t.Fatalf("burst exceeded: wait %v", d)
	}
}

// TestTokenBucketUnlimited: an infinite rate (ingest --create-rate 0)
// never waits, even for calls at the same instant.
func TestTokenBucketUnlimited(t *testing.T) {
	now := time.Unix(0, 0)
	tb := NewTokenBucket(math.Inf(1), 1)
	tb.now = func() time.Time { return now }
	for i := range 1000 {
		if d := tb.reserve(); d != 0 {
			t.Fatalf("call %d waits %v", i, d)
		}
	}
}

func TestFileSourceOffsets(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "in")
	content := "{\"a\":1}\n\n  \n{\"a\":2}\r\n{\"a\":3}"
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	parts := []Partition{filePartition{&FileSource{Path: path, Complete: true}}}
	read := func(from int64) (recs []string, ends []int64) {
		r, err := parts[0].Open(ctx, from)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		for {
			rec, end, err := r.Next(ctx)
			if err == io.EOF {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			recs, ends = append(recs, string(rec)), append(ends, end)
		}
	}
	recs, ends := read(0)
	if strings.Join(recs, "|") != `{"a":1}|{"a":2}|{"a":3}` {
		t.Fatalf("records %q", recs)
	}
	if want := []int64{8, 21, int64(len(content))}; ends[0] != want[0] || ends[1] != want[1] || ends[2] != want[2] {
		t.Fatalf("ends %v, want %v", ends, want)
	}
	if recs, _ := read(ends[0]); strings.Join(recs, "|") != `{"a":2}|{"a":3}` {
		t.Fatalf("resume at %d: %q", ends[0], recs)
	}
	if _, err := parts[0].Open(ctx, int64(len(content))+1); err == nil {
		t.Error("opening past the end of a shorter file succeeded")
	}
	// Standard input skips what was ingested.
	stdin := &FileSource{Path: "-", Stdin: strings.NewReader(content), Complete: true}
	sp := []Partition{filePartition{stdin}}
	r, err := sp[0].Open(ctx, ends[1])
	if err != nil {
		t.Fatal(err)
	}
	rec, end, err := r.Next(ctx)
	if err != nil || string(rec) != `{"a":3}` || end != int64(len(content)) {
		t.Fatalf("stdin resume: %q %d %v", rec, end, err)
	}
}

func TestDeadLettersTruncate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dl")
	d, err := OpenDeadLetters(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Write("p", 0, 0, []byte(`{"x":1}`), "why"); err != nil {
		t.Fatal(err)
	}
	size, err := d.Sync()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Write("p", 10, 0, []byte(`not json`), "why2"); err != nil {
		t.Fatal(err)
	}
	if err := d.Truncate(size); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if int64(len(b)) != size || !strings.Contains(string(b), `"record":{"x":1}`) || strings.Contains(string(b), "why2") {
		t.Fatalf("after truncate: %s", b)
	}
}

// TestFileLedgerLocked: a second run on the same state directory fails at
// once, naming the holder, and leaves the first run's temporary files
// alone; once the first closes, the directory can be opened again.
func TestFileLedgerLocked(t *testing.T) {
	dir := t.TempDir()
	l, err := OpenFileLedger(dir)
	if err != nil {
		t.Fatal(err)
	}
	tmp := l.path("file:/a") + ".tmp"
	if err := os.WriteFile(tmp, []byte("in flight"), 0o644); err != nil {
		t.Fatal(err)
	}
	l2, err := OpenFileLedger(dir)
	if err == nil {
		l2.Close()
		t.Fatal("a second ledger opened a state directory in use")
	}
	if !errors.Is(err, ErrStateDirLocked) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Errorf("err = %v, want ErrStateDirLocked naming pid %d", err, os.Getpid())
	}
	if _, err := os.Stat(tmp); err != nil {
		t.Errorf("the refused open touched the holder's temp file: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l3, err := OpenFileLedger(dir)
	if err != nil {
		t.Fatalf("reopen after Close: %v", err)
	}
	defer l3.Close()
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a crashed run's temp file survived the reopen: %v", err)
	}
}

// TestFileSourceUnterminatedTail: a last line without a newline may still
// be being written: it is not read (nor dead-lettered) unless the source
// is complete, and the partition ends before it.
func TestFileSourceUnterminatedTail(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "in")
	content := "{\"a\":1}\n{\"a\":2,\"b\":\"hal"
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, complete := range []bool{false, true} {
		for _, src := range []*FileSource{{Path: path, Complete: complete}, {Path: "-", Stdin: strings.NewReader(content), Complete: complete}} {
			r, err := filePartition{src}.Open(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			var recs []string
			var end int64
			for {
				rec, e, err := r.Next(ctx)
				if errors.Is(err, io.EOF) {
					var ut *UnterminatedError
					if !complete && (!errors.As(err, &ut) || ut.Offset != 8) {
						t.Errorf("%s: end error %v, want an UnterminatedError at byte 8", src.Path, err)
					}
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				recs, end = append(recs, string(rec)), e
			}
			r.Close()
			want, wantEnd := []string{`{"a":1}`}, int64(8)
			if complete {
				want, wantEnd = []string{`{"a":1}`, `{"a":2,"b":"hal`}, int64(len(content))
			}
			if strings.Join(recs, "|") != strings.Join(want, "|") || end != wantEnd {
				t.Errorf("%s complete=%v: records %q ending at %d, want %q ending at %d", src.Path, complete, recs, end, want, wantEnd)
			}
		}
	}
}

// commitRecorder answers BatchCommitWriteStreams with success and records
// how many streams each call named.
type commitRecorder struct {
	storagepb.BigQueryWriteClient
	calls []int
}

func (c *commitRecorder) BatchCommitWriteStreams(_ context.Context, req *storagepb.BatchCommitWriteStreamsRequest, _ ...grpc.CallOption) (*storagepb.BatchCommitWriteStreamsResponse, error) {
	c.calls = append(c.calls, len(req.GetWriteStreams()))
	return &storagepb.BatchCommitWriteStreamsResponse{CommitTime: timestamppb.Now()}, nil
}

// TestCommitStreamsCapped: one window's streams are committed in calls of
// at most MaxCommitStreams streams, and every request completes.
func TestCommitStreamsCapped(t *testing.T) {
	rec := &commitRecorder{}
	p := &pipeline{cfg: Config{Client: rec, Table: "projects/p/datasets/d/tables/t", MaxCommitStreams: 2},
		log: slog.New(slog.DiscardHandler), metrics: NewMetrics(nil)}
	c := newCommitter(p, p.cfg.Table)
	a := &commitReq{names: []string{"s1", "s2", "s3"}, done: make(chan error, 1)}
	b := &commitReq{names: []string{"s4", "s5"}, done: make(chan error, 1)}
	c.commitAll(context.Background(), []*commitReq{a, b})
	for _, r := range []*commitReq{a, b} {
		if err := <-r.done; err != nil || r.commitTime.IsZero() {
			t.Fatalf("request %v: %v (commit time %v)", r.names, err, r.commitTime)
		}
	}
	total := 0
	for _, n := range rec.calls {
		if n > 2 {
			t.Fatalf("a BatchCommitWriteStreams named %d streams, cap 2 (calls %v)", n, rec.calls)
		}
		total += n
	}
	if total != 5 {
		t.Fatalf("calls %v named %d streams, want 5", rec.calls, total)
	}
}
