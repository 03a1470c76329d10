package protorows

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// colKind is the physical layout of a column buffer.
type colKind uint8

const (
	kInt64   colKind = iota // int64, timestamp, time64
	kFloat64                // float64
	kBool                   // bit-packed values
	kInt32                  // date32
	kBinary                 // utf8 and binary: offsets + data
	kFixed                  // decimal128 (16 B), decimal256 (32 B), month_day_nano (16 B)
	kStruct                 // children, validity
	kList                   // offsets, one child; never null
)

// Column is a growable Arrow column written straight from the row
// decoders: plain Go slices wrapped as Arrow buffers at Finish, with no
// copy. Nulls are recorded in a bitmap of NULL positions that grows only up
// to the last NULL, and turned into a validity bitmap at Finish only when
// there are any, so the common all-valid column pays nothing and a NULL
// costs one bit besides its (zero) value slot.
//
// A Column is owned by one decode call; Finish hands its buffers to the
// returned array and the Column must not be used afterwards.
type Column struct {
	typ   arrow.DataType
	kind  colKind
	width int // bytes per value for kFixed
	n     int
	nullN int    // NULLs appended
	nulls []byte // bit i set: value i is NULL; len covers the last NULL only

	i64   []int64
	f64   []float64
	i32   []int32
	bits  []byte
	offs  []int32 // kBinary, kList: len n+1
	data  []byte  // kBinary values, kFixed values
	child []*Column
}

// NewColumn returns an empty column for an Arrow type produced by
// schema.ToArrow, with room reserved for about rows values (and
// bytesHint bytes of variable-length data).
func NewColumn(t arrow.DataType, rows, bytesHint int) *Column {
	c := &Column{typ: t}
	switch t := t.(type) {
	case *arrow.Int64Type, *arrow.TimestampType, *arrow.Time64Type:
		c.kind = kInt64
		c.i64 = pooledSlice[int64](rows)
	case *arrow.Float64Type:
		c.kind = kFloat64
		c.f64 = pooledSlice[float64](rows)
	case *arrow.BooleanType:
		c.kind = kBool
		c.bits = getBytes(rows/8 + 1)
	case *arrow.Date32Type:
		c.kind = kInt32
		c.i32 = pooledSlice[int32](rows)
	case *arrow.StringType, *arrow.BinaryType:
		c.kind = kBinary
		c.offs = append(pooledSlice[int32](rows+1), 0)
		c.data = getBytes(bytesHint)
	case *arrow.Decimal128Type:
		c.kind, c.width = kFixed, 16
	case *arrow.Decimal256Type:
		c.kind, c.width = kFixed, 32
	case *arrow.MonthDayNanoIntervalType:
		c.kind, c.width = kFixed, 16
	case *arrow.StructType:
		c.kind = kStruct
		for _, f := range t.Fields() {
			c.child = append(c.child, NewColumn(f.Type, rows, bytesHint/max(1, t.NumFields())))
		}
	case *arrow.ListType:
		c.kind = kList
		c.offs = append(pooledSlice[int32](rows+1), 0)
		c.child = []*Column{NewColumn(t.Elem(), rows, bytesHint)}
	default:
		panic("protorows: unsupported Arrow type " + t.String()) // ToArrow never produces one
	}
	if c.kind == kFixed {
		c.data = getBytes(rows * c.width)
	}
	return c
}

// hasVarData reports whether a column of type t holds variable-length data.
func hasVarData(t arrow.DataType) bool {
	switch t := t.(type) {
	case *arrow.StringType, *arrow.BinaryType:
		return true
	case *arrow.StructType:
		for _, f := range t.Fields() {
			if hasVarData(f.Type) {
				return true
			}
		}
	case *arrow.ListType:
		return hasVarData(t.Elem())
	}
	return false
}

// LeafValues is the values one value of type t appends to a Column (a NULL
// struct appends one to each child; a list counts one, its elements
// separately): what a missing value costs against MaxValues.
func LeafValues(t arrow.DataType) int {
	if st, ok := t.(*arrow.StructType); ok {
		n := 0
		for _, f := range st.Fields() {
			n += LeafValues(f.Type)
		}
		return max(n, 1)
	}
	return 1
}

// fixedWidth is the fixed-width bytes one value of type t takes in the
// column's buffers (a list its offset and one element; a bool a byte, to
// round up).
func fixedWidth(t arrow.DataType) int {
	switch t := t.(type) {
	case *arrow.StructType:
		n := 0
		for _, f := range t.Fields() {
			n += fixedWidth(f.Type)
		}
		return n
	case *arrow.ListType:
		return 4 + fixedWidth(t.Elem())
	case *arrow.StringType, *arrow.BinaryType, *arrow.Date32Type:
		return 4
	case *arrow.BooleanType:
		return 1
	case *arrow.Decimal128Type, *arrow.MonthDayNanoIntervalType:
		return 16
	case *arrow.Decimal256Type:
		return 32
	}
	return 8
}

// dataBytes is the variable-length data held by the column and its
// children.
func (c *Column) dataBytes() int {
	n := 0
	if c.kind == kBinary {
		n = len(c.data)
	}
	for _, ch := range c.child {
		n += ch.dataBytes()
	}
	return n
}

// Len is the number of values appended.
func (c *Column) Len() int { return c.n }

// Child returns the i-th child of a struct column, or the element column of
// a list column (i = 0).
func (c *Column) Child(i int) *Column { return c.child[i] }

// AppendNull appends a NULL. For a list (REPEATED), NULL is the empty list;
// for a struct, every child gets a NULL too.
func (c *Column) AppendNull() {
	switch c.kind {
	case kList:
		c.offs = append(c.offs, c.offs[len(c.offs)-1])
		c.n++
		return
	case kStruct:
		for _, ch := range c.child {
			ch.AppendNull()
		}
	case kInt64:
		c.i64 = append(c.i64, 0)
	case kFloat64:
		c.f64 = append(c.f64, 0)
	case kBool:
		if c.n%8 == 0 {
			c.bits = append(c.bits, 0)
		}
	case kInt32:
		c.i32 = append(c.i32, 0)
	case kBinary:
		c.offs = append(c.offs, int32(len(c.data)))
	case kFixed:
		c.data = append(c.data, make([]byte, c.width)...)
	}
	c.setNull(c.n)
	c.n++
}

// setNull marks value i as NULL.
func (c *Column) setNull(i int) {
	for len(c.nulls) <= i/8 {
		c.nulls = append(c.nulls, 0)
	}
	c.nulls[i/8] |= 1 << (i % 8)
	c.nullN++
}

// isNull reports whether value i was appended as NULL.
func (c *Column) isNull(i int) bool {
	return i/8 < len(c.nulls) && c.nulls[i/8]&(1<<(i%8)) != 0
}

// AppendInt64 appends to an int64, timestamp or time64 column.
func (c *Column) AppendInt64(v int64) { c.i64 = append(c.i64, v); c.n++ }

// AppendFloat64 appends to a float64 column.
func (c *Column) AppendFloat64(v float64) { c.f64 = append(c.f64, v); c.n++ }

// AppendInt32 appends to a date32 column.
func (c *Column) AppendInt32(v int32) { c.i32 = append(c.i32, v); c.n++ }

// AppendBool appends to a bool column.
func (c *Column) AppendBool(v bool) { c.appendBit(v) }

func (c *Column) appendBit(v bool) {
	if c.n%8 == 0 {
		c.bits = append(c.bits, 0)
	}
	if v {
		c.bits[c.n/8] |= 1 << (c.n % 8)
	}
	c.n++
}

// AppendBytes appends to a utf8 or binary column (copying b).
func (c *Column) AppendBytes(b []byte) {
	c.data = append(c.data, b...)
	c.offs = append(c.offs, int32(len(c.data)))
	c.n++
}

// AppendString appends to a utf8 or binary column.
func (c *Column) AppendString(s string) {
	c.data = append(c.data, s...)
	c.offs = append(c.offs, int32(len(c.data)))
	c.n++
}

// DataLen is the number of variable-length bytes held (for the 2 GiB
// offset limit).
func (c *Column) DataLen() int { return len(c.data) }

// AppendDecimal128 appends to a decimal128 column.
func (c *Column) AppendDecimal128(v decimal128.Num) {
	c.data = binary.LittleEndian.AppendUint64(c.data, v.LowBits())
	c.data = binary.LittleEndian.AppendUint64(c.data, uint64(v.HighBits()))
	c.n++
}

// AppendDecimal256 appends to a decimal256 column.
func (c *Column) AppendDecimal256(v decimal256.Num) {
	for _, w := range v.Array() {
		c.data = binary.LittleEndian.AppendUint64(c.data, w)
	}
	c.n++
}

// AppendInterval appends to a month_day_nano_interval column.
func (c *Column) AppendInterval(v arrow.MonthDayNanoInterval) {
	c.data = binary.LittleEndian.AppendUint32(c.data, uint32(v.Months))
	c.data = binary.LittleEndian.AppendUint32(c.data, uint32(v.Days))
	c.data = binary.LittleEndian.AppendUint64(c.data, uint64(v.Nanoseconds))
	c.n++
}

// AppendValid marks one more struct value as valid; its children must have
// been appended to by the caller.
func (c *Column) AppendValid() { c.n++ }

// CloseList ends one list value: its elements are those appended to the
// child since the previous CloseList.
func (c *Column) CloseList() {
	c.offs = append(c.offs, int32(c.child[0].n))
	c.n++
}

func (c *Column) validity() *memory.Buffer {
	if c.nullN == 0 {
		return nil
	}
	bm := make([]byte, (c.n+7)/8)
	for i := range bm {
		bm[i] = 0xFF
		if i < len(c.nulls) {
			bm[i] &^= c.nulls[i]
		}
	}
	return memory.NewBufferBytes(bm)
}

// Finish returns the column as Arrow array data (refcount 1, owned by the
// caller).
func (c *Column) Finish() arrow.ArrayData {
	valid := c.validity()
	nulls := c.nullN
	var buf *memory.Buffer
	switch c.kind {
	case kInt64:
		buf = bufferOf(c.i64)
	case kFloat64:
		buf = bufferOf(c.f64)
	case kInt32:
		buf = bufferOf(c.i32)
	case kBool:
		buf = bufferOf(c.bits)
	case kFixed:
		buf = bufferOf(c.data)
	case kBinary:
		offs, data := bufferOf(c.offs), bufferOf(c.data)
		d := array.NewData(c.typ, c.n, []*memory.Buffer{valid, offs, data}, nil, nulls, 0)
		offs.Release()
		data.Release()
		return d
	case kStruct:
		children := make([]arrow.ArrayData, len(c.child))
		for i, ch := range c.child {
			children[i] = ch.Finish()
		}
		d := array.NewData(c.typ, c.n, []*memory.Buffer{valid}, children, nulls, 0)
		for _, ch := range children {
			ch.Release()
		}
		return d
	case kList:
		child := c.child[0].Finish()
		offs := bufferOf(c.offs)
		d := array.NewData(c.typ, c.n, []*memory.Buffer{nil, offs}, []arrow.ArrayData{child}, 0, 0)
		child.Release()
		offs.Release()
		return d
	}
	d := array.NewData(c.typ, c.n, []*memory.Buffer{valid, buf}, nil, nulls, 0)
	buf.Release()
	return d
}

// Truncate drops the values appended after the column had n values, and
// anything a half-decoded row left in nested children (used to roll back a
// row that failed half-way).
func (c *Column) Truncate(n int) {
	if n > c.n {
		n = c.n
	}
	if keep := (n + 7) / 8; keep < len(c.nulls) {
		for _, b := range c.nulls[keep:] {
			c.nullN -= bits.OnesCount8(b)
		}
		c.nulls = c.nulls[:keep]
	}
	if n%8 != 0 && n/8 < len(c.nulls) {
		b := c.nulls[n/8]
		kept := b & (byte(1)<<(n%8) - 1)
		c.nullN -= bits.OnesCount8(b) - bits.OnesCount8(kept)
		c.nulls[n/8] = kept
	}
	switch c.kind {
	case kInt64:
		c.i64 = c.i64[:n]
	case kFloat64:
		c.f64 = c.f64[:n]
	case kInt32:
		c.i32 = c.i32[:n]
	case kBool:
		c.bits = c.bits[:(n+7)/8]
		if n%8 != 0 {
			c.bits[n/8] &= byte(1)<<(n%8) - 1
		}
	case kFixed:
		c.data = c.data[:n*c.width]
	case kBinary:
		c.offs = c.offs[:n+1]
		c.data = c.data[:c.offs[n]]
	case kStruct:
		for _, ch := range c.child {
			ch.Truncate(n)
		}
	case kList:
		c.offs = c.offs[:n+1]
		c.child[0].Truncate(int(c.offs[n]))
	}
	c.n = n
}

// lastInt returns the last value of an int64 or date32 column, and whether
// it is non-NULL.
func (c *Column) lastInt() (int64, bool) {
	if c.n == 0 || c.isNull(c.n-1) {
		return 0, false
	}
	switch c.kind {
	case kInt64:
		return c.i64[c.n-1], true
	case kInt32:
		return int64(c.i32[c.n-1]), true
	}
	return 0, false
}

// CheckRangeTail checks the RANGE value being built in a struct<start,
// end> column: its children hold one more value than the struct. A bounded
// range's start must be before its end.
func CheckRangeTail(c *Column) error {
	if c.kind != kStruct || len(c.child) != 2 {
		return nil
	}
	s, okS := c.child[0].lastInt()
	e, okE := c.child[1].lastInt()
	if okS && okE && s >= e {
		return fmt.Errorf("RANGE start must be before its end")
	}
	return nil
}
