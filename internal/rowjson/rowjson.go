// Package rowjson writes Arrow records as BigQuery's REST API returns table
// rows: the tabledata.list response, whose rows are
//
//	{"f":[{"v":<cell>}, ...]}
//
// where a cell is null, a JSON string in BigQuery's text form of the value
// (every scalar, numbers included, is a string), a nested {"f":[...]} for a
// RECORD, or an array of {"v":<cell>} for a REPEATED field. The official
// clients (Go cloud.google.com/go/bigquery value.go convertRow, Node, Python)
// parse exactly this shape; the text forms are in format.go.
//
// The Arrow columns follow the engine's mapping of BigQuery types (the Read
// API's Arrow types). A column whose Arrow type does not match its BigQuery
// field is an error naming the field, never a panic.
package rowjson

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/bqstore/bqstore/internal/schema"
)

// Options are the tabledata.list format options.
type Options struct {
	// UseInt64Timestamp is formatOptions.useInt64Timestamp: TIMESTAMP cells
	// are microseconds since the epoch instead of floating-point seconds.
	UseInt64Timestamp bool
}

// Formatter writes the rows of records of one (possibly projected) table
// schema. It is immutable and safe for concurrent use.
type Formatter struct {
	fields []*schema.Field
	opts   Options
}

// NewFormatter returns a Formatter for records whose columns are, in order,
// the fields of s.
func NewFormatter(s *schema.Schema, opts Options) *Formatter {
	return &Formatter{fields: s.Fields, opts: opts}
}

// AppendRows appends the rows [from, to) of rec to dst as comma-separated
// {"f":[...]} objects (no enclosing brackets), so that pages can be built
// from several records.
func (f *Formatter) AppendRows(dst []byte, rec arrow.Record, from, to int) ([]byte, error) {
	if int(rec.NumCols()) != len(f.fields) {
		return dst, fmt.Errorf("rowjson: record has %d columns, the schema %d fields", rec.NumCols(), len(f.fields))
	}
	if from < 0 || to > int(rec.NumRows()) || from > to {
		return dst, fmt.Errorf("rowjson: rows [%d, %d) out of range of a record of %d rows", from, to, rec.NumRows())
	}
	cols := make([]cellWriter, len(f.fields))
	for i, fld := range f.fields {
		w, err := newCellWriter(fld, rec.Column(i), fld.Name, f.opts)
		if err != nil {
			return dst, err
		}
		cols[i] = w
	}
	for row := from; row < to; row++ {
		if row > from {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"f":[`...)
		for i, w := range cols {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"v":`...)
			dst = w(dst, row)
			dst = append(dst, '}')
		}
		dst = append(dst, "]}"...)
	}
	return dst, nil
}

// cellWriter appends the JSON value of one cell (the part after "v":).
type cellWriter func(dst []byte, row int) []byte

func newCellWriter(f *schema.Field, arr arrow.Array, path string, opts Options) (cellWriter, error) {
	if f.EffectiveMode() == schema.Repeated {
		list, ok := arr.(*array.List)
		if !ok {
			return nil, typeError(path, f, arr)
		}
		elem, err := newValueWriter(f, list.ListValues(), path, opts)
		if err != nil {
			return nil, err
		}
		return func(dst []byte, row int) []byte {
			// BigQuery has no NULL arrays: a NULL list reads as [].
			dst = append(dst, '[')
			if list.IsValid(row) {
				start, end := list.ValueOffsets(row)
				for j := start; j < end; j++ {
					if j > start {
						dst = append(dst, ',')
					}
					dst = append(dst, `{"v":`...)
					dst = elem(dst, int(j))
					dst = append(dst, '}')
				}
			}
			return append(dst, ']')
		}, nil
	}
	return newValueWriter(f, arr, path, opts)
}

// newValueWriter writes one value of f's type, ignoring its mode; NULL is
// written as null.
func newValueWriter(f *schema.Field, arr arrow.Array, path string, opts Options) (cellWriter, error) {
	nullable := func(w cellWriter) cellWriter {
		if arr.NullN() == 0 {
			return w
		}
		return func(dst []byte, row int) []byte {
			if arr.IsNull(row) {
				return append(dst, "null"...)
			}
			return w(dst, row)
		}
	}
	quoted := func(w cellWriter) cellWriter {
		return nullable(func(dst []byte, row int) []byte {
			dst = append(dst, '"')
			dst = w(dst, row)
			return append(dst, '"')
		})
	}
	bad := func() (cellWriter, error) { return nil, typeError(path, f, arr) }
	switch f.Type {
	case schema.Integer:
		a, ok := arr.(*array.Int64)
		if !ok {
			return bad()
		}
		return quoted(func(dst []byte, row int) []byte { return strconv.AppendInt(dst, a.Value(row), 10) }), nil
	case schema.Float:
		a, ok := arr.(*array.Float64)
		if !ok {
			return bad()
		}
		return quoted(func(dst []byte, row int) []byte { return AppendFloat(dst, a.Value(row)) }), nil
	case schema.Boolean:
		a, ok := arr.(*array.Boolean)
		if !ok {
			return bad()
		}
		return quoted(func(dst []byte, row int) []byte { return strconv.AppendBool(dst, a.Value(row)) }), nil
	case schema.String, schema.Geography, schema.JSON:
		a, ok := arr.(*array.String)
		if !ok {
			return bad()
		}
		return nullable(func(dst []byte, row int) []byte { return AppendJSONString(dst, a.Value(row)) }), nil
	case schema.Bytes:
		a, ok := arr.(*array.Binary)
		if !ok {
			return bad()
		}
		return quoted(func(dst []byte, row int) []byte { return base64.StdEncoding.AppendEncode(dst, a.Value(row)) }), nil
	case schema.Numeric:
		a, ok := arr.(*array.Decimal128)
		if !ok {
			return bad()
		}
		scale := int(a.DataType().(*arrow.Decimal128Type).Scale)
		return quoted(func(dst []byte, row int) []byte { return AppendDecimal(dst, a.Value(row).BigInt(), scale) }), nil
	case schema.BigNumeric:
		a, ok := arr.(*array.Decimal256)
		if !ok {
			return bad()
		}
		scale := int(a.DataType().(*arrow.Decimal256Type).Scale)
		return quoted(func(dst []byte, row int) []byte { return AppendDecimal(dst, a.Value(row).BigInt(), scale) }), nil
	case schema.Timestamp:
		a, ok := arr.(*array.Timestamp)
		if !ok || a.DataType().(*arrow.TimestampType).Unit != arrow.Microsecond {
			return bad()
		}
		return quoted(func(dst []byte, row int) []byte {
			return AppendTimestampCell(dst, int64(a.Value(row)), opts.UseInt64Timestamp)
		}), nil
	case schema.DateTime:
		a, ok := arr.(*array.Timestamp)
		if !ok || a.DataType().(*arrow.TimestampType).Unit != arrow.Microsecond {
			return bad()
		}
		return quoted(func(dst []byte, row int) []byte { return AppendDatetime(dst, int64(a.Value(row))) }), nil
	case schema.Date:
		a, ok := arr.(*array.Date32)
		if !ok {
			return bad()
		}
		return quoted(func(dst []byte, row int) []byte { return AppendDate(dst, int32(a.Value(row))) }), nil
	case schema.Time:
		a, ok := arr.(*array.Time64)
		if !ok || a.DataType().(*arrow.Time64Type).Unit != arrow.Microsecond {
			return bad()
		}
		return quoted(func(dst []byte, row int) []byte { return AppendTime(dst, int64(a.Value(row))) }), nil
	case schema.Interval:
		a, ok := arr.(*array.MonthDayNanoInterval)
		if !ok {
			return bad()
		}
		return quoted(func(dst []byte, row int) []byte { return AppendInterval(dst, a.Value(row)) }), nil
	case schema.Range:
		return newRangeWriter(f, arr, path, opts)
	case schema.Record:
		st, ok := arr.(*array.Struct)
		if !ok || st.NumField() != len(f.Fields) {
			return bad()
		}
		children := make([]cellWriter, len(f.Fields))
		for i, c := range f.Fields {
			w, err := newCellWriter(c, st.Field(i), path+"."+c.Name, opts)
			if err != nil {
				return nil, err
			}
			children[i] = w
		}
		return nullable(func(dst []byte, row int) []byte {
			dst = append(dst, `{"f":[`...)
			for i, w := range children {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = append(dst, `{"v":`...)
				dst = w(dst, row)
				dst = append(dst, '}')
			}
			return append(dst, "]}"...)
		}), nil
	}
	return nil, fmt.Errorf("rowjson: field %q: unsupported type %s", path, f.Type)
}

// newRangeWriter writes a RANGE as tabledata.list does: "[start, end)" with
// UNBOUNDED for a NULL bound.
func newRangeWriter(f *schema.Field, arr arrow.Array, path string, opts Options) (cellWriter, error) {
	st, ok := arr.(*array.Struct)
	if !ok || st.NumField() != 2 {
		return nil, typeError(path, f, arr)
	}
	elemType := schema.Timestamp
	if f.RangeElementType != nil {
		elemType = f.RangeElementType.Type
	}
	var bounds [2]cellWriter
	for i := range bounds {
		b := st.Field(i)
		var w cellWriter
		switch elemType {
		case schema.Date:
			a, ok := b.(*array.Date32)
			if !ok {
				return nil, typeError(path, f, arr)
			}
			w = func(dst []byte, row int) []byte { return AppendDate(dst, int32(a.Value(row))) }
		case schema.DateTime:
			a, ok := b.(*array.Timestamp)
			if !ok {
				return nil, typeError(path, f, arr)
			}
			w = func(dst []byte, row int) []byte { return AppendDatetime(dst, int64(a.Value(row))) }
		case schema.Timestamp:
			a, ok := b.(*array.Timestamp)
			if !ok {
				return nil, typeError(path, f, arr)
			}
			w = func(dst []byte, row int) []byte {
				return AppendTimestampCell(dst, int64(a.Value(row)), opts.UseInt64Timestamp)
			}
		default:
			return nil, fmt.Errorf("rowjson: field %q: unsupported RANGE element type %s", path, elemType)
		}
		bounds[i] = func(dst []byte, row int) []byte {
			if b.IsNull(row) {
				return append(dst, "UNBOUNDED"...)
			}
			return w(dst, row)
		}
	}
	return func(dst []byte, row int) []byte {
		if st.IsNull(row) {
			return append(dst, "null"...)
		}
		dst = append(dst, `"[`...)
		dst = bounds[0](dst, row)
		dst = append(dst, ", "...)
		dst = bounds[1](dst, row)
		return append(dst, `)"`...)
	}, nil
}

func typeError(path string, f *schema.Field, arr arrow.Array) error {
	return fmt.Errorf("rowjson: field %q: %s %s column has Arrow type %s", path, f.EffectiveMode(), f.Type, arr.DataType())
}

// AppendJSONString appends s as a JSON string. Invalid UTF-8 is replaced
// with U+FFFD, as encoding/json does; U+2028 and U+2029 are escaped.
func AppendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

const hex = "0123456789abcdef"

// Page is one tabledata.list response.
type Page struct {
	// ETag is the response etag (BigQuery sends one; clients ignore it).
	ETag string
	// TotalRows is the number of rows in the table.
	TotalRows int64
	// PageToken continues the listing; empty on the last page.
	PageToken string
	// Rows are the comma-separated rows from Formatter.AppendRows.
	Rows []byte
}

// AppendPage appends the tabledata.list response JSON:
//
//	{"kind":"bigquery#tableDataList","etag":"...","totalRows":"N","pageToken":"...","rows":[...]}
//
// totalRows is a string (an int64 in the REST API's JSON); pageToken and
// rows are omitted when empty, as BigQuery does.
func AppendPage(dst []byte, p Page) []byte {
	dst = append(dst, `{"kind":"bigquery#tableDataList"`...)
	if p.ETag != "" {
		dst = append(dst, `,"etag":`...)
		dst = AppendJSONString(dst, p.ETag)
	}
	dst = append(dst, `,"totalRows":"`...)
	dst = strconv.AppendInt(dst, p.TotalRows, 10)
	dst = append(dst, '"')
	if p.PageToken != "" {
		dst = append(dst, `,"pageToken":`...)
		dst = AppendJSONString(dst, p.PageToken)
	}
	if len(p.Rows) > 0 {
		dst = append(dst, `,"rows":[`...)
		dst = append(dst, p.Rows...)
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// SelectFields returns the subset of s that selectedFields names
// (tabledata.list's comma-separated selectedFields, or the Read API's
// selected_fields): "a" selects column a, "a.b" field b of RECORD a; the
// result keeps table order. Names match case-insensitively. An empty
// selection returns s. A name matching no field is an error naming it.
func SelectFields(s *schema.Schema, selected []string) (*schema.Schema, error) {
	if len(selected) == 0 {
		return s, nil
	}
	type node struct {
		whole    bool
		children map[string]*node
		spelled  map[string]string
	}
	newNode := func() *node { return &node{children: map[string]*node{}, spelled: map[string]string{}} }
	root := newNode()
	for _, path := range selected {
		path = strings.TrimSpace(path)
		if path == "" {
			return nil, fmt.Errorf("rowjson: empty selected field")
		}
		n := root
		for _, part := range strings.Split(path, ".") {
			k := strings.ToLower(part)
			c, ok := n.children[k]
			if !ok {
				c = newNode()
				n.children[k] = c
				n.spelled[k] = path
			}
			n = c
		}
		n.whole = true
	}
	var sel func(fields []*schema.Field, n *node, prefix string) ([]*schema.Field, error)
	sel = func(fields []*schema.Field, n *node, prefix string) ([]*schema.Field, error) {
		var out []*schema.Field
		matched := map[string]bool{}
		for _, f := range fields {
			k := strings.ToLower(f.Name)
			c, ok := n.children[k]
			if !ok {
				continue
			}
			matched[k] = true
			if c.whole {
				out = append(out, f.Clone())
				continue
			}
			if f.Type != schema.Record {
				for ck := range c.children {
					return nil, fmt.Errorf("rowjson: selected field %q: %s%s is not a RECORD", c.spelled[ck], prefix, f.Name)
				}
			}
			sub, err := sel(f.Fields, c, prefix+f.Name+".")
			if err != nil {
				return nil, err
			}
			nf := f.Clone()
			nf.Fields = sub
			out = append(out, nf)
		}
		for k := range n.children {
			if !matched[k] {
				return nil, fmt.Errorf("rowjson: selected field %q not found in the table schema", n.spelled[k])
			}
		}
		return out, nil
	}
	fields, err := sel(s.Fields, root, "")
	if err != nil {
		return nil, err
	}
	return &schema.Schema{Fields: fields}, nil
}
