package storage

import (
	"math"

	"github.com/bqstore/bqstore/internal/storage/stream"
)

// Visibility bookkeeping outside the batch index: the stream view that
// snapshots plan with, and the counters of visible rows and bytes that
// Table.Stats serves (REST numRows/numBytes) without a snapshot.

// visibilityLocked returns the stream view snapshots plan with: copies
// of the PENDING and BUFFERED streams of the durable state (COMMITTED
// and _default rows are visible from their append time, which the batch
// index alone says). The map and its streams are immutable once built
// and shared by every snapshot until a record changes a stream's
// visibility (invalidateVisLocked), so a snapshot copies nothing per
// batch or per stream. Copies share the FlushPoint arrays, which only
// grow in place (a prefix a copy sees is never rewritten).
// REQUIRES: t.mu held.
func (t *Table) visibilityLocked() map[string]*stream.Stream {
	if t.mu.vis != nil {
		return t.mu.vis
	}
	vis := map[string]*stream.Stream{}
	t.mu.durable.Range(func(st *stream.Stream) {
		if st.Type == stream.Pending || st.Type == stream.Buffered {
			cp := *st
			cp.Flushes = cp.Flushes[:len(cp.Flushes):len(cp.Flushes)]
			vis[st.ID] = &cp
		}
	})
	t.mu.vis = vis
	return vis
}

// invalidateVisLocked drops the stream view after a change of a stream's
// visibility (create, flush, commit, abandon, checkpoint load, GC).
// REQUIRES: t.mu held.
func (t *Table) invalidateVisLocked() { t.mu.vis = nil }

// countLocked updates the visible-now counters for record r (frame
// length flen) before r is applied to the durable state. numBytes is an
// estimate: the frame bytes of the visible rows as appended (a BUFFERED
// stream's flush moves a proportional share of its hidden bytes).
// REQUIRES: t.mu held.
func (t *Table) countLocked(r *rec, flen int64) {
	s := t.mu.durable
	switch r.typ {
	case recRows:
		if r.stream == DefaultStreamID {
			t.mu.numRows += r.rows
			t.mu.numBytes += flen
			return
		}
		st, ok := s.Lookup(r.stream)
		switch {
		case !ok || st.State == stream.Abandoned:
		case st.Type == stream.Committed:
			t.mu.numRows += r.rows
			t.mu.numBytes += flen
		default:
			t.mu.hidden[r.stream] += flen
		}
	case recFlush:
		st, ok := s.Lookup(r.stream)
		if !ok || st.Type != stream.Buffered {
			return
		}
		w0, w1 := st.Flushed(), r.first+1
		if w1 <= w0 || st.Next <= w0 {
			return
		}
		moved := t.mu.hidden[r.stream] * (w1 - w0) / (st.Next - w0)
		t.mu.numRows += w1 - w0
		t.mu.numBytes += moved
		t.mu.hidden[r.stream] -= moved
	case recBatchCommit:
		for _, id := range r.ids {
			if st, ok := s.Lookup(id); ok {
				t.mu.numRows += st.Next
			}
			t.mu.numBytes += t.mu.hidden[id]
			delete(t.mu.hidden, id)
		}
	case recAbandon:
		for _, id := range r.ids {
			delete(t.mu.hidden, id)
		}
	}
}

// recountLocked recomputes the counters from the batch index and the
// durable state (at open, after recovery).
// REQUIRES: t.mu held.
func (t *Table) recountLocked() {
	t.mu.numRows, t.mu.numBytes = 0, 0
	t.mu.hidden = map[string]int64{}
	for i := range t.mu.batches {
		b := &t.mu.batches[i].b
		st, ok := t.mu.durable.Lookup(b.Stream)
		if !ok {
			// _default, or a stream collected past the window.
			t.mu.numRows += b.Rows
			t.mu.numBytes += b.Len
			continue
		}
		_, hi := stream.VisibleRange(st, b.Rows, b.First, b.Rows, math.MaxInt64)
		vb := b.Len * hi / b.Rows
		t.mu.numRows += hi
		t.mu.numBytes += vb
		if st.State != stream.Abandoned && (st.Type == stream.Buffered || st.Type == stream.Pending && st.State != stream.CommittedState) {
			t.mu.hidden[b.Stream] += b.Len - vb
		}
	}
}

// Stats returns the number of rows visible now and an estimate of their
// stored size, from counters: no snapshot, no allocation. They match
// Snapshot(now).NumRows() (rows of records applied so far);
// the bytes are the frame bytes of those rows as appended.
func (t *Table) Stats() (rows, bytes int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.mu.numRows, t.mu.numBytes
}

// hasRowsLocked reports whether the table has rows visible now
// (numRows: the records applied) or admitted to become visible (the
// admission state: rows of the default or a COMMITTED stream, a
// BUFFERED stream's flush, a PENDING stream's commit). A stream GC
// collected had its rows counted in numRows.
// REQUIRES: t.mu held.
func (t *Table) hasRowsLocked() bool {
	a := t.mu.admit
	if t.mu.numRows > 0 || a.DefaultNext > 0 {
		return true
	}
	has := false
	a.Range(func(st *stream.Stream) {
		switch {
		case st.Type == stream.Committed && st.Next > 0,
			st.Type == stream.Pending && st.State == stream.CommittedState && st.Next > 0,
			st.Type == stream.Buffered && st.Flushed() > 0:
			has = true
		}
	})
	return has
}
