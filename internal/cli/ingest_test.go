package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bqstore/bqstore/internal/testkit/bqread"

	"cloud.google.com/go/bigquery"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/bqstore/bqstore/ingest"
	"github.com/bqstore/bqstore/internal/server"
)

func TestIngestUsage(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--endpoint", "x:1", "--table", "p:d.t", "--source", "file:a"},
		{"--endpoint", "x:1", "--table", "p:d.t", "--source", "kafka://h/t"},
		{"--endpoint", "x:1", "--table", "d", "--source", "file:a", "--state-dir", "s"},
		{"--endpoint", "x:1", "--table", "p:d.t", "--source", "ftp:a", "--state-dir", "s"},
		{"--endpoint", "x:1", "--table", "p:d.t", "--source", "file:a", "--state-dir", "s", "--memory-budget", "lots"},
		{"--endpoint", "x:1", "--table", "p:d.t", "--source", "file:a", "--state-dir", "s", "--unknown-fields", "maybe"},
		{"--endpoint", "x:1", "--table", "p:d.t", "--source", "file:a", "--state-dir", "s", "--start", "yesterday"},
	} {
		env := &Env{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}, LookupEnv: func(string) (string, bool) { return "", false }}
		err := runIngest(context.Background(), env, args)
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("%q: err = %v, want a usage error", args, err)
		}
	}
	m := ingest.NewMetrics(nil)
	m.RowsCommitted.Add(1000)
	m.DeadLetters.Add(2)
	if got, want := ingestProgress(m, 2*time.Second), "1000 rows committed (500 rows/s), 2 dead letters, 2s"; got != want {
		t.Errorf("ingestProgress = %q, want %q", got, want)
	}
	for s, want := range map[string]int64{"1048576": 1 << 20, "256MiB": 256 << 20, "2GB": 2e9, "4KiB": 4096} {
		if got, err := parseBytes(s); err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
}

// TestIngestStdinTwice feeds the same standard input twice: the second run
// finds everything committed and adds nothing.
func TestIngestStdinTwice(t *testing.T) {
	// testkit imports this package (child processes), so start the server directly.
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
	if err := bq.EnableStorageReadClient(ctx, option.WithEndpoint(srv.GRPCAddr()), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials()))); err != nil {
		t.Fatal(err)
	}
	if err := bq.Dataset("d").Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	tbl := bq.Dataset("d").Table("t")
	if err := tbl.Create(ctx, &bigquery.TableMetadata{Schema: bigquery.Schema{
		{Name: "id", Type: bigquery.IntegerFieldType, Required: true},
		{Name: "v", Type: bigquery.StringFieldType},
	}}); err != nil {
		t.Fatal(err)
	}
	var in strings.Builder
	const n = 300
	for i := range n {
		fmt.Fprintf(&in, `{"id":%d,"v":"x%d"}`+"\n", i, i)
	}
	in.WriteString(`{"id":"bad"}` + "\n")
	dir := t.TempDir()
	args := []string{"--endpoint", srv.GRPCAddr(), "--insecure", "--table", "p:d.t", "--source", "file:-",
		"--state-dir", filepath.Join(dir, "state"), "--dead-letter", filepath.Join(dir, "dead.ndjson"),
		"--batch-rows", "64", "--metrics-addr", "127.0.0.1:0"}
	// A first run without --start refuses to guess, and says which flag to add.
	env := &Env{Stdin: strings.NewReader(in.String()), Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{},
		LookupEnv: func(string) (string, bool) { return "", false }}
	if err := runIngest(ctx, env, args); !errors.Is(err, ingest.ErrNoStart) || !strings.Contains(err.Error(), "--start earliest") {
		t.Fatalf("first run without --start: %v, want ErrNoStart naming --start earliest", err)
	}
	args = append(args, "--start", "earliest")
	for run := range 2 {
		var stderr bytes.Buffer
		env := &Env{Stdin: strings.NewReader(in.String()), Stdout: &bytes.Buffer{}, Stderr: &stderr,
			LookupEnv: func(string) (string, bool) { return "", false }}
		if err := runIngest(ctx, env, args); err != nil {
			t.Fatalf("run %d: %v\n%s", run, err, stderr.String())
		}
		seen := map[int64]int{}
		it := tbl.Read(ctx)
		for {
			var row []bigquery.Value
			err := bqread.NextRow(it, &row)
			if err == iterator.Done {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			seen[row[0].(int64)]++
		}
		if len(seen) != n {
			t.Fatalf("run %d: %d distinct ids, want %d", run, len(seen), n)
		}
		for id, c := range seen {
			if c != 1 {
				t.Fatalf("run %d: id %d present %d times", run, id, c)
			}
		}
	}
}
