package e2e

// Read API conformance through the official read client: every type in
// ARROW (arrow-go's IPC reader) and AVRO (hamba/avro), compression,
// streams, splits, offsets, snapshots, projection, row_restriction and
// expiry.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"cloud.google.com/go/bigquery/storage/managedwriter"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/bqstore/bqstore/internal/server"
	"github.com/bqstore/bqstore/internal/testkit"
)

// ---- a bigger table of simple rows ----

// fillSimple writes n rows (ids 0..n-1) of simpleSchema in batches.
func fillSimple(t *testing.T, e *env, name string, n int) (string, protoreflect.MessageDescriptor, *managedwriter.ManagedStream) {
	t.Helper()
	tp := e.table(name, simpleSchema)
	dp, md := descriptor(t, simpleSchema)
	ms, err := e.mw.NewManagedStream(e.ctx, managedwriter.WithDestinationTable(tp), managedwriter.WithSchemaDescriptor(dp))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ms.Close() })
	const batch = 5000
	var results []*managedwriter.AppendResult
	for first := 0; first < n; first += batch {
		r, err := ms.AppendRows(e.ctx, rows(t, md, first, min(batch, n-first)))
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, r)
	}
	for _, r := range results {
		if _, err := r.GetResult(e.ctx); err != nil {
			t.Fatal(err)
		}
	}
	return tp, md, ms
}

func idsOf(t *testing.T, recs []arrow.Record) []int64 {
	t.Helper()
	var out []int64
	for _, rec := range recs {
		out = append(out, rec.Column(0).(*array.Int64).Int64Values()...)
		rec.Release()
	}
	return out
}

// exactlyOnce checks that ids are 0..n-1, each once.
func exactlyOnce(t *testing.T, what string, ids []int64, n int) {
	t.Helper()
	if len(ids) != n {
		t.Fatalf("%s: %d rows, want %d", what, len(ids), n)
	}
	seen := make([]bool, n)
	for _, id := range ids {
		if id < 0 || id >= int64(n) || seen[id] {
			t.Fatalf("%s: id %d duplicated or out of range", what, id)
		}
		seen[id] = true
	}
}

func (e *env) session(tp string, format storagepb.DataFormat, maxStreams, preferredMin int32, opts *storagepb.ReadSession_TableReadOptions, mods *storagepb.ReadSession_TableModifiers) (*storagepb.ReadSession, error) {
	return e.rc.CreateReadSession(e.ctx, &storagepb.CreateReadSessionRequest{
		Parent:                  "projects/" + project,
		ReadSession:             &storagepb.ReadSession{Table: tp, DataFormat: format, ReadOptions: opts, TableModifiers: mods},
		MaxStreamCount:          maxStreams,
		PreferredMinStreamCount: preferredMin,
	})
}

// streamRead reads one stream from offset and returns the ids and the
// progress of each response.
type progress struct{ start, end float64 }

func (e *env) streamRead(schemaMsg []byte, name string, offset int64) ([]int64, []progress) {
	e.t.Helper()
	rows, err := e.rc.ReadRows(e.ctx, &storagepb.ReadRowsRequest{ReadStream: name, Offset: offset})
	if err != nil {
		e.t.Fatalf("ReadRows: %v", err)
	}
	var ids []int64
	var prog []progress
	for {
		resp, err := rows.Recv()
		if errors.Is(err, io.EOF) {
			return ids, prog
		}
		if err != nil {
			e.t.Fatalf("ReadRows(%s, %d): %v", name, offset, err)
		}
		p := resp.GetStats().GetProgress()
		prog = append(prog, progress{p.GetAtResponseStart(), p.GetAtResponseEnd()})
		recs := e.decodeArrow(schemaMsg, resp)
		ids = append(ids, idsOf(e.t, recs)...)
	}
}

func (e *env) decodeArrow(schemaMsg []byte, resp *storagepb.ReadRowsResponse) []arrow.Record {
	e.t.Helper()
	buf := append(append([]byte{}, schemaMsg...), resp.GetArrowRecordBatch().GetSerializedRecordBatch()...)
	r, err := ipcReader(buf)
	if err != nil {
		e.t.Fatalf("ipc reader: %v", err)
	}
	defer r.Release()
	var out []arrow.Record
	var n int64
	for r.Next() {
		rec := r.RecordBatch()
		rec.Retain()
		n += rec.NumRows()
		out = append(out, rec)
	}
	if err := r.Err(); err != nil {
		e.t.Fatalf("ipc: %v", err)
	}
	if n != resp.GetRowCount() {
		e.t.Fatalf("row_count %d, batch holds %d rows", resp.GetRowCount(), n)
	}
	return out
}

// smallResponses is a server whose ReadRows responses hold few rows, so
// that streams take many responses.
func smallResponses(t *testing.T) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	srv := testkit.Start(t, func(c *server.Config) { c.Read.MaxResponseBytes = 16 << 10 })
	return dial(t, ctx, srv)
}

const bigRows = 20000

func TestReadStreamsExactlyOnce(t *testing.T) {
	e := smallResponses(t)
	tp, _, _ := fillSimple(t, e, "t_streams", bigRows)

	// A small table gets one stream when the server chooses.
	sess, err := e.session(tp, storagepb.DataFormat_ARROW, 0, 0, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(sess.GetStreams()) != 1 || sess.GetEstimatedRowCount() != bigRows || sess.GetEstimatedTotalBytesScanned() <= 0 {
		t.Fatalf("session of a small table: %d streams, estimated_row_count %d, bytes %d",
			len(sess.GetStreams()), sess.GetEstimatedRowCount(), sess.GetEstimatedTotalBytesScanned())
	}
	for _, n := range []int32{1, 2, 3, 7, 16, 100} {
		sess, err := e.session(tp, storagepb.DataFormat_ARROW, n, n, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(sess.GetStreams()); got != int(n) {
			t.Fatalf("max_stream_count=%d preferred_min=%d: %d streams", n, n, got)
		}
		var all []int64
		sizes := map[int]bool{}
		for _, s := range sess.GetStreams() {
			ids, prog := e.streamRead(sess.GetArrowSchema().GetSerializedSchema(), s.GetName(), 0)
			all = append(all, ids...)
			sizes[len(ids)] = true
			checkProgress(t, s.GetName(), prog)
		}
		exactlyOnce(t, fmt.Sprintf("%d streams", n), all, bigRows)
		// Roughly equal shares: stream sizes differ by at most one row.
		if len(sizes) > 2 {
			t.Fatalf("%d streams of sizes %v", n, sizes)
		}
	}
	// AVRO sessions cut the same way.
	asess, avroRows := e.readAvro(tp, 5, nil)
	if len(asess.GetStreams()) != 5 {
		t.Fatalf("AVRO session: %d streams, want 5", len(asess.GetStreams()))
	}
	var avroIDs []int64
	for _, m := range avroRows {
		avroIDs = append(avroIDs, m["id"].(int64))
	}
	exactlyOnce(t, "AVRO 5 streams", avroIDs, bigRows)

	// A session reads its snapshot while writes go on.
	sess, err = e.session(tp, storagepb.DataFormat_ARROW, 4, 4, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	dp, md := descriptor(t, simpleSchema)
	batches := make([][][]byte, 20)
	for i := range batches {
		batches[i] = rows(t, md, bigRows+i*100, 100)
	}
	writeDone := make(chan error, 1)
	go func() {
		w, err := e.mw.NewManagedStream(e.ctx, managedwriter.WithDestinationTable(tp), managedwriter.WithSchemaDescriptor(dp))
		if err != nil {
			writeDone <- err
			return
		}
		defer w.Close()
		for _, b := range batches {
			r, err := w.AppendRows(e.ctx, b)
			if err == nil {
				_, err = r.GetResult(e.ctx)
			}
			if err != nil {
				writeDone <- err
				return
			}
		}
		writeDone <- nil
	}()
	var during []int64
	for _, s := range sess.GetStreams() {
		ids, _ := e.streamRead(sess.GetArrowSchema().GetSerializedSchema(), s.GetName(), 0)
		during = append(during, ids...)
	}
	if err := <-writeDone; err != nil {
		t.Fatalf("concurrent writer: %v", err)
	}
	exactlyOnce(t, "session read while writes go on", during, bigRows)
	if n := len(idsOf(t, e.readAll(tp, 1, nil, nil))); n != bigRows+2000 {
		t.Fatalf("after the writes: %d rows, want %d", n, bigRows+2000)
	}

	// max_stream_count caps preferred_min_stream_count's request.
	if _, err := e.session(tp, storagepb.DataFormat_ARROW, 2, 5, nil, nil); err == nil {
		t.Fatalf("preferred_min_stream_count above max_stream_count accepted")
	}
	sess, err = e.session(tp, storagepb.DataFormat_ARROW, 0, 3, nil, nil)
	if err != nil || len(sess.GetStreams()) != 3 {
		t.Fatalf("preferred_min_stream_count=3: %d streams, %v", len(sess.GetStreams()), err)
	}
}

// checkProgress checks stats.progress as the reference defines it: from 0
// to 1 across the stream, each response starting where the last ended.
func checkProgress(t *testing.T, name string, prog []progress) {
	t.Helper()
	if len(prog) == 0 {
		return
	}
	if prog[0].start != 0 || prog[len(prog)-1].end != 1 {
		t.Fatalf("%s: progress from %v to %v, want 0 to 1", name, prog[0].start, prog[len(prog)-1].end)
	}
	for i, p := range prog {
		if p.end < p.start || (i > 0 && p.start != prog[i-1].end) {
			t.Fatalf("%s: response %d progress %v after %v", name, i, p, prog[max(i-1, 0)])
		}
	}
}

func TestSplitReadStream(t *testing.T) {
	e := smallResponses(t)
	tp, _, _ := fillSimple(t, e, "t_split", bigRows)
	sess, err := e.session(tp, storagepb.DataFormat_ARROW, 1, 0, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	schemaMsg := sess.GetArrowSchema().GetSerializedSchema()
	orig := sess.GetStreams()[0].GetName()
	want, _ := e.streamRead(schemaMsg, orig, 0)
	exactlyOnce(t, "original", want, bigRows)

	for _, f := range []float64{0.0001, 0.01, 0.1, 0.25, 1.0 / 3, 0.5, 0.75, 0.9, 0.999, 0.99999} {
		resp, err := e.rc.SplitReadStream(e.ctx, &storagepb.SplitReadStreamRequest{Name: orig, Fraction: f})
		if err != nil {
			t.Fatalf("split at %v: %v", f, err)
		}
		p, _ := e.streamRead(schemaMsg, resp.GetPrimaryStream().GetName(), 0)
		r, _ := e.streamRead(schemaMsg, resp.GetRemainderStream().GetName(), 0)
		if len(p) == 0 || len(r) == 0 {
			t.Fatalf("split at %v: primary %d rows, remainder %d", f, len(p), len(r))
		}
		if got := append(append([]int64{}, p...), r...); !slices64Equal(got, want) {
			t.Fatalf("split at %v: primary ++ remainder != original", f)
		}
		if d := math.Abs(float64(len(p))/bigRows - f); d > 0.01 && len(p) > 1 {
			t.Fatalf("split at %v: primary has %d of %d rows", f, len(p), bigRows)
		}
	}
	// Split of a split, then down to one row: no longer splittable.
	name := orig
	var rows []int64 = want
	for len(rows) > 1 {
		resp, err := e.rc.SplitReadStream(e.ctx, &storagepb.SplitReadStreamRequest{Name: name, Fraction: 0.5})
		if err != nil {
			t.Fatal(err)
		}
		p, _ := e.streamRead(schemaMsg, resp.GetPrimaryStream().GetName(), 0)
		r, _ := e.streamRead(schemaMsg, resp.GetRemainderStream().GetName(), 0)
		if !slices64Equal(append(append([]int64{}, p...), r...), rows) {
			t.Fatalf("nested split of %d rows: primary ++ remainder != original", len(rows))
		}
		name, rows = resp.GetPrimaryStream().GetName(), p
	}
	resp, err := e.rc.SplitReadStream(e.ctx, &storagepb.SplitReadStreamRequest{Name: name, Fraction: 0.5})
	if err != nil || resp.GetPrimaryStream() != nil || resp.GetRemainderStream() != nil {
		t.Fatalf("split of a one-row stream: %v, %v; want both empty", resp, err)
	}
	// The original stays readable.
	again, _ := e.streamRead(schemaMsg, orig, 0)
	if !slices64Equal(again, want) {
		t.Fatalf("the original stream changed after splits")
	}
	// Fraction 0 (the proto default) splits nothing.
	resp, err = e.rc.SplitReadStream(e.ctx, &storagepb.SplitReadStreamRequest{Name: orig})
	if err != nil || resp.GetPrimaryStream() != nil {
		t.Fatalf("split at fraction 0: %v, %v; want both empty", resp, err)
	}
	for _, f := range []float64{1, -0.5, 1.5} {
		_, err := e.rc.SplitReadStream(e.ctx, &storagepb.SplitReadStreamRequest{Name: orig, Fraction: f})
		wantCodes(t, fmt.Sprintf("fraction %v", f), err, codes.InvalidArgument, 0)
	}
	_, err = e.rc.SplitReadStream(e.ctx, &storagepb.SplitReadStreamRequest{Name: orig + "x", Fraction: 0.5})
	wantCodes(t, "split of an unknown stream", err, codes.NotFound, 0)
}

func slices64Equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestReadRowsOffsetResume(t *testing.T) {
	e := smallResponses(t)
	tp, _, _ := fillSimple(t, e, "t_offset", bigRows)
	for _, restriction := range []string{"", "MOD(id, 3) = 1"} {
		sess, err := e.session(tp, storagepb.DataFormat_ARROW, 2, 2, &storagepb.ReadSession_TableReadOptions{RowRestriction: restriction}, nil)
		if err != nil {
			t.Fatal(err)
		}
		schemaMsg := sess.GetArrowSchema().GetSerializedSchema()
		for _, s := range sess.GetStreams() {
			full, _ := e.streamRead(schemaMsg, s.GetName(), 0)
			for _, off := range []int{1, 2, 17, len(full) / 3, len(full) - 1, len(full)} {
				got, prog := e.streamRead(schemaMsg, s.GetName(), int64(off))
				if !slices64Equal(got, full[off:]) {
					t.Fatalf("restriction %q: resume at %d of %d: %d rows, want %d (duplicate or gap)", restriction, off, len(full), len(got), len(full)-off)
				}
				if len(prog) > 0 && prog[len(prog)-1].end != 1 {
					t.Fatalf("resume at %d: progress ends at %v", off, prog[len(prog)-1].end)
				}
			}
			if restriction != "" {
				for _, id := range full {
					if id%3 != 1 {
						t.Fatalf("row_restriction let id %d through", id)
					}
				}
			}
		}
	}
}

func ipcReader(b []byte) (*ipc.Reader, error) { return ipc.NewReader(bytes.NewReader(b)) }

func idSet(t *testing.T, e *env, tp string, opts *storagepb.ReadSession_TableReadOptions, mods *storagepb.ReadSession_TableModifiers) []int64 {
	t.Helper()
	ids := idsOf(t, e.readAll(tp, 3, opts, mods))
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

func TestReadRowRestriction(t *testing.T) {
	e := newEnv(t)
	tp, _ := writeAllTypes(t, e, "t_filter")
	for _, tc := range []struct {
		expr string
		want []int64
	}{
		// The reference's examples, on this table's columns.
		{"i > 5", []int64{1, 2}},
		{"d = CAST('2024-2-29' as DATE)", []int64{1}},
		{"i is not NULL", []int64{1, 2, 3}},
		{`st_equals(g, st_geofromtext("POINT(1 2)"))`, []int64{1}},
		{`st_equals(g, st_geofromtext("POINT(1, 2)"))`, []int64{1}}, // the reference's spelling
		{"n BETWEEN -200 AND 5.0", []int64{1, 4}},
		// NULL semantics and the other types.
		{"NOT b", []int64{2}},
		{"b IS NULL", []int64{0, 3, 4}},
		{"NOT (i > 5)", []int64{3}},
		{"i > 5 OR i IS NULL", []int64{0, 1, 2, 4}},
		{"s LIKE 'h%'", []int64{1}},
		{"ts < TIMESTAMP '1970-01-02'", []int64{3, 4}},
		{"rec.a = 'x'", []int64{1}},
		{"bn > 0", []int64{1, 2}},
		{"tm > TIME '12:00:00'", []int64{1, 2}},
		{"dt >= DATETIME '9999-12-31 00:00:00'", []int64{2}},
		{"id IN (0, 4, 7)", []int64{0, 4}},
		{"`by` IS NOT NULL AND id > 1", []int64{2, 3}},
	} {
		got := idSet(t, e, tp, &storagepb.ReadSession_TableReadOptions{RowRestriction: tc.expr}, nil)
		if !slices64Equal(got, tc.want) {
			t.Errorf("row_restriction %q: ids %v, want %v", tc.expr, got, tc.want)
		}
	}
	for _, expr := range []string{"nope > 1", "i >", "i > 5 AND", "st_equals(g)", "(i > 1", "rec.nope = 1", "i > 1 ; DROP TABLE x"} {
		_, err := e.session(tp, storagepb.DataFormat_ARROW, 1, 0, &storagepb.ReadSession_TableReadOptions{RowRestriction: expr}, nil)
		wantCodes(t, fmt.Sprintf("row_restriction %q", expr), err, codes.InvalidArgument, 0)
	}
}

func TestReadSelectedFields(t *testing.T) {
	e := newEnv(t)
	tp, all := writeAllTypes(t, e, "t_select")
	opts := &storagepb.ReadSession_TableReadOptions{SelectedFields: []string{"rec.inner.x", "id", "REPS", "rd"}}
	// Table order whatever the selection's order; nested paths keep only
	// the selected children.
	projected := bigquery.Schema{
		allTypesSchema[0],
		allTypesSchema[14],
		{Name: "rec", Type: bigquery.RecordFieldType, Schema: bigquery.Schema{
			{Name: "inner", Type: bigquery.RecordFieldType, Schema: bigquery.Schema{{Name: "x", Type: bigquery.IntegerFieldType}}},
		}},
		allTypesSchema[17],
	}
	var want []map[string]any
	for _, r := range all {
		rec, _ := r["rec"].(map[string]any)
		var x any
		var sub any
		if rec != nil {
			if in, _ := rec["inner"].(map[string]any); in != nil {
				x = map[string]any{"x": in["x"]}
			} else {
				x = nil
			}
			sub = map[string]any{"inner": x}
		}
		want = append(want, map[string]any{"id": r["id"], "rd": r["rd"], "rec": sub, "reps": r["reps"]})
	}
	recs := e.readAll(tp, 1, opts, nil)
	got := canonArrowRows(t, projected, recs)
	sortByID(got)
	diffRows(t, "ARROW selected_fields", got, want)

	_, avroRows := e.readAvro(tp, 1, opts)
	got = nil
	for _, m := range avroRows {
		if len(m) != len(projected) {
			t.Fatalf("Avro row has %d fields, want %d: %v", len(m), len(projected), m)
		}
		row := map[string]any{}
		for _, f := range projected {
			c, err := canonAvro(f, m[f.Name], false)
			if err != nil {
				t.Fatal(err)
			}
			row[f.Name] = c
		}
		got = append(got, row)
	}
	sortByID(got)
	diffRows(t, "AVRO selected_fields", got, want)

	for _, sel := range [][]string{{"nope"}, {"id", "rec.nope"}, {"id.x"}, {"rec..a"}} {
		for _, f := range []storagepb.DataFormat{storagepb.DataFormat_ARROW, storagepb.DataFormat_AVRO} {
			_, err := e.session(tp, f, 1, 0, &storagepb.ReadSession_TableReadOptions{SelectedFields: sel}, nil)
			wantCodes(t, fmt.Sprintf("%v selected_fields %v", f, sel), err, codes.InvalidArgument, 0)
		}
	}
}

func TestReadSnapshotTime(t *testing.T) {
	e := newEnv(t)
	tp, md, ms := fillSimple(t, e, "t_snap", 100)
	before, err := e.session(tp, storagepb.DataFormat_ARROW, 1, 0, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t1 := before.GetTableModifiers().GetSnapshotTime()
	if t1 == nil {
		t.Fatalf("session without snapshot_time reports none")
	}

	// After T1: more rows on the default stream, a committed PENDING
	// stream, and a new column.
	e.appendSimple(tp, md, ms, 100, 50)
	dp, _ := descriptor(t, simpleSchema)
	ps, err := e.mw.NewManagedStream(e.ctx, managedwriter.WithDestinationTable(tp),
		managedwriter.WithType(managedwriter.PendingStream), managedwriter.WithSchemaDescriptor(dp))
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	r, err := ps.AppendRows(e.ctx, rows(t, md, 150, 10), managedwriter.WithOffset(0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.GetResult(e.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := ps.Finalize(e.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.mw.BatchCommitWriteStreams(e.ctx, &storagepb.BatchCommitWriteStreamsRequest{Parent: tp, WriteStreams: []string{ps.StreamName()}}); err != nil {
		t.Fatal(err)
	}
	tbl := e.bq.Dataset("d").Table("t_snap")
	meta, err := tbl.Metadata(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	wider := append(append(bigquery.Schema{}, meta.Schema...), &bigquery.FieldSchema{Name: "extra", Type: bigquery.StringFieldType})
	if _, err := tbl.Update(e.ctx, bigquery.TableMetadataToUpdate{Schema: wider}, meta.ETag); err != nil {
		t.Fatal(err)
	}

	// The session created before the writes still reads its snapshot.
	ids, _ := e.streamRead(before.GetArrowSchema().GetSerializedSchema(), before.GetStreams()[0].GetName(), 0)
	exactlyOnce(t, "session created before the writes", ids, 100)

	// A session at T1: the rows and the schema of T1.
	mods := &storagepb.ReadSession_TableModifiers{SnapshotTime: t1}
	recs := e.readAll(tp, 2, nil, mods)
	if len(recs) == 0 || recs[0].NumCols() != 3 {
		t.Fatalf("session at T1: %d records, schema %v; want the 3-column schema of T1", len(recs), recs[0].Schema())
	}
	exactlyOnce(t, "snapshot at T1", idsOf(t, recs), 100)
	sess, err := e.session(tp, storagepb.DataFormat_AVRO, 1, 0, nil, mods)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sess.GetAvroSchema().GetSchema(), "extra") {
		t.Fatalf("Avro schema at T1 has the later column: %s", sess.GetAvroSchema().GetSchema())
	}
	if !sess.GetTableModifiers().GetSnapshotTime().AsTime().Equal(t1.AsTime()) {
		t.Fatalf("session snapshot_time %v, asked %v", sess.GetTableModifiers().GetSnapshotTime().AsTime(), t1.AsTime())
	}

	// Now: every row and the new column (NULL in the old rows).
	recs = e.readAll(tp, 2, nil, nil)
	if recs[0].NumCols() != 4 {
		t.Fatalf("current schema: %v", recs[0].Schema())
	}
	for _, rec := range recs {
		if rec.Column(3).NullN() != int(rec.NumRows()) {
			t.Fatalf("old rows have a non-NULL extra")
		}
	}
	exactlyOnce(t, "now", idsOf(t, recs), 160)

	// Before the table existed, or in the future: INVALID_ARGUMENT.
	for _, at := range []time.Time{time.Unix(1, 0), time.Now().Add(time.Hour)} {
		_, err := e.session(tp, storagepb.DataFormat_ARROW, 1, 0, nil, &storagepb.ReadSession_TableModifiers{SnapshotTime: timestamppb.New(at)})
		wantCodes(t, fmt.Sprintf("snapshot_time %v", at), err, codes.InvalidArgument, 0)
	}
}

func TestReadSessionExpiry(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	e := dial(t, ctx, testkit.Start(t, func(c *server.Config) { c.Read.Clock = clock }))
	tp, _, _ := fillSimple(t, e, "t_expiry", 10)
	sess, err := e.session(tp, storagepb.DataFormat_ARROW, 1, 0, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sess.GetExpireTime().AsTime(), clock().Add(6*time.Hour); !got.Equal(want) {
		t.Fatalf("expire_time %v, want %v (6 hours)", got, want)
	}
	name := sess.GetStreams()[0].GetName()
	ids, _ := e.streamRead(sess.GetArrowSchema().GetSerializedSchema(), name, 0)
	exactlyOnce(t, "before expiry", ids, 10)

	now.Add(int64(6*time.Hour + time.Second))
	stream, err := e.rc.ReadRows(e.ctx, &storagepb.ReadRowsRequest{ReadStream: name})
	if err == nil {
		_, err = stream.Recv()
	}
	wantCodes(t, "ReadRows after expiry", err, codes.FailedPrecondition, 0)
	_, err = e.rc.SplitReadStream(e.ctx, &storagepb.SplitReadStreamRequest{Name: name, Fraction: 0.5})
	wantCodes(t, "SplitReadStream after expiry", err, codes.FailedPrecondition, 0)
}

// TestReadStreamCountFromSize: when the server chooses (max_stream_count
// 0), it cuts one stream per MinStreamBytes of data; max_stream_count
// caps that; every choice covers the rows exactly once.
func TestReadStreamCountFromSize(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	e := dial(t, ctx, testkit.Start(t, func(c *server.Config) { c.Read.MinStreamBytes = 32 << 10 }))
	tp, _, _ := fillSimple(t, e, "t_sized", bigRows)
	sess, err := e.session(tp, storagepb.DataFormat_ARROW, 0, 0, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	bytes := sess.GetEstimatedTotalBytesScanned()
	want := int((bytes + 32<<10 - 1) / (32 << 10))
	if want < 2 || len(sess.GetStreams()) != want {
		t.Fatalf("%d bytes at 32 KiB per stream: %d streams, want %d (>= 2)", bytes, len(sess.GetStreams()), want)
	}
	for _, n := range []int32{0, 1, 2, int32(want) + 10} {
		sess, err := e.session(tp, storagepb.DataFormat_ARROW, n, 0, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 && len(sess.GetStreams()) > int(n) {
			t.Fatalf("max_stream_count %d: %d streams", n, len(sess.GetStreams()))
		}
		var all []int64
		for _, s := range sess.GetStreams() {
			ids, _ := e.streamRead(sess.GetArrowSchema().GetSerializedSchema(), s.GetName(), 0)
			all = append(all, ids...)
		}
		exactlyOnce(t, fmt.Sprintf("max_stream_count %d (%d streams)", n, len(sess.GetStreams())), all, bigRows)
	}
}
