package bqstoretest_test

import (
	"context"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	storage "cloud.google.com/go/bigquery/storage/apiv1"
	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"cloud.google.com/go/bigquery/storage/managedwriter"
	"cloud.google.com/go/bigquery/storage/managedwriter/adapt"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/bqstore/bqstore/bqstoretest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// The official clients keep background goroutines per process.
		goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
		goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
		// managedwriter cancels a closed connection's context 20 s later.
		goleak.IgnoreAnyFunction("cloud.google.com/go/bigquery/storage/managedwriter.(*connection).getStream.func1"),
	)
}

var schema = bigquery.Schema{
	{Name: "id", Type: bigquery.IntegerFieldType, Required: true},
	{Name: "name", Type: bigquery.StringFieldType},
}

// TestOfficialClients is the README's test, in full: create a table with
// the REST client, write to it with managedwriter, read it back with the
// read client, all through the options Start hands back.
func TestOfficialClients(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := bqstoretest.Start(t)

	bq, err := bigquery.NewClient(ctx, srv.Project, srv.RESTOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer bq.Close()
	if err := bq.Dataset("demo").Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := bq.Dataset("demo").Table("events").Create(ctx, &bigquery.TableMetadata{Schema: schema}); err != nil {
		t.Fatal(err)
	}
	table := "projects/" + srv.Project + "/datasets/demo/tables/events"

	mw, err := managedwriter.NewClient(ctx, srv.Project, srv.StorageOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer mw.Close()
	write(ctx, t, mw, table, 3)

	rc, err := storage.NewBigQueryReadClient(ctx, srv.StorageOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if got := countRows(ctx, t, rc, srv.Project, table); got != 3 {
		t.Fatalf("read %d rows, want 3", got)
	}

	md, err := bq.Dataset("demo").Table("events").Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Schema) != 2 {
		t.Fatalf("schema %v", md.Schema)
	}
}

// TestRestart: a second server on the first one's DataDir sees its data.
func TestRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	first, err := bqstoretest.New(bqstoretest.Options{DataDir: dir, Project: "p1"})
	if err != nil {
		t.Fatal(err)
	}
	bq, err := bigquery.NewClient(ctx, first.Project, first.RESTOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	if err := bq.Dataset("d").Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	bq.Close()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("Close removed a data dir it did not create: %v", err)
	}

	second := bqstoretest.Start(t, bqstoretest.Options{DataDir: dir, Project: "p1"})
	bq, err = bigquery.NewClient(ctx, second.Project, second.RESTOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer bq.Close()
	if _, err := bq.Dataset("d").Metadata(ctx); err != nil {
		t.Fatalf("dataset after restart: %v", err)
	}
}

// TestNewTempDir: New without a DataDir makes one and Close removes it.
func TestNewTempDir(t *testing.T) {
	s, err := bqstoretest.New(bqstoretest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Project != "local" {
		t.Errorf("Project = %q, want local", s.Project)
	}
	if _, err := os.Stat(s.DataDir); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.DataDir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("data dir %s left behind: %v", s.DataDir, err)
	}
}

func write(ctx context.Context, t *testing.T, mw *managedwriter.Client, table string, n int) {
	t.Helper()
	ts, err := adapt.BQSchemaToStorageTableSchema(schema)
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
	ms, err := mw.NewManagedStream(ctx, managedwriter.WithDestinationTable(table),
		managedwriter.WithType(managedwriter.CommittedStream), managedwriter.WithSchemaDescriptor(dp))
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	var rows [][]byte
	for i := range n {
		m := dynamicpb.NewMessage(md)
		m.Set(md.Fields().ByName("id"), protoreflect.ValueOfInt64(int64(i)))
		m.Set(md.Fields().ByName("name"), protoreflect.ValueOfString("row"))
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, b)
	}
	res, err := ms.AppendRows(ctx, rows, managedwriter.WithOffset(0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := res.GetResult(ctx); err != nil {
		t.Fatal(err)
	}
}

func countRows(ctx context.Context, t *testing.T, rc *storage.BigQueryReadClient, project, table string) int64 {
	t.Helper()
	sess, err := rc.CreateReadSession(ctx, &storagepb.CreateReadSessionRequest{
		Parent:      "projects/" + project,
		ReadSession: &storagepb.ReadSession{Table: table, DataFormat: storagepb.DataFormat_ARROW},
	})
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, st := range sess.GetStreams() {
		rs, err := rc.ReadRows(ctx, &storagepb.ReadRowsRequest{ReadStream: st.GetName()})
		if err != nil {
			t.Fatal(err)
		}
		for {
			r, err := rs.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			n += r.GetRowCount()
		}
	}
	return n
}
