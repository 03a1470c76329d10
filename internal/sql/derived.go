package sql

import (
	"context"
	"errors"
	"fmt"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
)

// Derived tables.
//
// A FROM subquery or a WITH entry read in FROM is materialized once and
// then scanned by the block that reads it (a WITH entry by each block
// that names it). Its rows are held as Arrow record batches of
// heldChunk rows, charged to the memory budget by the size of their
// buffers: as a row of Go values each ([]any, a boxed value per cell)
// they took about seven times the memory of two INT64 columns, and the
// budget stopped a window over a few million rows in a subquery.
//
// A SELECT block whose rows come out as they are (no DISTINCT, ORDER BY,
// LIMIT, OFFSET, AS STRUCT or AS VALUE) appends them to the batches as
// its scan (or its groups) produce them (heldRows.add); the result of
// any other query (a set operation, a sort) is converted from its rows
// once complete (holdRowset), its rows then let go.

// heldChunk is the most rows of one held batch.
const heldChunk = 8192

// heldPendingBytes is the most bytes of STRING and BYTES values the rows
// waiting to be appended to a batch may reference before it is built.
const heldPendingBytes = 4 << 20

// heldRows is a derived table's rows as Arrow record batches (fields
// __c0, __c1, ... as rowsRelation names them).
type heldRows struct {
	r       *runner
	schema  *schema.Schema
	arrow   *arrow.Schema
	batches []arrow.RecordBatch
	n       int   // rows in batches
	charged int64 // charged to the budget for batches
	// pending are parts of the select list's values (columns of one
	// input batch, and the rows of it kept) not yet in a batch.
	pending     []heldPart
	pendingRows int
	pendingData int
}

type heldPart struct {
	cols [][]any
	rows []int32 // nil: all n
	n    int
}

func newHeldRows(r *runner, types []string) *heldRows {
	h := &heldRows{r: r, schema: &schema.Schema{}}
	for i, t := range types {
		h.schema.Fields = append(h.schema.Fields, resultField(fmt.Sprintf("__c%d", i), t))
	}
	h.arrow = schema.ToArrow(h.schema)
	return h
}

// add appends rows of a block's output: cols are the select list's
// values (one slice per column), keep the rows kept (nil: all n).
func (h *heldRows) add(cols [][]any, n int, keep []bool) error {
	p := heldPart{cols: cols, n: n}
	if keep != nil {
		for i := 0; i < n; i++ {
			if keep[i] {
				p.rows = append(p.rows, int32(i))
			}
		}
		p.n = len(p.rows)
		if p.n == n {
			p.rows = nil
		}
	}
	for lo := 0; lo < p.n; {
		hi := min(p.n, lo+heldChunk-h.pendingRows)
		part := heldPart{cols: p.cols, n: hi - lo}
		if p.rows != nil {
			part.rows = p.rows[lo:hi]
		} else if lo > 0 || hi < p.n {
			part.rows = make([]int32, hi-lo)
			for i := range part.rows {
				part.rows[i] = int32(lo + i)
			}
		}
		h.pending = append(h.pending, part)
		h.pendingRows += part.n
		h.pendingData += part.dataBytes()
		if h.pendingRows >= heldChunk || h.pendingData >= heldPendingBytes {
			if err := h.flush(); err != nil {
				return err
			}
		}
		lo = hi
	}
	return nil
}

// dataBytes is the bytes of the STRING and BYTES values the part holds.
func (p heldPart) dataBytes() int {
	n := 0
	for _, col := range p.cols {
		for i := 0; i < p.n; i++ {
			row := i
			if p.rows != nil {
				row = int(p.rows[i])
			}
			switch v := col[row].(type) {
			case string:
				n += len(v)
			case []byte:
				n += len(v)
			}
		}
	}
	return n
}

// flush builds the pending rows into a batch, its buffers sized to fit
// them, and charges it.
func (h *heldRows) flush() error {
	if h.pendingRows == 0 {
		return nil
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, h.arrow)
	defer b.Release()
	for c, fb := range b.Fields() {
		fb.Resize(h.pendingRows)
		if bb, ok := fb.(interface{ ReserveData(int) }); ok { // STRING, BYTES
			data := 0
			for _, p := range h.pending {
				data += heldPart{cols: p.cols[c : c+1], rows: p.rows, n: p.n}.dataBytes()
			}
			bb.ReserveData(data)
		}
		for _, p := range h.pending {
			col := p.cols[c]
			for i := 0; i < p.n; i++ {
				row := i
				if p.rows != nil {
					row = int(p.rows[i])
				}
				v := col[row]
				if v == nil {
					appendNull(fb, true)
					continue
				}
				if err := appendValue(fb, v, true); err != nil {
					var fe *filter.Error
					if err == errColumnTooLarge || errors.As(err, &fe) {
						return err // the user's error, as it is
					}
					return fmt.Errorf("sql: column %s: %w", h.schema.Fields[c].Name, err)
				}
			}
		}
	}
	rec := b.NewRecordBatch()
	clear(h.pending)
	h.pending, h.pendingRows, h.pendingData = h.pending[:0], 0, 0
	h.batches = append(h.batches, rec)
	h.n += int(rec.NumRows())
	size := recordBytes(rec)
	h.charged += size
	return h.r.charge(size, "rows of a derived table (FROM subquery or WITH entry)")
}

// finish builds the last batch.
func (h *heldRows) finish() error {
	err := h.flush()
	h.pending = nil
	return err
}

// recordBytes is the memory of a batch's columns: their buffers (with
// their children's) and the arrays' headers.
func recordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, a := range rec.Columns() {
		n += dataBytes(a.Data()) + int64(unsafe.Sizeof(a))
	}
	return n
}

func dataBytes(d arrow.ArrayData) int64 {
	const header = 128 // the array.Data and its buffer headers
	n := int64(header)
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Cap())
		}
	}
	for _, c := range d.Children() {
		n += dataBytes(c)
	}
	return n
}

// derived runs a FROM subquery, its rows held as Arrow batches.
func (r *runner) derived(ctx context.Context, q *Query, e *env) (*rowset, error) {
	if r.holding == nil {
		r.holding = map[*Query]bool{}
	}
	r.holding[q] = true
	rs, err := r.query(ctx, q, e)
	delete(r.holding, q)
	if err != nil {
		return nil, err
	}
	return r.holdRowset(rs)
}

// holdRowset returns rs with its rows held as Arrow batches: rs itself
// when they are, else a rowset of the rows converted (rs then holds
// none; what they were charged is released).
func (r *runner) holdRowset(rs *rowset) (*rowset, error) {
	if rs.held == nil {
		h, err := r.convertRows(rs)
		if err != nil {
			return nil, err
		}
		rs = &rowset{names: rs.names, types: rs.types, held: h}
	}
	if testHookDerivedHeld != nil {
		testHookDerivedHeld(rs.held.charged)
	}
	return rs, nil
}

// convertRows converts rs's rows to Arrow batches, letting them go.
func (r *runner) convertRows(rs *rowset) (*heldRows, error) {
	h := newHeldRows(r, rs.types)
	for lo := 0; lo < len(rs.rows); lo += heldChunk {
		hi := min(len(rs.rows), lo+heldChunk)
		cols := make([][]any, len(rs.types))
		for c := range cols {
			col := make([]any, hi-lo)
			for i, row := range rs.rows[lo:hi] {
				col[i] = row[c]
			}
			cols[c] = col
		}
		if err := h.add(cols, hi-lo, nil); err != nil {
			return nil, err
		}
		if err := h.flush(); err != nil {
			return nil, err
		}
		clear(rs.rows[lo:hi])
	}
	if err := h.finish(); err != nil {
		return nil, err
	}
	rs.rows = nil
	r.release(rs.charged)
	return h, nil
}

// dropHeld lets go of the FROM subqueries' tables held since r.held had
// n: their block has ended, and nothing else reads them (a WITH entry's,
// which other blocks may read, is not among them). A correlated
// subquery runs once per binding: each run's tables were charged anew
// and never released.
func (r *runner) dropHeld(n int) {
	for _, h := range r.held[n:] {
		r.release(h.charged)
		h.charged, h.batches = 0, nil
	}
	clear(r.held[n:])
	r.held = r.held[:n]
}

// testHookDerivedHeld, set by a test, is called when a derived table is
// held, with what it was charged.
var testHookDerivedHeld func(charged int64)

// scan serves the held rows' columns cols (internal names of rel).
func (h *heldRows) scan(rel *relation, cols []string, fn func(arrow.RecordBatch, int) error) error {
	if len(cols) == 0 {
		for _, b := range h.batches {
			if err := fn(nil, int(b.NumRows())); err != nil {
				return err
			}
		}
		return nil
	}
	idx := make([]int, len(cols))
	fields := make([]arrow.Field, len(cols))
	for k, c := range cols {
		idx[k] = rel.index(c)
		if idx[k] < 0 {
			return fmt.Errorf("sql: no column %s in a derived table", c)
		}
		fields[k] = h.arrow.Field(idx[k])
	}
	sub := arrow.NewSchema(fields, nil)
	arrs := make([]arrow.Array, len(cols))
	for _, b := range h.batches {
		for k, i := range idx {
			arrs[k] = b.Column(i)
		}
		rec := array.NewRecordBatch(sub, arrs, b.NumRows())
		err := fn(rec, int(b.NumRows()))
		rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}
