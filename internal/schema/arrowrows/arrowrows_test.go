package arrowrows

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/schema/protorows"
)

// serialize splits an IPC stream into the writer schema message and the
// record batch message, as AppendRowsRequest.arrow_rows carries them.
func serialize(t testing.TB, rec arrow.Record) (schemaMsg, batchMsg []byte) {
	t.Helper()
	var s bytes.Buffer
	w := ipc.NewWriter(&s, ipc.WithSchema(rec.Schema()))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	schemaMsg = bytes.TrimSuffix(s.Bytes(), []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})
	var full bytes.Buffer
	w = ipc.NewWriter(&full, ipc.WithSchema(rec.Schema()))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b := full.Bytes()
	if !bytes.HasPrefix(b, schemaMsg) {
		t.Fatal("stream does not start with the schema message")
	}
	batchMsg = bytes.TrimSuffix(b[len(schemaMsg):], []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})
	return schemaMsg, batchMsg
}

func cell(rec arrow.Record, col string, row int) string {
	a := rec.Column(rec.Schema().FieldIndices(col)[0])
	if a.IsNull(row) {
		return "NULL"
	}
	return a.ValueStr(row)
}

func table() *schema.Schema {
	return &schema.Schema{Fields: []*schema.Field{
		{Name: "id", Type: schema.Integer, Mode: schema.Required},
		{Name: "small", Type: schema.Integer},
		{Name: "f", Type: schema.Float},
		{Name: "n", Type: schema.Numeric},
		{Name: "d", Type: schema.Date},
		{Name: "ts", Type: schema.Timestamp},
		{Name: "j", Type: schema.JSON},
		{Name: "g", Type: schema.Geography},
		{Name: "tags", Type: schema.Integer, Mode: schema.Repeated},
		{Name: "rec", Type: schema.Record, Fields: []*schema.Field{
			{Name: "a", Type: schema.String},
			{Name: "b", Type: schema.Boolean, DefaultValueExpression: "TRUE"},
		}},
		{Name: "r", Type: schema.Range, RangeElementType: &schema.RangeElementType{Type: schema.Date}},
		{Name: "iv", Type: schema.Interval},
		{Name: "created", Type: schema.Timestamp, DefaultValueExpression: "CURRENT_TIMESTAMP()"},
	}}
}

// inputSchema is what a writer might send: other widths, other case, no
// "created" column.
var inputSchema = arrow.NewSchema([]arrow.Field{
	{Name: "ID", Type: arrow.PrimitiveTypes.Int64},
	{Name: "small", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	{Name: "f", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "n", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	{Name: "d", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ts", Type: schema.ArrowTimestamp, Nullable: true},
	{Name: "j", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "g", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "tags", Type: arrow.ListOf(arrow.PrimitiveTypes.Uint16), Nullable: true},
	{Name: "rec", Type: arrow.StructOf(arrow.Field{Name: "A", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
	{Name: "r", Type: arrow.StructOf(
		arrow.Field{Name: "start", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		arrow.Field{Name: "end", Type: arrow.FixedWidthTypes.Date32, Nullable: true}), Nullable: true},
	{Name: "iv", Type: arrow.FixedWidthTypes.DayTimeInterval, Nullable: true},
}, nil)

type inputRow struct {
	id    int64
	small *int8
	d     string
	n     int64 // unscaled, scale 2
	j, g  string
	tags  []uint16
	tagsN bool // NULL list
	rs    int32
	re    int32
	ts    int64
}

func build(t testing.TB, rows []inputRow) arrow.Record {
	b := array.NewRecordBuilder(memory.DefaultAllocator, inputSchema)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(r.id)
		if r.small != nil {
			b.Field(1).(*array.Int8Builder).Append(*r.small)
		} else {
			b.Field(1).AppendNull()
		}
		b.Field(2).(*array.Float32Builder).Append(0.5)
		b.Field(3).(*array.Decimal128Builder).Append(decimal128.FromI64(r.n))
		b.Field(4).(*array.StringBuilder).Append(r.d)
		b.Field(5).(*array.TimestampBuilder).Append(arrow.Timestamp(r.ts))
		b.Field(6).(*array.StringBuilder).Append(r.j)
		b.Field(7).(*array.StringBuilder).Append(r.g)
		lb := b.Field(8).(*array.ListBuilder)
		if r.tagsN {
			lb.AppendNull()
		} else {
			lb.Append(true)
			for _, v := range r.tags {
				lb.ValueBuilder().(*array.Uint16Builder).Append(v)
			}
		}
		sb := b.Field(9).(*array.StructBuilder)
		sb.Append(true)
		sb.FieldBuilder(0).(*array.StringBuilder).Append("x")
		rb := b.Field(10).(*array.StructBuilder)
		rb.Append(true)
		rb.FieldBuilder(0).(*array.Date32Builder).Append(arrow.Date32(r.rs))
		if r.re != 0 {
			rb.FieldBuilder(1).(*array.Date32Builder).Append(arrow.Date32(r.re))
		} else {
			rb.FieldBuilder(1).AppendNull()
		}
		b.Field(11).(*array.DayTimeIntervalBuilder).Append(arrow.DayTimeInterval{Days: 2, Milliseconds: 5})
	}
	return b.NewRecordBatch()
}

func compile(t testing.TB) (*Decoder, []byte) {
	in := build(t, nil)
	defer in.Release()
	sm, _ := serialize(t, in)
	d, err := Compile(sm, table())
	if err != nil {
		t.Fatal(err)
	}
	d.Now = func() time.Time { return time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC) }
	return d, sm
}

func TestConformTypes(t *testing.T) {
	d, _ := compile(t)
	seven := int8(-7)
	in := build(t, []inputRow{
		{id: 1, small: &seven, d: "2024-02-29", n: -12345, j: `{"k":[1]}`, g: "POINT(1 2)", tags: []uint16{1, 65535}, rs: 10, re: 20, ts: 1},
		{id: 2, d: "0001-01-01", n: 0, j: ` { "b": 1.50, "a": [2e2], "b": 3 } `, g: `{"type":"Point","coordinates":[3,4]}`, rs: 5, ts: protorows.MaxMicros},
	})
	defer in.Release()
	_, batch := serialize(t, in)
	rec, rowErrs, err := d.Decode(batch, protorows.MissingValues{Default: protorows.DefaultValue})
	if err != nil || rowErrs != nil {
		t.Fatal(err, rowErrs)
	}
	defer rec.Release()
	if !rec.Schema().Equal(schema.ToArrow(table())) {
		t.Fatalf("schema %s", rec.Schema())
	}
	for col, w := range map[string][2]string{
		"id":      {"1", "2"},
		"small":   {"-7", "NULL"},
		"f":       {"0.5", "0.5"},
		"n":       {"-123.45", "0"},
		"d":       {"2024-02-29", "0001-01-01"},
		"ts":      {"1970-01-01T00:00:00.000001Z", "9999-12-31T23:59:59.999999Z"},
		"j":       {`{"k":[1]}`, `{"a":[200],"b":1.5}`}, // stored canonical: keys sorted, first duplicate kept, numbers normalized
		"g":       {"POINT(1 2)", "POINT(3 4)"},
		"tags":    {"[1,65535]", "[]"},
		"rec":     {`{"a":"x","b":true}`, `{"a":"x","b":true}`},
		"r":       {`{"end":"1970-01-21","start":"1970-01-11"}`, `{"end":null,"start":"1970-01-06"}`},
		"iv":      {`{"months":0,"days":2,"nanoseconds":5000000}`, `{"months":0,"days":2,"nanoseconds":5000000}`},
		"created": {"2024-01-02T03:04:05Z", "2024-01-02T03:04:05Z"},
	} {
		for row := range 2 {
			if got := cell(rec, col, row); got != w[row] {
				t.Errorf("%s[%d] = %s, want %s", col, row, got, w[row])
			}
		}
	}
}

func TestConformRowErrors(t *testing.T) {
	d, _ := compile(t)
	ok := inputRow{id: 1, d: "2024-01-01", j: "{}", g: "POINT(0 0)", rs: 1}
	bad := []inputRow{ok, ok, ok, ok, ok, ok}
	bad[1].d = "2024-13-01"
	bad[2].j = "{"
	bad[3].tagsN = true
	bad[4].rs, bad[4].re = 9, 3
	bad[5].ts = protorows.MaxMicros + 1
	in := build(t, bad)
	defer in.Release()
	_, batch := serialize(t, in)
	rec, rowErrs, err := d.Decode(batch, protorows.MissingValues{})
	if err != nil || rec != nil {
		t.Fatal(err, rec)
	}
	want := map[int]string{1: "d", 2: "j", 3: "tags", 4: "r", 5: "ts"}
	if len(rowErrs) != len(want) {
		t.Fatalf("row errors %v", rowErrs)
	}
	for _, re := range rowErrs {
		if want[re.Index] != re.Field {
			t.Errorf("row %d: field %s (%s), want %s", re.Index, re.Field, re.Message, want[re.Index])
		}
	}
}

func schemaOf(t *testing.T, fields ...arrow.Field) []byte {
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
	defer b.Release()
	rec := b.NewRecordBatch()
	defer rec.Release()
	sm, _ := serialize(t, rec)
	return sm
}

func TestCompileErrors(t *testing.T) {
	tbl := table()
	cases := []struct {
		name  string
		field arrow.Field
		check func(error) bool
	}{
		{"extra", arrow.Field{Name: "nope", Type: arrow.PrimitiveTypes.Int64},
			func(err error) bool { var e *protorows.ExtraFieldError; return errors.As(err, &e) && e.Field == "nope" }},
		{"extra nested", arrow.Field{Name: "rec", Type: arrow.StructOf(arrow.Field{Name: "zz", Type: arrow.PrimitiveTypes.Int64})},
			func(err error) bool {
				var e *protorows.ExtraFieldError
				return errors.As(err, &e) && e.Field == "rec.zz"
			}},
		{"timestamp ms", arrow.Field{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
			func(err error) bool { var e *protorows.FieldTypeError; return errors.As(err, &e) && e.Field == "ts" }},
		{"timestamp no zone", arrow.Field{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
			func(err error) bool { var e *protorows.FieldTypeError; return errors.As(err, &e) }},
		{"decimal too wide", arrow.Field{Name: "n", Type: &arrow.Decimal128Type{Precision: 38, Scale: 0}},
			func(err error) bool { var e *protorows.FieldTypeError; return errors.As(err, &e) }},
		{"string to int", arrow.Field{Name: "small", Type: arrow.BinaryTypes.String},
			func(err error) bool { var e *protorows.FieldTypeError; return errors.As(err, &e) }},
		{"scalar to repeated", arrow.Field{Name: "tags", Type: arrow.PrimitiveTypes.Int64},
			func(err error) bool { var e *protorows.FieldTypeError; return errors.As(err, &e) }},
		{"range without end", arrow.Field{Name: "r", Type: arrow.StructOf(arrow.Field{Name: "start", Type: arrow.FixedWidthTypes.Date32})},
			func(err error) bool { var e *protorows.FieldTypeError; return errors.As(err, &e) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(schemaOf(t, tc.field), tbl)
			if !tc.check(err) {
				t.Fatalf("error %v (%T)", err, err)
			}
		})
	}
	if _, err := Compile([]byte("garbage"), tbl); err == nil || !strings.Contains(err.Error(), "schema") {
		t.Fatalf("garbage schema: %v", err)
	}
}

func TestMissingRequired(t *testing.T) {
	sm := schemaOf(t, arrow.Field{Name: "small", Type: arrow.PrimitiveTypes.Int64, Nullable: true})
	d, err := Compile(sm, table())
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{{Name: "small", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil))
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2}, nil)
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	_, batch := serialize(t, rec)
	out, rowErrs, err := d.Decode(batch, protorows.MissingValues{})
	if err != nil || out != nil || len(rowErrs) != 2 || rowErrs[0].Field != "id" {
		t.Fatalf("got %v %v %v", out, rowErrs, err)
	}
	if _, _, err := d.Decode([]byte("junk"), protorows.MissingValues{}); err == nil {
		t.Fatal("junk batch accepted")
	}
}

// FuzzConform feeds arbitrary record batch bytes: an error or a record,
// never a panic.
//
//	go test -run '^$' -fuzz FuzzConform ./internal/schema/arrowrows/
func FuzzConform(f *testing.F) {
	d, _ := compile(f)
	in := build(f, []inputRow{{id: 1, d: "2024-01-01", j: "{}", g: "POINT(0 0)", tags: []uint16{1}, rs: 1}})
	_, batch := serialize(f, in)
	in.Release()
	f.Add(batch)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		rec, _, err := d.Decode(data, protorows.MissingValues{Default: protorows.DefaultValue})
		if err == nil && rec != nil {
			rec.Release()
		}
	})
}

// TestCorruptLengthsAllocateLittle: a length prefix claiming gigabytes must
// not make the reader allocate them.
func TestCorruptLengthsAllocateLittle(t *testing.T) {
	d, sm := compile(t)
	in := build(t, []inputRow{{id: 1, d: "2024-01-01", j: "{}", g: "POINT(0 0)", rs: 1}})
	defer in.Release()
	_, batch := serialize(t, in)
	huge := bytes.Clone(batch)
	copy(huge[4:8], []byte{0xff, 0xff, 0xff, 0x7f}) // metadata length
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := Compile(append([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, sm[8:]...), table()); err == nil {
		t.Error("corrupt schema accepted")
	}
	if _, err := Compile([]byte("garbage"), table()); err == nil {
		t.Error("garbage schema accepted")
	}
	if _, _, err := d.Decode(huge, protorows.MissingValues{}); err == nil {
		t.Error("corrupt batch accepted")
	}
	runtime.ReadMemStats(&after)
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 16<<20 {
		t.Fatalf("corrupt input allocated %d bytes", grown)
	}
}
