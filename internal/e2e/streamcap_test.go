package e2e

import (
	"context"
	"testing"
	"time"

	"cloud.google.com/go/bigquery/storage/managedwriter"
	"google.golang.org/api/option"

	"github.com/bqstore/bqstore/internal/server"
	"github.com/bqstore/bqstore/internal/testkit"
)

// TestStreamCapQueues: managedwriter on one gRPC connection with more
// writers than --max-grpc-streams. Its streams over the cap are not
// refused: grpc-go keeps to SETTINGS_MAX_CONCURRENT_STREAMS and queues the
// RPC (CreateWriteStream, then AppendRows) until a stream of the
// connection ends, so the extra writer's append waits and then succeeds;
// none fails. As with Google's front end (100 streams a connection),
// more concurrent writers need more connections (WithGRPCConnectionPool).
func TestStreamCapQueues(t *testing.T) {
	const maxStreams = 2
	srv := testkit.Start(t, func(c *server.Config) { c.GRPCMaxStreams = maxStreams })
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	e := dial(t, ctx, srv)
	tp := e.table("t_stream_cap", simpleSchema)
	mw, err := managedwriter.NewClient(ctx, project, append(testkit.GRPCOptions(srv.GRPCAddr()), option.WithGRPCConnectionPool(1))...)
	if err != nil {
		t.Fatal(err)
	}
	defer mw.Close()
	dp, md := descriptor(t, simpleSchema)
	open := func() (*managedwriter.ManagedStream, error) {
		return mw.NewManagedStream(ctx, managedwriter.WithDestinationTable(tp),
			managedwriter.WithType(managedwriter.CommittedStream), managedwriter.WithSchemaDescriptor(dp))
	}
	var held []*managedwriter.ManagedStream
	for i := range maxStreams { // each keeps its AppendRows stream open
		ms, err := open()
		if err != nil {
			t.Fatal(err)
		}
		r, err := ms.AppendRows(ctx, rows(t, md, i*10, 1), managedwriter.WithOffset(0))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.GetResult(ctx); err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
		held = append(held, ms)
	}
	done := make(chan error, 1)
	go func() { // the writer over the cap
		ms, err := open()
		if err != nil {
			done <- err
			return
		}
		defer ms.Close()
		r, err := ms.AppendRows(ctx, rows(t, md, 100, 1), managedwriter.WithOffset(0))
		if err == nil {
			_, err = r.GetResult(ctx)
		}
		done <- err
	}()
	// A writer closes: its AppendRows stream ends and a slot frees.
	// (Close reports the stream's end, io.EOF, which is not a failure.)
	_ = held[0].Close()
	if err := <-done; err != nil {
		t.Fatalf("the writer over the stream cap: %v", err)
	}
	_ = held[1].Close()
}
