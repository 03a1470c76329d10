package protorows

import (
	"math/big"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery/storage/managedwriter/adapt"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/bqstore/bqstore/internal/schema"
)

// allTypes is a table with every type, nested and repeated.
func allTypes() *schema.Schema {
	return &schema.Schema{Fields: []*schema.Field{
		{Name: "s", Type: schema.String, Mode: schema.Required},
		{Name: "b", Type: schema.Bytes},
		{Name: "i", Type: schema.Integer},
		{Name: "f", Type: schema.Float},
		{Name: "n", Type: schema.Numeric},
		{Name: "bn", Type: schema.BigNumeric},
		{Name: "bo", Type: schema.Boolean},
		{Name: "ts", Type: schema.Timestamp},
		{Name: "d", Type: schema.Date},
		{Name: "t", Type: schema.Time},
		{Name: "dt", Type: schema.DateTime},
		{Name: "g", Type: schema.Geography},
		{Name: "j", Type: schema.JSON},
		{Name: "r", Type: schema.Range, RangeElementType: &schema.RangeElementType{Type: schema.Date}},
		{Name: "rep", Type: schema.Integer, Mode: schema.Repeated},
		{Name: "rec", Type: schema.Record, Mode: schema.Repeated, Fields: []*schema.Field{
			{Name: "x", Type: schema.String, Mode: schema.Required},
			{Name: "inner", Type: schema.Record, Fields: []*schema.Field{
				{Name: "y", Type: schema.Timestamp, Mode: schema.Repeated},
				{Name: "z", Type: schema.Float},
			}},
		}},
	}}
}

// adaptDescriptor builds the writer schema exactly as managedwriter users
// do: adapt's proto2 (or proto3) descriptor, normalized.
func adaptDescriptor(t testing.TB, s *schema.Schema, proto3 bool) (protoreflect.MessageDescriptor, *descriptorpb.DescriptorProto) {
	t.Helper()
	conv := adapt.StorageSchemaToProto2Descriptor
	if proto3 {
		conv = adapt.StorageSchemaToProto3Descriptor
	}
	d, err := conv(schema.ToStorage(s), "root")
	if err != nil {
		t.Fatal(err)
	}
	md := d.(protoreflect.MessageDescriptor)
	dp, err := adapt.NormalizeDescriptor(md)
	if err != nil {
		t.Fatal(err)
	}
	// Send it over the wire as the client does.
	b, err := proto.Marshal(dp)
	if err != nil {
		t.Fatal(err)
	}
	out := &descriptorpb.DescriptorProto{}
	if err := proto.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
	return md, out
}

// msgBuilder sets fields of a dynamic message by name.
type msgBuilder struct {
	t testing.TB
	m *dynamicpb.Message
}

func newMsg(t testing.TB, md protoreflect.MessageDescriptor) *msgBuilder {
	return &msgBuilder{t: t, m: dynamicpb.NewMessage(md)}
}

func (b *msgBuilder) fd(name string) protoreflect.FieldDescriptor {
	fd := b.m.Descriptor().Fields().ByName(protoreflect.Name(name))
	if fd == nil {
		b.t.Fatalf("no field %s in %s", name, b.m.Descriptor().FullName())
	}
	return fd
}

func (b *msgBuilder) set(name string, v any) *msgBuilder {
	b.m.Set(b.fd(name), protoreflect.ValueOf(v))
	return b
}

func (b *msgBuilder) sub(name string) *msgBuilder {
	fd := b.fd(name)
	return &msgBuilder{t: b.t, m: b.m.Mutable(fd).Message().Interface().(*dynamicpb.Message)}
}

func (b *msgBuilder) addSub(name string) *msgBuilder {
	l := b.m.Mutable(b.fd(name)).List()
	e := l.NewElement()
	l.Append(e)
	return &msgBuilder{t: b.t, m: e.Message().Interface().(*dynamicpb.Message)}
}

func (b *msgBuilder) add(name string, v any) *msgBuilder {
	b.m.Mutable(b.fd(name)).List().Append(protoreflect.ValueOf(v))
	return b
}

func (b *msgBuilder) bytes() []byte {
	out, err := proto.Marshal(b.m)
	if err != nil {
		b.t.Fatal(err)
	}
	return out
}

func mustCompile(t testing.TB, dp *descriptorpb.DescriptorProto, s *schema.Schema) *Decoder {
	t.Helper()
	d, err := Compile(dp, s)
	if err != nil {
		t.Fatal(err)
	}
	d.Now = func() time.Time { return time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC) }
	return d
}

func decodeOK(t testing.TB, d *Decoder, rows [][]byte, mv MissingValues) arrow.Record {
	t.Helper()
	rec, rowErrs, err := d.Decode(rows, mv)
	if err != nil {
		t.Fatal(err)
	}
	if len(rowErrs) > 0 {
		t.Fatalf("row errors: %v", rowErrs)
	}
	if !rec.Schema().Equal(d.Schema()) {
		t.Fatalf("schema %s, want %s", rec.Schema(), d.Schema())
	}
	t.Cleanup(rec.Release)
	return rec
}

// cell renders one value with arrow-go's own formatting.
func cell(rec arrow.Record, col string, row int) string {
	idx := rec.Schema().FieldIndices(col)
	a := rec.Column(idx[0])
	if a.IsNull(row) {
		return "NULL"
	}
	return a.ValueStr(row)
}

func scaled(s string, scale int) *big.Int {
	v, err := parseScaled(s, scale)
	if err != nil {
		panic(err)
	}
	return v
}

func TestDecodeEveryTypeAdaptProto2(t *testing.T) {
	tbl := allTypes()
	md, dp := adaptDescriptor(t, tbl, false)
	d := mustCompile(t, dp, tbl)

	full := newMsg(t, md).
		set("s", "héllo").
		set("b", []byte{0, 1, 2}).
		set("i", int64(-42)).
		set("f", 1.5).
		set("n", NumericBytes(scaled("-99999999999999999999999999999.999999999", 9))).
		set("bn", NumericBytes(bigNumMax)).
		set("bo", true).
		set("ts", int64(MaxMicros)).
		set("d", int32(MinDate)).
		set("t", EncodePackedTime(((23*60+59)*60+59)*1000000+999999)).
		set("dt", EncodePackedDatetime(MinMicros)).
		set("g", `{"type": "Point", "coordinates": [-122.35, 47.62]}`).
		set("j", `{"a": [1, 2, null]}`)
	full.sub("r").set("start", int32(19000))
	full.add("rep", int64(1)).add("rep", int64(2)).add("rep", int64(3))
	e := full.addSub("rec").set("x", "first")
	e.sub("inner").add("y", int64(0)).add("y", int64(MinMicros)).set("z", 2.25)
	full.addSub("rec").set("x", "second")

	sparse := newMsg(t, md).set("s", "")

	rec := decodeOK(t, d, [][]byte{full.bytes(), sparse.bytes()}, MissingValues{})
	if rec.NumRows() != 2 {
		t.Fatalf("rows = %d", rec.NumRows())
	}
	want := map[string][2]string{
		"s":   {"héllo", ""},
		"b":   {"AAEC", "NULL"},
		"i":   {"-42", "NULL"},
		"f":   {"1.5", "NULL"},
		"n":   {"-99999999999999999999999999999.999999999", "NULL"},
		"bo":  {"true", "NULL"},
		"ts":  {"9999-12-31T23:59:59.999999Z", "NULL"},
		"d":   {"0001-01-01", "NULL"},
		"t":   {"23:59:59.999999", "NULL"},
		"dt":  {"0001-01-01T00:00:00", "NULL"},
		"g":   {"POINT(-122.35 47.62)", "NULL"},
		"j":   {`{"a":[1,2,null]}`, "NULL"}, // stored canonical (whitespace dropped)
		"r":   {`{"end":null,"start":"2022-01-08"}`, "NULL"},
		"rep": {"[1,2,3]", "[]"},
	}
	for col, w := range want {
		for row := range 2 {
			if got := cell(rec, col, row); got != w[row] {
				t.Errorf("%s[%d] = %s, want %s", col, row, got, w[row])
			}
		}
	}
	bn := rec.Column(5).(*array.Decimal256).Value(0).BigInt()
	if bn.Cmp(bigNumMax) != 0 {
		t.Errorf("bn = %s, want max", bn)
	}
	// Nested repeated records.
	recs := rec.Column(15).(*array.List)
	if s, e := recs.ValueOffsets(0); e-s != 2 {
		t.Fatalf("rec[0] has %d elements", e-s)
	}
	st := recs.ListValues().(*array.Struct)
	if got := st.Field(0).ValueStr(0) + "," + st.Field(0).ValueStr(1); got != "first,second" {
		t.Errorf("rec.x = %s", got)
	}
	inner := st.Field(1).(*array.Struct)
	if inner.IsNull(0) || !inner.IsNull(1) {
		t.Errorf("inner validity wrong: %v", inner)
	}
	if got := inner.Field(0).ValueStr(0); got != `["1970-01-01T00:00:00Z","0001-01-01T00:00:00Z"]` {
		t.Errorf("rec.inner.y = %s", got)
	}
	if got := inner.Field(1).ValueStr(0); got != "2.25" {
		t.Errorf("rec.inner.z = %s", got)
	}
	if s, e := recs.ValueOffsets(1); e != s {
		t.Errorf("rec[1] should be empty")
	}
}

func TestDecodeProto3Wrappers(t *testing.T) {
	tbl := &schema.Schema{Fields: []*schema.Field{
		{Name: "i", Type: schema.Integer},
		{Name: "s", Type: schema.String},
		{Name: "f", Type: schema.Float},
		{Name: "ts", Type: schema.Timestamp},
		{Name: "bo", Type: schema.Boolean},
		{Name: "n", Type: schema.Numeric},
	}}
	md, dp := adaptDescriptor(t, tbl, true)
	// adapt's proto3 mode writes nullable scalars as wrappers.
	if !strings.Contains(dp.String(), "google_protobuf_Int64Value") {
		t.Fatalf("expected wrapper types in %v", dp)
	}
	d := mustCompile(t, dp, tbl)
	m := newMsg(t, md)
	m.sub("i").set("value", int64(7))
	m.sub("s") // present wrapper, value unset: ""
	m.sub("ts").set("value", int64(1))
	m.sub("n").set("value", NumericBytes(scaled("1.5", 9)))
	rec := decodeOK(t, d, [][]byte{m.bytes(), newMsg(t, md).bytes()}, MissingValues{})
	for col, w := range map[string][2]string{
		"i": {"7", "NULL"}, "s": {"", "NULL"}, "f": {"NULL", "NULL"},
		"ts": {"1970-01-01T00:00:00.000001Z", "NULL"}, "bo": {"NULL", "NULL"}, "n": {"1.5", "NULL"},
	} {
		for row := range 2 {
			if got := cell(rec, col, row); got != w[row] {
				t.Errorf("%s[%d] = %q, want %q", col, row, got, w[row])
			}
		}
	}
}

func TestDecodeEveryTypeAdaptProto3(t *testing.T) {
	tbl := allTypes()
	md, dp := adaptDescriptor(t, tbl, true)
	d := mustCompile(t, dp, tbl)
	m := newMsg(t, md)
	m.set("s", "req") // REQUIRED: a plain proto3 string
	m.sub("b").set("value", []byte("x"))
	m.sub("n").set("value", NumericBytes(scaled("0.000000001", 9)))
	m.sub("bn").set("value", NumericBytes(scaled("-0.00000000000000000000000000000000000001", 38)))
	m.sub("bo").set("value", false)
	m.sub("d").set("value", int32(MaxDate))
	m.sub("t").set("value", EncodePackedTime(0))
	m.sub("dt").set("value", EncodePackedDatetime(MaxMicros))
	m.sub("ts").set("value", int64(MinMicros))
	m.sub("g").set("value", "MULTIPOINT((1 2), (3 4))")
	m.sub("j").set("value", "3")
	m.sub("r").sub("end").set("value", int32(1))
	m.add("rep", int64(-1))
	rec := decodeOK(t, d, [][]byte{m.bytes()}, MissingValues{})
	for col, w := range map[string]string{
		"s": "req", "b": "eA==", "i": "NULL", "f": "NULL", "n": "1e-09", "bo": "false",
		"d": "9999-12-31", "t": "00:00:00.000000", "dt": "9999-12-31T23:59:59.999999", "ts": "0001-01-01T00:00:00Z",
		"g": "MULTIPOINT(1 2, 3 4)", "j": "3", "r": `{"end":"1970-01-02","start":null}`, "rep": "[-1]",
	} {
		if got := cell(rec, col, 0); got != w {
			t.Errorf("%s = %q, want %q", col, got, w)
		}
	}
	if got := rec.Column(5).(*array.Decimal256).Value(0).BigInt().String(); got != "-1" {
		t.Errorf("bn = %s", got)
	}
}
