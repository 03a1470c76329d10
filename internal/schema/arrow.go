package schema

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// Arrow field metadata keys and the extension names BigQuery's Read API puts
// on DATETIME, GEOGRAPHY and JSON columns (the Storage Read API's "Arrow
// schema details"). Clients such as the Python client key their conversions
// on these.
const (
	ArrowExtensionName     = "ARROW:extension:name"
	ArrowExtensionMetadata = "ARROW:extension:metadata"

	ExtensionDatetime  = "google:sqlType:datetime"
	ExtensionGeography = "google:sqlType:geography"
	ExtensionJSON      = "google:sqlType:json"

	// GeographyEncodingWKT is the extension metadata of GEOGRAPHY columns.
	GeographyEncodingWKT = `{"encoding": "WKT"}`

	// ListItemName is the name of the element field of a REPEATED column's
	// Arrow list.
	ListItemName = "item"
)

// The Arrow types of the BigQuery scalar types. They are shared values: the
// engine compares types with arrow.TypeEqual, never by pointer.
var (
	ArrowNumeric    = &arrow.Decimal128Type{Precision: 38, Scale: 9}
	ArrowBigNumeric = &arrow.Decimal256Type{Precision: 76, Scale: 38}
	ArrowTimestamp  = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	ArrowDatetime   = &arrow.TimestampType{Unit: arrow.Microsecond}
	ArrowTime       = arrow.FixedWidthTypes.Time64us
	ArrowDate       = arrow.FixedWidthTypes.Date32
	ArrowInterval   = arrow.FixedWidthTypes.MonthDayNanoInterval
)

// ToArrow returns the one Arrow representation of a table schema: the
// engine's column layout and what the Read API sends. Columns are in table
// order; REQUIRED columns are non-nullable, all others nullable. A REPEATED
// column is list<item: T>, where the list itself is non-nullable (BigQuery
// has no NULL arrays: an unset repeated field is an empty array).
//
// The schema must be valid (see Validate); an unknown type maps to utf8 so
// that ToArrow never fails on a schema the catalog accepted.
func ToArrow(s *Schema) *arrow.Schema {
	if s == nil {
		return arrow.NewSchema(nil, nil)
	}
	fields := make([]arrow.Field, len(s.Fields))
	for i, f := range s.Fields {
		fields[i] = FieldToArrow(f)
	}
	return arrow.NewSchema(fields, nil)
}

// FieldToArrow maps one column (with its mode) to its Arrow field.
func FieldToArrow(f *Field) arrow.Field {
	elem := elementToArrow(f)
	switch f.EffectiveMode() {
	case Repeated:
		elem.Name = ListItemName
		elem.Nullable = false
		return arrow.Field{Name: f.Name, Type: arrow.ListOfField(elem), Nullable: false}
	case Required:
		elem.Nullable = false
	default:
		elem.Nullable = true
	}
	return elem
}

// elementToArrow maps the field's type, ignoring its mode. The result is
// named after the field and carries the extension metadata.
func elementToArrow(f *Field) arrow.Field {
	out := arrow.Field{Name: f.Name, Nullable: true}
	switch f.Type {
	case Integer:
		out.Type = arrow.PrimitiveTypes.Int64
	case Float:
		out.Type = arrow.PrimitiveTypes.Float64
	case Boolean:
		out.Type = arrow.FixedWidthTypes.Boolean
	case String:
		out.Type = arrow.BinaryTypes.String
	case Bytes:
		out.Type = arrow.BinaryTypes.Binary
	case Numeric:
		out.Type = ArrowNumeric
	case BigNumeric:
		out.Type = ArrowBigNumeric
	case Timestamp:
		out.Type = ArrowTimestamp
	case Date:
		out.Type = ArrowDate
	case DateTime:
		out.Type = ArrowDatetime
		out.Metadata = arrow.NewMetadata([]string{ArrowExtensionName}, []string{ExtensionDatetime})
	case Time:
		out.Type = ArrowTime
	case Geography:
		out.Type = arrow.BinaryTypes.String
		out.Metadata = arrow.NewMetadata(
			[]string{ArrowExtensionName, ArrowExtensionMetadata},
			[]string{ExtensionGeography, GeographyEncodingWKT})
	case JSON:
		out.Type = arrow.BinaryTypes.String
		out.Metadata = arrow.NewMetadata([]string{ArrowExtensionName}, []string{ExtensionJSON})
	case Interval:
		out.Type = ArrowInterval
	case Range:
		elem := &Field{Type: Timestamp}
		if f.RangeElementType != nil {
			elem.Type = f.RangeElementType.Type
		}
		elem.Name = "start"
		start := elementToArrow(elem)
		elem.Name = "end"
		end := elementToArrow(elem)
		out.Type = arrow.StructOf(start, end)
	case Record:
		children := make([]arrow.Field, len(f.Fields))
		for i, c := range f.Fields {
			children[i] = FieldToArrow(c)
		}
		out.Type = arrow.StructOf(children...)
	default:
		out.Type = arrow.BinaryTypes.String
	}
	return out
}

// FromArrow is the inverse of ToArrow: it recovers the BigQuery schema from
// an Arrow schema produced by ToArrow (types, modes and nesting; attributes
// such as descriptions and defaults are not carried by Arrow). An Arrow type
// with no BigQuery equivalent is an error naming the field.
func FromArrow(as *arrow.Schema) (*Schema, error) {
	out := &Schema{Fields: make([]*Field, 0, as.NumFields())}
	for _, af := range as.Fields() {
		f, err := FieldFromArrow(af)
		if err != nil {
			return nil, err
		}
		out.Fields = append(out.Fields, f)
	}
	return out, nil
}

// FieldFromArrow maps one Arrow field to a column.
func FieldFromArrow(af arrow.Field) (*Field, error) {
	if lt, ok := af.Type.(*arrow.ListType); ok {
		elem := lt.ElemField()
		elem.Name = af.Name
		f, err := fieldFromArrowType(elem)
		if err != nil {
			return nil, err
		}
		if f.Mode == Repeated {
			return nil, fmt.Errorf("schema: field %s: arrays of arrays are not supported", af.Name)
		}
		f.Mode = Repeated
		return f, nil
	}
	f, err := fieldFromArrowType(af)
	if err != nil {
		return nil, err
	}
	f.Mode = Nullable
	if !af.Nullable {
		f.Mode = Required
	}
	return f, nil
}

func fieldFromArrowType(af arrow.Field) (*Field, error) {
	f := &Field{Name: af.Name}
	ext, _ := af.Metadata.GetValue(ArrowExtensionName)
	switch t := af.Type.(type) {
	case *arrow.Int64Type:
		f.Type = Integer
	case *arrow.Float64Type:
		f.Type = Float
	case *arrow.BooleanType:
		f.Type = Boolean
	case *arrow.StringType:
		switch ext {
		case ExtensionGeography:
			f.Type = Geography
		case ExtensionJSON:
			f.Type = JSON
		default:
			f.Type = String
		}
	case *arrow.BinaryType:
		f.Type = Bytes
	case *arrow.Decimal128Type:
		if t.Precision != 38 || t.Scale != 9 {
			return nil, fmt.Errorf("schema: field %s: %s is not NUMERIC's decimal128(38, 9)", af.Name, t)
		}
		f.Type = Numeric
	case *arrow.Decimal256Type:
		if t.Precision != 76 || t.Scale != 38 {
			return nil, fmt.Errorf("schema: field %s: %s is not BIGNUMERIC's decimal256(76, 38)", af.Name, t)
		}
		f.Type = BigNumeric
	case *arrow.TimestampType:
		if t.Unit != arrow.Microsecond {
			return nil, fmt.Errorf("schema: field %s: %s is not in microseconds", af.Name, t)
		}
		switch {
		case t.TimeZone == "" || ext == ExtensionDatetime:
			f.Type = DateTime
		case strings.EqualFold(t.TimeZone, "UTC"):
			f.Type = Timestamp
		default:
			return nil, fmt.Errorf("schema: field %s: %s is not in UTC", af.Name, t)
		}
	case *arrow.Date32Type:
		f.Type = Date
	case *arrow.Time64Type:
		if t.Unit != arrow.Microsecond {
			return nil, fmt.Errorf("schema: field %s: %s is not in microseconds", af.Name, t)
		}
		f.Type = Time
	case *arrow.MonthDayNanoIntervalType:
		f.Type = Interval
	case *arrow.StructType:
		if isRangeStruct(t) {
			elem, err := fieldFromArrowType(t.Field(0))
			if err != nil {
				return nil, err
			}
			f.Type = Range
			f.RangeElementType = &RangeElementType{Type: elem.Type}
			return f, nil
		}
		f.Type = Record
		for _, c := range t.Fields() {
			cf, err := FieldFromArrow(c)
			if err != nil {
				return nil, fmt.Errorf("in RECORD %s: %w", af.Name, err)
			}
			f.Fields = append(f.Fields, cf)
		}
	case *arrow.ListType:
		// A list inside a list element: reported by the caller.
		inner, err := FieldFromArrow(af)
		if err != nil {
			return nil, err
		}
		return inner, nil
	default:
		return nil, fmt.Errorf("schema: field %s: Arrow type %s has no BigQuery equivalent", af.Name, af.Type)
	}
	return f, nil
}

// isRangeStruct reports whether t is the struct<start: T, end: T> of a
// RANGE<T> column, T being DATE, DATETIME or TIMESTAMP.
func isRangeStruct(t *arrow.StructType) bool {
	if t.NumFields() != 2 || t.Field(0).Name != "start" || t.Field(1).Name != "end" {
		return false
	}
	a, b := t.Field(0).Type, t.Field(1).Type
	if !arrow.TypeEqual(a, b) {
		return false
	}
	return arrow.TypeEqual(a, ArrowDate) || arrow.TypeEqual(a, ArrowDatetime) || arrow.TypeEqual(a, ArrowTimestamp)
}

// ColumnPath resolves a dotted column path ("a.b.c", case-insensitive, as
// BigQuery matches names) to the field it names and the index of each step:
// idx[0] is the top-level column, idx[1] the child within that RECORD, and
// so on. These are also the child indexes in the ToArrow struct layout (a
// REPEATED RECORD adds a list level the caller steps through).
func ColumnPath(s *Schema, path string) (idx []int, f *Field, err error) {
	if path == "" {
		return nil, nil, fmt.Errorf("schema: empty column path")
	}
	fields := s.Fields
	for part := range strings.SplitSeq(path, ".") {
		if f != nil && f.Type != Record {
			return nil, nil, fmt.Errorf("schema: column %q: %s is not a RECORD", path, f.Name)
		}
		i := lookupFold(fields, part)
		if i < 0 {
			return nil, nil, fmt.Errorf("schema: column %q: no field %q", path, part)
		}
		idx = append(idx, i)
		f = fields[i]
		fields = f.Fields
	}
	return idx, f, nil
}

func lookupFold(fs []*Field, name string) int {
	for i, f := range fs {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}
