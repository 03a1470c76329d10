package arrowrows

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/schema/protorows"
	"github.com/bqstore/bqstore/internal/testkit/arrowgen"
)

// allocated returns the bytes f allocates (TotalAlloc counts a reservation
// in full even when its pages are never touched, so a forged size shows
// without needing the memory) and what f panicked with.
func allocated(f func()) (n uint64, panicked any) {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	func() {
		defer func() { panicked = recover() }()
		f()
	}()
	runtime.ReadMemStats(&m1)
	return m1.TotalAlloc - m0.TotalAlloc, panicked
}

// metaRange is where an encapsulated IPC message's flatbuffer lies.
func metaRange(t testing.TB, msg []byte) (int, int) {
	t.Helper()
	if binary.LittleEndian.Uint32(msg) != 0xFFFFFFFF {
		t.Fatal("no continuation marker")
	}
	return 8, 8 + int(binary.LittleEndian.Uint32(msg[4:]))
}

// forgeEach overwrites every aligned 32-bit word of the message's metadata
// in turn with v and calls f on the result.
func forgeEach(t *testing.T, msg []byte, v uint32, f func(pos int, forged []byte)) {
	from, to := metaRange(t, msg)
	for p := from; p+4 <= to; p += 4 {
		forged := bytes.Clone(msg)
		binary.LittleEndian.PutUint32(forged[p:], v)
		f(p, forged)
	}
}

// TestForgedVectorLengths: a vector length forged anywhere in a writer
// schema or a record batch is refused or harmless, and never sizes an
// allocation (issue 12 finding 2: one byte changed in a 376-byte schema
// made arrow-go allocate ~115 GB). The forged counts stay small (a million) so that
// the old code fails this test without the memory.
func TestForgedVectorLengths(t *testing.T) {
	in := build(t, []inputRow{{id: 1, d: "2024-01-01", j: "1", g: "POINT(1 2)", tags: []uint16{1}, rs: 1, re: 2}})
	defer in.Release()
	sm, batch := serialize(t, in)
	d, err := Compile(sm, table())
	if err != nil {
		t.Fatal(err)
	}
	const limit = 4 << 20
	for _, v := range []uint32{1 << 20, 1<<18 + 3} {
		forgeEach(t, sm, v, func(pos int, forged []byte) {
			n, p := allocated(func() { _, _ = Compile(forged, table()) })
			if p != nil || n > limit {
				t.Errorf("schema word at %d forged to %d: allocated %d bytes, panic %v", pos, v, n, p)
			}
		})
		forgeEach(t, batch, v, func(pos int, forged []byte) {
			n, p := allocated(func() {
				rec, _, _ := d.Decode(forged, protorows.MissingValues{})
				if rec != nil {
					rec.Release()
				}
			})
			if p != nil || n > limit {
				t.Errorf("batch word at %d forged to %d: allocated %d bytes, panic %v", pos, v, n, p)
			}
		})
	}
}

// ipcMessage frames a flatbuffer Message (header built by header) and a
// zero body of bodyLen bytes as an encapsulated IPC message.
func ipcMessage(headerType byte, bodyLen int64, header func(b *flatbuffers.Builder) flatbuffers.UOffsetT) []byte {
	b := flatbuffers.NewBuilder(1024)
	h := header(b)
	return arrowgen.IPCFrame(b, headerType, h, bodyLen)
}

// dagSchema is a Schema message of one struct field whose two children are
// the same table, depth levels deep: 2^depth fields once expanded.
func dagSchema(depth int) []byte {
	return ipcMessage(headerSchema, 0, func(b *flatbuffers.Builder) flatbuffers.UOffsetT {
		name := b.CreateString("x")
		b.StartObject(2) // Int
		b.PrependInt32Slot(0, 64, 0)
		b.PrependBoolSlot(1, true, false)
		intType := b.EndObject()
		b.StartObject(7) // Field
		b.PrependUOffsetTSlot(0, name, 0)
		b.PrependBoolSlot(1, true, false)
		b.PrependByteSlot(2, 2, 0) // Type.Int
		b.PrependUOffsetTSlot(3, intType, 0)
		f := b.EndObject()
		for i := 0; i < depth; i++ {
			b.StartVector(4, 2, 4)
			b.PrependUOffsetT(f)
			b.PrependUOffsetT(f)
			children := b.EndVector(2)
			name := b.CreateString(fmt.Sprintf("s%d", i))
			b.StartObject(0) // Struct_
			st := b.EndObject()
			b.StartObject(7)
			b.PrependUOffsetTSlot(0, name, 0)
			b.PrependBoolSlot(1, true, false)
			b.PrependByteSlot(2, 13, 0) // Type.Struct_
			b.PrependUOffsetTSlot(3, st, 0)
			b.PrependUOffsetTSlot(5, children, 0)
			f = b.EndObject()
		}
		b.StartVector(4, 1, 4)
		b.PrependUOffsetT(f)
		fields := b.EndVector(1)
		b.StartObject(4) // Schema
		b.PrependUOffsetTSlot(1, fields, 0)
		return b.EndObject()
	})
}

// TestSchemaDAGRejected: struct children that point at one table twice are
// refused before arrow-go expands them (issue 12 finding 3: 1.2 KB grew to
// 3 GB).
func TestSchemaDAGRejected(t *testing.T) {
	msg := dagSchema(16)
	if len(msg) > 2048 {
		t.Fatalf("message of %d bytes", len(msg))
	}
	var err error
	n, p := allocated(func() { _, err = Compile(msg, table()) })
	if p != nil || err == nil || n > 1<<20 {
		t.Fatalf("Compile of a 2^16-field DAG in %d bytes: err %v, allocated %d bytes, panic %v", len(msg), err, n, p)
	}
	// A tree is fine: one level of the same shape, children distinct.
	if err := checkMessage(dagSchema(0), headerSchema); err != nil {
		t.Fatalf("a one-field schema: %v", err)
	}
}

// TestFieldDepthAndCountBounded: no more than maxFieldDepth levels.
func TestFieldDepthAndCountBounded(t *testing.T) {
	nested := arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true}
	for i := 0; i < maxFieldDepth+2; i++ {
		nested = arrow.Field{Name: fmt.Sprintf("s%d", i), Type: arrow.StructOf(nested), Nullable: true}
	}
	sc := arrow.NewSchema([]arrow.Field{nested}, nil)
	rec := array.NewRecordBatch(sc, []arrow.Array{array.MakeArrayOfNull(memory.DefaultAllocator, nested.Type, 0)}, 0)
	defer rec.Release()
	sm, _ := serialize(t, rec)
	if err := checkMessage(sm, headerSchema); err == nil || !errors.Is(err, errBadMetadata) {
		t.Fatalf("schema nested %d deep: %v", maxFieldDepth+3, err)
	}
}

// lyingNullCount serializes a batch of one nullable int64 column without
// NULLs and rewrites its FieldNode to claim one NULL (there is still no
// validity buffer).
func lyingNullCount(t *testing.T) (schemaMsg, batch []byte) { return lyingNullCountTB(t) }

func lyingNullCountTB(t testing.TB) (schemaMsg, batch []byte) {
	sc := arrow.NewSchema([]arrow.Field{{Name: "small", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.AppendValues([]int64{1, 2, 3}, nil)
	col := b.NewArray()
	b.Release()
	rec := array.NewRecordBatch(sc, []arrow.Array{col}, 3)
	col.Release()
	defer rec.Release()
	schemaMsg, batch = serialize(t, rec)
	node := append(binary.LittleEndian.AppendUint64(nil, 3), make([]byte, 8)...)
	from, to := metaRange(t, batch)
	i := bytes.Index(batch[from:to], node)
	if i < 0 {
		t.Fatal("field node not found")
	}
	binary.LittleEndian.PutUint64(batch[from+i+8:], 1)
	return schemaMsg, batch
}

// TestLyingNullCountRejected: a batch whose FieldNode null count disagrees
// with its (absent) validity buffer is INVALID_ARGUMENT and yields no
// record (issue 12 finding 4: it was stored as it was, and every later
// read of the table failed).
func TestLyingNullCountRejected(t *testing.T) {
	sm, batch := lyingNullCount(t)
	d, err := Compile(sm, &schema.Schema{Fields: []*schema.Field{{Name: "small", Type: schema.Integer}}})
	if err != nil {
		t.Fatal(err)
	}
	rec, rowErrs, err := d.Decode(batch, protorows.MissingValues{})
	if rec != nil {
		defer rec.Release()
	}
	if err == nil || rec != nil || rowErrs != nil {
		t.Fatalf("a batch claiming a NULL without a validity buffer: rec %v, row errors %v, err %v", rec != nil, rowErrs, err)
	}
}

// emptyBatch is a RecordBatch message of rows rows and no columns, padded
// with a body of pad bytes (which nothing references).
func emptyBatch(rows, pad int64) []byte {
	return ipcMessage(headerRecordBatch, pad, func(b *flatbuffers.Builder) flatbuffers.UOffsetT {
		b.StartVector(16, 0, 8)
		nodes := b.EndVector(0)
		b.StartVector(16, 0, 8)
		bufs := b.EndVector(0)
		b.StartObject(5)
		b.PrependInt64Slot(0, rows, 0)
		b.PrependUOffsetTSlot(1, nodes, 0)
		b.PrependUOffsetTSlot(2, bufs, 0)
		return b.EndObject()
	})
}

// TestMissingColumnsBounded: a batch that claims many rows and lacks the
// table's columns is refused before they are filled (issue 12 finding 5: a
// 9.9 MB batch claiming 79M rows).
func TestMissingColumnsBounded(t *testing.T) {
	var fields []*schema.Field
	for i := 0; i < 30; i++ {
		fields = append(fields, &schema.Field{Name: fmt.Sprintf("c%d", i), Type: schema.Integer})
	}
	tbl := &schema.Schema{Fields: fields}
	rec := array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, 0)
	sm, _ := serialize(t, rec)
	rec.Release()
	d, err := Compile(sm, tbl)
	if err != nil {
		t.Fatal(err)
	}
	const rows = protorows.MaxValues/30 + 1
	msg := emptyBatch(rows, rows/8)
	var out arrow.Record
	n, p := allocated(func() { out, _, err = d.Decode(msg, protorows.MissingValues{}) })
	if out != nil {
		out.Release()
	}
	if p != nil || !errors.Is(err, protorows.ErrTooManyValues) || n > 4<<20 {
		t.Fatalf("%d rows of 30 missing columns: err %v, allocated %d bytes, panic %v", rows, err, n, p)
	}
	// Under the bound they are filled.
	out, rowErrs, err := d.Decode(emptyBatch(1000, 0), protorows.MissingValues{})
	if err != nil || rowErrs != nil {
		t.Fatal(err, rowErrs)
	}
	defer out.Release()
	if out.NumRows() != 1000 || out.Column(29).NullN() != 1000 {
		t.Fatalf("rows %d", out.NumRows())
	}
}

// FuzzCompileSchema compiles arbitrary writer schemas (seeded with real
// ones, a DAG and a deep one): the pre-validation refuses or the IPC reader
// and the compiler handle what it lets through; never a panic, never an
// allocation larger than a bounded multiple of the input.
//
//	go test -run '^$' -fuzz FuzzCompileSchema ./internal/schema/arrowrows/
func FuzzCompileSchema(f *testing.F) {
	in := build(f, nil)
	sm, _ := serialize(f, in)
	in.Release()
	f.Add(sm)
	f.Add(dagSchema(3))
	f.Add(dagSchema(0))
	tbl := table()
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		n, p := allocated(func() { _, _ = Compile(data, tbl) })
		if p != nil {
			t.Fatalf("panic: %v", p)
		}
		if limit := uint64(1<<20 + 2000*len(data)); n > limit {
			t.Fatalf("%d-byte schema allocated %d bytes", len(data), n)
		}
	})
}

// FuzzDecodeBatch decodes arbitrary record batches (seeded with a real
// one, one whose null count lies and one claiming many rows) against a
// writer schema: an error or a record whose every value reads back, never
// a panic.
//
//	go test -run '^$' -fuzz FuzzDecodeBatch ./internal/schema/arrowrows/
func FuzzDecodeBatch(f *testing.F) {
	sm, lying := lyingNullCountTB(f)
	f.Add(lying)
	f.Add(emptyBatch(1<<16, 1<<13))
	in := build(f, []inputRow{{id: 1, d: "2024-01-01", j: "{}", g: "POINT(0 0)", tags: []uint16{1}, rs: 1}})
	rsm, batch := serialize(f, in)
	in.Release()
	f.Add(batch)
	small, err := Compile(sm, &schema.Schema{Fields: []*schema.Field{{Name: "small", Type: schema.Integer}}})
	if err != nil {
		f.Fatal(err)
	}
	full, err := Compile(rsm, table())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<18 {
			return
		}
		for _, d := range []*Decoder{small, full} {
			rec, _, err := d.Decode(data, protorows.MissingValues{Default: protorows.DefaultValue})
			if err != nil || rec == nil {
				continue
			}
			if err := array.ValidateRecordFull(rec); err != nil {
				t.Fatalf("decoded record is invalid: %v", err)
			}
			for _, c := range rec.Columns() {
				for i := 0; i < c.Len(); i++ {
					_ = c.ValueStr(i)
				}
			}
			rec.Release()
		}
	})
}

// TestRowErrorsBounded: a batch whose every row is bad reports at most
// maxRowErrors row errors, not one per row.
func TestRowErrorsBounded(t *testing.T) {
	tbl := &schema.Schema{Fields: []*schema.Field{{Name: "id", Type: schema.Integer, Mode: schema.Required}}}
	rec := array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, 0)
	sm, _ := serialize(t, rec)
	rec.Release()
	d, err := Compile(sm, tbl)
	if err != nil {
		t.Fatal(err)
	}
	out, rowErrs, err := d.Decode(emptyBatch(100000, 100000/8), protorows.MissingValues{})
	if out != nil {
		out.Release()
	}
	if err != nil || len(rowErrs) == 0 || len(rowErrs) > 1000 {
		t.Fatalf("100,000 rows lacking a REQUIRED column: %d row errors, err %v", len(rowErrs), err)
	}
}
