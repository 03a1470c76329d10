// Package avroenc produces the Avro form of the Read API: the JSON schema of
// ReadSession.avro_schema and the rows of ReadRowsResponse.avro_rows, binary
// encoded Avro records concatenated with no container-file header (clients
// decode them one after another, row_count times, with the session schema).
//
// The schema follows the Storage Read API's Avro mapping: a top-level record
// named __root__ with no namespace; NULLABLE fields are ["null", T];
// REPEATED fields are {"type":"array","items":T}, never NULL (a NULL list
// is written as an empty array); INTEGER long; FLOAT double; BOOLEAN
// boolean; STRING string; BYTES bytes; NUMERIC bytes decimal(38, 9);
// BIGNUMERIC bytes decimal(77, 38); TIMESTAMP long timestamp-micros; DATE
// int date; DATETIME string with logicalType datetime
// (YYYY-MM-DDTHH:MM:SS[.ffffff]); TIME long time-micros; GEOGRAPHY, JSON and
// INTERVAL string with sqlType GEOGRAPHY, JSON and INTERVAL; RECORD a nested
// record; RANGE a record {start, end} of nullable bounds.
//
// Avro requires the full names of named types to be unique, so a nested
// record is named after its field with the path of its parents as namespace
// ("__root__.rec" for the record of column rec.inner: full name
// __root__.rec.inner).
//
// The rows are encoded from the engine's Arrow columns, whose types follow
// the Read API's Arrow mapping; a column whose Arrow type disagrees with its
// field, or a NULL where the field is REQUIRED or inside an array, is an
// error naming the field, never a panic.
package avroenc

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/bqstore/bqstore/internal/rowjson"
	"github.com/bqstore/bqstore/internal/schema"
)

// RootName is the name of the top-level record of every Read API Avro schema.
const RootName = "__root__"

// Schema returns the Avro JSON schema of the (possibly projected) table
// schema s, the string of ReadSession.avro_schema.schema.
func Schema(s *schema.Schema) (string, error) {
	if s == nil {
		return "", fmt.Errorf("avroenc: nil schema")
	}
	b := []byte(`{"type":"record","name":"` + RootName + `","fields":`)
	b, err := appendFields(b, s.Fields, RootName, "")
	if err != nil {
		return "", err
	}
	b = append(b, '}')
	return string(b), nil
}

func appendFields(b []byte, fields []*schema.Field, namespace, path string) ([]byte, error) {
	b = append(b, '[')
	for i, f := range fields {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = appendJSON(b, f.Name)
		b = append(b, `,"type":`...)
		var err error
		switch f.EffectiveMode() {
		case schema.Repeated:
			b = append(b, `{"type":"array","items":`...)
			b, err = appendType(b, f, namespace, path+f.Name)
			b = append(b, '}')
		case schema.Required:
			b, err = appendType(b, f, namespace, path+f.Name)
		default:
			b = append(b, `["null",`...)
			b, err = appendType(b, f, namespace, path+f.Name)
			b = append(b, ']')
		}
		if err != nil {
			return nil, err
		}
		b = append(b, '}')
	}
	return append(b, ']'), nil
}

// appendType appends the Avro type of f's values (ignoring its mode).
func appendType(b []byte, f *schema.Field, namespace, path string) ([]byte, error) {
	switch f.Type {
	case schema.Integer:
		return append(b, `"long"`...), nil
	case schema.Float:
		return append(b, `"double"`...), nil
	case schema.Boolean:
		return append(b, `"boolean"`...), nil
	case schema.String:
		return append(b, `"string"`...), nil
	case schema.Bytes:
		return append(b, `"bytes"`...), nil
	case schema.Numeric:
		return append(b, `{"type":"bytes","logicalType":"decimal","precision":38,"scale":9}`...), nil
	case schema.BigNumeric:
		return append(b, `{"type":"bytes","logicalType":"decimal","precision":77,"scale":38}`...), nil
	case schema.Timestamp:
		return append(b, `{"type":"long","logicalType":"timestamp-micros"}`...), nil
	case schema.Date:
		return append(b, `{"type":"int","logicalType":"date"}`...), nil
	case schema.DateTime:
		return append(b, `{"type":"string","logicalType":"datetime"}`...), nil
	case schema.Time:
		return append(b, `{"type":"long","logicalType":"time-micros"}`...), nil
	case schema.Geography:
		return append(b, `{"type":"string","sqlType":"GEOGRAPHY"}`...), nil
	case schema.JSON:
		return append(b, `{"type":"string","sqlType":"JSON"}`...), nil
	case schema.Interval:
		return append(b, `{"type":"string","sqlType":"INTERVAL"}`...), nil
	case schema.Range:
		elem := schema.Timestamp
		if f.RangeElementType != nil {
			elem = f.RangeElementType.Type
		}
		switch elem {
		case schema.Date, schema.DateTime, schema.Timestamp:
		default:
			return nil, fmt.Errorf("avroenc: field %q: unsupported RANGE element type %s", path, elem)
		}
		bounds := []*schema.Field{
			{Name: "start", Type: elem, Mode: schema.Nullable},
			{Name: "end", Type: elem, Mode: schema.Nullable},
		}
		return appendRecord(b, f.Name, bounds, namespace, path)
	case schema.Record:
		return appendRecord(b, f.Name, f.Fields, namespace, path)
	}
	return nil, fmt.Errorf("avroenc: field %q: unsupported type %s", path, f.Type)
}

func appendRecord(b []byte, name string, fields []*schema.Field, namespace, path string) ([]byte, error) {
	b = append(b, `{"type":"record","name":`...)
	b = appendJSON(b, name)
	b = append(b, `,"namespace":`...)
	b = appendJSON(b, namespace)
	b = append(b, `,"fields":`...)
	b, err := appendFields(b, fields, namespace+"."+name, path+".")
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

func appendJSON(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}

// Encoder encodes records of one (possibly projected) table schema as Avro
// binary rows. It is immutable and safe for concurrent use.
type Encoder struct {
	fields []*schema.Field
}

// NewEncoder returns an Encoder for records whose columns are, in order, the
// fields of s (the schema given to Schema).
func NewEncoder(s *schema.Schema) *Encoder {
	return &Encoder{fields: s.Fields}
}

// Encode appends the Avro binary encoding of every row of rec to dst and
// returns the extended slice. On error dst is returned unchanged in length.
func (e *Encoder) Encode(rec arrow.Record, dst []byte) ([]byte, error) {
	if int(rec.NumCols()) != len(e.fields) {
		return dst, fmt.Errorf("avroenc: record has %d columns, the schema %d fields", rec.NumCols(), len(e.fields))
	}
	st := &state{}
	cols := make([]writer, len(e.fields))
	for i, f := range e.fields {
		w, err := newFieldWriter(f, rec.Column(i), f.Name, st)
		if err != nil {
			return dst, err
		}
		cols[i] = w
	}
	start := len(dst)
	n := int(rec.NumRows())
	for row := 0; row < n; row++ {
		for _, w := range cols {
			dst = w(dst, row)
		}
		if st.err != nil {
			return dst[:start], fmt.Errorf("%w (row %d)", st.err, row)
		}
	}
	return dst, nil
}

// state carries the first error a writer meets (a NULL where Avro has no
// null); Encode checks it after each row.
type state struct{ err error }

func (s *state) fail(format string, args ...any) {
	if s.err == nil {
		s.err = fmt.Errorf(format, args...)
	}
}

type writer func(dst []byte, row int) []byte

// newFieldWriter writes one field according to its mode.
func newFieldWriter(f *schema.Field, arr arrow.Array, path string, st *state) (writer, error) {
	switch f.EffectiveMode() {
	case schema.Repeated:
		list, ok := arr.(*array.List)
		if !ok {
			return nil, typeError(path, f, arr)
		}
		values := list.ListValues()
		elem, err := newValueWriter(f, values, path, st)
		if err != nil {
			return nil, err
		}
		elem = required(elem, values, path+" (array element)", st)
		return func(dst []byte, row int) []byte {
			if list.IsValid(row) {
				s, e := list.ValueOffsets(row)
				if e > s {
					dst = appendLong(dst, e-s)
					for j := s; j < e; j++ {
						dst = elem(dst, int(j))
					}
				}
			}
			return append(dst, 0) // end of blocks
		}, nil
	case schema.Required:
		w, err := newValueWriter(f, arr, path, st)
		if err != nil {
			return nil, err
		}
		return required(w, arr, path, st), nil
	default:
		w, err := newValueWriter(f, arr, path, st)
		if err != nil {
			return nil, err
		}
		return func(dst []byte, row int) []byte {
			if arr.IsNull(row) {
				return append(dst, 0) // union branch 0: null
			}
			return w(append(dst, 2), row) // union branch 1
		}, nil
	}
}

func required(w writer, arr arrow.Array, path string, st *state) writer {
	if arr.NullN() == 0 {
		return w
	}
	return func(dst []byte, row int) []byte {
		if arr.IsNull(row) {
			st.fail("avroenc: field %q: NULL value where the Avro type has no null", path)
			return dst
		}
		return w(dst, row)
	}
}

// newValueWriter writes a non-NULL value of f's type.
func newValueWriter(f *schema.Field, arr arrow.Array, path string, st *state) (writer, error) {
	bad := func() (writer, error) { return nil, typeError(path, f, arr) }
	switch f.Type {
	case schema.Integer:
		a, ok := arr.(*array.Int64)
		if !ok {
			return bad()
		}
		return func(dst []byte, row int) []byte { return appendLong(dst, a.Value(row)) }, nil
	case schema.Float:
		a, ok := arr.(*array.Float64)
		if !ok {
			return bad()
		}
		return func(dst []byte, row int) []byte {
			return binary.LittleEndian.AppendUint64(dst, math.Float64bits(a.Value(row)))
		}, nil
	case schema.Boolean:
		a, ok := arr.(*array.Boolean)
		if !ok {
			return bad()
		}
		return func(dst []byte, row int) []byte {
			if a.Value(row) {
				return append(dst, 1)
			}
			return append(dst, 0)
		}, nil
	case schema.String, schema.Geography, schema.JSON:
		a, ok := arr.(*array.String)
		if !ok {
			return bad()
		}
		return func(dst []byte, row int) []byte {
			v := a.Value(row)
			return append(appendLong(dst, int64(len(v))), v...)
		}, nil
	case schema.Bytes:
		a, ok := arr.(*array.Binary)
		if !ok {
			return bad()
		}
		return func(dst []byte, row int) []byte {
			v := a.Value(row)
			return append(appendLong(dst, int64(len(v))), v...)
		}, nil
	case schema.Numeric:
		a, ok := arr.(*array.Decimal128)
		if !ok || a.DataType().(*arrow.Decimal128Type).Scale != 9 {
			return bad()
		}
		return func(dst []byte, row int) []byte {
			v := a.Value(row)
			var be [16]byte
			binary.BigEndian.PutUint64(be[0:], uint64(v.HighBits()))
			binary.BigEndian.PutUint64(be[8:], v.LowBits())
			return appendTwosComplement(dst, be[:])
		}, nil
	case schema.BigNumeric:
		a, ok := arr.(*array.Decimal256)
		if !ok || a.DataType().(*arrow.Decimal256Type).Scale != 38 {
			return bad()
		}
		return func(dst []byte, row int) []byte {
			w := a.Value(row).Array() // little-endian word order
			var be [32]byte
			for i := range 4 {
				binary.BigEndian.PutUint64(be[8*i:], w[3-i])
			}
			return appendTwosComplement(dst, be[:])
		}, nil
	case schema.Timestamp:
		a, ok := arr.(*array.Timestamp)
		if !ok || a.DataType().(*arrow.TimestampType).Unit != arrow.Microsecond {
			return bad()
		}
		return func(dst []byte, row int) []byte { return appendLong(dst, int64(a.Value(row))) }, nil
	case schema.DateTime:
		a, ok := arr.(*array.Timestamp)
		if !ok || a.DataType().(*arrow.TimestampType).Unit != arrow.Microsecond {
			return bad()
		}
		return func(dst []byte, row int) []byte {
			return appendShortString(dst, func(d []byte) []byte { return rowjson.AppendDatetime(d, int64(a.Value(row))) })
		}, nil
	case schema.Date:
		a, ok := arr.(*array.Date32)
		if !ok {
			return bad()
		}
		return func(dst []byte, row int) []byte { return appendLong(dst, int64(a.Value(row))) }, nil
	case schema.Time:
		a, ok := arr.(*array.Time64)
		if !ok || a.DataType().(*arrow.Time64Type).Unit != arrow.Microsecond {
			return bad()
		}
		return func(dst []byte, row int) []byte { return appendLong(dst, int64(a.Value(row))) }, nil
	case schema.Interval:
		a, ok := arr.(*array.MonthDayNanoInterval)
		if !ok {
			return bad()
		}
		return func(dst []byte, row int) []byte {
			return appendShortString(dst, func(d []byte) []byte { return rowjson.AppendInterval(d, a.Value(row)) })
		}, nil
	case schema.Range:
		s, ok := arr.(*array.Struct)
		if !ok || s.NumField() != 2 {
			return bad()
		}
		elem := schema.Timestamp
		if f.RangeElementType != nil {
			elem = f.RangeElementType.Type
		}
		bounds := []*schema.Field{
			{Name: "start", Type: elem, Mode: schema.Nullable},
			{Name: "end", Type: elem, Mode: schema.Nullable},
		}
		return newRecordWriter(bounds, s, path, st)
	case schema.Record:
		s, ok := arr.(*array.Struct)
		if !ok || s.NumField() != len(f.Fields) {
			return bad()
		}
		return newRecordWriter(f.Fields, s, path, st)
	}
	return nil, fmt.Errorf("avroenc: field %q: unsupported type %s", path, f.Type)
}

func newRecordWriter(fields []*schema.Field, s *array.Struct, path string, st *state) (writer, error) {
	children := make([]writer, len(fields))
	for i, c := range fields {
		w, err := newFieldWriter(c, s.Field(i), path+"."+c.Name, st)
		if err != nil {
			return nil, err
		}
		children[i] = w
	}
	return func(dst []byte, row int) []byte {
		for _, w := range children {
			dst = w(dst, row)
		}
		return dst
	}, nil
}

func typeError(path string, f *schema.Field, arr arrow.Array) error {
	return fmt.Errorf("avroenc: field %q: %s %s column has Arrow type %s", path, f.EffectiveMode(), f.Type, arr.DataType())
}

// appendLong appends v in Avro's zig-zag varint encoding (int and long
// share it).
func appendLong(dst []byte, v int64) []byte {
	u := uint64(v<<1) ^ uint64(v>>63)
	for u >= 0x80 {
		dst = append(dst, byte(u)|0x80)
		u >>= 7
	}
	return append(dst, byte(u))
}

// appendShortString appends an Avro string produced by format. The length
// prefix is reserved as one byte (lengths below 64) and fixed up afterwards,
// so the text is formatted in place.
func appendShortString(dst []byte, format func([]byte) []byte) []byte {
	pos := len(dst)
	dst = format(append(dst, 0))
	n := len(dst) - pos - 1
	if n < 64 {
		dst[pos] = byte(n << 1)
		return dst
	}
	text := append([]byte(nil), dst[pos+1:]...)
	return append(appendLong(dst[:pos], int64(n)), text...)
}

// appendTwosComplement appends the Avro decimal bytes of a big-endian
// two's-complement integer: length-prefixed, with redundant leading sign
// bytes removed (the minimal encoding; zero is one 0x00 byte).
func appendTwosComplement(dst []byte, be []byte) []byte {
	i := 0
	for i < len(be)-1 {
		if be[i] == 0x00 && be[i+1]&0x80 == 0 || be[i] == 0xff && be[i+1]&0x80 != 0 {
			i++
			continue
		}
		break
	}
	v := be[i:]
	return append(appendLong(dst, int64(len(v))), v...)
}
