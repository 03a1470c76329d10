// Package stream is the write-stream state machine: stream types and
// states, next offsets, the offset check, finalize, flush watermarks and
// batch commit. It is pure — no I/O, no goroutines, no clock: every
// transition takes its time as an argument — so the same code decides
// admission of a live request and replays the log at recovery, and golden
// scenario tests drive it deterministically.
//
// Lifecycle (BigQuery Storage Write API):
//
//	_default   always open; appends visible at once; no offsets, no finalize
//	COMMITTED  OPEN --finalize--> FINALIZED; appends visible at once
//	PENDING    OPEN --finalize--> FINALIZED --batch commit--> COMMITTED
//	BUFFERED   OPEN --finalize--> FINALIZED; rows visible up to the flush
//	           watermark
//
// Offsets: an append with offset o to a stream whose next offset is n
// succeeds iff o == n (o < n: ErrOffsetExists, o > n: ErrOffsetOutOfRange);
// offset -1 means "at the end". The _default stream refuses offsets.
package stream

import (
	"fmt"
	"slices"

	"github.com/bqstore/bqstore/internal/storage/base"
)

// Type is a write stream's type.
type Type int

// Stream types.
const (
	Default Type = iota
	Committed
	Pending
	Buffered
)

func (t Type) String() string {
	switch t {
	case Default:
		return "DEFAULT"
	case Committed:
		return "COMMITTED"
	case Pending:
		return "PENDING"
	case Buffered:
		return "BUFFERED"
	}
	return fmt.Sprintf("Type(%d)", int(t))
}

// State is a write stream's state.
type State int

// Stream states.
const (
	Open State = iota
	Finalized
	// CommittedState: a PENDING stream after batch commit.
	CommittedState
	// Abandoned: an uncommitted PENDING stream given up after its TTL
	// (an ABANDON record, ordered in the log against its BATCH_COMMIT
	// like any other mutation). Final: it is gone for good, whatever the
	// clock does later; its rows are never visible and compaction drops
	// them.
	Abandoned
)

func (s State) String() string {
	switch s {
	case Open:
		return "OPEN"
	case Finalized:
		return "FINALIZED"
	case CommittedState:
		return "COMMITTED"
	case Abandoned:
		return "ABANDONED"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// DefaultID is the id of the implicit default stream.
const DefaultID = "_default"

// FlushPoint records that rows [0, Offset) of a BUFFERED stream are
// visible from TS on.
type FlushPoint struct {
	TS     int64 // µs since epoch
	Offset int64 // exclusive
}

// Stream is one write stream. Times are µs since the Unix epoch; 0 is
// unset.
type Stream struct {
	ID            string
	Type          Type
	State         State
	CreateTS      int64
	FinalizeTS    int64
	CommitTS      int64
	SchemaVersion int
	// Next is the offset the next row gets (rows appended so far).
	Next int64
	// Flushes is the BUFFERED flush history, ascending in TS and Offset.
	Flushes []FlushPoint
}

// Flushed is the flush watermark: rows [0, Flushed()) are visible.
func (s *Stream) Flushed() int64 {
	if len(s.Flushes) == 0 {
		return 0
	}
	return s.Flushes[len(s.Flushes)-1].Offset
}

// FlushedAt is the flush watermark as of time ts.
func (s *Stream) FlushedAt(ts int64) int64 {
	var w int64
	for _, f := range s.Flushes {
		if f.TS > ts {
			break
		}
		w = f.Offset
	}
	return w
}

// Set is the streams of one table. Not safe for concurrent use.
type Set struct {
	streams map[string]*Stream
	// DefaultNext counts rows appended to the default stream.
	DefaultNext int64
}

// NewSet returns an empty set.
func NewSet() *Set { return &Set{streams: map[string]*Stream{}} }

// Clone returns a deep copy.
func (s *Set) Clone() *Set {
	c := &Set{streams: make(map[string]*Stream, len(s.streams)), DefaultNext: s.DefaultNext}
	for id, st := range s.streams {
		cp := *st
		cp.Flushes = slices.Clone(st.Flushes)
		c.streams[id] = &cp
	}
	return c
}

// Get returns the stream, or ErrStreamNotFound. The default stream is
// synthesized.
func (s *Set) Get(id string) (*Stream, error) {
	if id == DefaultID {
		return &Stream{ID: DefaultID, Type: Default, State: Open, Next: s.DefaultNext}, nil
	}
	st, ok := s.streams[id]
	if !ok {
		return nil, fmt.Errorf("stream %q: %w", id, base.ErrStreamNotFound)
	}
	return st, nil
}

// Lookup returns the stream without synthesizing the default one.
func (s *Set) Lookup(id string) (*Stream, bool) {
	st, ok := s.streams[id]
	return st, ok
}

// IDs returns the ids of all explicit streams, sorted.
func (s *Set) IDs() []string {
	ids := make([]string, 0, len(s.streams))
	for id := range s.streams {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Range calls f for each explicit stream, in no particular order.
func (s *Set) Range(f func(*Stream)) {
	for _, st := range s.streams {
		f(st)
	}
}

// Len is the number of explicit streams.
func (s *Set) Len() int { return len(s.streams) }

// Create adds a stream.
func (s *Set) Create(id string, typ Type, ts int64, schemaVersion int) error {
	if id == "" || id == DefaultID {
		return fmt.Errorf("stream id %q: %w", id, base.ErrInvalidArgument)
	}
	if typ != Committed && typ != Pending && typ != Buffered {
		return fmt.Errorf("create stream of type %v: %w", typ, base.ErrInvalidStreamType)
	}
	if _, ok := s.streams[id]; ok {
		return fmt.Errorf("stream %q exists: %w", id, base.ErrInvalidArgument)
	}
	s.streams[id] = &Stream{ID: id, Type: typ, State: Open, CreateTS: ts, SchemaVersion: schemaVersion}
	return nil
}

// Put installs a stream as is (checkpoint restore).
func (s *Set) Put(st *Stream) { s.streams[st.ID] = st }

// Remove drops a stream (expiry).
func (s *Set) Remove(id string) { delete(s.streams, id) }

// CheckAppend validates an append of rows rows at offset (-1: at the
// end) and returns the first row's offset, without changing anything.
func (s *Set) CheckAppend(id string, offset, rows int64) (int64, error) {
	if rows <= 0 {
		return 0, fmt.Errorf("append of %d rows: %w", rows, base.ErrInvalidArgument)
	}
	if offset < -1 {
		return 0, fmt.Errorf("offset %d: %w", offset, base.ErrInvalidArgument)
	}
	if id == DefaultID {
		if offset != -1 {
			return 0, fmt.Errorf("offset %d on the default stream: %w", offset, base.ErrInvalidStreamType)
		}
		return s.DefaultNext, nil
	}
	st, err := s.Get(id)
	if err != nil {
		return 0, err
	}
	if st.State != Open {
		return 0, fmt.Errorf("stream %q is %v: %w", id, st.State, base.ErrStreamFinalized)
	}
	if offset == -1 {
		return st.Next, nil
	}
	switch {
	case offset < st.Next:
		return 0, fmt.Errorf("stream %q: offset %d, next offset %d: %w", id, offset, st.Next, base.ErrOffsetExists)
	case offset > st.Next:
		return 0, fmt.Errorf("stream %q: offset %d, next offset %d: %w", id, offset, st.Next, base.ErrOffsetOutOfRange)
	}
	return offset, nil
}

// Append applies an append (see CheckAppend) and returns the first row's
// offset.
func (s *Set) Append(id string, offset, rows int64) (int64, error) {
	first, err := s.CheckAppend(id, offset, rows)
	if err != nil {
		return 0, err
	}
	if id == DefaultID {
		s.DefaultNext += rows
	} else {
		s.streams[id].Next = first + rows
	}
	return first, nil
}

// Finalize finalizes a stream and returns its row count. Finalizing a
// finalized (or committed) stream again returns the same count and
// again=true.
func (s *Set) Finalize(id string, ts int64) (rows int64, again bool, err error) {
	if id == DefaultID {
		return 0, false, fmt.Errorf("finalize of the default stream: %w", base.ErrInvalidStreamType)
	}
	st, err := s.Get(id)
	if err != nil {
		return 0, false, err
	}
	if st.State != Open {
		return st.Next, true, nil
	}
	st.State = Finalized
	st.FinalizeTS = ts
	return st.Next, false, nil
}

// CheckFlush validates a flush of a BUFFERED stream up to and including
// offset; it returns the new watermark (exclusive) and whether it moves.
func (s *Set) CheckFlush(id string, offset int64) (watermark int64, moves bool, err error) {
	if id == DefaultID {
		return 0, false, fmt.Errorf("flush of the default stream: %w", base.ErrInvalidStreamType)
	}
	st, err := s.Get(id)
	if err != nil {
		return 0, false, err
	}
	if st.Type != Buffered {
		return 0, false, fmt.Errorf("flush of %v stream %q: %w", st.Type, id, base.ErrInvalidStreamType)
	}
	if offset < 0 {
		return 0, false, fmt.Errorf("flush offset %d: %w", offset, base.ErrInvalidArgument)
	}
	if offset >= st.Next {
		return 0, false, fmt.Errorf("stream %q: flush offset %d, next offset %d: %w", id, offset, st.Next, base.ErrOffsetOutOfRange)
	}
	if offset+1 <= st.Flushed() {
		return st.Flushed(), false, nil
	}
	return offset + 1, true, nil
}

// Flush applies a flush; see CheckFlush.
func (s *Set) Flush(id string, offset, ts int64) (int64, error) {
	w, moves, err := s.CheckFlush(id, offset)
	if err != nil || !moves {
		return w, err
	}
	st := s.streams[id]
	st.Flushes = append(st.Flushes, FlushPoint{TS: ts, Offset: w})
	return w, nil
}

// StreamError is one stream's refusal of a batch commit.
type StreamError struct {
	Stream string
	Err    error
}

// CheckCommit returns why each stream (if any) cannot be batch-committed.
// Duplicates in ids are refused as invalid arguments.
func (s *Set) CheckCommit(ids []string) []StreamError {
	var errs []StreamError
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			errs = append(errs, StreamError{id, fmt.Errorf("stream %q listed twice: %w", id, base.ErrInvalidArgument)})
			continue
		}
		seen[id] = true
		if id == DefaultID {
			errs = append(errs, StreamError{id, fmt.Errorf("commit of the default stream: %w", base.ErrInvalidStreamType)})
			continue
		}
		st, err := s.Get(id)
		switch {
		case err != nil:
			errs = append(errs, StreamError{id, err})
		case st.Type != Pending:
			errs = append(errs, StreamError{id, fmt.Errorf("commit of %v stream %q: %w", st.Type, id, base.ErrInvalidStreamType)})
		case st.State == CommittedState:
			errs = append(errs, StreamError{id, fmt.Errorf("stream %q: %w", id, base.ErrStreamCommitted)})
		case st.State != Finalized:
			errs = append(errs, StreamError{id, fmt.Errorf("stream %q is not finalized: %w", id, base.ErrInvalidStreamState)})
		}
	}
	return errs
}

// Commit applies a batch commit at ts; it fails (changing nothing) if
// CheckCommit reports anything.
func (s *Set) Commit(ids []string, ts int64) []StreamError {
	if errs := s.CheckCommit(ids); len(errs) > 0 {
		return errs
	}
	for _, id := range ids {
		st := s.streams[id]
		st.State = CommittedState
		st.CommitTS = ts
	}
	return nil
}

// Abandon gives up an uncommitted PENDING stream (see Abandoned). A
// stream already abandoned stays so; a committed one, or one of another
// type, cannot be abandoned.
func (s *Set) Abandon(id string) error {
	st, err := s.Get(id)
	if err != nil {
		return err
	}
	switch {
	case st.Type != Pending:
		return fmt.Errorf("abandon of %v stream %q: %w", st.Type, id, base.ErrInvalidStreamType)
	case st.State == CommittedState:
		return fmt.Errorf("abandon of stream %q: %w", id, base.ErrStreamCommitted)
	}
	st.State = Abandoned
	return nil
}

// Expired reports whether st is an uncommitted PENDING stream created
// before cutoff: its rows can never become visible and it is treated as
// gone.
func Expired(st *Stream, cutoff int64) bool {
	return st.State == Abandoned || st.Type == Pending && st.State != CommittedState && st.CreateTS < cutoff
}

// VisibleRange is the part of a batch of stream st holding rows
// [first, first+rows), of which the first appended had been appended
// (acknowledged) by time ts, that is visible at ts, as row indexes
// relative to the batch: [lo, hi), lo == hi if none. (A batch written by
// one append has appended = rows or 0; a compacted batch merges appends
// made at different times.)
func VisibleRange(st *Stream, appended, first, rows, ts int64) (lo, hi int64) {
	switch st.Type {
	case Default, Committed:
		return 0, appended
	case Pending:
		if st.State == CommittedState && st.CommitTS <= ts {
			return 0, rows
		}
	case Buffered:
		w := st.FlushedAt(ts) - first
		if w > 0 {
			return 0, min(w, appended)
		}
	}
	return 0, 0
}
