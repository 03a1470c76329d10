package ingest_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/bqstore/bqstore/ingest"
)

// deadlineClient answers the first n CreateWriteStream calls with
// DEADLINE_EXCEEDED, as gRPC does when a batch's lease ran out during a
// pause (GC, SIGSTOP) before the lease's own timer closed its context.
type deadlineClient struct {
	storagepb.BigQueryWriteClient
	n atomic.Int32
}

func (c *deadlineClient) CreateWriteStream(ctx context.Context, req *storagepb.CreateWriteStreamRequest, opts ...grpc.CallOption) (*storagepb.WriteStream, error) {
	if c.n.Add(-1) >= 0 {
		return nil, status.Error(codes.DeadlineExceeded, "context deadline exceeded")
	}
	return c.BigQueryWriteClient.CreateWriteStream(ctx, req, opts...)
}

// TestStreamDeadlineAbandonsBatch: a stream creation that fails with
// DEADLINE_EXCEEDED abandons the batch (its range is replayed), it does
// not stop the run: the nemesis saw a member paused past its lease exit
// with "CreateWriteStream: DeadlineExceeded".
func TestStreamDeadlineAbandonsBatch(t *testing.T) {
	e := newEnv(t)
	table := e.table(t, "deadline")
	const n = 100
	src, _ := writeEvents(t, n, 0)
	dir := t.TempDir()
	client := &deadlineClient{BigQueryWriteClient: e.write}
	client.n.Store(2)
	r := run{e: e, table: table, source: src, stateDir: filepath.Join(dir, "state"),
		deadLetter: filepath.Join(dir, "dead.ndjson"),
		mutate:     func(c *ingest.Config) { c.Client = client }}
	if err := r.do(t); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, e.readIDs(t, table), n)
}
