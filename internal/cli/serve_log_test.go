package cli_test

import (
	"context"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/bqstore/bqstore/internal/cli"
)

// TestServeLog runs serve at --log-level debug with a relative data dir:
// the addresses are logged once, the data dir as an absolute path, no
// faults line when there are none, and one request line per gRPC call
// (unary and stream) and per REST request.
func TestServeLog(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := newSyncBuffer()
	env := &cli.Env{Stdout: stderr, Stderr: stderr, Stdin: strings.NewReader("")}
	done := make(chan int, 1)
	go func() {
		done <- cli.MainEnv(ctx, []string{"serve", "--data-dir", "data", "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0",
			"--admin-addr", "", "--log-level", "debug"}, env)
	}()
	stop := make(chan struct{})
	bound := time.AfterFunc(returnBound, func() { close(stop); stderr.Write(nil) })
	defer bound.Stop()
	wait := func(sub string) {
		t.Helper()
		if !stderr.waitCount(sub, 1, stop) {
			t.Fatalf("no %q in the log within %s:\n%s", sub, returnBound, stderr.String())
		}
	}
	wait("msg=listening")
	m := regexp.MustCompile(`grpc=(\S+) http=(\S+)`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no addresses in:\n%s", stderr.String())
	}
	grpcAddr, httpAddr := m[1], m[2]

	resp, err := http.Get("http://" + httpAddr + "/bigquery/v2/projects/local/datasets")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const stream = "projects/local/datasets/d/tables/t/streams/s1"
	if _, err := storagepb.NewBigQueryWriteClient(conn).GetWriteStream(ctx, &storagepb.GetWriteStreamRequest{Name: stream}); err == nil {
		t.Fatal("GetWriteStream of a missing table succeeded")
	}
	rr, err := storagepb.NewBigQueryReadClient(conn).ReadRows(ctx, &storagepb.ReadRowsRequest{ReadStream: "projects/local/locations/us/sessions/x/streams/y"})
	if err == nil {
		_, err = rr.Recv()
	}
	if err == nil {
		t.Fatal("ReadRows of a missing stream succeeded")
	}
	wait("resource=/bigquery/v2/projects/local/datasets")
	wait("BigQueryWrite/GetWriteStream")
	wait("BigQueryRead/ReadRows")
	cancel()
	select {
	case <-done:
	case <-stop:
		t.Fatal("serve did not stop")
	}

	log := stderr.String()
	if n := strings.Count(log, "grpc="+grpcAddr); n != 1 {
		t.Errorf("the gRPC address is logged %d times, want once:\n%s", n, log)
	}
	if strings.Contains(log, "faults installed") {
		t.Errorf("a faults line without faults:\n%s", log)
	}
	abs, err := filepath.EvalSymlinks(filepath.Join(dir, "data"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log, "data_dir="+filepath.Join(dir, "data")) && !strings.Contains(log, "data_dir="+abs) {
		t.Errorf("the data dir is not logged as %s:\n%s", abs, log)
	}
	for _, re := range []string{
		`level=DEBUG msg=request method=GET resource=/bigquery/v2/projects/local/datasets code=200 duration=\S+ bytes_in=0 bytes_out=[1-9]\d*`,
		`level=DEBUG msg=request method=/google.cloud.bigquery.storage.v1.BigQueryWrite/GetWriteStream resource=` + stream + ` code=NotFound duration=\S+ bytes_in=[1-9]\d* bytes_out=0`,
		`level=DEBUG msg=request method=/google.cloud.bigquery.storage.v1.BigQueryRead/ReadRows resource=projects/local/locations/us/sessions/x/streams/y code=\w+ duration=\S+ bytes_in=[1-9]\d* bytes_out=0`,
	} {
		if !regexp.MustCompile(re).MatchString(log) {
			t.Errorf("no line matching %s in:\n%s", re, log)
		}
	}
}
