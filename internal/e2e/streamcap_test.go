package e2e

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"cloud.google.com/go/bigquery/storage/managedwriter"
	"google.golang.org/api/option"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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

// TestOpenStreamCapRetries: managedwriter against the server-wide stream
// cap (--max-open-streams), with every place taken by two writers that
// keep their AppendRows streams open. A third writer's AppendRows stream
// is refused (RST_STREAM REFUSED_STREAM): grpc-go retries it once,
// transparently, then reports UNAVAILABLE, which managedwriter retries
// (with EnableWriteRetries) after a pause, reopening the stream; once a
// held writer closes, a retry gets its place and the append succeeds:
// none fails. A writer without EnableWriteRetries sees UNAVAILABLE (or
// io.EOF, when its Send comes after the reset) while the cap is full
// (managedwriter's default: one attempt). (Unary calls,
// such as the GetWriteStream of NewManagedStream, are retried by gax
// until their context ends: they wait for a place.)
func TestOpenStreamCapRetries(t *testing.T) {
	const maxOpen = 2
	srv := testkit.Start(t, func(c *server.Config) { c.MaxOpenStreams = maxOpen })
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	e := dial(t, ctx, srv)
	tp := e.table("t_open_stream_cap", simpleSchema)
	dp, md := descriptor(t, simpleSchema)
	writer := func(typ managedwriter.StreamType, opts ...managedwriter.WriterOption) *managedwriter.ManagedStream {
		ms, err := e.mw.NewManagedStream(ctx, append([]managedwriter.WriterOption{managedwriter.WithDestinationTable(tp),
			managedwriter.WithType(typ), managedwriter.WithSchemaDescriptor(dp)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ms.Close() })
		return ms
	}
	// Made while there is room (NewManagedStream's unary calls); their
	// AppendRows streams open with their first append.
	plain := writer(managedwriter.DefaultStream)
	retrying := writer(managedwriter.DefaultStream, managedwriter.EnableWriteRetries(true))
	var held []*managedwriter.ManagedStream
	for i := range maxOpen { // each keeps its AppendRows stream open
		ms := writer(managedwriter.CommittedStream)
		r, err := ms.AppendRows(ctx, rows(t, md, i*10, 1), managedwriter.WithOffset(0))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.GetResult(ctx); err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
		held = append(held, ms)
	}
	r, err := plain.AppendRows(ctx, rows(t, md, 50, 1))
	if err == nil {
		_, err = r.GetResult(ctx)
	}
	// UNAVAILABLE from the stream, or io.EOF from a Send after the
	// reset reached the client.
	if status.Code(err) != codes.Unavailable && !errors.Is(err, io.EOF) {
		t.Fatalf("an append over the stream cap without write retries: %v, want UNAVAILABLE or EOF", err)
	}
	refused := metricValue(t, srv, "bqstore_grpc_streams_refused_total")
	if refused < 2 {
		t.Fatalf("%v streams refused, want at least 2 (an attempt and grpc-go's transparent retry)", refused)
	}

	r, err = retrying.AppendRows(ctx, rows(t, md, 100, 1))
	if err != nil {
		t.Fatal(err)
	}
	// Once the retrying writer has been refused, a held writer closes:
	// its stream ends and frees a place.
	for metricValue(t, srv, "bqstore_grpc_streams_refused_total") < refused+2 {
		if ctx.Err() != nil {
			t.Fatal("the retrying writer was never refused")
		}
		time.Sleep(time.Millisecond)
	}
	_ = held[0].Close()
	if _, err := r.GetResult(ctx); err != nil {
		t.Fatalf("the retrying writer over the stream cap: %v", err)
	}
}
