// Package arrowrows validates and conforms the Write API's Arrow input
// (AppendRowsRequest.arrow_rows: an IPC-encapsulated Schema message, sent
// once as the writer schema, and IPC RecordBatch messages) to a table's
// Arrow layout, schema.ToArrow.
//
// Input columns are matched to table columns by name, case-insensitively;
// an input column the table lacks is a *protorows.ExtraFieldError; an input
// type the Write API does not accept for the column's type is a
// *protorows.FieldTypeError. The accepted types follow Google's "Supported
// Apache Arrow data types" table: Boolean; Binary; Date(day), Utf8 or Int32
// for DATE; Timestamp(us, no zone) for DATETIME; Timestamp(us, UTC) for
// TIMESTAMP; Float32/Float64; signed (8..64 bit) and unsigned (8..32 bit,
// and 64 bit range-checked) integers; Utf8 for STRING, JSON and GEOGRAPHY
// (WKT or GeoJSON); Decimal128/Decimal256 of any precision and scale within
// NUMERIC's/BIGNUMERIC's range; Interval (YEAR_MONTH, DAY_TIME,
// MONTH_DAY_NANO) or Utf8 for INTERVAL; Struct{start, end} for RANGE (a NULL
// bound is unbounded); List for REPEATED (a NULL list is an error: the
// documentation asks for an empty list); Struct for RECORD. TIME, which the
// table omits, takes Time64(us) or Time32/Time64 of any unit that converts
// exactly, or Utf8. Large and view variants of Utf8, Binary and List are
// accepted too.
//
// Columns the input lacks are missing values, filled as protorows does
// (NULL, or the column's default under DEFAULT_VALUE; a REQUIRED column
// without one is a row error).
package arrowrows

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/bqstore/bqstore/internal/jsoncanon"
	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/schema/protorows"
)

// Decoder conforms record batches of one writer schema to one table. It
// holds no per-call state and is safe for concurrent use.
type Decoder struct {
	table       *schema.Schema
	target      *arrow.Schema
	input       *arrow.Schema
	schemaBytes []byte
	cols        []*conv // per table column
	srcIdx      []int   // input column of each table column, -1 if absent

	// Now is the clock of CURRENT_TIMESTAMP() and friends in defaults;
	// time.Now when nil.
	Now func() time.Time
}

// conv converts one input column (or nested field) to its table column.
type conv struct {
	path     string
	field    *schema.Field
	kind     kind
	required bool
	top      bool
	idx      int // top: the table column
	def      *protorows.Default
	scale    int32 // source decimal scale
	// RECORD and RANGE: per target child, the converter and the input
	// child index (-1: missing).
	children []*conv
	srcIdx   []int
	elem     *conv // REPEATED: the element converter
}

type kind uint8

const (
	kMissing kind = iota
	kInt          // signed and unsigned integers -> int64
	kUint64
	kFloat
	kBool
	kString // utf8 -> STRING (UTF-8, maxLength)
	kBytes
	kDate32
	kDateInt32
	kDateStr
	kDatetime
	kTimestamp
	kTime
	kTimeStr
	kDec128Num
	kDec256Num
	kDec128Big
	kDec256Big
	kGeo
	kJSON
	kIntervalMDN
	kIntervalDT
	kIntervalM
	kIntervalStr
	kStruct
	kList
)

// Compile reads the writer schema (an IPC-encapsulated Schema message) and
// compiles it against the table.
func Compile(serializedSchema []byte, table *schema.Schema) (*Decoder, error) {
	if err := checkMessage(serializedSchema, headerSchema); err != nil {
		return nil, fmt.Errorf("arrowrows: invalid Arrow schema: %w", err)
	}
	// No message can be larger than the bytes we hold: say so, or the
	// reader allocates whatever a corrupt length prefix claims.
	limit := int64(len(serializedSchema))
	r, err := newReader(bytes.NewReader(serializedSchema), limit)
	if err != nil {
		return nil, fmt.Errorf("arrowrows: invalid Arrow schema: %w", err)
	}
	in := r.Schema()
	r.Release()
	d := &Decoder{
		table:       table,
		target:      schema.ToArrow(table),
		input:       in,
		schemaBytes: bytes.Clone(serializedSchema),
		cols:        make([]*conv, len(table.Fields)),
		srcIdx:      make([]int, len(table.Fields)),
	}
	for i := range d.srcIdx {
		d.srcIdx[i] = -1
	}
	names := schema.IndexNames(table.Fields)
	for j, af := range in.Fields() {
		i := names.Lookup(af.Name)
		if i < 0 {
			return nil, &protorows.ExtraFieldError{Field: af.Name}
		}
		if d.srcIdx[i] >= 0 {
			return nil, fmt.Errorf("arrowrows: input fields %s and %s both write column %s", in.Field(d.srcIdx[i]).Name, af.Name, table.Fields[i].Name)
		}
		d.srcIdx[i] = j
	}
	for i, f := range table.Fields {
		var src arrow.DataType
		if d.srcIdx[i] >= 0 {
			src = in.Field(d.srcIdx[i]).Type
		}
		c, err := compileConv(f, src, f.Name, true, f.EffectiveMode() == schema.Repeated)
		if err != nil {
			return nil, err
		}
		c.idx = i
		d.cols[i] = c
	}
	return d, nil
}

// newReader is an IPC stream reader whose messages may not claim more than
// limit bytes. (ipc.NewReader does not pass its size limits on to its
// message reader, so build the message reader ourselves.)
func newReader(r io.Reader, limit int64) (*ipc.Reader, error) {
	mr := ipc.NewMessageReader(r, ipc.WithMetadataSizeLimit(limit), ipc.WithBodySizeLimit(limit))
	return ipc.NewReaderFromMessageReader(mr) // on error it has released mr
}

// Schema is the Arrow schema of the records Decode returns.
func (d *Decoder) Schema() *arrow.Schema { return d.target }

func compileConv(f *schema.Field, src arrow.DataType, path string, top, repeated bool) (*conv, error) {
	c := &conv{path: path, field: f, top: top, required: f.EffectiveMode() == schema.Required}
	if f.DefaultValueExpression != "" {
		def, err := protorows.CompileDefault(f)
		if err != nil {
			return nil, fmt.Errorf("arrowrows: column %s: %w", path, err)
		}
		c.def = def
	}
	if src == nil {
		c.kind = kMissing
		return c, nil
	}
	bad := func(reason string) error {
		ct := string(f.Type)
		if repeated {
			ct = "REPEATED " + ct
		}
		return &protorows.FieldTypeError{Field: path, ProtoType: "Arrow " + src.String(), ColumnType: ct, Reason: reason}
	}
	if repeated {
		var elem arrow.DataType
		switch t := src.(type) {
		case *arrow.ListType:
			elem = t.Elem()
		case *arrow.LargeListType:
			elem = t.Elem()
		case *arrow.ListViewType:
			return nil, bad("list views are not supported; send a List")
		default:
			return nil, bad("a REPEATED column takes an Arrow List")
		}
		ec, err := compileConv(f, elem, path, false, false)
		if err != nil {
			return nil, err
		}
		ec.def, ec.required = nil, true // elements are never NULL
		c.kind, c.elem = kList, ec
		return c, nil
	}
	id := src.ID()
	isSigned := id == arrow.INT8 || id == arrow.INT16 || id == arrow.INT32 || id == arrow.INT64
	isUnsigned := id == arrow.UINT8 || id == arrow.UINT16 || id == arrow.UINT32
	isStr := id == arrow.STRING || id == arrow.LARGE_STRING || id == arrow.STRING_VIEW
	isBin := id == arrow.BINARY || id == arrow.LARGE_BINARY || id == arrow.BINARY_VIEW || id == arrow.FIXED_SIZE_BINARY
	switch f.Type {
	case schema.Integer:
		switch {
		case isSigned || isUnsigned:
			c.kind = kInt
		case id == arrow.UINT64:
			c.kind = kUint64
		}
	case schema.Float:
		if id == arrow.FLOAT32 || id == arrow.FLOAT64 || id == arrow.FLOAT16 {
			c.kind = kFloat
		}
	case schema.Boolean:
		if id == arrow.BOOL {
			c.kind = kBool
		}
	case schema.String:
		if isStr {
			c.kind = kString
		}
	case schema.Bytes:
		if isBin {
			c.kind = kBytes
		}
	case schema.Date:
		switch {
		case id == arrow.DATE32:
			c.kind = kDate32
		case id == arrow.INT32:
			c.kind = kDateInt32
		case isStr:
			c.kind = kDateStr
		}
	case schema.DateTime:
		if t, ok := src.(*arrow.TimestampType); ok {
			if t.Unit != arrow.Microsecond || t.TimeZone != "" {
				return nil, bad("DATETIME takes Timestamp(MICROSECOND) without a time zone")
			}
			c.kind = kDatetime
		}
	case schema.Timestamp:
		if t, ok := src.(*arrow.TimestampType); ok {
			if t.Unit != arrow.Microsecond || !isUTC(t.TimeZone) {
				return nil, bad("TIMESTAMP takes Timestamp(MICROSECOND, UTC)")
			}
			c.kind = kTimestamp
		}
	case schema.Time:
		switch {
		case id == arrow.TIME32 || id == arrow.TIME64:
			c.kind = kTime
		case isStr:
			c.kind = kTimeStr
		}
	case schema.Numeric, schema.BigNumeric:
		big := f.Type == schema.BigNumeric
		maxScale, maxInt := int32(protorows.NumericScale), int32(29)
		if big {
			maxScale, maxInt = protorows.BigNumericScale, 39
		}
		var prec, scale int32
		switch t := src.(type) {
		case *arrow.Decimal128Type:
			prec, scale = t.Precision, t.Scale
			c.kind = pick(big, kDec128Big, kDec128Num)
		case *arrow.Decimal256Type:
			if !big {
				return nil, bad("NUMERIC takes Decimal128")
			}
			prec, scale = t.Precision, t.Scale
			c.kind = kDec256Big
		}
		if c.kind != 0 {
			if scale < 0 || scale > maxScale || prec-scale > maxInt {
				return nil, bad(fmt.Sprintf("precision %d and scale %d exceed %s's range", prec, scale, f.Type))
			}
			c.scale = scale
		}
	case schema.Geography:
		if isStr {
			c.kind = kGeo
		}
	case schema.JSON:
		if isStr {
			c.kind = kJSON
		}
	case schema.Interval:
		switch {
		case id == arrow.INTERVAL_MONTH_DAY_NANO:
			c.kind = kIntervalMDN
		case id == arrow.INTERVAL_DAY_TIME:
			c.kind = kIntervalDT
		case id == arrow.INTERVAL_MONTHS:
			c.kind = kIntervalM
		case isStr:
			c.kind = kIntervalStr
		}
	case schema.Range:
		st, ok := src.(*arrow.StructType)
		if !ok {
			break
		}
		et := schema.Timestamp
		if f.RangeElementType != nil {
			et = f.RangeElementType.Type
		}
		bounds := []*schema.Field{{Name: "start", Type: et}, {Name: "end", Type: et}}
		if err := compileStruct(c, bounds, st, path); err != nil {
			return nil, err
		}
		for _, ch := range c.children {
			if ch.kind == kMissing {
				return nil, bad("a RANGE struct has the fields start and end")
			}
		}
		c.kind = kStruct
	case schema.Record:
		st, ok := src.(*arrow.StructType)
		if !ok {
			break
		}
		if err := compileStruct(c, f.Fields, st, path); err != nil {
			return nil, err
		}
		c.kind = kStruct
	}
	if c.kind == kMissing {
		return nil, bad("")
	}
	return c, nil
}

func pick(b bool, x, y kind) kind {
	if b {
		return x
	}
	return y
}

func isUTC(tz string) bool {
	switch strings.ToUpper(tz) {
	case "UTC", "Z", "+00:00", "ETC/UTC", "GMT":
		return true
	}
	return false
}

func compileStruct(c *conv, fields []*schema.Field, st *arrow.StructType, path string) error {
	c.children = make([]*conv, len(fields))
	c.srcIdx = make([]int, len(fields))
	for i := range c.srcIdx {
		c.srcIdx[i] = -1
	}
	names := schema.IndexNames(fields)
	for j, af := range st.Fields() {
		i := names.Lookup(af.Name)
		if i < 0 {
			return &protorows.ExtraFieldError{Field: path + "." + af.Name}
		}
		if c.srcIdx[i] >= 0 {
			return fmt.Errorf("arrowrows: input fields %s.%s and %s.%s both write one column", path, st.Field(c.srcIdx[i]).Name, path, af.Name)
		}
		c.srcIdx[i] = j
	}
	for i, f := range fields {
		var src arrow.DataType
		if c.srcIdx[i] >= 0 {
			src = st.Field(c.srcIdx[i]).Type
		}
		ch, err := compileConv(f, src, path+"."+f.Name, false, f.EffectiveMode() == schema.Repeated)
		if err != nil {
			return err
		}
		c.children[i] = ch
	}
	return nil
}

// rowError is a bad value.
type rowError struct {
	field, msg string
}

func (e *rowError) Error() string { return e.msg }

func badf(c *conv, format string, args ...any) error {
	return &rowError{field: c.path, msg: fmt.Sprintf("Field %s: ", c.path) + fmt.Sprintf(format, args...)}
}

type state struct {
	d   *Decoder
	mv  protorows.MissingValues
	top []protorows.Interpretation // per table column, when mv.PerColumn is set
	now time.Time
	set bool
}

func (s *state) clock() time.Time {
	if !s.set {
		s.now, s.set = time.Now(), true
		if s.d.Now != nil {
			s.now = s.d.Now()
		}
	}
	return s.now
}

func (s *state) interp(c *conv) protorows.Interpretation {
	if c.top && s.top != nil {
		return s.top[c.idx]
	}
	return s.mv.Default
}

// Decode reads one serialized record batch of the writer schema and returns
// it conformed to Schema(). Any bad value makes it return the row errors
// (one per bad row, the first found) and no record. The caller owns the
// returned record.
func (d *Decoder) Decode(serializedBatch []byte, mv protorows.MissingValues) (rec arrow.Record, rowErrs []protorows.RowError, err error) {
	if err := checkMessage(serializedBatch, headerRecordBatch); err != nil {
		return nil, nil, fmt.Errorf("arrowrows: invalid Arrow record batch: %w", err)
	}
	defer func() {
		// The metadata was checked above and the batch is validated below;
		// should the IPC reader still trip over a peer's bytes, report,
		// never crash the server.
		if p := recover(); p != nil {
			rec, rowErrs, err = nil, nil, fmt.Errorf("arrowrows: malformed Arrow record batch: %v", p)
		}
	}()
	limit := int64(len(d.schemaBytes) + len(serializedBatch))
	r, err := newReader(io.MultiReader(bytes.NewReader(d.schemaBytes), bytes.NewReader(serializedBatch)), limit)
	if err != nil {
		return nil, nil, fmt.Errorf("arrowrows: invalid Arrow input: %w", err)
	}
	defer r.Release()
	if !r.Next() {
		if err := r.Err(); err != nil && !errors.Is(err, io.EOF) {
			return nil, nil, fmt.Errorf("arrowrows: invalid Arrow record batch: %w", err)
		}
		return nil, nil, fmt.Errorf("arrowrows: no Arrow record batch")
	}
	in := r.RecordBatch()
	// A batch declares its own length: bound it by what its bytes can
	// describe (a bit per value at least) before sizing columns by it.
	if n := in.NumRows(); n < 0 || n > 8*int64(len(serializedBatch))+1024 || n > maxRows {
		return nil, nil, fmt.Errorf("arrowrows: record batch claims %d rows in %d bytes", n, len(serializedBatch))
	}
	// Every buffer, offset and null count must agree before any value is
	// read, and above all before a column is stored as it is (fast): a
	// batch whose null count lies poisoned the table for good.
	if err := array.ValidateRecordFull(in); err != nil {
		return nil, nil, fmt.Errorf("arrowrows: invalid Arrow record batch: %w", err)
	}
	return d.Conform(in, mv)
}

// maxRowErrors bounds the row errors one request reports (as protorows):
// a batch of a million rows that all lack a REQUIRED column must not cost a
// million errors.
const maxRowErrors = 1000

// maxRows bounds the rows of one batch (a 10 MB request of 1-bit rows).
const maxRows = 80 << 20

// Conform converts a record batch of the writer schema to Schema().
func (d *Decoder) Conform(in arrow.Record, mv protorows.MissingValues) (rec arrow.Record, rowErrs []protorows.RowError, err error) {
	defer func() {
		// Arrow arrays from a peer can be inconsistent in ways the IPC
		// reader does not check (offsets past the data); report, never
		// crash the server.
		if p := recover(); p != nil {
			rec, rowErrs, err = nil, nil, fmt.Errorf("arrowrows: malformed Arrow record batch: %v", p)
		}
	}()
	if !in.Schema().Equal(d.input) {
		return nil, nil, fmt.Errorf("arrowrows: record batch schema %s differs from the writer schema", in.Schema())
	}
	n := int(in.NumRows())
	// Columns (and struct fields) the input lacks cost nothing on the wire
	// but a value per row once filled: bound them as protorows bounds proto
	// rows. What the input holds is bounded by its bytes.
	filled := 0
	for ci, c := range d.cols {
		var src arrow.Array
		if d.srcIdx[ci] >= 0 {
			src = in.Column(d.srcIdx[ci])
		}
		filled += missingValues(c, d.target.Field(ci).Type, src, n)
		if filled > protorows.MaxValues {
			return nil, nil, fmt.Errorf("%w: %d rows leave %d or more values to fill, the limit is %d values", protorows.ErrTooManyValues, n, filled, protorows.MaxValues)
		}
	}
	st := &state{d: d, mv: mv}
	if len(mv.PerColumn) > 0 {
		st.top = mv.Resolve(d.table.Fields)
	}
	bad := map[int]protorows.RowError{}
	arrs := make([]arrow.Array, len(d.cols))
	defer func() {
		for _, a := range arrs {
			if a != nil {
				a.Release()
			}
		}
	}()
	for ci, c := range d.cols {
		var src arrow.Array
		if d.srcIdx[ci] >= 0 {
			src = in.Column(d.srcIdx[ci])
			if src.Len() != n {
				return nil, nil, fmt.Errorf("arrowrows: column %s has %d values in a batch of %d rows", c.path, src.Len(), n)
			}
			if fast(c, src) {
				src.Retain()
				arrs[ci] = src
				continue
			}
		}
		col := protorows.NewColumn(d.target.Field(ci).Type, n, 0)
		for i := 0; i < n; i++ {
			before := col.Len()
			var err error
			if src == nil {
				err = st.missing(c, col)
			} else {
				err = st.value(c, src, i, col)
			}
			if err != nil {
				col.Truncate(before)
				col.AppendNull()
				if _, dup := bad[i]; !dup && len(bad) < maxRowErrors {
					re := protorows.RowError{Index: i, Message: err.Error()}
					var ve *rowError
					if errors.As(err, &ve) {
						re.Field = ve.field
					}
					bad[i] = re
				}
			}
		}
		data := col.Finish()
		arrs[ci] = array.MakeFromData(data)
		data.Release()
	}
	if len(bad) > 0 {
		for _, re := range bad {
			rowErrs = append(rowErrs, re)
		}
		sort.Slice(rowErrs, func(a, b int) bool { return rowErrs[a].Index < rowErrs[b].Index })
		return nil, rowErrs, nil
	}
	return array.NewRecordBatch(d.target, arrs, int64(n)), nil, nil
}

// missingValues counts the values Conform fills in for n values of c whose
// input is src (nil: the input lacks it): a missing column's leaves, and the
// missing fields of present structs, also inside lists.
func missingValues(c *conv, t arrow.DataType, src arrow.Array, n int) int {
	if n <= 0 {
		return 0
	}
	switch {
	case src == nil || c.kind == kMissing:
		return n * protorows.LeafValues(t)
	case c.kind == kStruct:
		st, ok1 := t.(*arrow.StructType)
		sa, ok2 := src.(*array.Struct)
		if !ok1 || !ok2 {
			return 0
		}
		total := 0
		for k, ch := range c.children {
			var csrc arrow.Array
			if c.srcIdx[k] >= 0 {
				csrc = sa.Field(c.srcIdx[k])
			}
			total += missingValues(ch, st.Field(k).Type, csrc, n)
			if total > protorows.MaxValues {
				break
			}
		}
		return total
	case c.kind == kList:
		lt, ok := t.(*arrow.ListType)
		if !ok {
			return 0
		}
		var values arrow.Array
		switch a := src.(type) {
		case *array.List:
			values = a.ListValues()
		case *array.LargeList:
			values = a.ListValues()
		default:
			return 0
		}
		return missingValues(c.elem, lt.Elem(), values, values.Len())
	}
	return 0
}

// fast reports whether src can be used as the column as it is.
func fast(c *conv, src arrow.Array) bool {
	if c.required && src.NullN() > 0 {
		return false
	}
	switch c.kind {
	case kInt:
		return src.DataType().ID() == arrow.INT64
	case kFloat:
		return src.DataType().ID() == arrow.FLOAT64
	case kBool:
		return true
	}
	return false
}

func (s *state) missing(c *conv, dst *protorows.Column) error {
	if c.def != nil && s.interp(c) == protorows.DefaultValue {
		v, err := c.def.Eval(s.clock())
		if err == nil && v == nil && c.required {
			err = errors.New("REQUIRED but its default value is NULL")
		}
		if err == nil {
			err = protorows.AppendValue(dst, v)
		}
		if err != nil {
			return badf(c, "default value: %v", err)
		}
		return nil
	}
	if c.field.EffectiveMode() == schema.Repeated {
		dst.AppendNull() // the empty array
		return nil
	}
	if c.required {
		return &rowError{field: c.path, msg: fmt.Sprintf("Field %s is REQUIRED but has no value", c.path)}
	}
	dst.AppendNull()
	return nil
}

func stringAt(a arrow.Array, i int) string {
	switch a := a.(type) {
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.StringView:
		return a.Value(i)
	}
	return ""
}

func bytesAt(a arrow.Array, i int) []byte {
	switch a := a.(type) {
	case *array.Binary:
		return a.Value(i)
	case *array.LargeBinary:
		return a.Value(i)
	case *array.BinaryView:
		return a.Value(i)
	case *array.FixedSizeBinary:
		return a.Value(i)
	}
	return nil
}

func intAt(a arrow.Array, i int) int64 {
	switch a := a.(type) {
	case *array.Int8:
		return int64(a.Value(i))
	case *array.Int16:
		return int64(a.Value(i))
	case *array.Int32:
		return int64(a.Value(i))
	case *array.Int64:
		return a.Value(i)
	case *array.Uint8:
		return int64(a.Value(i))
	case *array.Uint16:
		return int64(a.Value(i))
	case *array.Uint32:
		return int64(a.Value(i))
	}
	return 0
}

// rescale multiplies a decimal's unscaled value from scale from to scale to
// (to >= from).
func pow10(n int32) decimal256.Num {
	return decimal256.GetScaleMultiplier(int(n))
}

func (s *state) value(c *conv, src arrow.Array, i int, dst *protorows.Column) error {
	if src.IsNull(i) {
		if c.kind == kList {
			return badf(c, "a NULL array is not allowed: send an empty list")
		}
		if c.required {
			return &rowError{field: c.path, msg: fmt.Sprintf("Field %s is REQUIRED but has no value", c.path)}
		}
		dst.AppendNull()
		return nil
	}
	switch c.kind {
	case kInt:
		dst.AppendInt64(intAt(src, i))
	case kUint64:
		v := src.(*array.Uint64).Value(i)
		if v > math.MaxInt64 {
			return badf(c, "value %d overflows INT64", v)
		}
		dst.AppendInt64(int64(v))
	case kFloat:
		switch a := src.(type) {
		case *array.Float64:
			dst.AppendFloat64(a.Value(i))
		case *array.Float32:
			dst.AppendFloat64(float64(a.Value(i)))
		case *array.Float16:
			dst.AppendFloat64(float64(a.Value(i).Float32()))
		}
	case kBool:
		dst.AppendBool(src.(*array.Boolean).Value(i))
	case kString:
		v := stringAt(src, i)
		if !utf8.ValidString(v) {
			return badf(c, "STRING value is not valid UTF-8")
		}
		if ml := int(c.field.MaxLength); ml > 0 && utf8.RuneCountInString(v) > ml {
			return badf(c, "STRING value %q is longer than its maximum length %d", clip(v), ml)
		}
		dst.AppendString(v)
	case kBytes:
		v := bytesAt(src, i)
		if ml := int(c.field.MaxLength); ml > 0 && len(v) > ml {
			return badf(c, "BYTES value of %d bytes is longer than its maximum length %d", len(v), ml)
		}
		dst.AppendBytes(v)
	case kDate32, kDateInt32:
		var v int32
		if a, ok := src.(*array.Date32); ok {
			v = int32(a.Value(i))
		} else {
			v = src.(*array.Int32).Value(i)
		}
		if v < protorows.MinDate || v > protorows.MaxDate {
			return badf(c, "DATE value %d is out of range", v)
		}
		dst.AppendInt32(v)
	case kDateStr:
		v, err := protorows.ParseDate(stringAt(src, i))
		if err != nil {
			return badf(c, "%v", err)
		}
		dst.AppendInt32(v)
	case kDatetime, kTimestamp:
		v := int64(src.(*array.Timestamp).Value(i))
		if v < protorows.MinMicros || v > protorows.MaxMicros {
			return badf(c, "%s value %d is out of range", c.field.Type, v)
		}
		dst.AppendInt64(v)
	case kTime:
		var v int64
		var unit arrow.TimeUnit
		switch a := src.(type) {
		case *array.Time32:
			v, unit = int64(a.Value(i)), a.DataType().(*arrow.Time32Type).Unit
		case *array.Time64:
			v, unit = int64(a.Value(i)), a.DataType().(*arrow.Time64Type).Unit
		}
		switch unit {
		case arrow.Second:
			v *= 1000000
		case arrow.Millisecond:
			v *= 1000
		case arrow.Nanosecond:
			if v%1000 != 0 {
				return badf(c, "TIME value %dns is finer than microseconds", v)
			}
			v /= 1000
		}
		if v < 0 || v >= 86400*1000000 {
			return badf(c, "TIME value out of range")
		}
		dst.AppendInt64(v)
	case kTimeStr:
		v, err := protorows.ParseTime(stringAt(src, i))
		if err != nil {
			return badf(c, "%v", err)
		}
		dst.AppendInt64(v)
	case kDec128Num, kDec128Big, kDec256Big:
		var v decimal256.Num
		if a, ok := src.(*array.Decimal128); ok {
			v = decimal256.FromDecimal128(a.Value(i))
		} else {
			v = src.(*array.Decimal256).Value(i)
		}
		to := int32(protorows.NumericScale)
		if c.kind != kDec128Num {
			to = protorows.BigNumericScale
		}
		b := v.BigInt()
		b.Mul(b, pow10(to-c.scale).BigInt())
		if c.kind == kDec128Num {
			n, err := protorows.ParseNumeric(decString(b, to))
			if err == nil {
				n, err = protorows.ConstrainNumeric(n, int(c.field.Precision), int(c.field.Scale))
			}
			if err != nil {
				return badf(c, "%v", err)
			}
			dst.AppendDecimal128(n)
		} else {
			n, err := protorows.ParseBigNumeric(decString(b, to))
			if err == nil {
				n, err = protorows.ConstrainBigNumeric(n, int(c.field.Precision), int(c.field.Scale))
			}
			if err != nil {
				return badf(c, "%v", err)
			}
			dst.AppendDecimal256(n)
		}
	case kGeo:
		v := stringAt(src, i)
		wkt, err := protorows.ParseGeography(v)
		if err != nil {
			return badf(c, "invalid GEOGRAPHY value %q: %v", clip(v), err)
		}
		dst.AppendString(wkt)
	case kJSON:
		v := stringAt(src, i)
		canon, err := jsoncanon.Canonical([]byte(v))
		if err != nil {
			return badf(c, "invalid JSON value %q", clip(v))
		}
		dst.AppendBytes(canon)
	case kIntervalMDN:
		dst.AppendInterval(src.(*array.MonthDayNanoInterval).Value(i))
	case kIntervalDT:
		v := src.(*array.DayTimeInterval).Value(i)
		dst.AppendInterval(arrow.MonthDayNanoInterval{Days: v.Days, Nanoseconds: int64(v.Milliseconds) * 1000000})
	case kIntervalM:
		dst.AppendInterval(arrow.MonthDayNanoInterval{Months: int32(src.(*array.MonthInterval).Value(i))})
	case kIntervalStr:
		v, err := protorows.ParseInterval(stringAt(src, i))
		if err != nil {
			return badf(c, "%v", err)
		}
		dst.AppendInterval(v)
	case kStruct:
		sa := src.(*array.Struct)
		for k, ch := range c.children {
			var err error
			if c.srcIdx[k] < 0 {
				err = s.missing(ch, dst.Child(k))
			} else {
				err = s.value(ch, sa.Field(c.srcIdx[k]), i, dst.Child(k))
			}
			if err != nil {
				return err
			}
		}
		if c.field.Type == schema.Range {
			if err := checkRange(c, dst); err != nil {
				return err
			}
		}
		dst.AppendValid()
	case kList:
		var start, end int64
		var values arrow.Array
		switch a := src.(type) {
		case *array.List:
			s, e := a.ValueOffsets(i)
			start, end, values = s, e, a.ListValues()
		case *array.LargeList:
			s, e := a.ValueOffsets(i)
			start, end, values = s, e, a.ListValues()
		}
		for j := start; j < end; j++ {
			if values.IsNull(int(j)) {
				return badf(c, "array element %d is NULL", j-start)
			}
			if err := s.value(c.elem, values, int(j), dst.Child(0)); err != nil {
				return err
			}
		}
		dst.CloseList()
	default:
		return badf(c, "internal: no conversion")
	}
	return nil
}

// checkRange rejects a RANGE whose start is not before its end.
func checkRange(c *conv, dst *protorows.Column) error {
	if err := protorows.CheckRangeTail(dst); err != nil {
		return badf(c, "%v", err)
	}
	return nil
}

func decString(v interface{ String() string }, scale int32) string {
	s := v.String()
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for len(s) <= int(scale) {
		s = "0" + s
	}
	out := s[:len(s)-int(scale)] + "." + s[len(s)-int(scale):]
	if neg {
		out = "-" + out
	}
	return out
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
