package storage

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/bqstore/bqstore/internal/storage/stream"
)

// The simulator's reference model: what the engine acknowledged, with
// the timestamp each record got, from which the rows visible at any time
// follow. See sim_test.go.

// simRow is one appended row: its id and the timestamp of its append.
type simRow struct {
	id int64
	ts int64
}

// simStream is the model of one write stream (the default stream too).
type simStream struct {
	id       string
	typ      StreamType
	createTS int64
	state    stream.State
	finTS    int64
	commitTS int64
	rows     []simRow // by offset
	// schemaVersion: the table's at the stream's creation.
	schemaVersion int
	flushes       []stream.FlushPoint
	// next is the admitted next offset (rows in flight included).
	next int64
}

// simSchema is one schema version and when it was set.
type simSchema struct {
	version int
	ts      int64
	schema  *arrow.Schema
}

// simModel is everything acknowledged (or adopted after recovery: an
// unacknowledged record recovery found durable).
type simModel struct {
	createTS int64 // the table's
	lastTS   int64 // the last timestamp the engine stamped (that we know of)
	ttl      int64 // PendingStreamTTL, µs
	tt       int64 // TimeTravel, µs
	streams  []*simStream
	def      *simStream
	// schemas: the table's schema versions, ascending.
	schemas []simSchema
	// history: snapshots taken, by time, with the ids they returned;
	// every later snapshot at the same time must return the same ids.
	history map[int64][]int64
}

func newSimModel(createTS, ttl, tt int64) *simModel {
	m := &simModel{createTS: createTS, lastTS: createTS, ttl: ttl, tt: tt, history: map[int64][]int64{}}
	m.def = &simStream{id: DefaultStreamID, typ: StreamDefault, createTS: createTS}
	m.schemas = []simSchema{{version: 1, ts: createTS, schema: testSchema}}
	return m
}

// schema is the current schema version.
func (m *simModel) schema() simSchema { return m.schemas[len(m.schemas)-1] }

// schemaAt is the schema version in force at ts.
func (m *simModel) schemaAt(ts int64) simSchema {
	cur := m.schemas[0]
	for _, s := range m.schemas {
		if s.ts <= ts {
			cur = s
		}
	}
	return cur
}

// expired mirrors stream.Expired: an uncommitted PENDING stream created
// before now-TTL is gone.
func (m *simModel) expired(s *simStream, now int64) bool {
	return s.state == stream.Abandoned || s.typ == StreamPending && s.state != stream.CommittedState && s.createTS < now-m.ttl
}

// oldest is the oldest time a snapshot may be taken at now: the table's
// creation or the start of the time-travel window.
func (m *simModel) oldest(now int64) int64 { return max(m.createTS, now-m.tt) }

// collectable mirrors the engine's stream GC (gc.go): a finished stream
// whose rows are all visible since before the time-travel window may be
// collected at any seal from now on (and is then not found); whether it
// was is the engine's choice (seals, crashes), so the model accepts both.
func (m *simModel) collectable(s *simStream, now int64) bool {
	window := now - m.tt
	switch s.typ {
	case StreamCommitted:
		return s.state == stream.Finalized && s.finTS < window
	case StreamPending:
		return s.state == stream.CommittedState && s.commitTS < window
	case StreamBuffered:
		if s.state != stream.Finalized || s.finTS >= window || s.flushed() != int64(len(s.rows)) {
			return false
		}
		return len(s.flushes) == 0 || s.flushes[len(s.flushes)-1].TS < window
	}
	return false
}

// visibleAt is the sorted ids visible at ts.
func (m *simModel) visibleAt(ts int64) []int64 {
	var ids []int64
	for _, s := range append([]*simStream{m.def}, m.streams...) {
		switch s.typ {
		case StreamDefault, StreamCommitted:
			for _, r := range s.rows {
				if r.ts <= ts {
					ids = append(ids, r.id)
				}
			}
		case StreamPending:
			if s.state == stream.CommittedState && s.commitTS <= ts {
				for _, r := range s.rows {
					ids = append(ids, r.id)
				}
			}
		case StreamBuffered:
			var w int64
			for _, f := range s.flushes {
				if f.TS <= ts {
					w = f.Offset
				}
			}
			for _, r := range s.rows[:min(w, int64(len(s.rows)))] {
				ids = append(ids, r.id)
			}
		}
	}
	slices.Sort(ids)
	return ids
}

// flushed is the flush watermark now.
func (s *simStream) flushed() int64 {
	if len(s.flushes) == 0 {
		return 0
	}
	return s.flushes[len(s.flushes)-1].Offset
}

// diffIDs describes how got differs from want (both sorted), or "".
func diffIDs(got, want []int64) string {
	if slices.Equal(got, want) {
		return ""
	}
	var missing, extra, dup []int64
	gc, wc := map[int64]int{}, map[int64]int{}
	for _, id := range got {
		gc[id]++
	}
	for _, id := range want {
		wc[id]++
	}
	for id, n := range wc {
		if gc[id] == 0 {
			missing = append(missing, id)
		}
		_ = n
	}
	for id, n := range gc {
		switch {
		case wc[id] == 0:
			extra = append(extra, id)
		case n > wc[id]:
			dup = append(dup, id)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	slices.Sort(dup)
	short := func(ids []int64) string {
		if len(ids) > 8 {
			return fmt.Sprintf("%v... (%d)", ids[:8], len(ids))
		}
		return fmt.Sprint(ids)
	}
	return fmt.Sprintf("got %d rows, want %d: missing %s, not acknowledged %s, duplicated %s",
		len(got), len(want), short(missing), short(extra), short(dup))
}
