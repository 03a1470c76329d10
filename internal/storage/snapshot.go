package storage

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/bqstore/bqstore/internal/storage/segment"
	"github.com/bqstore/bqstore/internal/storage/stream"
	"github.com/bqstore/bqstore/internal/storage/wal"
)

// ColumnStats is a per-batch, per-column zone map: null count and, for
// integer-like, float, string/binary (values up to 64 bytes) and boolean
// columns, min and max. See segment.ColumnStats.
type ColumnStats = segment.ColumnStats

// Stats is the zone maps of a batch's columns. See segment.Stats.
type Stats = segment.Stats

// Chunk is one entry of a snapshot's read plan: a visible row range of
// one stored batch.
type Chunk struct {
	// RowStart, RowEnd: the chunk's rows in the snapshot's row space
	// (prefix sums over the plan): [RowStart, RowEnd).
	RowStart, RowEnd int64
	// NumRows = RowEnd - RowStart.
	NumRows int64
	// Stats has one zone map per column of the snapshot's schema
	// (Stats.At), shared with the batch index: read only. They
	// describe the whole stored batch, which may hold more rows than the
	// chunk, so they are conservative bounds: fit for pruning. Columns
	// the batch predates are all null.
	Stats Stats
	// Bytes is the chunk's share of the stored batch size.
	Bytes int64

	f        *logFile
	off, len int64
	lo, hi   int64 // rows [lo, hi) of the stored batch
	sv       int
}

// Snapshot is a consistent view of a table at a time. It pins the files
// it reads until Release.
type Snapshot struct {
	at       time.Time
	sv       schemaVer
	schemas  map[int]schemaVer
	chunks   []Chunk
	files    []*logFile
	numRows  int64
	numBytes int64
	released atomic.Bool
}

// Snapshot returns the table as of at (zero: now): exactly the rows
// visible at that time. It fails with ErrSnapshotTooOld before the
// time-travel window or the table's creation and ErrSnapshotInFuture
// after now.
func (t *Table) Snapshot(at time.Time) (*Snapshot, error) {
	now := t.db.clock()
	t.mu.Lock()
	s, err := t.snapshotLocked(now, at)
	if err != nil {
		t.mu.Unlock()
	}
	return s, err
}

// snapshotLocked checks the time, waits for records stamped at or before
// it and captures the plan's inputs; it releases t.mu on success.
// REQUIRES: t.mu held.
func (t *Table) snapshotLocked(now, at time.Time) (*Snapshot, error) {
	if t.mu.dropped {
		return nil, fmt.Errorf("storage: table %q: %w", t.id, ErrTableNotFound)
	}
	if last := usTime(max(t.mu.lastTS, t.db.lastTS.Load())); last.After(now) {
		// Timestamps run ahead of the clock under load, and stay
		// ahead when it steps back: any table's latest is "now" for
		// every table (DB.Now), so that one time reads them all.
		now = last
	}
	if at.IsZero() {
		at = now
	}
	if at.After(now) {
		return nil, fmt.Errorf("storage: snapshot at %v, now %v: %w", at, now, ErrSnapshotInFuture)
	}
	if at.Before(now.Add(-t.db.opts.TimeTravel)) {
		return nil, fmt.Errorf("storage: snapshot at %v, window starts %v: %w", at, now.Add(-t.db.opts.TimeTravel), ErrSnapshotTooOld)
	}
	ts := at.UnixMicro()
	if ts < t.mu.createTS {
		return nil, fmt.Errorf("storage: snapshot at %v before the table's creation at %v: %w", at, usTime(t.mu.createTS), ErrSnapshotTooOld)
	}
	// Records stamped later get a time after ts (readTS), and records
	// stamped at or before ts may still be in flight: wait for them, so
	// that every snapshot at ts sees the same rows.
	t.mu.readTS = max(t.mu.readTS, ts)
	for t.mu.inflight != 0 && t.mu.inflight <= ts && t.mu.failErr == nil && !t.mu.closed {
		t.applied.Wait()
	}
	s := &Snapshot{at: at, schemas: make(map[int]schemaVer, len(t.mu.schemas))}
	for _, sv := range t.mu.schemas {
		if sv.ts <= ts {
			s.sv = sv
		}
		s.schemas[sv.version] = sv
	}
	// What the plan needs, captured under the lock without copying
	// per batch: the batch index prefix (entries are never modified and
	// the slice only grows or is replaced), the visibility view of the
	// streams (immutable, shared until a stream's visibility changes) and
	// a pin on every file of the table (few; the unused ones are
	// unpinned below).
	batches := t.mu.batches[:len(t.mu.batches):len(t.mu.batches)]
	vis := t.visibilityLocked()
	files := make([]*logFile, len(t.mu.files))
	copy(files, t.mu.files)
	for _, f := range files {
		f.ref()
	}
	t.mu.Unlock()
	s.plan(batches, vis, ts)
	used := make(map[*logFile]bool, len(files))
	for i := range s.chunks {
		used[s.chunks[i].f] = true
	}
	for _, f := range files {
		if used[f] {
			s.files = append(s.files, f)
		} else {
			f.unref()
		}
	}
	return s, nil
}

// plan builds the read plan at ts from the batch index and the stream
// view. Chunks share the batches' zone maps (immutable), also those of
// batches written under another schema version than the snapshot's
// (Stats.WithLen: the columns a batch predates are all null).
func (s *Snapshot) plan(batches []batchRef, vis map[string]*stream.Stream, ts int64) {
	nf := s.sv.schema.NumFields()
	// One allocation: at most one chunk per batch.
	s.chunks = make([]Chunk, 0, len(batches))
	var rows int64
	for i := range batches {
		br := &batches[i]
		b := &br.b
		var lo, hi int64
		if st, ok := vis[b.Stream]; ok {
			lo, hi = stream.VisibleRange(st, b.AppendedBy(ts), b.First, b.Rows, ts)
		} else {
			// The default stream, or a stream garbage-collected past
			// the time-travel window: its rows are visible from their
			// append time at every time a snapshot can be taken at.
			lo, hi = 0, b.AppendedBy(ts)
		}
		if lo >= hi {
			continue
		}
		c := Chunk{
			RowStart: rows, RowEnd: rows + hi - lo, NumRows: hi - lo,
			Stats: b.Stats.WithLen(nf),
			Bytes: b.Len * (hi - lo) / b.Rows,
			f:     br.f, off: b.Offset, len: b.Len, lo: lo, hi: hi, sv: b.SchemaVersion,
		}
		rows += hi - lo
		s.numBytes += c.Bytes
		s.chunks = append(s.chunks, c)
	}
	s.numRows = rows
}

// Time is the snapshot time.
func (s *Snapshot) Time() time.Time { return s.at }

// SchemaVersion is the schema version in force at the snapshot time.
func (s *Snapshot) SchemaVersion() int { return s.sv.version }

// Schema is the schema in force at the snapshot time; every record the
// snapshot returns conforms to it.
func (s *Snapshot) Schema() *arrow.Schema { return s.sv.schema }

// NumRows is the number of visible rows.
func (s *Snapshot) NumRows() int64 { return s.numRows }

// NumBytes estimates the stored size of the visible rows.
func (s *Snapshot) NumBytes() int64 { return s.numBytes }

// Chunks is the read plan, in log order. The slice is shared: do not
// modify it.
func (s *Snapshot) Chunks() []Chunk { return s.chunks }

// ReadChunk reads rows [rowStart, rowEnd) of chunk c (relative to the
// chunk) with the top-level columns listed in columns (nil: all), as a
// record of the snapshot's schema (projected). Batches written under an
// older schema version are padded with null columns and struct children.
// The caller releases the record.
func (s *Snapshot) ReadChunk(ctx context.Context, c Chunk, rowStart, rowEnd int64, columns []int) (arrow.Record, error) {
	if s.released.Load() {
		return nil, fmt.Errorf("storage: read of a released snapshot: %w", ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c.f == nil {
		return nil, fmt.Errorf("storage: read chunk: not a chunk of this snapshot: %w", ErrInvalidArgument)
	}
	if rowStart < 0 || rowEnd > c.NumRows || rowStart > rowEnd {
		return nil, fmt.Errorf("storage: read chunk: rows [%d, %d) of a chunk of %d rows: %w", rowStart, rowEnd, c.NumRows, ErrInvalidArgument)
	}
	nf := s.sv.schema.NumFields()
	for _, col := range columns {
		if col < 0 || col >= nf {
			return nil, fmt.Errorf("storage: read chunk: column %d of %d: %w", col, nf, ErrInvalidArgument)
		}
	}
	bsv, ok := s.schemas[c.sv]
	if !ok {
		return nil, fmt.Errorf("storage: %s at offset %d: batch of unknown schema version %d: %w", c.f.name, c.off, c.sv, ErrCorruption)
	}
	// The frame is read into a pooled buffer that the decoded arrays
	// slice (zero-copy) and retain; it returns to the pool when the
	// caller releases the last of them.
	parent := memory.NewResizableBuffer(readAllocator{})
	defer parent.Release()
	parent.Resize(int(c.len - wal.HeaderSize))
	fr, err := wal.ReadAt(c.f.f, c.off+c.len, c.f.name, c.off, parent.Bytes())
	if err != nil {
		return nil, err
	}
	msg, r, err := splitRows(fr.Type, fr.Payload)
	if err != nil {
		return nil, &wal.CorruptionError{File: c.f.name, Offset: c.off, Reason: err.Error()}
	}
	if r.rows < c.hi {
		return nil, &wal.CorruptionError{File: c.f.name, Offset: c.off, Reason: fmt.Sprintf("batch has %d rows, index says %d", r.rows, c.hi)}
	}
	rec, err := decodeRows(bsv, fr.Type, r, parent, len(msg), c.lo+rowStart, c.lo+rowEnd)
	if err != nil {
		return nil, &wal.CorruptionError{File: c.f.name, Offset: c.off, Reason: err.Error()}
	}
	out := conform(rec, s.sv.schema)
	if columns == nil {
		return out, nil
	}
	fields := make([]arrow.Field, len(columns))
	cols := make([]arrow.Array, len(columns))
	for i, col := range columns {
		fields[i] = s.sv.schema.Field(col)
		cols[i] = out.Column(col)
	}
	md := s.sv.schema.Metadata()
	proj := array.NewRecordBatch(arrow.NewSchema(fields, &md), cols, out.NumRows())
	out.Release()
	return proj, nil
}

// Release unpins the snapshot's files. Reads after Release fail.
func (s *Snapshot) Release() {
	if s.released.Swap(true) {
		return
	}
	for _, f := range s.files {
		f.unref()
	}
	s.files = nil
}
