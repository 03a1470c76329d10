package schema

import (
	"fmt"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
)

var toStorageType = map[Type]storagepb.TableFieldSchema_Type{
	String:     storagepb.TableFieldSchema_STRING,
	Bytes:      storagepb.TableFieldSchema_BYTES,
	Integer:    storagepb.TableFieldSchema_INT64,
	Float:      storagepb.TableFieldSchema_DOUBLE,
	Numeric:    storagepb.TableFieldSchema_NUMERIC,
	BigNumeric: storagepb.TableFieldSchema_BIGNUMERIC,
	Boolean:    storagepb.TableFieldSchema_BOOL,
	Timestamp:  storagepb.TableFieldSchema_TIMESTAMP,
	Date:       storagepb.TableFieldSchema_DATE,
	Time:       storagepb.TableFieldSchema_TIME,
	DateTime:   storagepb.TableFieldSchema_DATETIME,
	Geography:  storagepb.TableFieldSchema_GEOGRAPHY,
	JSON:       storagepb.TableFieldSchema_JSON,
	Range:      storagepb.TableFieldSchema_RANGE,
	Interval:   storagepb.TableFieldSchema_INTERVAL,
	Record:     storagepb.TableFieldSchema_STRUCT,
}

var fromStorageType = func() map[storagepb.TableFieldSchema_Type]Type {
	m := make(map[storagepb.TableFieldSchema_Type]Type, len(toStorageType))
	for k, v := range toStorageType {
		m[v] = k
	}
	return m
}()

var toStorageMode = map[Mode]storagepb.TableFieldSchema_Mode{
	Nullable: storagepb.TableFieldSchema_NULLABLE,
	Required: storagepb.TableFieldSchema_REQUIRED,
	Repeated: storagepb.TableFieldSchema_REPEATED,
}

// ToStorage returns the Storage API's TableSchema of s, as the Write API
// sends it in WriteStream.table_schema and AppendRowsResponse.updated_schema:
// storage type names (INT64, DOUBLE, BOOL, STRUCT), the mode always explicit,
// and the attributes the storage proto carries (description, max_length,
// precision, scale, default_value_expression, range_element_type). For the
// fields adapt.BQSchemaToStorageTableSchema knows, the result is equal to
// its output for the same bigquery.Schema.
func ToStorage(s *Schema) *storagepb.TableSchema {
	if s == nil {
		return nil
	}
	out := &storagepb.TableSchema{}
	if len(s.Fields) > 0 {
		out.Fields = make([]*storagepb.TableFieldSchema, len(s.Fields))
		for i, f := range s.Fields {
			out.Fields[i] = FieldToStorage(f)
		}
	}
	return out
}

// FieldToStorage maps one column.
func FieldToStorage(f *Field) *storagepb.TableFieldSchema {
	out := &storagepb.TableFieldSchema{
		Name:                   f.Name,
		Type:                   toStorageType[f.Type], // TYPE_UNSPECIFIED for an invalid type
		Mode:                   toStorageMode[f.EffectiveMode()],
		Description:            f.Description,
		MaxLength:              int64(f.MaxLength),
		Precision:              int64(f.Precision),
		Scale:                  int64(f.Scale),
		DefaultValueExpression: f.DefaultValueExpression,
	}
	if f.RangeElementType != nil {
		out.RangeElementType = &storagepb.TableFieldSchema_FieldElementType{
			Type: toStorageType[f.RangeElementType.Type],
		}
	}
	for _, c := range f.Fields {
		out.Fields = append(out.Fields, FieldToStorage(c))
	}
	return out
}

// FromStorage maps a Storage API TableSchema back to the field model, in
// canonical (legacy REST) type names with explicit modes. An unspecified or
// unknown type or mode is an error naming the field.
func FromStorage(ts *storagepb.TableSchema) (*Schema, error) {
	if ts == nil {
		return nil, fmt.Errorf("schema: nil table schema")
	}
	out := &Schema{Fields: make([]*Field, 0, len(ts.GetFields()))}
	for _, tf := range ts.GetFields() {
		f, err := FieldFromStorage(tf)
		if err != nil {
			return nil, err
		}
		out.Fields = append(out.Fields, f)
	}
	return out, nil
}

// FieldFromStorage maps one storage column.
func FieldFromStorage(tf *storagepb.TableFieldSchema) (*Field, error) {
	t, ok := fromStorageType[tf.GetType()]
	if !ok {
		return nil, fmt.Errorf("schema: field %s: unsupported type %s", tf.GetName(), tf.GetType())
	}
	f := &Field{
		Name:                   tf.GetName(),
		Type:                   t,
		Description:            tf.GetDescription(),
		MaxLength:              Int64(tf.GetMaxLength()),
		Precision:              Int64(tf.GetPrecision()),
		Scale:                  Int64(tf.GetScale()),
		DefaultValueExpression: tf.GetDefaultValueExpression(),
	}
	switch tf.GetMode() {
	case storagepb.TableFieldSchema_MODE_UNSPECIFIED, storagepb.TableFieldSchema_NULLABLE:
		f.Mode = Nullable
	case storagepb.TableFieldSchema_REQUIRED:
		f.Mode = Required
	case storagepb.TableFieldSchema_REPEATED:
		f.Mode = Repeated
	default:
		return nil, fmt.Errorf("schema: field %s: unsupported mode %s", tf.GetName(), tf.GetMode())
	}
	if ret := tf.GetRangeElementType(); ret != nil {
		et, ok := fromStorageType[ret.GetType()]
		if !ok {
			return nil, fmt.Errorf("schema: field %s: unsupported range element type %s", tf.GetName(), ret.GetType())
		}
		f.RangeElementType = &RangeElementType{Type: et}
	}
	for _, c := range tf.GetFields() {
		cf, err := FieldFromStorage(c)
		if err != nil {
			return nil, fmt.Errorf("schema: field %s: %w", tf.GetName(), err)
		}
		f.Fields = append(f.Fields, cf)
	}
	return f, nil
}
