package arrowenc

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	arrow15 "github.com/apache/arrow/go/v15/arrow"
	ipc15 "github.com/apache/arrow/go/v15/arrow/ipc"
)

var codecs = []Compression{Uncompressed, LZ4Frame, ZSTD}

// readBack reads schema+batch the way the Go bigquery client does
// (arrow.go: newArrowDecoder, then ipc.NewReader over the concatenation with
// WithSchema) but with this module's arrow-go, so records compare exactly.
func readBack(t testing.TB, schemaMsg, batchMsg []byte) arrow.Record {
	t.Helper()
	sr, err := ipc.NewReader(bytes.NewReader(schemaMsg))
	if err != nil {
		t.Fatalf("reading schema message: %v", err)
	}
	schema := sr.Schema()
	sr.Release()
	r, err := ipc.NewReader(bytes.NewReader(append(append([]byte{}, schemaMsg...), batchMsg...)), ipc.WithSchema(schema))
	if err != nil {
		t.Fatalf("ipc.NewReader: %v", err)
	}
	defer r.Release()
	if !r.Next() {
		t.Fatalf("no record batch: %v", r.Err())
	}
	rec := r.Record()
	rec.Retain()
	if r.Next() {
		t.Fatalf("more than one record batch")
	}
	if r.Err() != nil {
		t.Fatalf("reader: %v", r.Err())
	}
	return rec
}

// readBackV15 reads with the arrow version the Go bigquery client v1.86
// itself links (github.com/apache/arrow/go/v15), exactly as its arrowDecoder
// does. To compare exactly with this module's arrow-go, the record v15
// decoded is written again with v15's IPC writer and read back with v18.
func readBackV15(t testing.TB, schemaMsg, batchMsg []byte) arrow.Record {
	t.Helper()
	sr, err := ipc15.NewReader(bytes.NewBuffer(schemaMsg))
	if err != nil {
		t.Fatalf("v15 schema: %v", err)
	}
	schema := sr.Schema()
	sr.Release()
	buf := bytes.NewBuffer(append(append([]byte{}, schemaMsg...), batchMsg...))
	r, err := ipc15.NewReader(buf, ipc15.WithSchema(schema))
	if err != nil {
		t.Fatalf("v15 ipc.NewReader: %v", err)
	}
	defer r.Release()
	var out bytes.Buffer
	w := ipc15.NewWriter(&out, ipc15.WithSchema(schema))
	n := 0
	for r.Next() {
		var rec arrow15.Record = r.Record()
		if err := w.Write(rec); err != nil {
			t.Fatalf("v15 write: %v", err)
		}
		n++
	}
	if r.Err() != nil {
		t.Fatalf("v15 reader: %v", r.Err())
	}
	if n != 1 {
		t.Fatalf("v15 reader: %d batches, want 1", n)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r18, err := ipc.NewReader(&out)
	if err != nil {
		t.Fatal(err)
	}
	defer r18.Release()
	if !r18.Next() {
		t.Fatalf("re-read: %v", r18.Err())
	}
	rec := r18.Record()
	rec.Retain()
	return rec
}

func checkRoundTrip(t testing.TB, enc *Encoder, schemaMsg []byte, rec arrow.Record, codec Compression) {
	t.Helper()
	msg, err := enc.RecordBatchMessage(rec, codec)
	if err != nil {
		t.Fatalf("RecordBatchMessage(%s): %v", codec, err)
	}
	got := readBack(t, schemaMsg, msg)
	defer got.Release()
	if !got.Schema().Equal(rec.Schema()) {
		t.Fatalf("schema:\n got %s\nwant %s", got.Schema(), rec.Schema())
	}
	if !array.RecordEqual(got, rec) {
		for i := range rec.NumCols() {
			if !array.Equal(got.Column(int(i)), rec.Column(int(i))) {
				t.Fatalf("column %q differs:\n got %v\nwant %v", rec.ColumnName(int(i)), got.Column(int(i)), rec.Column(int(i)))
			}
		}
		t.Fatalf("records differ")
	}
}

func TestSchemaMessage(t *testing.T) {
	s := testSchema()
	msg, err := SchemaMessage(s)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(msg, []byte{0xff, 0xff, 0xff, 0xff}) || len(msg)%8 != 0 {
		t.Fatalf("not an encapsulated message: % x...", msg[:8])
	}
	r, err := ipc.NewReader(bytes.NewReader(msg))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if !r.Schema().Equal(s) {
		t.Fatalf("schema:\n got %s\nwant %s", r.Schema(), s)
	}
	// The extension metadata survives (clients key DATETIME/JSON/GEOGRAPHY on it).
	f, _ := r.Schema().FieldsByName("geography")
	if v, _ := f[0].Metadata.GetValue("ARROW:extension:metadata"); v != `{"encoding": "WKT"}` {
		t.Fatalf("geography metadata = %q", v)
	}
	if r.Next() {
		t.Fatalf("schema message followed by a batch")
	}
	// No end-of-stream marker: the batch bytes follow directly.
	if bytes.HasSuffix(msg, []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}) {
		t.Fatalf("schema message ends with an EOS marker")
	}
}

func TestRoundTripAllTypes(t *testing.T) {
	s := testSchema()
	schemaMsg, err := SchemaMessage(s)
	if err != nil {
		t.Fatal(err)
	}
	const seed = 1
	t.Logf("seed %d", seed)
	rec := randomRecord(s, rand.New(rand.NewPCG(seed, 0)), 200)
	defer rec.Release()
	enc, err := NewEncoder(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	slices := [][2]int64{{0, 200}, {0, 0}, {0, 1}, {1, 2}, {3, 17}, {7, 200}, {63, 130}, {199, 200}}
	for _, codec := range codecs {
		for _, sl := range slices {
			t.Run(fmt.Sprintf("codec=%s/slice=%d:%d", codec, sl[0], sl[1]), func(t *testing.T) {
				part := rec.NewSlice(sl[0], sl[1])
				defer part.Release()
				checkRoundTrip(t, enc, schemaMsg, part, codec)
			})
		}
	}
}

// TestGoClientReader reads the bytes with arrow/go/v15, the version the Go
// bigquery client links.
func TestGoClientReader(t *testing.T) {
	s := testSchema()
	schemaMsg, err := SchemaMessage(s)
	if err != nil {
		t.Fatal(err)
	}
	rec := randomRecord(s, rand.New(rand.NewPCG(2, 0)), 100)
	defer rec.Release()
	enc, err := NewEncoder(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, codec := range codecs {
		for _, sl := range [][2]int64{{0, 100}, {13, 61}} {
			part := rec.NewSlice(sl[0], sl[1])
			msg, err := enc.RecordBatchMessage(part, codec)
			if err != nil {
				t.Fatal(err)
			}
			got := readBackV15(t, schemaMsg, msg)
			if !array.RecordEqual(got, part) {
				t.Fatalf("codec=%s slice=%v: the v15 reader decoded different values", codec, sl)
			}
			got.Release()
			part.Release()
		}
	}
}

func TestCompressionShrinks(t *testing.T) {
	s := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	b := array.NewStringBuilder(memory.DefaultAllocator)
	for range 10000 {
		b.Append("the same string again and again")
	}
	col := b.NewArray()
	rec := array.NewRecord(s, []arrow.Array{col}, int64(col.Len()))
	col.Release()
	defer rec.Release()
	enc, _ := NewEncoder(s, nil)
	raw, err := enc.RecordBatchMessage(rec, Uncompressed)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []Compression{LZ4Frame, ZSTD} {
		msg, err := enc.RecordBatchMessage(rec, c)
		if err != nil {
			t.Fatal(err)
		}
		if len(msg)*5 > len(raw) {
			t.Errorf("%s: %d bytes, uncompressed %d: compression not applied", c, len(msg), len(raw))
		}
	}
}

func TestEncoderErrors(t *testing.T) {
	s := testSchema()
	enc, _ := NewEncoder(s, nil)
	other := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	rec := randomRecord(other, rand.New(rand.NewPCG(3, 0)), 3)
	defer rec.Release()
	if _, err := enc.RecordBatchMessage(rec, Uncompressed); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("mismatched schema: err = %v", err)
	}
	good := randomRecord(s, rand.New(rand.NewPCG(3, 0)), 3)
	defer good.Release()
	if _, err := enc.RecordBatchMessage(good, Compression(7)); err == nil {
		t.Fatalf("unknown codec accepted")
	}
	dict := arrow.NewSchema([]arrow.Field{{Name: "d", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}}}, nil)
	if _, err := SchemaMessage(dict); err == nil {
		t.Fatalf("dictionary schema accepted")
	}
	if _, err := NewEncoder(dict, nil); err == nil {
		t.Fatalf("dictionary schema accepted")
	}
}

func TestAppendReusesBuffer(t *testing.T) {
	s := testSchema()
	rec := randomRecord(s, rand.New(rand.NewPCG(4, 0)), 50)
	defer rec.Release()
	enc, _ := NewEncoder(s, nil)
	schemaMsg, _ := SchemaMessage(s)
	buf := make([]byte, 0, 1<<20)
	for range 3 {
		out, err := enc.AppendRecordBatchMessage(buf[:0], rec, Uncompressed)
		if err != nil {
			t.Fatal(err)
		}
		if &out[0] != &buf[:1][0] {
			t.Fatalf("buffer was reallocated")
		}
		got := readBack(t, schemaMsg, out)
		if !array.RecordEqual(got, rec) {
			t.Fatalf("records differ")
		}
		got.Release()
	}
}

// TestMetadataOnlyDifference: a record whose schema differs from the
// encoder's only in field metadata and names (what a RecordBatch message does
// not carry) encodes; the reader sees the encoder's schema.
func TestMetadataOnlyDifference(t *testing.T) {
	s := testSchema()
	fields := s.Fields()
	for i := range fields {
		fields[i].Metadata = arrow.Metadata{}
		fields[i].Name = fmt.Sprintf("c%d", i)
	}
	plain := arrow.NewSchema(fields, nil)
	rec := randomRecord(plain, rand.New(rand.NewPCG(9, 0)), 20)
	defer rec.Release()
	enc, _ := NewEncoder(s, nil)
	schemaMsg, _ := SchemaMessage(s)
	msg, err := enc.RecordBatchMessage(rec, Uncompressed)
	if err != nil {
		t.Fatal(err)
	}
	got := readBack(t, schemaMsg, msg)
	defer got.Release()
	want := array.NewRecord(s, rec.Columns(), rec.NumRows())
	defer want.Release()
	if !array.RecordEqual(got, want) || !got.Schema().Equal(s) {
		t.Fatalf("records differ")
	}
}

// TestAllocs guards the uncompressed hot path: encoding into a reused
// buffer allocates a bounded, small number of objects (flatbuffer metadata),
// never per row or per buffer byte.
func TestAllocs(t *testing.T) {
	s := testSchema()
	rec := randomRecord(s, rand.New(rand.NewPCG(10, 0)), 1000)
	defer rec.Release()
	enc, _ := NewEncoder(s, nil)
	buf, err := enc.AppendRecordBatchMessage(nil, rec, Uncompressed)
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(20, func() {
		buf, _ = enc.AppendRecordBatchMessage(buf[:0], rec, Uncompressed)
	})
	part := rec.NewSlice(3, 900)
	defer part.Release()
	slicedAllocs := testing.AllocsPerRun(20, func() {
		buf, _ = enc.AppendRecordBatchMessage(buf[:0], part, Uncompressed)
	})
	// 19 columns, 47 buffers: measured 112 whole and 285 sliced (re-based
	// offsets and bitmaps); a per-row allocation would be thousands.
	if allocs > 200 || slicedAllocs > 400 {
		t.Fatalf("%.0f allocations per message (%.0f sliced)", allocs, slicedAllocs)
	}
}
