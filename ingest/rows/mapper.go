// Package rows maps newline-delimited JSON records to serialized proto rows
// for the BigQuery Storage Write API.
//
// A Mapper is built once per table schema (as GetWriteStream's FULL view
// returns it). Its Descriptor is the normalized proto2 descriptor that
// cloud.google.com/go/bigquery/storage/managedwriter/adapt derives from the
// same schema, so the rows it produces are exactly what the official
// clients would send: field i of the schema is proto field i+1, numeric
// repeated fields are packed, and the wire types follow adapt's choices
// (DATE int32, DATETIME/TIME packed civil int64, TIMESTAMP int64 micros,
// NUMERIC/BIGNUMERIC two's-complement little-endian bytes).
//
// Append parses the JSON with a small hand-written scanner and writes the
// protobuf wire format directly into the caller's buffer: there is no
// intermediate map, no reflection and no dynamicpb on the hot path.
//
// JSON conventions follow BigQuery's (tabledata.insertAll and JSON loads):
//
//   - INT64: a JSON integer or a string holding one.
//   - FLOAT64: a number, or a string holding one, "NaN", "Infinity" or "-Infinity".
//   - BOOL: true/false, or the strings "true"/"false" (any case).
//   - STRING: a string; numbers and booleans are taken as their literal text.
//   - BYTES: standard base64 (padded or not).
//   - TIMESTAMP: an RFC 3339 / BigQuery canonical string ("2024-01-02 03:04:05.123456+00:00",
//     "...Z", " UTC", no zone = UTC), or an integer of microseconds since the Unix epoch
//     (as a number or a string of digits).
//   - DATE "YYYY-MM-DD", TIME "HH:MM:SS[.ffffff]", DATETIME "YYYY-MM-DD[T ]HH:MM:SS[.ffffff]".
//   - NUMERIC/BIGNUMERIC: a number or a decimal string; more fractional digits than the
//     type's scale (9 / 38) are an error unless they are zeros.
//   - GEOGRAPHY: a string (WKT or GeoJSON text). JSON: a string holding JSON text, or any
//     other JSON value, taken as its text.
//   - STRUCT: an object. REPEATED: an array (null = empty); null elements are an error.
//   - RANGE<T>: {"start": T|null, "end": T|null} or the string "[start, end)" with
//     UNBOUNDED or NULL for an open side.
//   - null or a missing key leaves a NULLABLE column unset (the table default applies);
//     for a REQUIRED column it is an error.
//
// Column names match case-insensitively, as BigQuery's do. A key that names no
// column is an error with UnknownReject and skipped with UnknownIgnore.
//
// Options.InsertAll reads TIMESTAMP, DATETIME and TIME as tabledata.insertAll
// does instead: a TIMESTAMP number (or a string holding only a decimal
// number) is seconds since the Unix epoch, with up to microsecond fractions
// ("1700000000.25"), and digits past the microsecond in a civil time string
// are dropped (the Go client sends time.Time with nanoseconds); a REQUIRED
// column with a default value may be missing (the server applies the
// default).
package rows

import (
	"fmt"
	"strings"
	"sync"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"cloud.google.com/go/bigquery/storage/managedwriter/adapt"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

// UnknownFields says what Append does with a JSON key that names no column.
type UnknownFields int

const (
	// UnknownReject makes such a record fail with a RecordError.
	UnknownReject UnknownFields = iota
	// UnknownIgnore skips the key and its value.
	UnknownIgnore
)

// ParseUnknownFields parses the --unknown-fields flag values "reject" and "ignore".
func ParseUnknownFields(s string) (UnknownFields, error) {
	switch s {
	case "reject":
		return UnknownReject, nil
	case "ignore":
		return UnknownIgnore, nil
	}
	return 0, fmt.Errorf("rows: unknown-fields must be reject or ignore, not %q", s)
}

// maxDepth bounds JSON nesting (BigQuery allows 15 levels of STRUCT; arrays
// and RANGE add at most one level each).
const maxDepth = 64

// Mapper maps JSON records to proto rows of one table schema. It is
// immutable after New and safe for concurrent use.
type Mapper struct {
	schema    *storagepb.TableSchema
	desc      *descriptorpb.DescriptorProto
	root      *msgPlan
	unknown   UnknownFields
	insertAll bool
}

// Options configure NewWithOptions.
type Options struct {
	// Unknown says what to do with a key that names no column.
	Unknown UnknownFields
	// InsertAll reads times as tabledata.insertAll does (see the package
	// comment); the default is bqstore ingest's convention.
	InsertAll bool
}

// msgPlan is the encoding plan of one message: the table or a STRUCT.
type msgPlan struct {
	fields []fieldPlan
	byName map[string]int // lower-cased column name -> index into fields
}

type fieldPlan struct {
	name     string // column name as in the schema
	num      protowire.Number
	typ      storagepb.TableFieldSchema_Type
	required bool
	// hasDefault: the column has a defaultValueExpression.
	hasDefault bool
	repeated   bool
	packed     bool     // repeated scalar numeric: packed encoding (adapt's proto2 choice)
	sub        *msgPlan // STRUCT fields
	elem       storagepb.TableFieldSchema_Type
}

// New builds a Mapper for schema. It fails if adapt cannot derive a
// descriptor for it or if a column has a type rows cannot encode.
func New(schema *storagepb.TableSchema, unknown UnknownFields) (*Mapper, error) {
	return NewWithOptions(schema, Options{Unknown: unknown})
}

// NewWithOptions is New with Options.
func NewWithOptions(schema *storagepb.TableSchema, opts Options) (*Mapper, error) {
	if schema == nil || len(schema.GetFields()) == 0 {
		return nil, fmt.Errorf("rows: empty table schema")
	}
	root, err := planMessage(schema.GetFields(), "")
	if err != nil {
		return nil, err
	}
	d, err := adapt.StorageSchemaToProto2Descriptor(schema, "root")
	if err != nil {
		return nil, fmt.Errorf("rows: proto descriptor: %w", err)
	}
	md, ok := d.(protoreflect.MessageDescriptor)
	if !ok {
		return nil, fmt.Errorf("rows: adapt returned %T, not a message descriptor", d)
	}
	dp, err := adapt.NormalizeDescriptor(md)
	if err != nil {
		return nil, fmt.Errorf("rows: normalize descriptor: %w", err)
	}
	return &Mapper{schema: schema, desc: dp, root: root, unknown: opts.Unknown, insertAll: opts.InsertAll}, nil
}

// Descriptor returns the normalized descriptor to send as
// AppendRowsRequest.proto_rows.writer_schema.proto_descriptor. The caller
// must not modify it.
func (m *Mapper) Descriptor() *descriptorpb.DescriptorProto { return m.desc }

// Schema returns the table schema the Mapper was built from.
func (m *Mapper) Schema() *storagepb.TableSchema { return m.schema }

func planMessage(fields []*storagepb.TableFieldSchema, prefix string) (*msgPlan, error) {
	p := &msgPlan{fields: make([]fieldPlan, len(fields)), byName: make(map[string]int, len(fields))}
	for i, f := range fields {
		path := prefix + f.GetName()
		fp := fieldPlan{
			name:       f.GetName(),
			num:        protowire.Number(i + 1),
			typ:        f.GetType(),
			required:   f.GetMode() == storagepb.TableFieldSchema_REQUIRED,
			hasDefault: f.GetDefaultValueExpression() != "",
			repeated:   f.GetMode() == storagepb.TableFieldSchema_REPEATED,
		}
		switch f.GetType() {
		case storagepb.TableFieldSchema_STRUCT:
			if len(f.GetFields()) == 0 {
				return nil, fmt.Errorf("rows: column %s: STRUCT without fields", path)
			}
			sub, err := planMessage(f.GetFields(), path+".")
			if err != nil {
				return nil, err
			}
			fp.sub = sub
		case storagepb.TableFieldSchema_RANGE:
			fp.elem = f.GetRangeElementType().GetType()
			switch fp.elem {
			case storagepb.TableFieldSchema_DATE, storagepb.TableFieldSchema_DATETIME, storagepb.TableFieldSchema_TIMESTAMP:
			default:
				return nil, fmt.Errorf("rows: column %s: RANGE of %s is not supported", path, fp.elem)
			}
		case storagepb.TableFieldSchema_INT64, storagepb.TableFieldSchema_DOUBLE, storagepb.TableFieldSchema_BOOL,
			storagepb.TableFieldSchema_DATE, storagepb.TableFieldSchema_DATETIME, storagepb.TableFieldSchema_TIME,
			storagepb.TableFieldSchema_TIMESTAMP:
			fp.packed = fp.repeated
		case storagepb.TableFieldSchema_STRING, storagepb.TableFieldSchema_BYTES, storagepb.TableFieldSchema_NUMERIC,
			storagepb.TableFieldSchema_BIGNUMERIC, storagepb.TableFieldSchema_GEOGRAPHY, storagepb.TableFieldSchema_JSON:
		default:
			return nil, fmt.Errorf("rows: column %s: type %s is not supported", path, f.GetType())
		}
		key := strings.ToLower(f.GetName())
		if _, dup := p.byName[key]; dup {
			return nil, fmt.Errorf("rows: column %s: duplicate name", path)
		}
		p.byName[key] = i
		p.fields[i] = fp
	}
	return p, nil
}

var decoders = sync.Pool{New: func() any { return new(decoder) }}

// RecordError is a record that does not fit the schema or is not valid
// JSON. Path names the column ("a.b[2].c"), empty for the record as a whole;
// Offset is the byte position in the record where the problem was found.
type RecordError struct {
	Path   string
	Offset int
	Reason string
	// UnknownColumn is set when a key names no column (UnknownReject): a
	// caller may retry the record once with a fresher table schema.
	UnknownColumn bool
}

func (e *RecordError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("rows: record at byte %d: %s", e.Offset, e.Reason)
	}
	return fmt.Sprintf("rows: column %s at byte %d: %s", e.Path, e.Offset, e.Reason)
}

// Append parses one JSON object and appends its serialized proto row to
// dst. On error dst is returned truncated to its original length together
// with a *RecordError. record is not retained.
func (m *Mapper) Append(dst []byte, record []byte) ([]byte, error) {
	d := decoders.Get().(*decoder)
	*d = decoder{buf: record, unknown: m.unknown, insertAll: m.insertAll, path: d.path[:0], scratch: d.scratch[:0], seen: d.seen}
	start := len(dst)
	d.skipSpace()
	out, err := d.message(dst, m.root, 0)
	if err == nil {
		d.skipSpace()
		if d.pos != len(d.buf) {
			err = d.fail("unexpected data after the record")
		}
	}
	d.buf = nil
	if cap(d.scratch) > 1<<16 {
		d.scratch = nil
	}
	decoders.Put(d)
	if err != nil {
		return dst[:start], err
	}
	return out, nil
}
