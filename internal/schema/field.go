// Package schema is the table schema of bqstore: BigQuery's field model (as
// the REST v2 API and the catalog speak it), its validation and evolution
// rules, and its mappings to the Storage API's TableSchema, to Arrow (the
// engine's and the Read API's column format) and from proto descriptors
// (the Write API's row format).
//
// The model is the REST one: type names are stored in their legacy spelling
// (INTEGER, FLOAT, BOOLEAN, RECORD), as BigQuery's tables.get returns them,
// and mode is always explicit after Normalize.
package schema

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Type is a BigQuery column type in its canonical (legacy REST) spelling.
type Type string

// The canonical type names. Standard SQL aliases (INT64, FLOAT64, BOOL,
// STRUCT) are accepted on input and mapped to these by CanonicalType.
const (
	String     Type = "STRING"
	Bytes      Type = "BYTES"
	Integer    Type = "INTEGER"
	Float      Type = "FLOAT"
	Numeric    Type = "NUMERIC"
	BigNumeric Type = "BIGNUMERIC"
	Boolean    Type = "BOOLEAN"
	Timestamp  Type = "TIMESTAMP"
	Date       Type = "DATE"
	Time       Type = "TIME"
	DateTime   Type = "DATETIME"
	Geography  Type = "GEOGRAPHY"
	JSON       Type = "JSON"
	Range      Type = "RANGE"
	Interval   Type = "INTERVAL"
	Record     Type = "RECORD"
)

// CanonicalType maps any spelling BigQuery accepts (case-insensitive,
// standard SQL aliases included) to the canonical name. ok is false for an
// unknown type.
func CanonicalType(s string) (t Type, ok bool) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "STRING":
		return String, true
	case "BYTES":
		return Bytes, true
	case "INTEGER", "INT64":
		return Integer, true
	case "FLOAT", "FLOAT64":
		return Float, true
	case "NUMERIC", "DECIMAL":
		return Numeric, true
	case "BIGNUMERIC", "BIGDECIMAL":
		return BigNumeric, true
	case "BOOLEAN", "BOOL":
		return Boolean, true
	case "TIMESTAMP":
		return Timestamp, true
	case "DATE":
		return Date, true
	case "TIME":
		return Time, true
	case "DATETIME":
		return DateTime, true
	case "GEOGRAPHY":
		return Geography, true
	case "JSON":
		return JSON, true
	case "RANGE":
		return Range, true
	case "INTERVAL":
		return Interval, true
	case "RECORD", "STRUCT":
		return Record, true
	}
	return "", false
}

// Mode is a column mode. The empty mode means NULLABLE on input; Normalize
// makes it explicit.
type Mode string

// The column modes.
const (
	Nullable Mode = "NULLABLE"
	Required Mode = "REQUIRED"
	Repeated Mode = "REPEATED"
)

// Field is one column of a table schema, as BigQuery's REST API describes
// it (TableFieldSchema). Fields of a RECORD are in Fields.
type Field struct {
	Name                   string            `json:"name"`
	Type                   Type              `json:"type"`
	Mode                   Mode              `json:"mode,omitempty"`
	Fields                 []*Field          `json:"fields,omitempty"`
	Description            string            `json:"description,omitempty"`
	MaxLength              Int64             `json:"maxLength,omitempty"`
	Precision              Int64             `json:"precision,omitempty"`
	Scale                  Int64             `json:"scale,omitempty"`
	DefaultValueExpression string            `json:"defaultValueExpression,omitempty"`
	RangeElementType       *RangeElementType `json:"rangeElementType,omitempty"`
}

// RangeElementType is the element type of a RANGE column: DATE, DATETIME or
// TIMESTAMP.
type RangeElementType struct {
	Type Type `json:"type"`
}

// Schema is a table schema: its top-level fields in table order.
type Schema struct {
	Fields []*Field `json:"fields"`
}

// Int64 is an int64 that BigQuery's REST JSON writes as a string ("10") and
// that we also accept as a bare number on input. Zero is "unset".
type Int64 int64

// MarshalJSON writes the value as a decimal string, as BigQuery does.
func (v Int64) MarshalJSON() ([]byte, error) {
	return []byte(strconv.Quote(strconv.FormatInt(int64(v), 10))), nil
}

// UnmarshalJSON accepts "10" and 10.
func (v *Int64) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		*v = 0
		return nil
	}
	if len(s) >= 2 && s[0] == '"' {
		var err error
		if s, err = strconv.Unquote(s); err != nil {
			return fmt.Errorf("invalid int64 %s", b)
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return fmt.Errorf("invalid int64 %q", s)
	}
	*v = Int64(n)
	return nil
}

var _ json.Marshaler = Int64(0)

// EffectiveMode returns the field's mode, NULLABLE when unset.
func (f *Field) EffectiveMode() Mode {
	if f.Mode == "" {
		return Nullable
	}
	return f.Mode
}

// Clone returns a deep copy of the field.
func (f *Field) Clone() *Field {
	if f == nil {
		return nil
	}
	c := *f
	if f.RangeElementType != nil {
		r := *f.RangeElementType
		c.RangeElementType = &r
	}
	c.Fields = cloneFields(f.Fields)
	return &c
}

// Clone returns a deep copy of the schema.
func (s *Schema) Clone() *Schema {
	if s == nil {
		return nil
	}
	return &Schema{Fields: cloneFields(s.Fields)}
}

func cloneFields(fs []*Field) []*Field {
	if fs == nil {
		return nil
	}
	out := make([]*Field, len(fs))
	for i, f := range fs {
		out[i] = f.Clone()
	}
	return out
}

// Lookup finds a top-level field by name, case-insensitively, as BigQuery
// matches column names. It returns the index, or -1.
func (s *Schema) Lookup(name string) int {
	for i, f := range s.Fields {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}
