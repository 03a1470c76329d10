package cli

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"cloud.google.com/go/bigquery"
	"google.golang.org/api/option"

	"github.com/bqstore/bqstore/internal/server"
)

// ingestServer starts a server with table p:d.t (id INTEGER REQUIRED, v
// STRING) and returns its gRPC address.
func ingestServer(t *testing.T) string {
	t.Helper()
	srv, err := server.Start(server.Config{DataDir: t.TempDir(), GRPCAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", Project: "p"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close(context.Background()) })
	ctx := context.Background()
	bq, err := bigquery.NewClient(ctx, "p", option.WithEndpoint("http://"+srv.HTTPAddr()), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	defer bq.Close()
	if err := bq.Dataset("d").Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := bq.Dataset("d").Table("t").Create(ctx, &bigquery.TableMetadata{Schema: bigquery.Schema{
		{Name: "id", Type: bigquery.IntegerFieldType, Required: true},
		{Name: "v", Type: bigquery.StringFieldType},
	}}); err != nil {
		t.Fatal(err)
	}
	return srv.GRPCAddr()
}

// syncBuffer is a bytes.Buffer safe for the pipeline's concurrent logs;
// found is closed once the text holds want (when set).
type syncBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	want  string
	found chan struct{}
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.b.Write(p)
	if s.want != "" && strings.Contains(s.b.String(), s.want) {
		close(s.found)
		s.want = ""
	}
	return n, err
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func runMain(ctx context.Context, stdin string, args ...string) (int, string) {
	var stderr syncBuffer
	env := &Env{Stdin: strings.NewReader(stdin), Stdout: &bytes.Buffer{}, Stderr: &stderr,
		LookupEnv: func(string) (string, bool) { return "", false }}
	code := MainEnv(ctx, args, env)
	return code, stderr.String()
}

// TestIngestTellsWhatHappened: a summary at the end, line numbers next to
// byte offsets in dead letters (also after a resume), human state lines.
func TestIngestTellsWhatHappened(t *testing.T) {
	addr := ingestServer(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.ndjson")
	dead := filepath.Join(dir, "dead.ndjson")
	write := func(s string, flag int) {
		f, err := os.OpenFile(in, flag|os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	// Line 3 is blank, lines 2 and 4 are dead letters.
	write(`{"id":1,"v":"a"}`+"\n"+`{"id":"x"}`+"\n\n"+`not json`+"\n"+`{"id":5}`+"\n", os.O_TRUNC)
	args := []string{"ingest", "--endpoint", addr, "--insecure", "--table", "p:d.t", "--source", "file:" + in,
		"--state-dir", filepath.Join(dir, "state"), "--dead-letter", dead, "--start", "earliest"}
	code, stderr := runMain(context.Background(), "", args...)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, want := range []string{
		"partition idle at byte 0, batch 0",
		"done: 2 rows committed in 1 batch",
		"2 dead letters (in " + dead + ")",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if !strings.Contains(stderr, "partition done at byte 47, 1 batch") {
		t.Errorf("stderr lacks the end state:\n%s", stderr)
	}
	if strings.Contains(stderr, "IDLE{") {
		t.Errorf("stderr shows a raw state:\n%s", stderr)
	}

	// A second run resumes past the first's lines: a dead letter it finds
	// still gets its line number in the whole file.
	write(`{"id":6}`+"\n"+`{"id":[]}`+"\n"+`{"id":`, os.O_APPEND)
	code, stderr = runMain(context.Background(), "", args...)
	if code != 0 {
		t.Fatalf("second run: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "the last line, line 8 (byte 66), has no newline yet") {
		t.Errorf("second run: stderr does not name the unterminated line:\n%s", stderr)
	}
	if !strings.Contains(stderr, "partition idle at byte 47, batch 1") {
		t.Errorf("second run: stderr lacks the resumed state:\n%s", stderr)
	}
	b, err := os.ReadFile(dead)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3 {
		t.Fatalf("dead letters:\n%s", b)
	}
	for i, want := range []string{`"offset":17,"line":2,`, `"offset":29,"line":4,`, `"offset":56,"line":7,`} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("dead letter %d = %s, want it to contain %s", i, lines[i], want)
		}
	}
}

// TestIngestErrorNamesLine: without a dead-letter sink, a bad record stops
// the run with its line number, and the message has no doubled prefixes.
func TestIngestErrorNamesLine(t *testing.T) {
	addr := ingestServer(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.ndjson")
	if err := os.WriteFile(in, []byte(`{"id":1}`+"\n"+`{"id":"x"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stderr := runMain(context.Background(), "", "ingest", "--endpoint", addr, "--insecure", "--table", "p:d.t",
		"--source", "file:"+in, "--state-dir", filepath.Join(dir, "state"), "--start", "earliest")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, stderr)
	}
	last := lastLine(stderr)
	if !strings.HasPrefix(last, "bqstore ingest: file:"+in+" line 2 (byte 9): ") {
		t.Errorf("last line = %q, want it to name line 2 (byte 9)", last)
	}
	if strings.Contains(stderr, "ingest: ingest:") {
		t.Errorf("doubled prefix:\n%s", stderr)
	}
}

// TestIngestCompressedRefused: a gzip file is refused up front, not turned
// into dead letters of binary garbage with exit 0.
func TestIngestCompressedRefused(t *testing.T) {
	addr := ingestServer(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.ndjson.gz")
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(`{"id":1}` + "\n"))
	zw.Close()
	if err := os.WriteFile(in, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, src := range []string{"file:" + in, "file:-"} {
		dead := filepath.Join(dir, fmt.Sprint("dead", i))
		code, stderr := runMain(context.Background(), buf.String(), "ingest", "--endpoint", addr, "--insecure", "--table", "p:d.t",
			"--source", src, "--state-dir", filepath.Join(dir, fmt.Sprint("state", i)), "--dead-letter", dead, "--start", "earliest")
		if code != 1 || !strings.Contains(lastLine(stderr), "gzip-compressed") {
			t.Errorf("%s: exit %d, want 1 and a message naming gzip:\n%s", src, code, stderr)
		}
		if b, _ := os.ReadFile(dead); len(b) > 0 {
			t.Errorf("%s: dead letters written:\n%s", src, b)
		}
	}
}

// TestIngestInterrupted: Ctrl-C exits 130 with one line saying how to go on.
func TestIngestInterrupted(t *testing.T) {
	addr := ingestServer(t)
	dir := t.TempDir()
	pr, pw := io.Pipe()
	defer pw.Close()
	go pw.Write([]byte(`{"id":1}` + "\n")) // io.Pipe: blocks until read
	ctx, cancel := context.WithCancel(context.Background())
	stderr := syncBuffer{want: "partition idle at byte 0", found: make(chan struct{})}
	env := &Env{Stdin: pr, Stdout: &bytes.Buffer{}, Stderr: &stderr, LookupEnv: func(string) (string, bool) { return "", false }}
	code := make(chan int, 1)
	go func() {
		code <- MainEnv(ctx, []string{"ingest", "--endpoint", addr, "--insecure", "--table", "p:d.t", "--source", "file:-",
			"--state-dir", filepath.Join(dir, "state"), "--start", "earliest", "--batch-age", "1h"}, env)
	}()
	// Wait until the partition runs (it then blocks reading the pipe).
	select {
	case c := <-code:
		t.Fatalf("exited %d before the interrupt:\n%s", c, stderr.String())
	case <-stderr.found:
	}
	cancel()
	if c := <-code; c != 130 {
		t.Errorf("exit %d, want 130\n%s", c, stderr.String())
	}
	out := stderr.String()
	if got, want := lastLine(out), "bqstore ingest: interrupted; run the same command to continue"; got != want {
		t.Errorf("last line = %q, want %q\n%s", got, want, out)
	}
	if !strings.Contains(out, "stopped: 0 rows committed in 0 batches") {
		t.Errorf("stderr lacks what the run did before it stopped:\n%s", out)
	}
	if strings.Contains(out, "context canceled") {
		t.Errorf("stderr mentions context canceled:\n%s", out)
	}
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndexByte(s, '\n')+1:]
}

// TestBenchPipelineExample: bench ingest --help's --pipeline-cmd example
// is an ingest command line that parses once its placeholders are
// replaced (it named --state-dir DIR, a placeholder the bench never
// fills, and no endpoint).
func TestBenchPipelineExample(t *testing.T) {
	var stderr bytes.Buffer
	env := &Env{Stdout: &bytes.Buffer{}, Stderr: &stderr, LookupEnv: func(string) (string, bool) { return "", false }}
	_ = runBench(context.Background(), env, []string{"ingest", "-h"})
	help := stderr.String()
	i := strings.Index(help, `(e.g. "`)
	if i < 0 {
		t.Fatalf("no example in:\n%s", help)
	}
	example := help[i+len(`(e.g. "`):]
	example = example[:strings.IndexByte(example, '"')]
	args := strings.Fields(strings.NewReplacer("{endpoint}", "127.0.0.1:1", "{table}", "p:d.t",
		"{source}", "kafka://127.0.0.1:2/events?group=bench").Replace(example))
	if args[0] != "bqstore" || args[1] != "ingest" {
		t.Fatalf("example %q is not a bqstore ingest command", example)
	}
	for _, a := range args {
		if strings.ContainsAny(a, "{}") || a == strings.ToUpper(a) && strings.Trim(a, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") == "" {
			t.Errorf("example %q keeps the placeholder %q", example, a)
		}
	}
	// Parsing and validation only: the endpoint does not answer, so the
	// run must fail on it, not on the command line.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var ue *usageError
	if err := runIngestCmd(ctx, env, args[2:]); errors.As(err, &ue) {
		t.Errorf("example %q: %v", example, err)
	}
}

// TestIngestCreateRate: --create-rate 0 lifts the CreateWriteStream limit
// (one stream per batch: 40 one-row batches run without waiting 50 ms
// each); a negative rate is a usage error.
func TestIngestCreateRate(t *testing.T) {
	addr := ingestServer(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.ndjson")
	var b strings.Builder
	for i := range 40 {
		fmt.Fprintf(&b, `{"id":%d}`+"\n", i)
	}
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	args := func(rate string) []string {
		return []string{"ingest", "--endpoint", addr, "--insecure", "--table", "p:d.t", "--source", "file:" + in,
			"--state-dir", filepath.Join(dir, "state"), "--start", "earliest", "--batch-rows", "1", "--create-rate", rate}
	}
	if code, stderr := runMain(context.Background(), "", args("-1")...); code != 2 || !strings.Contains(stderr, "--create-rate") {
		t.Errorf("--create-rate -1: exit %d, want 2 (usage) naming the flag:\n%s", code, stderr)
	}
	code, stderr := runMain(context.Background(), "", args("0")...)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "done: 40 rows committed in 40 batches") {
		t.Errorf("stderr lacks the summary:\n%s", stderr)
	}
}
