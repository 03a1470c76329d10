package schema

import (
	"encoding/json"
	"reflect"
	"testing"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"cloud.google.com/go/bigquery/storage/managedwriter/adapt"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

// everyType is one column of every type and mode, nested, in both models.
func everyType() (*Schema, bigquery.Schema) {
	s := &Schema{Fields: []*Field{
		{Name: "s", Type: String, Mode: Required, Description: "a string"},
		{Name: "b", Type: Bytes},
		{Name: "i", Type: Integer, Mode: Nullable},
		{Name: "f", Type: Float},
		{Name: "n", Type: Numeric},
		{Name: "bn", Type: BigNumeric},
		{Name: "bo", Type: Boolean},
		{Name: "ts", Type: Timestamp},
		{Name: "d", Type: Date},
		{Name: "t", Type: Time},
		{Name: "dt", Type: DateTime},
		{Name: "g", Type: Geography},
		{Name: "j", Type: JSON},
		{Name: "r", Type: Range, RangeElementType: &RangeElementType{Type: Date}},
		{Name: "rep", Type: Integer, Mode: Repeated},
		{Name: "rec", Type: Record, Mode: Repeated, Fields: []*Field{
			{Name: "x", Type: String, Mode: Required},
			{Name: "inner", Type: Record, Fields: []*Field{
				{Name: "y", Type: Timestamp, Mode: Repeated},
				{Name: "z", Type: Range, RangeElementType: &RangeElementType{Type: Timestamp}},
			}},
		}},
	}}
	bq := bigquery.Schema{
		{Name: "s", Type: bigquery.StringFieldType, Required: true, Description: "a string"},
		{Name: "b", Type: bigquery.BytesFieldType},
		{Name: "i", Type: bigquery.IntegerFieldType},
		{Name: "f", Type: bigquery.FloatFieldType},
		{Name: "n", Type: bigquery.NumericFieldType},
		{Name: "bn", Type: bigquery.BigNumericFieldType},
		{Name: "bo", Type: bigquery.BooleanFieldType},
		{Name: "ts", Type: bigquery.TimestampFieldType},
		{Name: "d", Type: bigquery.DateFieldType},
		{Name: "t", Type: bigquery.TimeFieldType},
		{Name: "dt", Type: bigquery.DateTimeFieldType},
		{Name: "g", Type: bigquery.GeographyFieldType},
		{Name: "j", Type: bigquery.JSONFieldType},
		{Name: "r", Type: bigquery.RangeFieldType, RangeElementType: &bigquery.RangeElementType{Type: bigquery.DateFieldType}},
		{Name: "rep", Type: bigquery.IntegerFieldType, Repeated: true},
		{Name: "rec", Type: bigquery.RecordFieldType, Repeated: true, Schema: bigquery.Schema{
			{Name: "x", Type: bigquery.StringFieldType, Required: true},
			{Name: "inner", Type: bigquery.RecordFieldType, Schema: bigquery.Schema{
				{Name: "y", Type: bigquery.TimestampFieldType, Repeated: true},
				{Name: "z", Type: bigquery.RangeFieldType, RangeElementType: &bigquery.RangeElementType{Type: bigquery.TimestampFieldType}},
			}},
		}},
	}
	return s, bq
}

func TestToStorageMatchesAdapt(t *testing.T) {
	s, bq := everyType()
	want, err := adapt.BQSchemaToStorageTableSchema(bq)
	if err != nil {
		t.Fatal(err)
	}
	got := ToStorage(s)
	if !proto.Equal(want, got) {
		t.Fatalf("ToStorage differs from adapt:\nadapt: %s\nours:  %s", prototext.Format(want), prototext.Format(got))
	}
	// And back: adapt's own reverse mapping agrees with our model.
	back, err := FromStorage(got)
	if err != nil {
		t.Fatal(err)
	}
	normalizeModes(s.Fields)
	if !reflect.DeepEqual(s, back) {
		t.Fatalf("FromStorage(ToStorage(s)) != s:\n%s\n%s", js(s), js(back))
	}
	bq2, err := adapt.StorageTableSchemaToBQSchema(got)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(bq, bq2) {
		t.Fatalf("adapt reverse differs:\n%s\n%s", js(bq), js(bq2))
	}
}

func normalizeModes(fs []*Field) {
	for _, f := range fs {
		f.Mode = f.EffectiveMode()
		normalizeModes(f.Fields)
	}
}

func TestToStorageAttributes(t *testing.T) {
	s := &Schema{Fields: []*Field{
		{Name: "s", Type: String, MaxLength: 10, DefaultValueExpression: "'x'"},
		{Name: "n", Type: Numeric, Precision: 10, Scale: 2},
		{Name: "iv", Type: Interval},
	}}
	got := ToStorage(s)
	want := &storagepb.TableSchema{Fields: []*storagepb.TableFieldSchema{
		{Name: "s", Type: storagepb.TableFieldSchema_STRING, Mode: storagepb.TableFieldSchema_NULLABLE, MaxLength: 10, DefaultValueExpression: "'x'"},
		{Name: "n", Type: storagepb.TableFieldSchema_NUMERIC, Mode: storagepb.TableFieldSchema_NULLABLE, Precision: 10, Scale: 2},
		{Name: "iv", Type: storagepb.TableFieldSchema_INTERVAL, Mode: storagepb.TableFieldSchema_NULLABLE},
	}}
	if !proto.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	back, err := FromStorage(got)
	if err != nil {
		t.Fatal(err)
	}
	normalizeModes(s.Fields)
	if !reflect.DeepEqual(s, back) {
		t.Fatalf("%s\n%s", js(s), js(back))
	}
}

func TestFromStorageErrors(t *testing.T) {
	for _, tc := range []*storagepb.TableSchema{
		nil,
		{Fields: []*storagepb.TableFieldSchema{{Name: "a"}}},
		{Fields: []*storagepb.TableFieldSchema{{Name: "a", Type: 99}}},
		{Fields: []*storagepb.TableFieldSchema{{Name: "a", Type: storagepb.TableFieldSchema_INT64, Mode: 9}}},
		{Fields: []*storagepb.TableFieldSchema{{Name: "a", Type: storagepb.TableFieldSchema_RANGE,
			RangeElementType: &storagepb.TableFieldSchema_FieldElementType{}}}},
		{Fields: []*storagepb.TableFieldSchema{{Name: "a", Type: storagepb.TableFieldSchema_STRUCT,
			Fields: []*storagepb.TableFieldSchema{{Name: "b"}}}}},
	} {
		if _, err := FromStorage(tc); err == nil {
			t.Errorf("FromStorage(%v): no error", tc)
		}
	}
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
