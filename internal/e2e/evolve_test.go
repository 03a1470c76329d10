package e2e

import (
	"bytes"
	"testing"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"cloud.google.com/go/bigquery/storage/managedwriter"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// TestSchemaEvolution follows managedwriter's own integration test: after
// a REST patch adds a column, the writer keeps appending with its old
// descriptor until a response carries updated_schema, then appends rows
// that use the new column on the same stream.
func TestSchemaEvolution(t *testing.T) {
	e := newEnv(t)
	tp := e.table("t_evolve", simpleSchema)
	dp, md := descriptor(t, simpleSchema)
	ms, err := e.mw.NewManagedStream(e.ctx, managedwriter.WithDestinationTable(tp), managedwriter.WithSchemaDescriptor(dp))
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	r, err := ms.AppendRows(e.ctx, rows(t, md, 0, 5))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.GetResult(e.ctx); err != nil {
		t.Fatal(err)
	}

	tbl := e.bq.Dataset("d").Table("t_evolve")
	meta, err := tbl.Metadata(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	wider := append(bigquery.Schema{}, meta.Schema...)
	wider = append(wider, &bigquery.FieldSchema{Name: "extra", Type: bigquery.StringFieldType})
	if _, err := tbl.Update(e.ctx, bigquery.TableMetadataToUpdate{Schema: wider}, meta.ETag); err != nil {
		t.Fatal(err)
	}

	// Old-shape rows are still accepted; the next response tells the
	// writer about the new schema.
	r, err = ms.AppendRows(e.ctx, rows(t, md, 5, 5))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.GetResult(e.ctx); err != nil {
		t.Fatalf("old-shape append after the patch: %v", err)
	}
	us, err := r.UpdatedSchema(e.ctx)
	if err != nil || us == nil || len(us.GetFields()) != 4 || us.GetFields()[3].GetName() != "extra" {
		t.Fatalf("updated_schema = %v, %v; want the 4-column schema", us, err)
	}

	dp2, md2 := descriptor(t, wider)
	m := dynamicpb.NewMessage(md2)
	m.Set(md2.Fields().ByName("id"), protoreflect.ValueOfInt64(100))
	m.Set(md2.Fields().ByName("extra"), protoreflect.ValueOfString("new column"))
	b, _ := proto.Marshal(m)
	r, err = ms.AppendRows(e.ctx, [][]byte{b}, managedwriter.UpdateSchemaDescriptor(dp2))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.GetResult(e.ctx); err != nil {
		t.Fatalf("append with the new column: %v", err)
	}
	var n int
	var extra []string
	for _, rec := range e.readAll(tp, 1, nil, nil) {
		if rec.NumCols() != 4 {
			t.Fatalf("read %d columns, want 4", rec.NumCols())
		}
		col := rec.Column(3).(*array.String)
		for i := 0; i < col.Len(); i++ {
			n++
			if col.IsValid(i) {
				extra = append(extra, col.Value(i))
			}
		}
	}
	if n != 11 || len(extra) != 1 || extra[0] != "new column" {
		t.Fatalf("read %d rows with extra values %q; want 11 rows, one with the new column", n, extra)
	}
	// New streams carry the new schema.
	ws, err := e.mw.CreateWriteStream(e.ctx, &storagepb.CreateWriteStreamRequest{Parent: tp, WriteStream: &storagepb.WriteStream{Type: storagepb.WriteStream_PENDING}})
	if err != nil || len(ws.GetTableSchema().GetFields()) != 4 {
		t.Fatalf("new stream schema: %v, %v", ws.GetTableSchema(), err)
	}
}

// TestArrowInput appends arrow_rows with the raw generated client.
func TestArrowInput(t *testing.T) {
	e := newEnv(t)
	tp := e.table("t_arrow", simpleSchema)
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "ID", Type: arrow.PrimitiveTypes.Int64}, // matched case-insensitively
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	defer bld.Release()
	for i := 0; i < 4; i++ {
		bld.Field(0).(*array.Int64Builder).Append(int64(i))
		bld.Field(1).(*array.StringBuilder).Append("arrow")
	}
	rec := bld.NewRecordBatch()
	defer rec.Release()
	// An IPC stream is the schema message, the batch messages and an
	// 8-byte end-of-stream marker: cut the messages out of two streams.
	var schemaOnly, full bytes.Buffer
	w := ipc.NewWriter(&schemaOnly, ipc.WithSchema(sch))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w = ipc.NewWriter(&full, ipc.WithSchema(sch))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	const eos = 8
	msgs := [][]byte{
		schemaOnly.Bytes()[:schemaOnly.Len()-eos],
		full.Bytes()[schemaOnly.Len()-eos : full.Len()-eos],
	}
	stream, err := e.wc.AppendRows(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	send := func(withSchema bool) *storagepb.AppendRowsResponse {
		ar := &storagepb.AppendRowsRequest_ArrowData{Rows: &storagepb.ArrowRecordBatch{SerializedRecordBatch: msgs[1]}}
		req := &storagepb.AppendRowsRequest{Rows: &storagepb.AppendRowsRequest_ArrowRows{ArrowRows: ar}}
		if withSchema {
			req.WriteStream = tp + "/streams/_default"
			ar.WriterSchema = &storagepb.ArrowSchema{SerializedSchema: msgs[0]}
		}
		if err := stream.Send(req); err != nil {
			t.Fatal(err)
		}
		resp, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if resp := send(true); resp.GetError() != nil {
		t.Fatalf("arrow append: %v", resp.GetError())
	}
	if resp := send(false); resp.GetError() != nil {
		t.Fatalf("second arrow append (schema omitted): %v", resp.GetError())
	}
	_ = stream.CloseSend()
	if n := len(ids(t, e, tp)); n != 8 {
		t.Fatalf("read %d rows, want 8", n)
	}
}
