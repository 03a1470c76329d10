package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"cloud.google.com/go/bigquery/storage/managedwriter"
	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/bqstore/bqstore/internal/testkit"
)

var simpleSchema = bigquery.Schema{
	{Name: "id", Type: bigquery.IntegerFieldType, Required: true},
	{Name: "name", Type: bigquery.StringFieldType},
	{Name: "score", Type: bigquery.FloatFieldType},
}

// rows encodes n rows (id = first+i) of simpleSchema.
func rows(t *testing.T, md protoreflect.MessageDescriptor, first, n int) [][]byte {
	t.Helper()
	out := make([][]byte, n)
	for i := range out {
		m := dynamicpb.NewMessage(md)
		id := int64(first + i)
		m.Set(md.Fields().ByName("id"), protoreflect.ValueOfInt64(id))
		m.Set(md.Fields().ByName("name"), protoreflect.ValueOfString("row"))
		m.Set(md.Fields().ByName("score"), protoreflect.ValueOfFloat64(float64(id)/2))
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
	}
	return out
}

func ids(t *testing.T, e *env, tablePath string) []int64 {
	t.Helper()
	var out []int64
	for _, rec := range e.readAll(tablePath, 4, nil, nil) {
		col := rec.Column(0).(*array.Int64)
		out = append(out, col.Int64Values()...)
	}
	return out
}

func TestDefaultStream(t *testing.T) {
	e := newEnv(t)
	tp := e.table("t_default", simpleSchema)
	dp, md := descriptor(t, simpleSchema)
	ms, err := e.mw.NewManagedStream(e.ctx, managedwriter.WithDestinationTable(tp), managedwriter.WithSchemaDescriptor(dp))
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	var results []*managedwriter.AppendResult
	for i := 0; i < 5; i++ {
		r, err := ms.AppendRows(e.ctx, rows(t, md, i*10, 10))
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, r)
	}
	for _, r := range results {
		off, err := r.GetResult(e.ctx)
		if err != nil {
			t.Fatalf("append: %v", err)
		}
		if off != managedwriter.NoStreamOffset {
			t.Fatalf("_default append offset = %d, want NoStreamOffset (unset)", off)
		}
	}
	if got := len(ids(t, e, tp)); got != 50 {
		t.Fatalf("read %d rows, want 50", got)
	}

	// Offsets are not allowed on _default.
	r, err := ms.AppendRows(e.ctx, rows(t, md, 0, 1), managedwriter.WithOffset(0))
	if err == nil {
		_, err = r.GetResult(e.ctx)
	}
	wantCodes(t, "offset on _default", err, codes.InvalidArgument, 0)

	// GetWriteStream under both spellings of the default stream.
	for _, name := range []string{tp + "/streams/_default", tp + "/_default"} {
		ws, err := e.mw.GetWriteStream(e.ctx, &storagepb.GetWriteStreamRequest{Name: name, View: storagepb.WriteStreamView_FULL})
		if err != nil {
			t.Fatalf("GetWriteStream(%s): %v", name, err)
		}
		if ws.GetType() != storagepb.WriteStream_COMMITTED || ws.GetCreateTime() != nil || ws.GetCommitTime() != nil {
			t.Fatalf("_default stream = %v", ws)
		}
		if len(ws.GetTableSchema().GetFields()) != 3 {
			t.Fatalf("FULL view schema = %v", ws.GetTableSchema())
		}
	}
	_, err = e.wc.FinalizeWriteStream(e.ctx, &storagepb.FinalizeWriteStreamRequest{Name: tp + "/streams/_default"})
	wantCodes(t, "finalize _default", err, codes.InvalidArgument, storagepb.StorageError_INVALID_STREAM_TYPE)
}

func TestCommittedStreamOffsets(t *testing.T) {
	e := newEnv(t)
	tp := e.table("t_committed", simpleSchema)
	ms, md := newWriter(t, e, tp, managedwriter.CommittedStream)
	append := func(first, n int, off int64) (int64, error) {
		r, err := ms.AppendRows(e.ctx, rows(t, md, first, n), managedwriter.WithOffset(off))
		if err != nil {
			return 0, err
		}
		return r.GetResult(e.ctx)
	}
	for i, want := range []int64{0, 10, 20} {
		got, err := append(i*10, 10, want)
		if err != nil || got != want {
			t.Fatalf("append %d: offset %d, %v; want %d", i, got, err, want)
		}
	}
	_, err := append(0, 10, 0)
	wantCodes(t, "retry at offset 0", err, codes.AlreadyExists, storagepb.StorageError_OFFSET_ALREADY_EXISTS)
	_, err = append(100, 10, 100)
	wantCodes(t, "offset beyond end", err, codes.OutOfRange, storagepb.StorageError_OFFSET_OUT_OF_RANGE)
	// The connection stays usable.
	if got, err := append(30, 5, 30); err != nil || got != 30 {
		t.Fatalf("append after errors: %d, %v", got, err)
	}
	got := ids(t, e, tp)
	if len(got) != 35 {
		t.Fatalf("read %d rows, want 35 (no duplicates from the retry)", len(got))
	}
	seen := map[int64]bool{}
	for _, id := range got {
		if seen[id] || id < 0 || id >= 35 {
			t.Fatalf("id %d duplicated or unexpected", id)
		}
		seen[id] = true
	}
	ws, err := e.mw.GetWriteStream(e.ctx, &storagepb.GetWriteStreamRequest{Name: ms.StreamName()})
	if err != nil {
		t.Fatal(err)
	}
	if ws.GetType() != storagepb.WriteStream_COMMITTED || ws.GetCreateTime() == nil || ws.GetTableSchema() != nil {
		t.Fatalf("BASIC view of a COMMITTED stream = %v", ws)
	}
}

func TestPendingStreamLifecycle(t *testing.T) {
	e := newEnv(t)
	tp := e.table("t_pending", simpleSchema)
	dp, md := descriptor(t, simpleSchema)
	var names []string
	for s := 0; s < 2; s++ {
		ms, err := e.mw.NewManagedStream(e.ctx, managedwriter.WithDestinationTable(tp),
			managedwriter.WithType(managedwriter.PendingStream), managedwriter.WithSchemaDescriptor(dp))
		if err != nil {
			t.Fatal(err)
		}
		defer ms.Close()
		r, err := ms.AppendRows(e.ctx, rows(t, md, s*100, 20), managedwriter.WithOffset(0))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.GetResult(e.ctx); err != nil {
			t.Fatal(err)
		}
		names = append(names, ms.StreamName())
		if s == 0 {
			n, err := ms.Finalize(e.ctx)
			if err != nil || n != 20 {
				t.Fatalf("finalize: %d, %v", n, err)
			}
			// Finalizing again returns the same count.
			if n, err := ms.Finalize(e.ctx); err != nil || n != 20 {
				t.Fatalf("second finalize: %d, %v", n, err)
			}
			r, err := ms.AppendRows(e.ctx, rows(t, md, 500, 1), managedwriter.WithOffset(20))
			if err == nil {
				_, err = r.GetResult(e.ctx)
			}
			wantCodes(t, "append after finalize", err, codes.InvalidArgument, storagepb.StorageError_STREAM_FINALIZED)
		}
	}
	if n := len(ids(t, e, tp)); n != 0 {
		t.Fatalf("%d uncommitted PENDING rows visible", n)
	}
	// One stream is not finalized: nothing is committed.
	resp, err := e.mw.BatchCommitWriteStreams(e.ctx, &storagepb.BatchCommitWriteStreamsRequest{Parent: tp, WriteStreams: names})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetCommitTime() != nil || len(resp.GetStreamErrors()) != 1 ||
		resp.GetStreamErrors()[0].GetCode() != storagepb.StorageError_INVALID_STREAM_STATE || resp.GetStreamErrors()[0].GetEntity() != names[1] {
		t.Fatalf("commit with an unfinalized stream = %v", resp)
	}
	if n := len(ids(t, e, tp)); n != 0 {
		t.Fatalf("a failed batch commit made %d rows visible", n)
	}
	if _, err := e.wc.FinalizeWriteStream(e.ctx, &storagepb.FinalizeWriteStreamRequest{Name: names[1]}); err != nil {
		t.Fatal(err)
	}
	resp, err = e.mw.BatchCommitWriteStreams(e.ctx, &storagepb.BatchCommitWriteStreamsRequest{Parent: tp, WriteStreams: names})
	if err != nil || resp.GetCommitTime() == nil || len(resp.GetStreamErrors()) != 0 {
		t.Fatalf("commit: %v, %v", resp, err)
	}
	if n := len(ids(t, e, tp)); n != 40 {
		t.Fatalf("read %d rows after commit, want 40", n)
	}
	ws, err := e.mw.GetWriteStream(e.ctx, &storagepb.GetWriteStreamRequest{Name: names[0]})
	if err != nil || ws.GetCommitTime() == nil || !ws.GetCommitTime().AsTime().Equal(resp.GetCommitTime().AsTime()) {
		t.Fatalf("GetWriteStream after commit: %v, %v", ws, err)
	}
	resp, err = e.mw.BatchCommitWriteStreams(e.ctx, &storagepb.BatchCommitWriteStreamsRequest{Parent: tp, WriteStreams: names[:1]})
	if err != nil || resp.GetCommitTime() != nil || len(resp.GetStreamErrors()) != 1 ||
		resp.GetStreamErrors()[0].GetCode() != storagepb.StorageError_STREAM_ALREADY_COMMITTED {
		t.Fatalf("second commit: %v, %v", resp, err)
	}
	_, err = e.mw.BatchCommitWriteStreams(e.ctx, &storagepb.BatchCommitWriteStreamsRequest{Parent: tp})
	wantCodes(t, "commit of nothing", err, codes.InvalidArgument, 0)
	resp, err = e.mw.BatchCommitWriteStreams(e.ctx, &storagepb.BatchCommitWriteStreamsRequest{Parent: tp, WriteStreams: []string{tp + "/streams/nope"}})
	if err != nil || len(resp.GetStreamErrors()) != 1 || resp.GetStreamErrors()[0].GetCode() != storagepb.StorageError_STREAM_NOT_FOUND {
		t.Fatalf("commit of an unknown stream: %v, %v", resp, err)
	}
}

func TestBufferedStreamFlush(t *testing.T) {
	e := newEnv(t)
	tp := e.table("t_buffered", simpleSchema)
	ms, md := newWriter(t, e, tp, managedwriter.BufferedStream)
	appendAt(t, e, ms, md, 0, 10, 0)
	if n := len(ids(t, e, tp)); n != 0 {
		t.Fatalf("%d unflushed rows visible", n)
	}
	if off, err := ms.FlushRows(e.ctx, 3); err != nil || off != 3 {
		t.Fatalf("flush to 3: %d, %v", off, err)
	}
	if n := len(ids(t, e, tp)); n != 4 {
		t.Fatalf("after flush(3): %d rows visible, want 4 (offsets 0..3 inclusive)", n)
	}
	_, err := ms.FlushRows(e.ctx, 10)
	wantCodes(t, "flush beyond end", err, codes.OutOfRange, storagepb.StorageError_OFFSET_OUT_OF_RANGE)

	cs, err := e.mw.CreateWriteStream(e.ctx, &storagepb.CreateWriteStreamRequest{Parent: tp, WriteStream: &storagepb.WriteStream{Type: storagepb.WriteStream_COMMITTED}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.wc.FlushRows(e.ctx, &storagepb.FlushRowsRequest{WriteStream: cs.GetName()})
	wantCodes(t, "flush a COMMITTED stream", err, codes.InvalidArgument, storagepb.StorageError_INVALID_STREAM_TYPE)
}

func TestNotFoundAndInvalid(t *testing.T) {
	e := newEnv(t)
	tp := e.table("t_nf", simpleSchema)
	_, err := e.mw.CreateWriteStream(e.ctx, &storagepb.CreateWriteStreamRequest{Parent: "projects/local/datasets/d/tables/missing",
		WriteStream: &storagepb.WriteStream{Type: storagepb.WriteStream_PENDING}})
	wantCodes(t, "create on a missing table", err, codes.NotFound, storagepb.StorageError_TABLE_NOT_FOUND)
	_, err = e.mw.CreateWriteStream(e.ctx, &storagepb.CreateWriteStreamRequest{Parent: tp, WriteStream: &storagepb.WriteStream{}})
	wantCodes(t, "create with type unspecified", err, codes.InvalidArgument, 0)
	_, err = e.mw.GetWriteStream(e.ctx, &storagepb.GetWriteStreamRequest{Name: tp + "/streams/nope"})
	wantCodes(t, "get a missing stream", err, codes.NotFound, storagepb.StorageError_STREAM_NOT_FOUND)
	_, err = e.wc.FinalizeWriteStream(e.ctx, &storagepb.FinalizeWriteStreamRequest{Name: tp + "/streams/nope"})
	wantCodes(t, "finalize a missing stream", err, codes.NotFound, storagepb.StorageError_STREAM_NOT_FOUND)
	_, err = e.mw.GetWriteStream(e.ctx, &storagepb.GetWriteStreamRequest{Name: "garbage"})
	wantCodes(t, "malformed name", err, codes.InvalidArgument, 0)

	// Appending to the default stream of a missing table.
	dp, md := descriptor(t, simpleSchema)
	ms, err := e.mw.NewManagedStream(e.ctx, managedwriter.WithDestinationTable("projects/local/datasets/d/tables/missing"),
		managedwriter.WithSchemaDescriptor(dp))
	if err == nil {
		defer ms.Close()
		var r *managedwriter.AppendResult
		r, err = ms.AppendRows(e.ctx, rows(t, md, 0, 1))
		if err == nil {
			_, err = r.GetResult(e.ctx)
		}
	}
	wantCodes(t, "append to a missing table", err, codes.NotFound, storagepb.StorageError_TABLE_NOT_FOUND)
}

func TestExtraFieldAndRowErrors(t *testing.T) {
	e := newEnv(t)
	tp := e.table("t_extra", simpleSchema)
	wider := append(bigquery.Schema{}, simpleSchema...)
	wider = append(wider, &bigquery.FieldSchema{Name: "extra_col", Type: bigquery.StringFieldType})
	dp, md := descriptor(t, wider)
	ms, err := e.mw.NewManagedStream(e.ctx, managedwriter.WithDestinationTable(tp), managedwriter.WithSchemaDescriptor(dp))
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	r, err := ms.AppendRows(e.ctx, rows(t, md, 0, 1))
	if err == nil {
		_, err = r.GetResult(e.ctx)
	}
	wantCodes(t, "extra field", err, codes.InvalidArgument, storagepb.StorageError_SCHEMA_MISMATCH_EXTRA_FIELDS)
	if !strings.Contains(err.Error(), "extra_col") {
		t.Fatalf("extra-field error does not name the field: %v", err)
	}

	// A REQUIRED column left unset is a row error; nothing is appended.
	dp2, md2 := descriptor(t, simpleSchema)
	ms2, err := e.mw.NewManagedStream(e.ctx, managedwriter.WithDestinationTable(tp), managedwriter.WithSchemaDescriptor(dp2))
	if err != nil {
		t.Fatal(err)
	}
	defer ms2.Close()
	good := rows(t, md2, 0, 3)
	bad := dynamicpb.NewMessage(md2)
	bad.Set(md2.Fields().ByName("name"), protoreflect.ValueOfString("no id"))
	badBytes, _ := proto.Marshal(bad)
	r, err = ms2.AppendRows(e.ctx, [][]byte{good[0], badBytes, good[1]})
	if err != nil {
		t.Fatal(err)
	}
	full, _ := r.FullResponse(e.ctx)
	if len(full.GetRowErrors()) != 1 || full.GetRowErrors()[0].GetIndex() != 1 || full.GetRowErrors()[0].GetCode() != storagepb.RowError_FIELDS_ERROR {
		t.Fatalf("row errors = %v", full.GetRowErrors())
	}
	if n := len(ids(t, e, tp)); n != 0 {
		t.Fatalf("%d rows appended from a request with a row error", n)
	}
}

func TestRequestTooLarge(t *testing.T) {
	e := newEnv(t)
	tp := e.table("t_large", simpleSchema)
	dp, md := descriptor(t, simpleSchema)
	ms, err := e.mw.NewManagedStream(e.ctx, managedwriter.WithDestinationTable(tp), managedwriter.WithSchemaDescriptor(dp))
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	big := dynamicpb.NewMessage(md)
	big.Set(md.Fields().ByName("id"), protoreflect.ValueOfInt64(1))
	big.Set(md.Fields().ByName("name"), protoreflect.ValueOfString(strings.Repeat("x", 11<<20)))
	b, _ := proto.Marshal(big)
	r, err := ms.AppendRows(e.ctx, [][]byte{b})
	if err == nil {
		_, err = r.GetResult(e.ctx)
	}
	wantCodes(t, "11 MB request", err, codes.InvalidArgument, 0)
	r, err = ms.AppendRows(e.ctx, rows(t, md, 0, 2))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.GetResult(e.ctx); err != nil {
		t.Fatalf("small append after a too-large one: %v", err)
	}
}

func TestMultiplexedDefaultStreams(t *testing.T) {
	e := newEnv(t)
	mw, err := managedwriterMultiplexed(e)
	if err != nil {
		t.Fatal(err)
	}
	defer mw.Close()
	dp, md := descriptor(t, simpleSchema)
	var tables []string
	for i := 0; i < 3; i++ {
		tables = append(tables, e.table("t_mux"+string(rune('a'+i)), simpleSchema))
	}
	var results []*managedwriter.AppendResult
	for round := 0; round < 3; round++ {
		for i, tp := range tables {
			ms, err := mw.NewManagedStream(e.ctx, managedwriter.WithDestinationTable(tp), managedwriter.WithSchemaDescriptor(dp))
			if err != nil {
				t.Fatal(err)
			}
			r, err := ms.AppendRows(e.ctx, rows(t, md, round*100+i*10, 5))
			if err != nil {
				t.Fatal(err)
			}
			results = append(results, r)
			defer ms.Close()
		}
	}
	for _, r := range results {
		if _, err := r.GetResult(e.ctx); err != nil {
			t.Fatalf("multiplexed append: %v", err)
		}
	}
	for _, tp := range tables {
		if n := len(ids(t, e, tp)); n != 15 {
			t.Fatalf("%s holds %d rows, want 15", tp, n)
		}
	}
}

// TestGracefulStopWithOpenWriters stops the server while a managedwriter
// connection is open: Close must end the idle connection itself instead of
// waiting for the client to hang up, and everything acknowledged is there
// after a restart.
func TestGracefulStopWithOpenWriters(t *testing.T) {
	dir := t.TempDir()
	srv := testkit.StartDir(t, dir)
	e := dial(t, t.Context(), srv)
	tp := e.table("t_stop", simpleSchema)
	ms, md := committedWriter(t, e, tp)
	appendBatches(t, e, ms, md, 5)
	// The connection is still open. Without the drain, Close would wait
	// for the client until its context expired and then cut it.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("Close waited for the open AppendRows connection until its deadline")
	}
	srv2 := testkit.StartDir(t, dir)
	e2 := dial(t, t.Context(), srv2)
	if n := len(ids(t, e2, tp)); n != 50 {
		t.Fatalf("after restart: %d rows, want 50", n)
	}
}
