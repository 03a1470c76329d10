package protorows

import (
	"fmt"
	"math/big"
	"regexp"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery/storage/managedwriter/adapt"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/bqstore/bqstore/internal/schema"
)

// proto3Event is a proto3 message as a user's generated code would declare
// it: implicit-presence scalars, an enum, wrappers, a Timestamp, a packed
// repeated field and a proto3 optional.
func proto3Event(t *testing.T) protoreflect.MessageDescriptor {
	t.Helper()
	_ = wrapperspb.Int64(0) // link the well-known files into the registry
	_ = timestamppb.Now()
	opt := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()
	rep := descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
	f := func(name string, num int32, typ dtype, label *descriptorpb.FieldDescriptorProto_Label, typeName string) *descriptorpb.FieldDescriptorProto {
		fd := &descriptorpb.FieldDescriptorProto{Name: proto.String(name), JsonName: proto.String(name), Number: proto.Int32(num), Type: typ.Enum(), Label: label}
		if typeName != "" {
			fd.TypeName = proto.String(typeName)
		}
		return fd
	}
	score := f("score", 7, tDouble, opt, "")
	score.Proto3Optional = proto.Bool(true)
	score.OneofIndex = proto.Int32(0)
	file := &descriptorpb.FileDescriptorProto{
		Name:       proto.String("event.proto"),
		Package:    proto.String("test.pkg"),
		Syntax:     proto.String("proto3"),
		Dependency: []string{"google/protobuf/wrappers.proto", "google/protobuf/timestamp.proto"},
		EnumType: []*descriptorpb.EnumDescriptorProto{{Name: proto.String("Kind"), Value: []*descriptorpb.EnumValueDescriptorProto{
			{Name: proto.String("KIND_UNSPECIFIED"), Number: proto.Int32(0)},
			{Name: proto.String("CLICK"), Number: proto.Int32(1)},
		}}},
		MessageType: []*descriptorpb.DescriptorProto{{
			Name: proto.String("Event"),
			Field: []*descriptorpb.FieldDescriptorProto{
				f("id", 1, tInt64, opt, ""),
				f("name", 2, tString, opt, ""),
				f("kind", 3, tEnum, opt, ".test.pkg.Kind"),
				f("count", 4, tMessage, opt, ".google.protobuf.Int64Value"),
				f("at", 5, tMessage, opt, ".google.protobuf.Timestamp"),
				f("tags", 6, tInt32, rep, ""),
				score,
			},
			OneofDecl: []*descriptorpb.OneofDescriptorProto{{Name: proto.String("_score")}},
		}},
	}
	fd, err := protodesc.NewFile(file, protoregistry.GlobalFiles)
	if err != nil {
		t.Fatal(err)
	}
	return fd.Messages().ByName("Event")
}

func TestProto3GeneratedNormalized(t *testing.T) {
	md := proto3Event(t)
	dp, err := adapt.NormalizeDescriptor(md)
	if err != nil {
		t.Fatal(err)
	}
	tbl := &schema.Schema{Fields: []*schema.Field{
		{Name: "id", Type: schema.Integer},
		{Name: "name", Type: schema.String},
		{Name: "kind", Type: schema.String},
		{Name: "count", Type: schema.Integer},
		{Name: "at", Type: schema.Timestamp},
		{Name: "tags", Type: schema.Integer, Mode: schema.Repeated},
		{Name: "score", Type: schema.Float},
		{Name: "absent", Type: schema.String},
	}}
	d := mustCompile(t, dp, tbl)
	full := newMsg(t, md).set("id", int64(5)).set("name", "n").set("kind", protoreflect.EnumNumber(1)).set("score", 0.0)
	full.sub("count").set("value", int64(0))
	full.sub("at").set("seconds", int64(86400)).set("nanos", int32(1000))
	full.add("tags", int32(-1)).add("tags", int32(2))
	empty := newMsg(t, md) // proto3: zero scalars are not on the wire
	if len(empty.bytes()) != 0 {
		t.Fatal("expected an empty message")
	}
	rec := decodeOK(t, d, [][]byte{full.bytes(), empty.bytes()}, MissingValues{})
	for col, w := range map[string][2]string{
		"id":     {"5", "0"}, // descriptor default "0", not NULL
		"name":   {"n", ""},
		"kind":   {"CLICK", "KIND_UNSPECIFIED"},
		"count":  {"0", "NULL"},
		"at":     {"1970-01-02T00:00:00.000001Z", "NULL"},
		"tags":   {"[-1,2]", "[]"},
		"score":  {"0", "NULL"}, // proto3 optional has presence
		"absent": {"NULL", "NULL"},
	} {
		for row := range 2 {
			if got := cell(rec, col, row); got != w[row] {
				t.Errorf("%s[%d] = %q, want %q", col, row, got, w[row])
			}
		}
	}
}

func TestMissingValueInterpretations(t *testing.T) {
	tbl := &schema.Schema{Fields: []*schema.Field{
		{Name: "id", Type: schema.Integer},
		{Name: "created", Type: schema.Timestamp, DefaultValueExpression: "CURRENT_TIMESTAMP()"},
		{Name: "label", Type: schema.String, DefaultValueExpression: "'none'"},
		{Name: "uuid", Type: schema.String, DefaultValueExpression: "GENERATE_UUID()"},
		{Name: "req", Type: schema.Integer, Mode: schema.Required, DefaultValueExpression: "7"},
		{Name: "tags", Type: schema.String, Mode: schema.Repeated, DefaultValueExpression: "['a', 'b']"},
		{Name: "rec", Type: schema.Record, DefaultValueExpression: "STRUCT(1 AS x, DATE '2020-01-02' AS d)", Fields: []*schema.Field{
			{Name: "x", Type: schema.Integer}, {Name: "d", Type: schema.Date},
		}},
		{Name: "plain", Type: schema.Float},
	}}
	// The writer only knows id and label.
	d := mustCompile(t, msgDesc("root", fld("id", 1, tInt64), fld("label", 2, tString)), tbl)
	rows := [][]byte{row{}.varint(1, 1), row{}.varint(1, 2).str(2, "given")}

	// Without DEFAULT_VALUE a REQUIRED column with a default still fails.
	_, rowErrs, err := d.Decode(rows, MissingValues{})
	if err != nil || len(rowErrs) != 2 || rowErrs[0].Field != "req" {
		t.Fatalf("rowErrs = %v, err = %v", rowErrs, err)
	}

	rec := decodeOK(t, d, rows, MissingValues{Default: DefaultValue})
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	for row := range 2 {
		if got := cell(rec, "created", row); got != "2024-05-06T07:08:09.123456Z" {
			t.Errorf("created = %s", got)
		}
		if got := cell(rec, "uuid", row); !uuid.MatchString(got) {
			t.Errorf("uuid = %s", got)
		}
		if got := cell(rec, "req", row); got != "7" {
			t.Errorf("req = %s", got)
		}
		if got := cell(rec, "tags", row); got != `["a","b"]` {
			t.Errorf("tags = %s", got)
		}
		if got := cell(rec, "rec", row); got != `{"d":"2020-01-02","x":1}` {
			t.Errorf("rec = %s", got)
		}
		if got := cell(rec, "plain", row); got != "NULL" {
			t.Errorf("plain = %s", got)
		}
	}
	if cell(rec, "uuid", 0) == cell(rec, "uuid", 1) {
		t.Error("GENERATE_UUID repeated a value")
	}
	if got := cell(rec, "label", 0) + "," + cell(rec, "label", 1); got != "none,given" {
		t.Errorf("label = %s", got)
	}

	// Per-column interpretations override the default, matched
	// case-insensitively.
	rec = decodeOK(t, d, rows, MissingValues{Default: DefaultValue, PerColumn: map[string]Interpretation{"LABEL": NullValue, "created": NullValue}})
	if got := cell(rec, "label", 0) + "," + cell(rec, "created", 0); got != "NULL,NULL" {
		t.Errorf("per-column: %s", got)
	}
	rec = decodeOK(t, d, rows, MissingValues{PerColumn: map[string]Interpretation{"req": DefaultValue}})
	if got := cell(rec, "req", 0) + "," + cell(rec, "label", 0); got != "7,NULL" {
		t.Errorf("per-column default: %s", got)
	}
}

func TestDefaultExpressions(t *testing.T) {
	now := time.Date(2024, 2, 29, 23, 30, 0, 0, time.UTC)
	cases := []struct {
		f    schema.Field
		want string // fmt of the evaluated value, or "error"
	}{
		{schema.Field{Type: schema.Integer, DefaultValueExpression: "-0x10"}, "-16"},
		{schema.Field{Type: schema.Float, DefaultValueExpression: "1.5e3"}, "1500"},
		{schema.Field{Type: schema.Float, DefaultValueExpression: "RAND()"}, "float"},
		{schema.Field{Type: schema.Boolean, DefaultValueExpression: "true"}, "true"},
		{schema.Field{Type: schema.String, DefaultValueExpression: `"a\tb\u00e9"`}, "a\tbé"},
		{schema.Field{Type: schema.String, DefaultValueExpression: `r'a\tb'`}, `a\tb`},
		{schema.Field{Type: schema.String, DefaultValueExpression: `'''multi'line'''`}, `multi'line`},
		{schema.Field{Type: schema.String, DefaultValueExpression: "SESSION_USER()"}, SessionUser},
		{schema.Field{Type: schema.Bytes, DefaultValueExpression: `b'\x00\x01'`}, "[0 1]"},
		{schema.Field{Type: schema.String, DefaultValueExpression: "NULL"}, "<nil>"},
		{schema.Field{Type: schema.Date, DefaultValueExpression: "CURRENT_DATE()"}, "19782"},
		{schema.Field{Type: schema.Date, DefaultValueExpression: "CURRENT_DATE('Asia/Tokyo')"}, "19783"},
		{schema.Field{Type: schema.Date, DefaultValueExpression: "DATE '1970-01-02'"}, "1"},
		{schema.Field{Type: schema.Date, DefaultValueExpression: "'1970-01-03'"}, "2"},
		{schema.Field{Type: schema.DateTime, DefaultValueExpression: "CURRENT_DATETIME"}, "1709249400000000"},
		{schema.Field{Type: schema.Time, DefaultValueExpression: "current_time()"}, "84600000000"},
		{schema.Field{Type: schema.Time, DefaultValueExpression: "TIME '00:00:01'"}, "1000000"},
		{schema.Field{Type: schema.Timestamp, DefaultValueExpression: "TIMESTAMP '1970-01-01 00:00:01 UTC'"}, "1000000"},
		{schema.Field{Type: schema.Numeric, DefaultValueExpression: "NUMERIC '1.5'"}, "1500000000"},
		{schema.Field{Type: schema.Numeric, DefaultValueExpression: "3"}, "3000000000"},
		{schema.Field{Type: schema.BigNumeric, DefaultValueExpression: "BIGNUMERIC '-1'"}, "big:-100000000000000000000000000000000000000"},
		{schema.Field{Type: schema.JSON, DefaultValueExpression: `JSON '{"b": 1, "a": 2}'`}, `{"a":2,"b":1}`}, // stored canonical, as any JSON value
		{schema.Field{Type: schema.Geography, DefaultValueExpression: "ST_GEOGPOINT(-1.5, 2)"}, "POINT(-1.5 2)"},
		{schema.Field{Type: schema.Interval, DefaultValueExpression: "INTERVAL '1-0 0 0:0:0'"}, "{12 0 0}"},
		{schema.Field{Type: schema.Range, RangeElementType: &schema.RangeElementType{Type: schema.Date}, DefaultValueExpression: "RANGE<DATE> '[1970-01-01, UNBOUNDED)'"}, "[0 <nil>]"},
		{schema.Field{Type: schema.Integer, Mode: schema.Repeated, DefaultValueExpression: "[1, 2]"}, "[1 2]"},
		{schema.Field{Type: schema.Integer, Mode: schema.Repeated, DefaultValueExpression: "ARRAY<INT64>[]"}, "[]"},
		// Errors BigQuery also reports when the default is set.
		{schema.Field{Type: schema.Integer, DefaultValueExpression: "'x'"}, "error"},
		{schema.Field{Type: schema.Integer, DefaultValueExpression: "1.5"}, "error"},
		{schema.Field{Type: schema.Numeric, DefaultValueExpression: "1.5"}, "error"},
		{schema.Field{Type: schema.DateTime, DefaultValueExpression: "CURRENT_TIMESTAMP()"}, "error"},
		{schema.Field{Type: schema.String, DefaultValueExpression: "NOW()"}, "error"},
		{schema.Field{Type: schema.String, DefaultValueExpression: "'a' 'b'"}, "error"},
		{schema.Field{Type: schema.String, DefaultValueExpression: "'unterminated"}, "error"},
		{schema.Field{Type: schema.String, MaxLength: 2, DefaultValueExpression: "'abc'"}, "error"},
		{schema.Field{Type: schema.Integer, Mode: schema.Repeated, DefaultValueExpression: "1"}, "error"},
		{schema.Field{Type: schema.Integer, Mode: schema.Repeated, DefaultValueExpression: "[1, NULL]"}, "error"},
		{schema.Field{Type: schema.Date, DefaultValueExpression: "DATE '2023-02-29'"}, "error"},
		{schema.Field{Type: schema.Geography, DefaultValueExpression: "ST_GEOGPOINT(500, 0)"}, "error"},
	}
	for _, tc := range cases {
		f := tc.f
		f.Name = "c"
		def, err := CompileDefault(&f)
		if tc.want == "error" {
			if err == nil {
				t.Errorf("%s: no error", f.DefaultValueExpression)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", f.DefaultValueExpression, err)
			continue
		}
		v, err := def.Eval(now)
		if err != nil {
			t.Errorf("%s: %v", f.DefaultValueExpression, err)
			continue
		}
		got := fmtValue(v)
		if tc.want == "float" {
			if x, ok := v.(float64); !ok || x < 0 || x >= 1 {
				t.Errorf("%s = %v", f.DefaultValueExpression, v)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("%s = %s, want %s", f.DefaultValueExpression, got, tc.want)
		}
	}
}

func fmtValue(v any) string {
	switch x := v.(type) {
	case interface{ BigInt() *big.Int }:
		if _, ok := v.(decimal256.Num); ok {
			return "big:" + x.BigInt().String()
		}
		return x.BigInt().String()
	case []byte:
		return fmt.Sprint([]byte(x))
	}
	return strings.TrimSpace(fmt.Sprint(v))
}
