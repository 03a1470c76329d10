package storage

import "github.com/bqstore/bqstore/internal/storage/stream"

// ActiveStreams counts the table's application-created streams that can
// still take appends (open: not finalized, not committed, not expired), by
// type. The default stream is not counted.
func (t *Table) ActiveStreams() map[StreamType]int {
	cutoff := t.cutoff()
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[StreamType]int, 3)
	if t.mu.dropped {
		return out
	}
	for _, id := range t.mu.durable.IDs() {
		st, ok := t.mu.durable.Lookup(id)
		if !ok || st.State != stream.Open || stream.Expired(st, cutoff) {
			continue
		}
		out[StreamType(st.Type)]++
	}
	return out
}

// ActiveStreams sums Table.ActiveStreams over every table.
func (db *DB) ActiveStreams() map[StreamType]int {
	out := make(map[StreamType]int, 3)
	for _, id := range db.TableIDs() {
		t, err := db.Table(id)
		if err != nil {
			continue
		}
		for typ, n := range t.ActiveStreams() {
			out[typ] += n
		}
	}
	return out
}
