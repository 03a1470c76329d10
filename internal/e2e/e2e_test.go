// Package e2e tests bqstore end to end through Google's official clients:
// the REST client (cloud.google.com/go/bigquery), managedwriter and the
// read client, against an in-process server on loopback ports, asserting
// gRPC codes, StorageError codes, row counts and values.
package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	storage "cloud.google.com/go/bigquery/storage/apiv1"
	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"cloud.google.com/go/bigquery/storage/managedwriter"
	"cloud.google.com/go/bigquery/storage/managedwriter/adapt"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/googleapis/gax-go/v2/apierror"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/bqstore/bqstore/internal/testkit"
)

func TestMain(m *testing.M) {
	testkit.RunChildIfRequested()
	goleak.VerifyTestMain(m,
		// The official clients keep background goroutines per process.
		goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
		goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
		// managedwriter cancels a replaced connection 20 s after a reconnect.
		goleak.IgnoreAnyFunction("cloud.google.com/go/bigquery/storage/managedwriter.(*connection).getStream.func1"),
	)
}

const project = "local"

// env is one server and the official clients pointed at it.
type env struct {
	t   *testing.T
	ctx context.Context
	srv *testkit.Server
	bq  *bigquery.Client
	mw  *managedwriter.Client
	wc  *storage.BigQueryWriteClient // the raw generated client, for RPCs managedwriter does not expose
	rc  *storage.BigQueryReadClient
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	srv := testkit.Start(t)
	return dial(t, ctx, srv)
}

func dial(t *testing.T, ctx context.Context, srv *testkit.Server) *env {
	t.Helper()
	bq, err := bigquery.NewClient(ctx, project, testkit.RESTOptions(srv.HTTPAddr())...)
	if err != nil {
		t.Fatal(err)
	}
	mw, err := managedwriter.NewClient(ctx, project, testkit.GRPCOptions(srv.GRPCAddr())...)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := storage.NewBigQueryReadClient(ctx, testkit.GRPCOptions(srv.GRPCAddr())...)
	if err != nil {
		t.Fatal(err)
	}
	wc, err := storage.NewBigQueryWriteClient(ctx, testkit.GRPCOptions(srv.GRPCAddr())...)
	if err != nil {
		t.Fatal(err)
	}
	// Registered after testkit.Start's cleanup, so they run before the
	// server stops.
	t.Cleanup(func() {
		_ = wc.Close()
		_ = rc.Close()
		_ = mw.Close()
		_ = bq.Close()
	})
	return &env{t: t, ctx: ctx, srv: srv, bq: bq, mw: mw, wc: wc, rc: rc}
}

// table creates dataset d (if needed) and table name with sch, and returns
// its Storage API path.
func (e *env) table(name string, sch bigquery.Schema) string {
	e.t.Helper()
	ds := e.bq.Dataset("d")
	if _, err := ds.Metadata(e.ctx); err != nil {
		if err := ds.Create(e.ctx, &bigquery.DatasetMetadata{}); err != nil {
			e.t.Fatalf("create dataset: %v", err)
		}
	}
	if err := ds.Table(name).Create(e.ctx, &bigquery.TableMetadata{Schema: sch}); err != nil {
		e.t.Fatalf("create table %s: %v", name, err)
	}
	return fmt.Sprintf("projects/%s/datasets/d/tables/%s", project, name)
}

// descriptor is what a managedwriter user builds: the normalized proto2
// descriptor of the table schema.
func descriptor(t *testing.T, sch bigquery.Schema) (*descriptorpb.DescriptorProto, protoreflect.MessageDescriptor) {
	t.Helper()
	ts, err := adapt.BQSchemaToStorageTableSchema(sch)
	if err != nil {
		t.Fatal(err)
	}
	d, err := adapt.StorageSchemaToProto2Descriptor(ts, "root")
	if err != nil {
		t.Fatal(err)
	}
	md := d.(protoreflect.MessageDescriptor)
	dp, err := adapt.NormalizeDescriptor(md)
	if err != nil {
		t.Fatal(err)
	}
	return dp, md
}

// codesOf returns the gRPC code and StorageError code of an error from the
// official clients (a status error, possibly in-band).
func codesOf(err error) (codes.Code, storagepb.StorageError_StorageErrorCode) {
	if err == nil {
		return codes.OK, 0
	}
	code := status.Code(err)
	var se storagepb.StorageError
	if ae, ok := apierror.FromError(err); ok {
		code = ae.GRPCStatus().Code()
		if ae.Details().ExtractProtoMessage(&se) == nil {
			return code, se.GetCode()
		}
	}
	return code, 0
}

func wantCodes(t *testing.T, what string, err error, code codes.Code, sc storagepb.StorageError_StorageErrorCode) {
	t.Helper()
	gc, gsc := codesOf(err)
	if gc != code || gsc != sc {
		t.Fatalf("%s: got %v/%v (%v), want %v/%v", what, gc, gsc, err, code, sc)
	}
}

// readAll reads the whole table through the Read API (Arrow) with up to n
// streams and returns every record, decoded with arrow-go's IPC reader as
// the official bigquery client does.
func (e *env) readAll(tablePath string, n int32, opts *storagepb.ReadSession_TableReadOptions, mods *storagepb.ReadSession_TableModifiers) []arrow.Record {
	e.t.Helper()
	sess, err := e.rc.CreateReadSession(e.ctx, &storagepb.CreateReadSessionRequest{
		Parent: "projects/" + project,
		ReadSession: &storagepb.ReadSession{
			Table: tablePath, DataFormat: storagepb.DataFormat_ARROW, ReadOptions: opts, TableModifiers: mods,
		},
		MaxStreamCount: n,
	})
	if err != nil {
		e.t.Fatalf("CreateReadSession: %v", err)
	}
	var out []arrow.Record
	for _, s := range sess.GetStreams() {
		out = append(out, e.readStream(sess.GetArrowSchema().GetSerializedSchema(), s.GetName(), 0)...)
	}
	return out
}

func (e *env) readStream(schemaMsg []byte, name string, offset int64) []arrow.Record {
	e.t.Helper()
	rows, err := e.rc.ReadRows(e.ctx, &storagepb.ReadRowsRequest{ReadStream: name, Offset: offset})
	if err != nil {
		e.t.Fatalf("ReadRows: %v", err)
	}
	var out []arrow.Record
	for {
		resp, err := rows.Recv()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			e.t.Fatalf("ReadRows recv: %v", err)
		}
		buf := append(append([]byte{}, schemaMsg...), resp.GetArrowRecordBatch().GetSerializedRecordBatch()...)
		r, err := ipc.NewReader(bytesReader(buf))
		if err != nil {
			e.t.Fatalf("ipc reader: %v", err)
		}
		var got int64
		for r.Next() {
			rec := r.RecordBatch()
			rec.Retain()
			got += rec.NumRows()
			out = append(out, rec)
		}
		if err := r.Err(); err != nil {
			e.t.Fatalf("ipc: %v", err)
		}
		r.Release()
		if got != resp.GetRowCount() {
			e.t.Fatalf("row_count %d, batch holds %d rows", resp.GetRowCount(), got)
		}
	}
}

func countRows(recs []arrow.Record) int64 {
	var n int64
	for _, r := range recs {
		n += r.NumRows()
	}
	return n
}

func managedwriterMultiplexed(e *env) (*managedwriter.Client, error) {
	opts := append(testkit.GRPCOptions(e.srv.GRPCAddr()), managedwriter.WithMultiplexing())
	return managedwriter.NewClient(e.ctx, project, opts...)
}

// newWriter opens a managedwriter stream of type typ on table tp with
// simpleSchema's descriptor (plus opts) and closes it at the end of the
// test.
func newWriter(t *testing.T, e *env, tp string, typ managedwriter.StreamType, opts ...managedwriter.WriterOption) (*managedwriter.ManagedStream, protoreflect.MessageDescriptor) {
	t.Helper()
	dp, md := descriptor(t, simpleSchema)
	opts = append([]managedwriter.WriterOption{managedwriter.WithDestinationTable(tp),
		managedwriter.WithType(typ), managedwriter.WithSchemaDescriptor(dp)}, opts...)
	ms, err := e.mw.NewManagedStream(e.ctx, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ms.Close() })
	return ms, md
}

// committedWriter is newWriter for a COMMITTED stream.
func committedWriter(t *testing.T, e *env, tp string, opts ...managedwriter.WriterOption) (*managedwriter.ManagedStream, protoreflect.MessageDescriptor) {
	t.Helper()
	return newWriter(t, e, tp, managedwriter.CommittedStream, opts...)
}

// appendAt appends n rows (ids first..first+n-1) at offset off and waits
// for the result.
func appendAt(t *testing.T, e *env, ms *managedwriter.ManagedStream, md protoreflect.MessageDescriptor, first, n int, off int64) {
	t.Helper()
	r, err := ms.AppendRows(e.ctx, rows(t, md, first, n), managedwriter.WithOffset(off))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.GetResult(e.ctx); err != nil {
		t.Fatal(err)
	}
}

// appendBatches sends n batches of 10 rows (ids 0..10n-1) at explicit
// offsets without waiting, then waits for every result.
func appendBatches(t *testing.T, e *env, ms *managedwriter.ManagedStream, md protoreflect.MessageDescriptor, n int) {
	t.Helper()
	results := make([]*managedwriter.AppendResult, 0, n)
	for i := 0; i < n; i++ {
		r, err := ms.AppendRows(e.ctx, rows(t, md, i*10, 10), managedwriter.WithOffset(int64(i*10)))
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, r)
	}
	for i, r := range results {
		if _, err := r.GetResult(e.ctx); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
}
