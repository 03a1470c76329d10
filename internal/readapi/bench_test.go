package readapi_test

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"cloud.google.com/go/bigquery/storage/managedwriter"
	"cloud.google.com/go/bigquery/storage/managedwriter/adapt"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// BenchmarkReadRows reads a 1 KB-per-row table whole through ReadRows
// (Arrow, one stream, all columns: the path of the Go client's default
// read), client and server in one process over loopback. B/op counts
// both sides' allocations; the server's share is its responses.
//
//	go test -run '^$' -bench ReadRows -benchmem -count 6 ./internal/readapi/
func BenchmarkReadRows(b *testing.B) {
	const rows = 40_000
	e := newEnv(b)
	tp := e.fillWide("wide", rows, 1024)
	var bytes int64
	for b.Loop() {
		sess, err := e.rc.CreateReadSession(e.ctx, &storagepb.CreateReadSessionRequest{
			Parent:         "projects/local",
			ReadSession:    &storagepb.ReadSession{Table: tp, DataFormat: storagepb.DataFormat_ARROW},
			MaxStreamCount: 1,
		})
		if err != nil {
			b.Fatal(err)
		}
		rs, err := e.rc.ReadRows(e.ctx, &storagepb.ReadRowsRequest{ReadStream: sess.GetStreams()[0].GetName()})
		if err != nil {
			b.Fatal(err)
		}
		var n int64
		bytes = 0
		for {
			resp, err := rs.Recv()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n += resp.GetRowCount()
			bytes += int64(len(resp.GetArrowRecordBatch().GetSerializedRecordBatch()))
		}
		if n != rows {
			b.Fatalf("read %d rows, want %d", n, rows)
		}
	}
	b.SetBytes(bytes)
}

// fillWide creates table d.name (id INT64, payload STRING) and writes n
// rows whose payload is width bytes.
func (e *env) fillWide(name string, n, width int) string {
	e.t.Helper()
	schema := bigquery.Schema{
		{Name: "id", Type: bigquery.IntegerFieldType, Required: true},
		{Name: "payload", Type: bigquery.StringFieldType},
	}
	ds := e.bq.Dataset("d")
	if err := ds.Create(e.ctx, &bigquery.DatasetMetadata{}); err != nil {
		e.t.Fatal(err)
	}
	if err := ds.Table(name).Create(e.ctx, &bigquery.TableMetadata{Schema: schema}); err != nil {
		e.t.Fatal(err)
	}
	tp := fmt.Sprintf("projects/local/datasets/d/tables/%s", name)
	ts, err := adapt.BQSchemaToStorageTableSchema(schema)
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
	payload := strings.Repeat("x", width)
	const batch = 800 // < 1 MB a request
	for first := 0; first < n; first += batch {
		var rows [][]byte
		for i := first; i < min(n, first+batch); i++ {
			m := dynamicpb.NewMessage(md)
			m.Set(md.Fields().ByName("id"), protoreflect.ValueOfInt64(int64(i)))
			m.Set(md.Fields().ByName("payload"), protoreflect.ValueOfString(payload))
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
