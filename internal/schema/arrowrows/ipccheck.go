package arrowrows

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The Arrow IPC reader trusts the flatbuffer metadata it is given: a vector
// length is used to size a slice before its elements are read, and a table
// reached twice is decoded twice. One forged length in a 376-byte schema
// made arrow-go allocate ~115 GB; struct children that point at the same
// table twice grow as 2^depth. So every message is walked here first, with
// the Arrow schema (Message.fbs, Schema.fbs) in hand, before arrow-go sees
// it:
//
//   - every offset, vtable, table, string and vector lies inside the
//     metadata, so no count exceeds what the bytes can hold;
//   - no table, string or vector is reached twice (the metadata is a tree,
//     as every Arrow writer builds it), so decoding it is linear in its size;
//   - fields are nested at most maxFieldDepth deep and number at most
//     maxFields;
//   - a record batch's buffers lie inside its body, its nodes have sane
//     lengths, and it is not compressed (a compressed buffer declares its
//     own decompressed size).

const (
	// maxFields bounds the fields (nested ones and list elements included)
	// of one writer schema: BigQuery tables have at most 10,000 columns.
	maxFields = 1 << 16
	// maxFieldDepth bounds field nesting: 15 levels of RECORD, each maybe
	// REPEATED (a list and its element), and a little room.
	maxFieldDepth = 40
)

// Message header types (Message.fbs MessageHeader).
const (
	headerSchema          = 1
	headerDictionaryBatch = 2
	headerRecordBatch     = 3
)

// Type union members (Schema.fbs Type) whose tables hold offsets.
const (
	typeTimestamp = 10
	typeUnion     = 14
)

var errBadMetadata = errors.New("malformed Arrow IPC message")

// fbCheck walks one flatbuffer.
type fbCheck struct {
	b      []byte
	seen   map[uint32]bool // offset targets reached so far
	fields int
}

func (c *fbCheck) errf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errBadMetadata}, args...)...)
}

func (c *fbCheck) u16(pos uint64) (uint16, bool) {
	if pos+2 > uint64(len(c.b)) {
		return 0, false
	}
	return binary.LittleEndian.Uint16(c.b[pos:]), true
}

func (c *fbCheck) u32(pos uint64) (uint32, bool) {
	if pos+4 > uint64(len(c.b)) {
		return 0, false
	}
	return binary.LittleEndian.Uint32(c.b[pos:]), true
}

// visit records an offset target, refusing one reached before.
func (c *fbCheck) visit(pos uint32, what string) error {
	if c.seen[pos] {
		return c.errf("%s at %d is referenced twice", what, pos)
	}
	c.seen[pos] = true
	return nil
}

// table is a verified flatbuffer table.
type fbTable struct {
	pos    uint32
	vt     uint32
	vtSize uint16
	tSize  uint16
}

// table checks the table at pos and its vtable.
func (c *fbCheck) table(pos uint32, what string) (fbTable, error) {
	if err := c.visit(pos, what); err != nil {
		return fbTable{}, err
	}
	so, ok := c.u32(uint64(pos))
	if !ok {
		return fbTable{}, c.errf("%s at %d is out of bounds", what, pos)
	}
	vt := int64(pos) - int64(int32(so))
	if vt < 0 || vt > int64(len(c.b)) {
		return fbTable{}, c.errf("%s at %d: vtable out of bounds", what, pos)
	}
	vtSize, ok1 := c.u16(uint64(vt))
	tSize, ok2 := c.u16(uint64(vt) + 2)
	if !ok1 || !ok2 || vtSize < 4 || vtSize%2 != 0 || uint64(vt)+uint64(vtSize) > uint64(len(c.b)) ||
		tSize < 4 || uint64(pos)+uint64(tSize) > uint64(len(c.b)) {
		return fbTable{}, c.errf("%s at %d: bad vtable", what, pos)
	}
	t := fbTable{pos: pos, vt: uint32(vt), vtSize: vtSize, tSize: tSize}
	// Every field present must start inside the table; its width is
	// checked where it is read (field).
	for s := uint16(4); s < vtSize; s += 2 {
		off, _ := c.u16(uint64(vt) + uint64(s))
		if off != 0 && off >= tSize {
			return fbTable{}, c.errf("%s at %d: field outside the table", what, pos)
		}
	}
	return t, nil
}

// field returns the absolute position of slot's value, or 0 when absent,
// checking that width bytes of it lie inside the table.
func (c *fbCheck) field(t fbTable, slot int, width uint16) (uint32, error) {
	s := 4 + 2*uint64(slot)
	if s+2 > uint64(t.vtSize) {
		return 0, nil
	}
	off, _ := c.u16(uint64(t.vt) + s)
	if off == 0 {
		return 0, nil
	}
	if uint32(off)+uint32(width) > uint32(t.tSize) {
		return 0, c.errf("table at %d: field %d overruns the table", t.pos, slot)
	}
	return t.pos + uint32(off), nil
}

// ref follows the offset in slot to its target, or returns 0 when absent.
func (c *fbCheck) ref(t fbTable, slot int) (uint32, error) {
	p, err := c.field(t, slot, 4)
	if err != nil || p == 0 {
		return 0, err
	}
	o, _ := c.u32(uint64(p))
	target := uint64(p) + uint64(o)
	if o == 0 || target >= uint64(len(c.b)) {
		return 0, c.errf("table at %d: field %d points out of bounds", t.pos, slot)
	}
	return uint32(target), nil
}

// vector checks the vector (or string, with its NUL) at pos of elements
// of elem bytes and returns its count and the position of its first
// element.
func (c *fbCheck) vector(pos uint32, elem uint64, str bool, what string) (uint32, uint32, error) {
	n, ok := c.u32(uint64(pos))
	if !ok {
		return 0, 0, c.errf("%s at %d out of bounds", what, pos)
	}
	size := uint64(n) * elem
	if str {
		size++
	}
	if uint64(pos)+4+size > uint64(len(c.b)) {
		return 0, 0, c.errf("%s at %d claims %d elements, more than the message holds", what, pos, n)
	}
	if n > 0 {
		if err := c.visit(pos, what); err != nil {
			return 0, 0, err
		}
	}
	return n, pos + 4, nil
}

// refVector follows slot to a vector.
func (c *fbCheck) refVector(t fbTable, slot int, elem uint64, str bool, what string) (n, first uint32, err error) {
	p, err := c.ref(t, slot)
	if err != nil || p == 0 {
		return 0, 0, err
	}
	return c.vector(p, elem, str, what)
}

// tables calls f on each table of the vector of tables in slot.
func (c *fbCheck) tables(t fbTable, slot int, what string, f func(fbTable) error) error {
	n, first, err := c.refVector(t, slot, 4, false, what)
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		p := uint64(first) + 4*uint64(i)
		o, _ := c.u32(p)
		target := p + uint64(o)
		if o == 0 || target >= uint64(len(c.b)) {
			return c.errf("%s element %d points out of bounds", what, i)
		}
		et, err := c.table(uint32(target), what)
		if err != nil {
			return err
		}
		if err := f(et); err != nil {
			return err
		}
	}
	return nil
}

func (c *fbCheck) keyValues(t fbTable, slot int) error {
	return c.tables(t, slot, "custom_metadata", func(kv fbTable) error {
		if _, _, err := c.refVector(kv, 0, 1, true, "metadata key"); err != nil {
			return err
		}
		_, _, err := c.refVector(kv, 1, 1, true, "metadata value")
		return err
	})
}

func (c *fbCheck) arrowField(t fbTable, depth int) error {
	c.fields++
	if c.fields > maxFields {
		return c.errf("more than %d fields", maxFields)
	}
	if depth > maxFieldDepth {
		return c.errf("fields nested more than %d deep", maxFieldDepth)
	}
	if _, _, err := c.refVector(t, 0, 1, true, "field name"); err != nil {
		return err
	}
	typeType := uint8(0)
	if p, err := c.field(t, 2, 1); err != nil {
		return err
	} else if p != 0 {
		typeType = c.b[p]
	}
	if p, err := c.ref(t, 3); err != nil {
		return err
	} else if p != 0 {
		tt, err := c.table(p, "field type")
		if err != nil {
			return err
		}
		switch typeType {
		case typeTimestamp:
			if _, _, err := c.refVector(tt, 1, 1, true, "time zone"); err != nil {
				return err
			}
		case typeUnion:
			if _, _, err := c.refVector(tt, 1, 4, false, "union type ids"); err != nil {
				return err
			}
		}
	}
	if p, err := c.ref(t, 4); err != nil {
		return err
	} else if p != 0 {
		dt, err := c.table(p, "dictionary encoding")
		if err != nil {
			return err
		}
		if ip, err := c.ref(dt, 1); err != nil {
			return err
		} else if ip != 0 {
			if _, err := c.table(ip, "dictionary index type"); err != nil {
				return err
			}
		}
	}
	if err := c.tables(t, 5, "field children", func(ch fbTable) error { return c.arrowField(ch, depth+1) }); err != nil {
		return err
	}
	return c.keyValues(t, 6)
}

func (c *fbCheck) schema(t fbTable) error {
	if err := c.tables(t, 1, "schema fields", func(f fbTable) error { return c.arrowField(f, 0) }); err != nil {
		return err
	}
	if err := c.keyValues(t, 2); err != nil {
		return err
	}
	_, _, err := c.refVector(t, 3, 8, false, "schema features")
	return err
}

// recordBatch checks a RecordBatch table against the body length.
func (c *fbCheck) recordBatch(t fbTable, bodyLen uint64) error {
	if p, err := c.field(t, 0, 8); err != nil {
		return err
	} else if p != 0 {
		if l := int64(binary.LittleEndian.Uint64(c.b[p:])); l < 0 {
			return c.errf("record batch length %d", l)
		}
	}
	n, first, err := c.refVector(t, 1, 16, false, "record batch nodes")
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		p := first + 16*i
		length := int64(binary.LittleEndian.Uint64(c.b[p:]))
		nulls := int64(binary.LittleEndian.Uint64(c.b[p+8:]))
		if length < 0 || nulls < 0 || nulls > length {
			return c.errf("field node %d: length %d, null count %d", i, length, nulls)
		}
	}
	n, first, err = c.refVector(t, 2, 16, false, "record batch buffers")
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		p := first + 16*i
		off := binary.LittleEndian.Uint64(c.b[p:])
		l := binary.LittleEndian.Uint64(c.b[p+8:])
		if off > bodyLen || l > bodyLen-off {
			return c.errf("buffer %d (offset %d, length %d) outside the %d-byte body", i, int64(off), int64(l), bodyLen)
		}
	}
	if p, err := c.ref(t, 3); err != nil {
		return err
	} else if p != 0 {
		return c.errf("compressed record batches are not supported")
	}
	n, first, err = c.refVector(t, 4, 8, false, "variadic buffer counts")
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		if v := int64(binary.LittleEndian.Uint64(c.b[first+8*i:])); v < 0 || uint64(v) > uint64(len(c.b)) {
			return c.errf("variadic buffer count %d", v)
		}
	}
	return nil
}

// checkMessage verifies the first encapsulated IPC message of b, which must
// be of header type want (headerSchema or headerRecordBatch), and its
// body's bounds, before the IPC reader sees it.
func checkMessage(b []byte, want uint8) error {
	pos := 0
	if len(b) >= 4 && binary.LittleEndian.Uint32(b) == 0xFFFFFFFF {
		pos = 4
	}
	if len(b) < pos+4 {
		return fmt.Errorf("%w: truncated", errBadMetadata)
	}
	metaLen := int64(int32(binary.LittleEndian.Uint32(b[pos:])))
	pos += 4
	if metaLen <= 0 || metaLen > int64(len(b)-pos) {
		return fmt.Errorf("%w: metadata length %d in a %d-byte message", errBadMetadata, metaLen, len(b))
	}
	c := &fbCheck{b: b[pos : pos+int(metaLen)], seen: map[uint32]bool{}}
	root, ok := c.u32(0)
	if !ok || uint64(root) >= uint64(len(c.b)) {
		return c.errf("root out of bounds")
	}
	msg, err := c.table(root, "message")
	if err != nil {
		return err
	}
	header := uint8(0)
	if p, err := c.field(msg, 1, 1); err != nil {
		return err
	} else if p != 0 {
		header = c.b[p]
	}
	var bodyLen int64
	if p, err := c.field(msg, 3, 8); err != nil {
		return err
	} else if p != 0 {
		bodyLen = int64(binary.LittleEndian.Uint64(c.b[p:]))
	}
	if bodyLen < 0 || bodyLen > int64(len(b)-pos)-metaLen {
		return c.errf("body length %d, %d bytes follow the metadata", bodyLen, int64(len(b)-pos)-metaLen)
	}
	if err := c.keyValues(msg, 4); err != nil {
		return err
	}
	if header != want {
		switch want {
		case headerSchema:
			return fmt.Errorf("%w: the writer schema is an IPC message of type %d, not a Schema", errBadMetadata, header)
		default:
			return fmt.Errorf("%w: the rows are an IPC message of type %d, not a RecordBatch", errBadMetadata, header)
		}
	}
	hp, err := c.ref(msg, 2)
	if err != nil {
		return err
	}
	if hp == 0 {
		return c.errf("message has no header")
	}
	ht, err := c.table(hp, "message header")
	if err != nil {
		return err
	}
	if want == headerSchema {
		return c.schema(ht)
	}
	return c.recordBatch(ht, uint64(bodyLen))
}
