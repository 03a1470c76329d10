package readapi_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	bqstorage "cloud.google.com/go/bigquery/storage/apiv1"
	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"cloud.google.com/go/bigquery/storage/managedwriter"
	"cloud.google.com/go/bigquery/storage/managedwriter/adapt"
	"github.com/googleapis/gax-go/v2/apierror"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/bqstore/bqstore/internal/server"
	"github.com/bqstore/bqstore/internal/testkit"
)

// env is an in-process server and the official clients pointed at it.
type env struct {
	t   testing.TB
	ctx context.Context
	srv *testkit.Server
	bq  *bigquery.Client
	mw  *managedwriter.Client
	rc  *bqstorage.BigQueryReadClient
}

func newEnv(t testing.TB, mutate ...func(*server.Config)) *env {
	t.Helper()
	return newEnvDir(t, t.TempDir(), mutate...)
}

func newEnvDir(t testing.TB, dir string, mutate ...func(*server.Config)) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	srv := testkit.StartDir(t, dir, mutate...)
	e := dialEnv(t, ctx, srv.GRPCAddr(), srv.HTTPAddr())
	e.srv = srv
	return e
}

// dialEnv points the official clients at a server's addresses.
func dialEnv(t testing.TB, ctx context.Context, grpcAddr, httpAddr string) *env {
	t.Helper()
	bq, err := bigquery.NewClient(ctx, "local", testkit.RESTOptions(httpAddr)...)
	if err != nil {
		t.Fatal(err)
	}
	mw, err := managedwriter.NewClient(ctx, "local", testkit.GRPCOptions(grpcAddr)...)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := bqstorage.NewBigQueryReadClient(ctx, testkit.GRPCOptions(grpcAddr)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = rc.Close()
		_ = mw.Close()
		_ = bq.Close()
	})
	return &env{t: t, ctx: ctx, bq: bq, mw: mw, rc: rc}
}

var simpleSchema = bigquery.Schema{
	{Name: "id", Type: bigquery.IntegerFieldType, Required: true},
	{Name: "name", Type: bigquery.StringFieldType},
}

// fill creates table d.name and writes rows id = 0..n-1, name = "row<id>".
func (e *env) fill(name string, n int) string {
	e.t.Helper()
	ds := e.bq.Dataset("d")
	if _, err := ds.Metadata(e.ctx); err != nil {
		if err := ds.Create(e.ctx, &bigquery.DatasetMetadata{}); err != nil {
			e.t.Fatal(err)
		}
	}
	if err := ds.Table(name).Create(e.ctx, &bigquery.TableMetadata{Schema: simpleSchema}); err != nil {
		e.t.Fatal(err)
	}
	tp := fmt.Sprintf("projects/local/datasets/d/tables/%s", name)
	ts, err := adapt.BQSchemaToStorageTableSchema(simpleSchema)
	if err != nil {
		e.t.Fatal(err)
	}
	d, err := adapt.StorageSchemaToProto2Descriptor(ts, "root")
	if err != nil {
		e.t.Fatal(err)
	}
	md := d.(protoreflect.MessageDescriptor)
	dp, err := adapt.NormalizeDescriptor(md)
	if err != nil {
		e.t.Fatal(err)
	}
	ms, err := e.mw.NewManagedStream(e.ctx, managedwriter.WithDestinationTable(tp), managedwriter.WithSchemaDescriptor(dp))
	if err != nil {
		e.t.Fatal(err)
	}
	defer ms.Close()
	const batch = 1000
	for first := 0; first < n; first += batch {
		var rows [][]byte
		for i := first; i < min(n, first+batch); i++ {
			m := dynamicpb.NewMessage(md)
			m.Set(md.Fields().ByName("id"), protoreflect.ValueOfInt64(int64(i)))
			m.Set(md.Fields().ByName("name"), protoreflect.ValueOfString(fmt.Sprintf("row%d", i)))
			b, err := proto.Marshal(m)
			if err != nil {
				e.t.Fatal(err)
			}
			rows = append(rows, b)
		}
		r, err := ms.AppendRows(e.ctx, rows)
		if err != nil {
			e.t.Fatal(err)
		}
		if _, err := r.GetResult(e.ctx); err != nil {
			e.t.Fatal(err)
		}
	}
	return tp
}

func (e *env) session(tp string, streams int32, opts *storagepb.ReadSession_TableReadOptions) (*storagepb.ReadSession, error) {
	return e.rc.CreateReadSession(e.ctx, &storagepb.CreateReadSessionRequest{
		Parent:         "projects/local",
		ReadSession:    &storagepb.ReadSession{Table: tp, DataFormat: storagepb.DataFormat_AVRO, ReadOptions: opts},
		MaxStreamCount: streams,
	})
}

// readStream reads a stream from offset to its end and returns the row
// count, or the error that ended it.
func (e *env) readStream(name string, offset int64) (int64, error) {
	rows, err := e.rc.ReadRows(e.ctx, &storagepb.ReadRowsRequest{ReadStream: name, Offset: offset})
	if err != nil {
		return 0, err
	}
	var n int64
	for {
		resp, err := rows.Recv()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n += resp.GetRowCount()
	}
}

// code returns the gRPC code of an error from the official clients.
func code(err error) codes.Code {
	if ae, ok := apierror.FromError(err); ok {
		return ae.GRPCStatus().Code()
	}
	return status.Code(err)
}
