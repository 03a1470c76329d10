package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/bqstore/bqstore/ingest"
	"github.com/bqstore/bqstore/internal/server"
)

// TestIngestRouteUsage: --route errors are usage errors, found before
// anything is dialled.
func TestIngestRouteUsage(t *testing.T) {
	base := []string{"--endpoint", "x:1"}
	for _, args := range [][]string{
		{"--table", "p:d.t", "--route", "a=p:d.a", "--source", "kafka://h/a?group=g"},
		{"--route", "a=p:d.a", "--source", "file:x", "--state-dir", "s"},
		{"--route", "a", "--source", "kafka://h/?group=g"},
		{"--route", "a=", "--source", "kafka://h/?group=g"},
		{"--route", "=p:d.a", "--source", "kafka://h/?group=g"},
		{"--route", "a=d", "--source", "kafka://h/?group=g"},
		{"--route", "a=p:d.a,,b=p:d.b", "--source", "kafka://h/?group=g"},
		{"--route", "a=p:d.x,a=p:d.y", "--source", "kafka://h/?group=g"},
		{"--route", "a=p:d.x", "--source", "kafka://h/a,b?group=g"},       // b has no route
		{"--route", "a=p:d.x,c=p:d.y", "--source", "kafka://h/a?group=g"}, // c is not consumed
		{"--route", "a=p:d.x", "--dead-letter-table", "p:d.x", "--source", "kafka://h/?group=g"},
		{"--source", "kafka://h/?group=g"}, // no topic and no route
	} {
		env := &Env{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}, LookupEnv: func(string) (string, bool) { return "", false }}
		err := runIngest(context.Background(), env, append(append([]string{}, base...), args...))
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("%q: err = %v, want a usage error", args, err)
		}
	}
}

func TestParseRoutes(t *testing.T) {
	got, err := parseRoutes("a=p:d.x, b=d.y", "q")
	want := []ingest.Route{{Topic: "a", Table: "projects/p/datasets/d/tables/x"}, {Topic: "b", Table: "projects/q/datasets/d/tables/y"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("parseRoutes = %v, %v; want %v", got, err, want)
	}
}

// TestIngestRouteKafka: bqstore ingest --route over a kafka:// URL that
// names no topic consumes the routed topics, each into its table.
func TestIngestRouteKafka(t *testing.T) {
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
	for _, table := range []string{"ta", "tb"} {
		if err := bq.Dataset("d").Table(table).Create(ctx, &bigquery.TableMetadata{Schema: bigquery.Schema{
			{Name: "id", Type: bigquery.IntegerFieldType, Required: true},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	prod, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	const na, nb = 30, 20
	var recs []*kgo.Record
	for i := range na {
		recs = append(recs, &kgo.Record{Topic: "a", Value: fmt.Appendf(nil, `{"id":%d}`, i)})
	}
	for i := range nb {
		recs = append(recs, &kgo.Record{Topic: "b", Value: fmt.Appendf(nil, `{"id":%d}`, 1000+i)})
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	prod.Close()

	stderr := &lockedBuffer{ch: make(chan struct{}, 1)}
	env := &Env{Stdin: strings.NewReader(""), Stdout: &bytes.Buffer{}, Stderr: stderr, LookupEnv: func(string) (string, bool) { return "", false }}
	args := []string{"--endpoint", srv.GRPCAddr(), "--route", "a=p:d.ta,b=d.tb", "--project", "p",
		"--source", fmt.Sprintf("kafka://%s/?group=g", strings.Join(c.ListenAddrs(), ",")), "--start", "earliest",
		"--batch-age", "100ms", "--log-level", "debug"}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- runIngest(rctx, env, args) }()
	bound := time.NewTimer(2 * time.Minute) // a hang bound, not a performance threshold
	defer bound.Stop()
	for {
		select {
		case err := <-done:
			t.Fatalf("ingest stopped: %v\n%s", err, stderr.String())
		case <-bound.C:
			t.Fatalf("ingest did not commit %d and %d rows within the bound\n%s", na, nb, stderr.String())
		case <-stderr.ch:
		}
		if !strings.Contains(stderr.String(), "batch committed") {
			continue
		}
		ga, gb := countRows(t, bq, "ta"), countRows(t, bq, "tb")
		if ga > na || gb > nb {
			t.Fatalf("%d and %d rows, want %d and %d", ga, gb, na, nb)
		}
		if ga == na && gb == nb {
			break
		}
	}
	cancel()
	<-done
}
