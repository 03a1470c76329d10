package storage

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/bqstore/bqstore/internal/storage/vfs"
)

func nestedSchema(extraStructChild, extraListChild, nullableID bool) *arrow.Schema {
	sf := []arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}
	if extraStructChild {
		sf = append(sf, arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true})
	}
	lf := []arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}
	if extraListChild {
		lf = append(lf, arrow.Field{Name: "y", Type: arrow.FixedWidthTypes.Boolean, Nullable: true})
	}
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: nullableID},
		{Name: "s", Type: arrow.StructOf(sf...), Nullable: true},
		{Name: "l", Type: arrow.ListOf(arrow.StructOf(lf...)), Nullable: true},
	}, nil)
}

func nestedBatch(schema *arrow.Schema, n int) arrow.Record {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		sb := b.Field(1).(*array.StructBuilder)
		sb.Append(true)
		sb.FieldBuilder(0).(*array.Int64Builder).Append(int64(10 * i))
		for j := 1; j < sb.NumField(); j++ {
			sb.FieldBuilder(j).AppendNull()
		}
		lb := b.Field(2).(*array.ListBuilder)
		lb.Append(true)
		eb := lb.ValueBuilder().(*array.StructBuilder)
		for k := range 2 {
			eb.Append(true)
			eb.FieldBuilder(0).(*array.Int64Builder).Append(int64(100*i + k))
			for j := 1; j < eb.NumField(); j++ {
				eb.FieldBuilder(j).AppendNull()
			}
		}
	}
	return b.NewRecordBatch()
}

// TestSchemaEvolutionNested: batches written before struct children were
// added read back padded with null children, inside lists too; a slice of
// such a batch keeps its values.
func TestSchemaEvolutionNested(t *testing.T) {
	ctx := context.Background()
	db, err := Open("db", &Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	v1 := nestedSchema(false, false, false)
	tb, err := db.CreateTable(ctx, "t", v1)
	if err != nil {
		t.Fatal(err)
	}
	rec := nestedBatch(v1, 4)
	defer rec.Release()
	if _, err := tb.Append(ctx, AppendRequest{Stream: DefaultStreamID, Offset: -1, Batch: rec}); err != nil {
		t.Fatal(err)
	}
	v2 := nestedSchema(true, true, true)
	if err := tb.SetSchema(ctx, 2, v2); err != nil {
		t.Fatal(err)
	}
	if err := tb.SetSchema(ctx, 2, v2); err != nil {
		t.Fatalf("idempotent SetSchema: %v", err)
	}
	rec2 := nestedBatch(v2, 2)
	defer rec2.Release()
	if _, err := tb.Append(ctx, AppendRequest{Stream: DefaultStreamID, Offset: -1, Batch: rec2, SchemaVersion: 2}); err != nil {
		t.Fatal(err)
	}
	s, err := tb.Snapshot(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	if !s.Schema().Equal(v2) || s.SchemaVersion() != 2 {
		t.Fatalf("snapshot schema v%d %v", s.SchemaVersion(), s.Schema())
	}
	c := s.Chunks()[0]
	out, err := s.ReadChunk(ctx, c, 1, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	if !out.Schema().Equal(v2) {
		t.Fatalf("record schema %v", out.Schema())
	}
	st := out.Column(1).(*array.Struct)
	if got := st.Field(0).(*array.Int64).Value(0); got != 10 {
		t.Fatalf("s.a of row 1 = %d", got)
	}
	if st.Field(1).Len() < 2 || !st.Field(1).IsNull(0) {
		t.Fatalf("added struct child not null")
	}
	l := out.Column(2).(*array.List)
	elems := l.ListValues().(*array.Struct)
	start, _ := l.ValueOffsets(0)
	if got := elems.Field(0).(*array.Int64).Value(int(start)); got != 100 {
		t.Fatalf("l[0].x of row 1 = %d", got)
	}
	if !elems.Field(1).IsNull(int(start)) {
		t.Fatalf("added list element child not null")
	}
	if err := out.Column(1).(*array.Struct).Validate(); err != nil {
		t.Fatal(err)
	}
	if err := l.ValidateFull(); err != nil {
		t.Fatal(err)
	}
}

func TestSetSchemaRejects(t *testing.T) {
	ctx := context.Background()
	db, err := Open("db", &Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	v1 := nestedSchema(false, false, true)
	tb, _ := db.CreateTable(ctx, "t", v1)
	f := func(fields ...arrow.Field) *arrow.Schema { return arrow.NewSchema(fields, nil) }
	id := arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}
	s := v1.Field(1)
	l := v1.Field(2)
	for _, tc := range []struct {
		name    string
		version int
		schema  *arrow.Schema
	}{
		{"dropped column", 2, f(id, s)},
		{"renamed column", 2, f(arrow.Field{Name: "ID", Type: id.Type, Nullable: true}, s, l)},
		{"type change", 2, f(arrow.Field{Name: "id", Type: arrow.BinaryTypes.String, Nullable: true}, s, l)},
		{"nullable to required", 2, f(arrow.Field{Name: "id", Type: id.Type}, s, l)},
		{"new required column", 2, f(id, s, l, arrow.Field{Name: "n", Type: arrow.PrimitiveTypes.Int64})},
		{"same version, other schema", 1, f(id, s, l, arrow.Field{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true})},
		{"older version", 0, v1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tb.SetSchema(ctx, tc.version, tc.schema); !errors.Is(err, ErrSchemaMismatch) {
				t.Fatalf("SetSchema = %v, want ErrSchemaMismatch", err)
			}
		})
	}
	// A batch that does not match the version it names.
	rec := makeBatch(testSchema, 0, 1)
	defer rec.Release()
	if _, err := tb.Append(ctx, AppendRequest{Stream: DefaultStreamID, Offset: -1, Batch: rec}); !errors.Is(err, ErrSchemaMismatch) {
		t.Fatalf("mismatched batch: %v", err)
	}
}
