package protorows

import (
	"errors"
	"math"
	"strings"
	"testing"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/bqstore/bqstore/internal/schema"
)

// fld builds a descriptor field; opts: "repeated", "required", "packed",
// or a type name for messages and enums (".x" or "x").
func fld(name string, num int32, t dtype, opts ...string) *descriptorpb.FieldDescriptorProto {
	f := &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(num), Type: t.Enum(),
		Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()}
	for _, o := range opts {
		switch o {
		case "repeated":
			f.Label = descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
		case "required":
			f.Label = descriptorpb.FieldDescriptorProto_LABEL_REQUIRED.Enum()
		case "packed":
			f.Options = &descriptorpb.FieldOptions{Packed: proto.Bool(true)}
		default:
			f.TypeName = proto.String(o)
		}
	}
	return f
}

func msgDesc(name string, fields ...*descriptorpb.FieldDescriptorProto) *descriptorpb.DescriptorProto {
	return &descriptorpb.DescriptorProto{Name: proto.String(name), Field: fields}
}

// row is a hand-encoded proto message.
type row []byte

func (r row) varint(n protowire.Number, v uint64) row {
	r = protowire.AppendTag(r, n, protowire.VarintType)
	return protowire.AppendVarint(r, v)
}

func (r row) fixed64(n protowire.Number, v uint64) row {
	r = protowire.AppendTag(r, n, protowire.Fixed64Type)
	return protowire.AppendFixed64(r, v)
}

func (r row) fixed32(n protowire.Number, v uint32) row {
	r = protowire.AppendTag(r, n, protowire.Fixed32Type)
	return protowire.AppendFixed32(r, v)
}

func (r row) bytes(n protowire.Number, b []byte) row {
	r = protowire.AppendTag(r, n, protowire.BytesType)
	return protowire.AppendBytes(r, b)
}

func (r row) str(n protowire.Number, s string) row { return r.bytes(n, []byte(s)) }

func one(f *schema.Field) *schema.Schema { return &schema.Schema{Fields: []*schema.Field{f}} }

// TestAcceptedWireTypes covers every proto type the Write API documents
// for each column type, decoded from hand-encoded rows.
func TestAcceptedWireTypes(t *testing.T) {
	neg := func(v int64) uint64 { return uint64(v) }
	cases := []struct {
		name string
		col  *schema.Field
		fd   *descriptorpb.FieldDescriptorProto
		row  row
		want string
	}{
		{"int64<-int32 negative", &schema.Field{Name: "c", Type: schema.Integer}, fld("c", 1, tInt32), row{}.varint(1, neg(-5)), "-5"},
		{"int64<-uint32", &schema.Field{Name: "c", Type: schema.Integer}, fld("c", 1, tUint32), row{}.varint(1, math.MaxUint32), "4294967295"},
		{"int64<-sint64", &schema.Field{Name: "c", Type: schema.Integer}, fld("c", 1, tSint64), row{}.varint(1, protowire.EncodeZigZag(-7)), "-7"},
		{"int64<-enum", &schema.Field{Name: "c", Type: schema.Integer}, fld("c", 1, tEnum, "E_E.E"), row{}.varint(1, 2), "2"},
		{"float<-float", &schema.Field{Name: "c", Type: schema.Float}, fld("c", 1, tFloat), row{}.fixed32(1, math.Float32bits(0.5)), "0.5"},
		{"bool<-int64", &schema.Field{Name: "c", Type: schema.Boolean}, fld("c", 1, tInt64), row{}.varint(1, 7), "true"},
		{"bool<-uint64 zero", &schema.Field{Name: "c", Type: schema.Boolean}, fld("c", 1, tUint64), row{}.varint(1, 0), "false"},
		{"string<-enum", &schema.Field{Name: "c", Type: schema.String}, fld("c", 1, tEnum, "E_E.E"), row{}.varint(1, 2), "TWO"},
		{"bytes<-string", &schema.Field{Name: "c", Type: schema.Bytes}, fld("c", 1, tString), row{}.str(1, "hi"), "aGk="},
		{"date<-int64", &schema.Field{Name: "c", Type: schema.Date}, fld("c", 1, tInt64), row{}.varint(1, MaxDate), "9999-12-31"},
		{"date<-string", &schema.Field{Name: "c", Type: schema.Date}, fld("c", 1, tString), row{}.str(1, "2024-2-29"), "2024-02-29"},
		{"datetime<-string T", &schema.Field{Name: "c", Type: schema.DateTime}, fld("c", 1, tString), row{}.str(1, "2024-01-02T03:04:05.678"), "2024-01-02T03:04:05.678"},
		{"datetime<-string space", &schema.Field{Name: "c", Type: schema.DateTime}, fld("c", 1, tString), row{}.str(1, "9999-12-31 23:59:59.999999"), "9999-12-31T23:59:59.999999"},
		{"datetime<-packed", &schema.Field{Name: "c", Type: schema.DateTime}, fld("c", 1, tInt64),
			row{}.varint(1, uint64(2019)<<46|9<<42|15<<37|13<<32|5<<26|12<<20|345), "2019-09-15T13:05:12.000345"},
		{"time<-string", &schema.Field{Name: "c", Type: schema.Time}, fld("c", 1, tString), row{}.str(1, "1:2:3.4"), "01:02:03.400000"},
		{"time<-packed", &schema.Field{Name: "c", Type: schema.Time}, fld("c", 1, tInt64), row{}.varint(1, 13<<32|5<<26|12<<20|345), "13:05:12.000345"},
		{"timestamp<-int32", &schema.Field{Name: "c", Type: schema.Timestamp}, fld("c", 1, tInt32), row{}.varint(1, neg(-1)), "1969-12-31T23:59:59.999999Z"},
		{"timestamp<-uint32", &schema.Field{Name: "c", Type: schema.Timestamp}, fld("c", 1, tUint32), row{}.varint(1, 1000000), "1970-01-01T00:00:01Z"},
		{"timestamp<-string zone", &schema.Field{Name: "c", Type: schema.Timestamp}, fld("c", 1, tString), row{}.str(1, "2024-01-02 03:04:05+02:00"), "2024-01-02T01:04:05Z"},
		{"timestamp<-string Z", &schema.Field{Name: "c", Type: schema.Timestamp}, fld("c", 1, tString), row{}.str(1, "0001-01-01T00:00:00Z"), "0001-01-01T00:00:00Z"},
		{"timestamp<-Timestamp", &schema.Field{Name: "c", Type: schema.Timestamp}, fld("c", 1, tMessage, ".google.protobuf.Timestamp"),
			row{}.bytes(1, row{}.varint(1, 1700000000).varint(2, 123456789)), "2023-11-14T22:13:20.123456Z"},
		{"numeric<-int64", &schema.Field{Name: "c", Type: schema.Numeric}, fld("c", 1, tInt64), row{}.varint(1, neg(-3)), "-3"},
		{"numeric<-uint64", &schema.Field{Name: "c", Type: schema.Numeric}, fld("c", 1, tUint64), row{}.varint(1, math.MaxUint64), "18446744073709551615"},
		{"numeric<-double", &schema.Field{Name: "c", Type: schema.Numeric}, fld("c", 1, tDouble), row{}.fixed64(1, math.Float64bits(0.1)), "0.1"},
		{"numeric<-string", &schema.Field{Name: "c", Type: schema.Numeric}, fld("c", 1, tString), row{}.str(1, "-1.25e2"), "-125"},
		{"numeric<-string max", &schema.Field{Name: "c", Type: schema.Numeric}, fld("c", 1, tString), row{}.str(1, "99999999999999999999999999999.999999999"), "99999999999999999999999999999.999999999"},
		{"bignumeric<-string", &schema.Field{Name: "c", Type: schema.BigNumeric}, fld("c", 1, tString),
			row{}.str(1, "578960446186580977117854925043439539266.34992332820282019728792003956564819967"),
			"578960446186580977117854925043439539266.34992332820282019728792003956564819967"},
		{"bignumeric<-bytes min", &schema.Field{Name: "c", Type: schema.BigNumeric}, fld("c", 1, tBytes), row{}.bytes(1, NumericBytes(bigNumMin)),
			"-578960446186580977117854925043439539266.34992332820282019728792003956564819968"},
		{"bignumeric<-int32", &schema.Field{Name: "c", Type: schema.BigNumeric}, fld("c", 1, tInt32), row{}.varint(1, 12), "12"},
		{"geography<-wkt", &schema.Field{Name: "c", Type: schema.Geography}, fld("c", 1, tString), row{}.str(1, " linestring ( 1 2 , 3.5 -4 ) "), "LINESTRING(1 2, 3.5 -4)"},
		{"geography<-geojson polygon", &schema.Field{Name: "c", Type: schema.Geography}, fld("c", 1, tString),
			row{}.str(1, `{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]}`), "POLYGON((0 0, 1 0, 1 1, 0 0))"},
		{"json", &schema.Field{Name: "c", Type: schema.JSON}, fld("c", 1, tString), row{}.str(1, `[1,{"a":"b"}]`), `[1,{"a":"b"}]`},
		// BigQuery normalizes JSON when it stores it: whitespace dropped,
		// the first of duplicate keys kept, keys in order, numbers in
		// their canonical form (the same text PARSE_JSON gives).
		{"json normalized", &schema.Field{Name: "c", Type: schema.JSON}, fld("c", 1, tString),
			row{}.str(1, ` { "b" : 1, "a" : [1.50, 2e2, 10000000000000000000000], "b": 3, "c": {"z": "\u00e9<"} } `),
			`{"a":[1.5,200,1e+22],"b":1,"c":{"z":"é<"}}`},
		{"interval<-string", &schema.Field{Name: "c", Type: schema.Interval}, fld("c", 1, tString), row{}.str(1, "1-2 3 4:5:6.5"), `{"months":14,"days":3,"nanoseconds":14706500000000}`},
		{"interval<-iso", &schema.Field{Name: "c", Type: schema.Interval}, fld("c", 1, tString), row{}.str(1, "P1Y2M3DT4H5M6.5S"), `{"months":14,"days":3,"nanoseconds":14706500000000}`},
		{"interval<-Duration", &schema.Field{Name: "c", Type: schema.Interval}, fld("c", 1, tMessage, ".google.protobuf.Duration"),
			row{}.bytes(1, row{}.varint(1, 90).varint(2, 5)), `{"months":0,"days":0,"nanoseconds":90000000005}`},
		{"int64<-Int32Value", &schema.Field{Name: "c", Type: schema.Integer}, fld("c", 1, tMessage, ".google.protobuf.Int32Value"),
			row{}.bytes(1, row{}.varint(1, neg(-9))), "-9"},
		{"string<-unset StringValue", &schema.Field{Name: "c", Type: schema.String}, fld("c", 1, tMessage, ".google.protobuf.StringValue"),
			row{}.bytes(1, nil), ""},
		{"last occurrence wins", &schema.Field{Name: "c", Type: schema.Integer}, fld("c", 1, tInt64), row{}.varint(1, 1).varint(1, 2), "2"},
		{"unknown field skipped", &schema.Field{Name: "c", Type: schema.Integer}, fld("c", 1, tInt64), row{}.str(9, "x").varint(1, 4).fixed32(8, 1), "4"},
	}
	enumType := &descriptorpb.DescriptorProto{Name: proto.String("E_E"), EnumType: []*descriptorpb.EnumDescriptorProto{{
		Name: proto.String("E"),
		Value: []*descriptorpb.EnumValueDescriptorProto{
			{Name: proto.String("ZERO"), Number: proto.Int32(0)},
			{Name: proto.String("TWO"), Number: proto.Int32(2)},
		},
	}}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dp := msgDesc("root", tc.fd)
			dp.NestedType = []*descriptorpb.DescriptorProto{enumType}
			d := mustCompile(t, dp, one(tc.col))
			rec := decodeOK(t, d, [][]byte{tc.row}, MissingValues{})
			got := cell(rec, "c", 0)
			if a, ok := rec.Column(0).(*array.Decimal256); ok {
				// arrow-go formats decimal256 through 76 digits; BIGNUMERIC
				// has 77.
				got = scaledString(a.Value(0).BigInt(), BigNumericScale)
			}
			if got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestPackedAndUnpackedRepeated(t *testing.T) {
	tbl := one(&schema.Field{Name: "c", Type: schema.Integer, Mode: schema.Repeated})
	d := mustCompile(t, msgDesc("root", fld("c", 1, tInt64, "repeated", "packed")), tbl)
	var packed []byte
	for _, v := range []uint64{1, 300, 5} {
		packed = protowire.AppendVarint(packed, v)
	}
	mixed := row{}.bytes(1, packed).varint(1, 6)
	rec := decodeOK(t, d, [][]byte{mixed, nil, row{}.varint(1, 9)}, MissingValues{})
	for i, w := range []string{"[1,300,5,6]", "[]", "[9]"} {
		if got := cell(rec, "c", i); got != w {
			t.Errorf("row %d = %s, want %s", i, got, w)
		}
	}
}

func TestColumnNameAnnotationAndCase(t *testing.T) {
	tbl := &schema.Schema{Fields: []*schema.Field{
		{Name: "Has-Dash", Type: schema.String},
		{Name: "MixedCase", Type: schema.Integer},
		{Name: "raw", Type: schema.Integer},
	}}
	registered := fld("has_dash", 1, tString)
	registered.Options = &descriptorpb.FieldOptions{}
	proto.SetExtension(registered.Options, storagepb.E_ColumnName, "has-dash")
	// The same annotation as unknown bytes, as a decoder without the
	// extension registered would see it.
	unknown := fld("r", 3, tInt64)
	unknown.Options = &descriptorpb.FieldOptions{}
	var ext []byte
	ext = protowire.AppendTag(ext, 454943157, protowire.BytesType)
	ext = protowire.AppendString(ext, "RAW")
	unknown.Options.ProtoReflect().SetUnknown(ext)
	dp := msgDesc("root", registered, fld("mixedcase", 2, tInt64), unknown)
	// Over the wire and back, as the server receives it.
	b, _ := proto.Marshal(dp)
	dp = &descriptorpb.DescriptorProto{}
	if err := proto.Unmarshal(b, dp); err != nil {
		t.Fatal(err)
	}
	d := mustCompile(t, dp, tbl)
	rec := decodeOK(t, d, [][]byte{row{}.str(1, "x").varint(2, 5).varint(3, 6)}, MissingValues{})
	if got := cell(rec, "Has-Dash", 0) + cell(rec, "MixedCase", 0) + cell(rec, "raw", 0); got != "x56" {
		t.Errorf("got %s", got)
	}
}

func TestCompileErrors(t *testing.T) {
	rec := &schema.Field{Name: "rec", Type: schema.Record, Fields: []*schema.Field{{Name: "a", Type: schema.Integer}}}
	cases := []struct {
		name  string
		table *schema.Schema
		desc  *descriptorpb.DescriptorProto
		check func(error) bool
	}{
		{"extra top-level", one(&schema.Field{Name: "a", Type: schema.Integer}), msgDesc("root", fld("a", 1, tInt64), fld("nope", 2, tInt64)),
			func(err error) bool { var e *ExtraFieldError; return errors.As(err, &e) && e.Field == "nope" }},
		{"extra nested", one(rec), func() *descriptorpb.DescriptorProto {
			d := msgDesc("root", fld("rec", 1, tMessage, "sub"))
			d.NestedType = []*descriptorpb.DescriptorProto{msgDesc("sub", fld("a", 1, tInt64), fld("b", 2, tInt64))}
			return d
		}(), func(err error) bool { var e *ExtraFieldError; return errors.As(err, &e) && e.Field == "rec.b" }},
		{"double to timestamp", one(&schema.Field{Name: "a", Type: schema.Timestamp}), msgDesc("root", fld("a", 1, tDouble)),
			func(err error) bool { var e *FieldTypeError; return errors.As(err, &e) && e.Field == "a" }},
		{"uint64 to integer", one(&schema.Field{Name: "a", Type: schema.Integer}), msgDesc("root", fld("a", 1, tUint64)),
			func(err error) bool { var e *FieldTypeError; return errors.As(err, &e) }},
		{"repeated to nullable", one(&schema.Field{Name: "a", Type: schema.Integer}), msgDesc("root", fld("a", 1, tInt64, "repeated")),
			func(err error) bool { var e *FieldTypeError; return errors.As(err, &e) }},
		{"scalar to repeated", one(&schema.Field{Name: "a", Type: schema.Integer, Mode: schema.Repeated}), msgDesc("root", fld("a", 1, tInt64)),
			func(err error) bool { var e *FieldTypeError; return errors.As(err, &e) }},
		{"message to string", one(&schema.Field{Name: "a", Type: schema.String}), func() *descriptorpb.DescriptorProto {
			d := msgDesc("root", fld("a", 1, tMessage, "sub"))
			d.NestedType = []*descriptorpb.DescriptorProto{msgDesc("sub", fld("x", 1, tInt64), fld("y", 2, tInt64))}
			return d
		}(), func(err error) bool { var e *FieldTypeError; return errors.As(err, &e) }},
		{"scalar to record", one(rec), msgDesc("root", fld("rec", 1, tInt64)),
			func(err error) bool { var e *FieldTypeError; return errors.As(err, &e) }},
		{"unknown message type", one(rec), msgDesc("root", fld("rec", 1, tMessage, ".nowhere")),
			func(err error) bool { var e *DescriptorError; return errors.As(err, &e) }},
		{"duplicate number", one(&schema.Field{Name: "a", Type: schema.Integer}), msgDesc("root", fld("a", 1, tInt64), fld("A", 1, tInt64)),
			func(err error) bool { var e *DescriptorError; return errors.As(err, &e) }},
		{"two fields one column", one(&schema.Field{Name: "a", Type: schema.Integer}), msgDesc("root", fld("a", 1, tInt64), fld("A", 2, tInt64)),
			func(err error) bool { var e *DescriptorError; return errors.As(err, &e) }},
		{"bad number", one(&schema.Field{Name: "a", Type: schema.Integer}), msgDesc("root", fld("a", 0, tInt64)),
			func(err error) bool { var e *DescriptorError; return errors.As(err, &e) }},
		{"bad type", one(&schema.Field{Name: "a", Type: schema.Integer}), msgDesc("root", fld("a", 1, 99)),
			func(err error) bool { var e *DescriptorError; return errors.As(err, &e) }},
		{"group", one(&schema.Field{Name: "a", Type: schema.Integer}), msgDesc("root", fld("a", 1, tGroup)),
			func(err error) bool { var e *FieldTypeError; return errors.As(err, &e) }},
		{"bad default", one(&schema.Field{Name: "a", Type: schema.Integer}), func() *descriptorpb.DescriptorProto {
			f := fld("a", 1, tInt64)
			f.DefaultValue = proto.String("x")
			return msgDesc("root", f)
		}(), func(err error) bool { var e *DescriptorError; return errors.As(err, &e) }},
		{"bad column default", one(&schema.Field{Name: "a", Type: schema.Integer, DefaultValueExpression: "'x'"}), msgDesc("root"),
			func(err error) bool { return err != nil && strings.Contains(err.Error(), "default") }},
		{"nil", one(&schema.Field{Name: "a", Type: schema.Integer}), nil,
			func(err error) bool { var e *DescriptorError; return errors.As(err, &e) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(tc.desc, tc.table)
			if !tc.check(err) {
				t.Fatalf("unexpected error %v (%T)", err, err)
			}
			t.Log(err)
		})
	}
}

func TestRowErrors(t *testing.T) {
	tbl := &schema.Schema{Fields: []*schema.Field{
		{Name: "req", Type: schema.Integer, Mode: schema.Required},
		{Name: "ts", Type: schema.Timestamp},
		{Name: "d", Type: schema.Date},
		{Name: "n", Type: schema.Numeric},
		{Name: "s", Type: schema.String, MaxLength: 3},
		{Name: "g", Type: schema.Geography},
		{Name: "j", Type: schema.JSON},
		{Name: "dt", Type: schema.DateTime},
		{Name: "rec", Type: schema.Record, Fields: []*schema.Field{{Name: "x", Type: schema.String, Mode: schema.Required}}},
	}}
	dp := msgDesc("root", fld("req", 1, tInt64), fld("ts", 2, tInt64), fld("d", 3, tString), fld("n", 4, tString),
		fld("s", 5, tString), fld("g", 6, tString), fld("j", 7, tString), fld("dt", 8, tInt64), fld("rec", 9, tMessage, "sub"))
	dp.NestedType = []*descriptorpb.DescriptorProto{msgDesc("sub", fld("x", 1, tString))}
	d := mustCompile(t, dp, tbl)
	good := row(nil).varint(1, 1)
	good = good[:len(good):len(good)] // appends below must copy
	cases := []struct {
		row   row
		field string
		msg   string
	}{
		{row{}, "req", "REQUIRED"},
		{good.varint(2, uint64(MaxMicros+1)), "ts", "out of range"},
		{good.str(3, "2023-02-29"), "d", "invalid DATE"},
		{good.str(4, "1e29"), "n", "out of range"},
		{good.str(4, "0.0000000001"), "n", "digits after the decimal point"},
		{good.str(4, "abc"), "n", "invalid NUMERIC"},
		{good.str(5, "abcd"), "s", "maximum length 3"},
		{good.str(5, "\xff"), "s", "UTF-8"},
		{good.str(6, "POINT(200 0)"), "g", "longitude"},
		{good.str(6, "POLYGON((0 0, 1 0, 1 1))"), "g", "GEOGRAPHY"},
		{good.str(7, "{"), "j", "invalid JSON"},
		{good.varint(8, 1<<62), "dt", "packed DATETIME"},
		{good.bytes(9, nil), "rec.x", "REQUIRED"},
		{good.str(2, "x"), "ts", "wire type"},
		{row{0x08}, "", "valid protocol buffer"},
		{row{0x0a, 0x05, 'a'}, "", "valid protocol buffer"},
	}
	var rows [][]byte
	for _, tc := range cases {
		rows = append(rows, tc.row)
	}
	rows = append(rows, good.str(5, "héé")) // a good row among bad ones
	rec, rowErrs, err := d.Decode(rows, MissingValues{})
	if err != nil || rec != nil {
		t.Fatalf("rec=%v err=%v", rec, err)
	}
	if len(rowErrs) != len(cases) {
		t.Fatalf("%d row errors, want %d: %v", len(rowErrs), len(cases), rowErrs)
	}
	for i, tc := range cases {
		re := rowErrs[i]
		if re.Index != i || re.Field != tc.field || !strings.Contains(re.Message, tc.msg) {
			t.Errorf("row %d: got %+v, want field %q message containing %q", i, re, tc.field, tc.msg)
		}
	}
	// The decoder is reusable after a rejected request.
	rec = decodeOK(t, d, [][]byte{good.bytes(9, row{}.str(1, "x"))}, MissingValues{})
	if got := cell(rec, "rec", 0); got != `{"x":"x"}` {
		t.Errorf("rec = %s", got)
	}
}

func TestParameterizedNumeric(t *testing.T) {
	tbl := &schema.Schema{Fields: []*schema.Field{
		{Name: "n", Type: schema.Numeric, Precision: 5, Scale: 2},
		{Name: "bn", Type: schema.BigNumeric, Precision: 40, Scale: 1},
	}}
	d := mustCompile(t, msgDesc("root", fld("n", 1, tString), fld("bn", 2, tDouble)), tbl)
	rec := decodeOK(t, d, [][]byte{row{}.str(1, "123.455").fixed64(2, math.Float64bits(-2.25))}, MissingValues{})
	if got := cell(rec, "n", 0); got != "123.46" {
		t.Errorf("n = %s", got)
	}
	if got := rec.Column(1).(*array.Decimal256).Value(0).BigInt().String(); got != "-230000000000000000000000000000000000000" {
		t.Errorf("bn = %s", got)
	}
	_, rowErrs, _ := d.Decode([][]byte{row{}.str(1, "1000"), row{}.str(1, "-999.994")}, MissingValues{})
	if len(rowErrs) != 1 || rowErrs[0].Index != 0 || !strings.Contains(rowErrs[0].Message, "precision 5") {
		t.Fatalf("row errors %v", rowErrs)
	}
}

func TestQualifiedNamesAndSparseNumbers(t *testing.T) {
	tbl := &schema.Schema{Fields: []*schema.Field{
		{Name: "rec", Type: schema.Record, Fields: []*schema.Field{
			{Name: "inner", Type: schema.Record, Fields: []*schema.Field{{Name: "v", Type: schema.Integer}}},
		}},
		{Name: "far", Type: schema.String},
	}}
	// A descriptor as protodesc emits it, not normalized: nested types
	// inside nested types, fully qualified references.
	inner := msgDesc("Inner", fld("v", 1, tSint32))
	outer := msgDesc("Outer", fld("inner", 7, tMessage, ".my.pkg.Event.Outer.Inner"))
	outer.NestedType = []*descriptorpb.DescriptorProto{inner}
	root := msgDesc("Event", fld("rec", 1, tMessage, ".my.pkg.Event.Outer"), fld("far", 100000, tString))
	root.NestedType = []*descriptorpb.DescriptorProto{outer}
	d := mustCompile(t, root, tbl)
	r := row{}.bytes(1, row{}.bytes(7, row{}.varint(1, protowire.EncodeZigZag(-3)))).str(100000, "far away")
	rec := decodeOK(t, d, [][]byte{r}, MissingValues{})
	if got := cell(rec, "rec", 0) + " " + cell(rec, "far", 0); got != `{"inner":{"v":-3}} far away` {
		t.Errorf("got %s", got)
	}
}

func TestMoreRowErrors(t *testing.T) {
	tbl := &schema.Schema{Fields: []*schema.Field{
		{Name: "e", Type: schema.String},
		{Name: "rep", Type: schema.Integer, Mode: schema.Repeated},
		{Name: "r", Type: schema.Range, RangeElementType: &schema.RangeElementType{Type: schema.Timestamp}},
		{Name: "iv", Type: schema.Interval},
	}}
	dp := msgDesc("root", fld("e", 1, tEnum, "E_E.E"), fld("rep", 2, tInt64, "repeated"), fld("r", 3, tMessage, "R"), fld("iv", 4, tString))
	dp.NestedType = []*descriptorpb.DescriptorProto{
		{Name: proto.String("E_E"), EnumType: []*descriptorpb.EnumDescriptorProto{{Name: proto.String("E"),
			Value: []*descriptorpb.EnumValueDescriptorProto{{Name: proto.String("A"), Number: proto.Int32(0)}}}}},
		msgDesc("R", fld("start", 1, tInt64), fld("end", 2, tInt64)),
	}
	d := mustCompile(t, dp, tbl)
	cases := []struct {
		r     row
		field string
		msg   string
	}{
		{row{}.varint(1, 5), "e", "enum value 5"},
		{row{}.fixed64(2, 1), "rep", "wire type"},
		{row{}.bytes(2, []byte{0x80}), "", "valid protocol buffer"}, // truncated packed varint
		{row{}.bytes(3, row{}.varint(1, 10).varint(2, 10)), "r", "start must be before"},
		{row{}.str(4, "1 2 3 4"), "iv", "invalid INTERVAL"},
	}
	var rows [][]byte
	for _, c := range cases {
		rows = append(rows, c.r)
	}
	_, rowErrs, err := d.Decode(rows, MissingValues{})
	if err != nil || len(rowErrs) != len(cases) {
		t.Fatalf("row errors %v, err %v", rowErrs, err)
	}
	for i, c := range cases {
		if rowErrs[i].Field != c.field || !strings.Contains(rowErrs[i].Message, c.msg) {
			t.Errorf("row %d: %+v, want %s / %s", i, rowErrs[i], c.field, c.msg)
		}
	}
	rec := decodeOK(t, d, [][]byte{row{}.bytes(3, row{}.varint(2, 10))}, MissingValues{})
	if got := cell(rec, "r", 0); got != `{"end":"1970-01-01T00:00:00.00001Z","start":null}` {
		t.Errorf("r = %s", got)
	}
}
