package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/bqstore/bqstore/internal/storage/segment"
	"github.com/bqstore/bqstore/internal/storage/wal"
)

// encodeSchema serializes a schema as an Arrow IPC stream holding only the
// schema message.
func encodeSchema(s *arrow.Schema) ([]byte, error) {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(s))
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("storage: encode schema: %w", err)
	}
	return buf.Bytes(), nil
}

// decodeSchema parses what encodeSchema wrote.
func decodeSchema(b []byte) (*arrow.Schema, error) {
	r, err := ipc.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("storage: decode schema: %w", err)
	}
	defer r.Release()
	return r.Schema(), nil
}

// splitMessage parses one encapsulated IPC message (continuation marker,
// metadata length, flatbuffer metadata) and returns the metadata and
// everything after it (the body, possibly followed by more bytes).
func splitMessage(b []byte) (meta, rest []byte, err error) {
	if len(b) < 8 || binary.LittleEndian.Uint32(b) != 0xFFFFFFFF {
		return nil, nil, fmt.Errorf("storage: arrow message: missing continuation marker")
	}
	n := int64(int32(binary.LittleEndian.Uint32(b[4:])))
	if n <= 0 || n > int64(len(b)-8) {
		return nil, nil, fmt.Errorf("storage: arrow message: metadata length %d of %d bytes", n, len(b)-8)
	}
	return b[8 : 8+n], b[8+n:], nil
}

// batchMsg is a record batch encoded as one encapsulated Arrow IPC
// message, not yet copied out: its size is known before a buffer is
// chosen for it. Only the record batch message is built: the schema,
// which the writer of an IPC stream would encode first (for a table of
// thousands of columns, megabytes of flatbuffer per append), is stored
// once per schema version, not per batch.
type batchMsg struct {
	p    ipc.Payload
	size int
}

// encodeBatch encodes rec (8-byte aligned buffers, uncompressed). The
// caller releases the result.
func encodeBatch(rec arrow.Record) (*batchMsg, error) {
	p, err := ipc.GetRecordBatchPayload(rec)
	if err != nil {
		return nil, fmt.Errorf("storage: encode batch: %w", err)
	}
	m := &batchMsg{p: p}
	var c countWriter
	if _, err := m.p.WritePayload(&c); err != nil {
		m.release()
		return nil, fmt.Errorf("storage: encode batch: %w", err)
	}
	m.size = c.n
	return m, nil
}

// appendTo appends the encapsulated message to dst.
func (m *batchMsg) appendTo(dst []byte) ([]byte, error) {
	w := appendWriter{dst: dst}
	if _, err := m.p.WritePayload(&w); err != nil {
		return nil, fmt.Errorf("storage: encode batch: %w", err)
	}
	return w.dst, nil
}

func (m *batchMsg) release() { m.p.Release() }

// errDictionary refuses dictionary-encoded columns, which the log's
// batches (decoded against the table schema alone) cannot hold.
var errDictionary = errors.New("storage: encode batch: dictionary-encoded columns are not supported")

// schemaHasDictionary is hasDictionary of s's fields, without copying
// them (Schema.Fields copies: ~90 bytes per column per append).
func schemaHasDictionary(s *arrow.Schema) bool {
	for i := range s.NumFields() {
		f := s.Field(i)
		if hasDictionary([]arrow.Field{f}) {
			return true
		}
	}
	return false
}

func hasDictionary(fs []arrow.Field) bool {
	for _, f := range fs {
		switch t := f.Type.(type) {
		case *arrow.DictionaryType:
			return true
		case arrow.NestedType:
			if hasDictionary(t.Fields()) {
				return true
			}
		}
	}
	return false
}

type countWriter struct{ n int }

func (c *countWriter) Write(p []byte) (int, error) {
	c.n += len(p)
	return len(p), nil
}

type appendWriter struct{ dst []byte }

func (a *appendWriter) Write(p []byte) (int, error) {
	a.dst = append(a.dst, p...)
	return len(p), nil
}

// rowsMsg is the Arrow part of a ROWS_SPARSE payload being built (see
// records.go): the record batch message of the batch's present columns
// (nil when every column is all null), and the batch's zone maps, whose
// stored columns are exactly the present ones.
type rowsMsg struct {
	msg   *batchMsg
	stats segment.Stats
}

// encodeRows encodes rec's present columns. The caller releases the
// result.
func encodeRows(rec arrow.Record) (*rowsMsg, error) {
	if schemaHasDictionary(rec.Schema()) {
		return nil, errDictionary
	}
	m := &rowsMsg{stats: batchStats(rec)}
	var buf [64]int
	present := m.stats.StoredCols(buf[:0])
	var err error
	switch {
	case len(present) == 0:
	case len(present) == int(rec.NumCols()):
		m.msg, err = encodeBatch(rec)
	default:
		sub := subRecord(rec, present)
		m.msg, err = encodeBatch(sub)
		sub.Release()
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

// size is the length of the Arrow message.
func (m *rowsMsg) size() int {
	if m.msg == nil {
		return 0
	}
	return m.msg.size
}

// appendTo appends the Arrow message (if any) to dst.
func (m *rowsMsg) appendTo(dst []byte) ([]byte, error) {
	if m.msg == nil {
		return dst, nil
	}
	return m.msg.appendTo(dst)
}

func (m *rowsMsg) release() {
	if m.msg != nil {
		m.msg.release()
	}
}

// subRecord is the record of rec's columns cols (ascending), sharing
// rec's arrays. The caller releases it.
func subRecord(rec arrow.Record, cols []int) arrow.Record {
	fields := make([]arrow.Field, len(cols))
	arrs := make([]arrow.Array, len(cols))
	for i, j := range cols {
		fields[i] = rec.Schema().Field(j)
		arrs[i] = rec.Column(j)
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, rec.NumRows())
}

// decodeRows decodes rows [lo, hi) of a ROWS or ROWS_SPARSE (typ)
// payload, whose Arrow part is the first n bytes of parent, as a record
// of sv's schema; r is the payload's decoded header (splitRows), and
// 0 <= lo <= hi <= r.rows. Columns absent from a ROWS_SPARSE record are
// all null, made hi-lo rows long: reading a page of a large batch of
// nulls costs the page, not the batch. The record's buffers slice parent
// (see decodeBatchIPCBuf). The caller releases the record.
func decodeRows(sv schemaVer, typ wal.Type, r *rec, parent *memory.Buffer, n int, lo, hi int64) (arrow.Record, error) {
	if lo < 0 || lo > hi || hi > r.rows {
		return nil, fmt.Errorf("storage: decode batch: rows [%d, %d) of a batch of %d", lo, hi, r.rows)
	}
	dense := func(sipc []byte) (arrow.Record, error) {
		rec, err := decodeBatchIPCBuf(sipc, parent, n)
		if err != nil {
			return nil, err
		}
		defer rec.Release()
		if rec.NumRows() != r.rows {
			return nil, fmt.Errorf("storage: decode batch: %d rows, record says %d", rec.NumRows(), r.rows)
		}
		return rec.NewSlice(lo, hi), nil
	}
	if typ == recRows {
		return dense(sv.ipc)
	}
	nf := sv.schema.NumFields()
	if r.stats.Len() != nf {
		return nil, fmt.Errorf("storage: decode batch: %d columns, schema version %d has %d", r.stats.Len(), sv.version, nf)
	}
	var buf [64]int
	present := r.stats.StoredCols(buf[:0])
	if len(present) == nf {
		return dense(sv.ipc)
	}
	var sub arrow.Record
	if len(present) > 0 {
		fields := make([]arrow.Field, len(present))
		for i, j := range present {
			fields[i] = sv.schema.Field(j)
		}
		sipc, err := encodeSchema(arrow.NewSchema(fields, nil))
		if err != nil {
			return nil, err
		}
		if sub, err = dense(sipc); err != nil {
			return nil, err
		}
		defer sub.Release()
	}
	// All-null columns of one type share one array.
	nulls := map[string]arrow.Array{}
	defer func() {
		for _, a := range nulls {
			a.Release()
		}
	}()
	cols := make([]arrow.Array, nf)
	next := 0
	for j := range cols {
		if next < len(present) && present[next] == j {
			cols[j] = sub.Column(next)
			next++
			continue
		}
		dt := sv.schema.Field(j).Type
		fp := dt.Fingerprint()
		a, ok := nulls[fp]
		if !ok || fp == "" {
			a = array.MakeArrayOfNull(memory.DefaultAllocator, dt, int(hi-lo))
			if fp == "" {
				defer a.Release()
			} else {
				nulls[fp] = a
			}
		}
		cols[j] = a
	}
	return array.NewRecordBatch(sv.schema, cols, hi-lo), nil
}

// staticMessages feeds prepared messages to an ipc.Reader.
type staticMessages struct {
	msgs []*ipc.Message
	i    int
}

func (m *staticMessages) Message() (*ipc.Message, error) {
	if m.i >= len(m.msgs) {
		return nil, io.EOF
	}
	m.i++
	return m.msgs[m.i-1], nil
}
func (m *staticMessages) Retain()  {}
func (m *staticMessages) Release() {}

// decodeBatchIPCBuf decodes the encapsulated record batch message in the
// first n bytes of parent; the record's buffers are slices of parent,
// which they retain (reference-counted), so a pooled parent is recycled
// only when the record's last array is released.
func decodeBatchIPCBuf(schemaIPC []byte, parent *memory.Buffer, n int) (rec arrow.Record, err error) {
	b := parent.Bytes()[:n]
	defer func() {
		if p := recover(); p != nil {
			rec, err = nil, fmt.Errorf("storage: decode batch: %v", p)
		}
	}()
	smeta, srest, err := splitMessage(schemaIPC)
	if err != nil {
		return nil, err
	}
	_ = srest
	bmeta, body, err := splitMessage(b)
	if err != nil {
		return nil, err
	}
	sm := ipc.NewMessage(memory.NewBufferBytes(smeta), memory.NewBufferBytes(nil))
	metaBuf := memory.SliceBuffer(parent, 8, len(bmeta))
	bodyBuf := memory.SliceBuffer(parent, 8+len(bmeta), len(body))
	bm := ipc.NewMessage(metaBuf, bodyBuf)
	metaBuf.Release()
	bodyBuf.Release()
	// The ipc.Reader never releases the messages it reads: drop our
	// references once the record (which retains what it uses) is built.
	defer bm.Release()
	defer sm.Release()
	if sm.Type() != ipc.MessageSchema || bm.Type() != ipc.MessageRecordBatch {
		return nil, fmt.Errorf("storage: decode batch: unexpected IPC message types %v, %v", sm.Type(), bm.Type())
	}
	if bl := bm.BodyLen(); bl < 0 || bl > int64(len(body)) {
		return nil, fmt.Errorf("storage: decode batch: body length %d of %d bytes", bl, len(body))
	}
	r, err := ipc.NewReaderFromMessageReader(&staticMessages{msgs: []*ipc.Message{sm, bm}})
	if err != nil {
		return nil, fmt.Errorf("storage: decode batch: %w", err)
	}
	defer r.Release()
	if !r.Next() {
		if r.Err() != nil {
			return nil, fmt.Errorf("storage: decode batch: %w", r.Err())
		}
		return nil, fmt.Errorf("storage: decode batch: no record")
	}
	rec = r.RecordBatch()
	rec.Retain()
	return rec, nil
}

// sameShape reports whether two types have the same physical layout and
// field names, ignoring nullability and metadata.
func sameShape(a, b arrow.DataType) bool {
	switch at := a.(type) {
	case *arrow.StructType:
		bt, ok := b.(*arrow.StructType)
		if !ok || at.NumFields() != bt.NumFields() {
			return false
		}
		for i := range at.NumFields() {
			if at.Field(i).Name != bt.Field(i).Name || !sameShape(at.Field(i).Type, bt.Field(i).Type) {
				return false
			}
		}
		return true
	case *arrow.ListType:
		bt, ok := b.(*arrow.ListType)
		return ok && sameShape(at.Elem(), bt.Elem())
	case *arrow.LargeListType:
		bt, ok := b.(*arrow.LargeListType)
		return ok && sameShape(at.Elem(), bt.Elem())
	}
	return arrow.TypeEqual(a, b)
}

// checkBatchSchema explains why a batch's schema does not match the
// table schema of the version it names.
func checkBatchSchema(got, want *arrow.Schema) error {
	if got.NumFields() != want.NumFields() {
		return fmt.Errorf("batch has %d columns, schema has %d", got.NumFields(), want.NumFields())
	}
	for i := range got.NumFields() {
		g, w := got.Field(i), want.Field(i)
		if g.Name != w.Name {
			return fmt.Errorf("column %d is %q, schema has %q", i, g.Name, w.Name)
		}
		if !sameShape(g.Type, w.Type) {
			return fmt.Errorf("column %q has type %v, schema has %v", g.Name, g.Type, w.Type)
		}
	}
	return nil
}

// checkAdditive explains why next is not an additive evolution of prev:
// every existing field keeps its position, name and type; new fields (at
// the end of the table or of a struct) are nullable; a field may become
// nullable but not required.
func checkAdditive(prev, next []arrow.Field, path string) error {
	if len(next) < len(prev) {
		return fmt.Errorf("%sfields dropped (%d -> %d)", path, len(prev), len(next))
	}
	for i, p := range prev {
		n := next[i]
		if p.Name != n.Name {
			return fmt.Errorf("%sfield %d renamed or reordered (%q -> %q)", path, i, p.Name, n.Name)
		}
		if p.Nullable && !n.Nullable {
			return fmt.Errorf("%sfield %q: NULLABLE -> REQUIRED", path, p.Name)
		}
		if err := checkAdditiveType(p.Type, n.Type, path+p.Name+"."); err != nil {
			return err
		}
	}
	for _, n := range next[len(prev):] {
		if !n.Nullable {
			return fmt.Errorf("%snew field %q is REQUIRED", path, n.Name)
		}
	}
	return nil
}

func checkAdditiveType(p, n arrow.DataType, path string) error {
	switch pt := p.(type) {
	case *arrow.StructType:
		nt, ok := n.(*arrow.StructType)
		if !ok {
			return fmt.Errorf("%s type %v -> %v", path, p, n)
		}
		return checkAdditive(pt.Fields(), nt.Fields(), path)
	case *arrow.ListType:
		nt, ok := n.(*arrow.ListType)
		if !ok {
			return fmt.Errorf("%s type %v -> %v", path, p, n)
		}
		return checkAdditiveType(pt.Elem(), nt.Elem(), path)
	}
	if !arrow.TypeEqual(p, n) {
		return fmt.Errorf("%s type %v -> %v", path, p, n)
	}
	return nil
}

// conformData returns d as an array of type to, an additive evolution of
// d's type: struct children missing in d become all-null children.
func conformData(d arrow.ArrayData, to arrow.DataType) arrow.ArrayData {
	switch tt := to.(type) {
	case *arrow.StructType:
		children := make([]arrow.ArrayData, tt.NumFields())
		old := d.Children()
		for i := range children {
			if i < len(old) {
				children[i] = conformData(old[i], tt.Field(i).Type)
			} else {
				null := array.MakeArrayOfNull(memory.DefaultAllocator, tt.Field(i).Type, d.Offset()+d.Len())
				children[i] = null.Data()
				children[i].Retain()
				null.Release()
			}
		}
		nd := array.NewData(to, d.Len(), d.Buffers(), children, d.NullN(), d.Offset())
		for _, c := range children {
			c.Release()
		}
		return nd
	case *arrow.ListType:
		child := conformData(d.Children()[0], tt.Elem())
		nd := array.NewData(to, d.Len(), d.Buffers(), []arrow.ArrayData{child}, d.NullN(), d.Offset())
		child.Release()
		return nd
	}
	d.Retain()
	return d
}

// conform returns rec as a record of schema to (an additive evolution of
// rec's schema), padding missing columns and struct children with nulls.
// It consumes the caller's reference to rec.
func conform(rec arrow.Record, to *arrow.Schema) arrow.Record {
	if rec.Schema().Equal(to) {
		return rec
	}
	n := rec.NumRows()
	cols := make([]arrow.Array, to.NumFields())
	for i, f := range to.Fields() {
		if i < int(rec.NumCols()) {
			d := conformData(rec.Column(i).Data(), f.Type)
			cols[i] = array.MakeFromData(d)
			d.Release()
		} else {
			cols[i] = array.MakeArrayOfNull(memory.DefaultAllocator, f.Type, int(n))
		}
	}
	out := array.NewRecordBatch(to, cols, n)
	for _, c := range cols {
		c.Release()
	}
	rec.Release()
	return out
}

// maxStatBytes bounds the string/binary values kept as zone-map bounds;
// a column with a longer value gets no bounds (its null count is kept).
const maxStatBytes = 64

// batchStats computes the zone maps of rec's columns; all-null columns
// take no memory (see segment.Stats).
func batchStats(rec arrow.Record) segment.Stats {
	s := segment.NewStats(rec.NumRows())
	for _, c := range rec.Columns() {
		s.Append(columnStats(c))
	}
	s.Finish()
	return s
}

// columnStats computes the zone map of one column.
func columnStats(a arrow.Array) segment.ColumnStats {
	s := segment.ColumnStats{NullCount: int64(a.NullN())}
	if a.NullN() == a.Len() {
		return s
	}
	first := true
	switch c := a.(type) {
	case *array.Int64:
		statsInt(&s, c, c.Value)
	case *array.Int32:
		statsInt(&s, c, func(i int) int64 { return int64(c.Value(i)) })
	case *array.Int16:
		statsInt(&s, c, func(i int) int64 { return int64(c.Value(i)) })
	case *array.Int8:
		statsInt(&s, c, func(i int) int64 { return int64(c.Value(i)) })
	case *array.Date32:
		statsInt(&s, c, func(i int) int64 { return int64(c.Value(i)) })
	case *array.Timestamp:
		statsInt(&s, c, func(i int) int64 { return int64(c.Value(i)) })
	case *array.Time64:
		statsInt(&s, c, func(i int) int64 { return int64(c.Value(i)) })
	case *array.Float64:
		for i := range c.Len() {
			v := c.Value(i)
			if c.IsNull(i) || v != v {
				continue
			}
			if first || v < s.MinF {
				s.MinF = v
			}
			if first || v > s.MaxF {
				s.MaxF = v
			}
			first = false
		}
		if !first {
			s.Kind = segment.KindFloat
		}
	case *array.Boolean:
		s.MinI, s.MaxI = 1, 0
		for i := range c.Len() {
			if c.IsNull(i) {
				continue
			}
			if c.Value(i) {
				s.MaxI = 1
			} else {
				s.MinI = 0
			}
		}
		s.Kind = segment.KindBool
	case *array.String:
		// Value is a view of the column's bytes: no copy per row.
		statsBytes(&s, c, c.Value)
	case *array.Binary:
		statsBytes(&s, c, func(i int) string { return unsafeString(c.Value(i)) })
	}
	return s
}

func statsInt(s *segment.ColumnStats, a arrow.Array, v func(int) int64) {
	first := true
	for i := range a.Len() {
		if a.IsNull(i) {
			continue
		}
		x := v(i)
		if first || x < s.MinI {
			s.MinI = x
		}
		if first || x > s.MaxI {
			s.MaxI = x
		}
		first = false
	}
	s.Kind = segment.KindInt
}

// statsBytes computes byte-order bounds; v returns views of the column's
// data (valid while the array is), copied only for the two bounds.
func statsBytes(s *segment.ColumnStats, a arrow.Array, v func(int) string) {
	var lo, hi string
	first := true
	for i := range a.Len() {
		if a.IsNull(i) {
			continue
		}
		x := v(i)
		if len(x) > maxStatBytes {
			return
		}
		if first || x < lo {
			lo = x
		}
		if first || x > hi {
			hi = x
		}
		first = false
	}
	s.Kind = segment.KindBytes
	s.MinB, s.MaxB = []byte(lo), []byte(hi)
}

// unsafeString views b as a string without copying; b must not change
// while the string is in use.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
