package schema

import (
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

func TestToArrowEveryType(t *testing.T) {
	s, _ := everyType()
	s.Fields = append(s.Fields, &Field{Name: "iv", Type: Interval, Mode: Required})
	as := ToArrow(s)
	want := []struct {
		name     string
		typ      string
		nullable bool
		ext      string
	}{
		{"s", "utf8", false, ""},
		{"b", "binary", true, ""},
		{"i", "int64", true, ""},
		{"f", "float64", true, ""},
		{"n", "decimal(38, 9)", true, ""},
		{"bn", "decimal256(76, 38)", true, ""},
		{"bo", "bool", true, ""},
		{"ts", "timestamp[us, tz=UTC]", true, ""},
		{"d", "date32", true, ""},
		{"t", "time64[us]", true, ""},
		{"dt", "timestamp[us]", true, ExtensionDatetime},
		{"g", "utf8", true, ExtensionGeography},
		{"j", "utf8", true, ExtensionJSON},
		{"r", "struct<start: date32 nullable, end: date32 nullable>", true, ""},
		{"rep", "list<item: int64>", false, ""},
		{"rec", "list<item: struct<x: utf8, inner: struct<y: list<item: timestamp[us, tz=UTC]>, z: struct<start: timestamp[us, tz=UTC] nullable, end: timestamp[us, tz=UTC] nullable> nullable> nullable>>", false, ""},
		{"iv", "month_day_nano_interval", false, ""},
	}
	if as.NumFields() != len(want) {
		t.Fatalf("got %d fields, want %d", as.NumFields(), len(want))
	}
	for i, w := range want {
		f := as.Field(i)
		if f.Name != w.name || f.Nullable != w.nullable {
			t.Errorf("field %d: got %s nullable=%v, want %s nullable=%v", i, f.Name, f.Nullable, w.name, w.nullable)
		}
		if f.Type.String() != w.typ {
			t.Errorf("field %s: type %s, want %s", f.Name, f.Type, w.typ)
		}
		ext, _ := f.Metadata.GetValue(ArrowExtensionName)
		if ext != w.ext {
			t.Errorf("field %s: extension %q, want %q", f.Name, ext, w.ext)
		}
	}
	if m, _ := as.Field(11).Metadata.GetValue(ArrowExtensionMetadata); m != `{"encoding": "WKT"}` {
		t.Errorf("geography metadata %q", m)
	}
	// Nested nullability: rec.item.x is REQUIRED, list items are non-null.
	lt := as.Field(15).Type.(*arrow.ListType)
	if lt.ElemField().Nullable {
		t.Errorf("list item of rec is nullable")
	}
	st := lt.Elem().(*arrow.StructType)
	if st.Field(0).Nullable || !st.Field(1).Nullable {
		t.Errorf("nested nullability wrong: %v", st)
	}
}

func TestFromArrowRoundTrip(t *testing.T) {
	s, _ := everyType()
	s.Fields = append(s.Fields, &Field{Name: "iv", Type: Interval})
	s.Fields[0].Description = "" // not carried by Arrow
	normalizeModes(s.Fields)
	back, err := FromArrow(ToArrow(s))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s, back) {
		t.Fatalf("round trip:\n%s\n%s", js(s), js(back))
	}
}

func TestFromArrowErrors(t *testing.T) {
	for _, f := range []arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Uint8},
		{Name: "a", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}},
		{Name: "a", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}},
		{Name: "a", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "Europe/Paris"}},
		{Name: "a", Type: arrow.ListOf(arrow.ListOf(arrow.PrimitiveTypes.Int64))},
		{Name: "a", Type: arrow.StructOf(arrow.Field{Name: "b", Type: arrow.PrimitiveTypes.Int8})},
	} {
		if _, err := FromArrow(arrow.NewSchema([]arrow.Field{f}, nil)); err == nil {
			t.Errorf("FromArrow(%s): no error", f.Type)
		} else {
			t.Logf("%s: %v", f.Type, err)
		}
	}
}

func TestColumnPath(t *testing.T) {
	s, _ := everyType()
	idx, f, err := ColumnPath(s, "REC.Inner.z")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(idx, []int{15, 1, 1}) || f.Name != "z" {
		t.Fatalf("got %v %s", idx, f.Name)
	}
	for _, bad := range []string{"", "nope", "rec.nope", "s.x", "rec..x"} {
		if _, _, err := ColumnPath(s, bad); err == nil {
			t.Errorf("ColumnPath(%q): no error", bad)
		}
	}
}
