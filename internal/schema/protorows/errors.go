package protorows

import (
	"errors"
	"fmt"
)

// ExtraFieldError reports a writer-schema field with no column in the
// table. The Write API answers it with SCHEMA_MISMATCH_EXTRA_FIELDS naming
// Field (a dotted path for nested fields, in the writer's spelling).
type ExtraFieldError struct {
	Field string
}

func (e *ExtraFieldError) Error() string {
	return fmt.Sprintf("protorows: input schema has more fields than BigQuery schema, extra field: '%s'", e.Field)
}

// FieldTypeError reports a writer-schema field whose proto type cannot be
// written to its column (for example a double for a TIMESTAMP column, or a
// repeated field for a non-REPEATED column).
type FieldTypeError struct {
	Field      string // dotted column path
	ProtoType  string // the descriptor's type, e.g. "TYPE_DOUBLE" or "message foo"
	ColumnType string // the column's BigQuery type and mode, e.g. "TIMESTAMP" or "REPEATED INTEGER"
	Reason     string // optional detail
}

func (e *FieldTypeError) Error() string {
	msg := fmt.Sprintf("protorows: field %s: proto type %s cannot be written to a %s column", e.Field, e.ProtoType, e.ColumnType)
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// DescriptorError reports a writer schema that is not a valid
// self-contained descriptor (unresolvable type names, duplicate numbers,
// recursion, a default value that does not parse, ...).
type DescriptorError struct {
	Message string
}

func (e *DescriptorError) Error() string { return "protorows: invalid proto descriptor: " + e.Message }

func descErrorf(format string, args ...any) error {
	return &DescriptorError{Message: fmt.Sprintf(format, args...)}
}

// RowError is one rejected row: its index in the request, the column path
// and a message naming the field and the value. The Write API returns it as
// a RowError with code FIELDS_ERROR.
type RowError struct {
	Index   int
	Field   string
	Message string
}

func (e RowError) Error() string { return fmt.Sprintf("row %d: %s", e.Index, e.Message) }

// Interpretation is how a column missing from a row is filled, mirroring
// AppendRowsRequest.MissingValueInterpretation.
type Interpretation int8

// The interpretations. Unspecified behaves as NullValue.
const (
	Unspecified  Interpretation = 0
	NullValue    Interpretation = 1
	DefaultValue Interpretation = 2
)

// MissingValues is the request's missing-value configuration:
// missing_value_interpretations (PerColumn, keyed by top-level column name,
// matched case-insensitively) over default_missing_value_interpretation
// (Default), which also applies to nested fields.
type MissingValues struct {
	Default   Interpretation
	PerColumn map[string]Interpretation
}

// MaxValues bounds the values one request decodes to (rows x leaf columns,
// plus the elements of repeated fields). A missing value costs nothing on
// the wire but a slot in every column once decoded, so the request size
// alone does not bound a request's memory. Every value present costs at
// least two bytes on the wire, so no request under 16 MB that spells its
// values out reaches the bound.
const MaxValues = 8 << 20

// ErrTooManyValues is returned by Decode for a request that would decode to
// more than MaxValues values.
var ErrTooManyValues = errors.New("protorows: the request decodes to too many values (rows x columns); send fewer rows per request")
