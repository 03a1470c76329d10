package rest

import (
	"sync"
	"time"
)

// insertAll de-duplication by insertId. BigQuery "remembers this ID for at
// least one minute" and de-duplicates "on a best effort basis"
// (cloud.google.com/bigquery/docs/streaming-data-into-bigquery). bqstore
// remembers the ids of written rows in memory, per table, for
// DefaultInsertIDWindow:
//
//   - a row whose insertId is remembered is acknowledged and not written
//     again; so is a second row with the same id in one request;
//   - the ids of a request are claimed before its rows are written, so a
//     concurrent retry of the same rows is dropped too, and released if
//     the rows are not written (refused, stopped, or the append failed);
//   - the memory is bounded (insertIDMaxBytes): past it the oldest ids are
//     forgotten early, so under a heavy load the window is shorter than a
//     minute, which "best effort" allows;
//   - nothing survives a restart.
//
// There are no goroutines: expired ids are dropped by the calls that add
// new ones.

// DefaultInsertIDWindow is how long an insertId is remembered.
const DefaultInsertIDWindow = time.Minute

// insertIDMaxBytes bounds the memory of remembered ids (docs/memory.md);
// an id costs its length, its table id's and insertIDOverhead.
const (
	insertIDMaxBytes = 64 << 20
	insertIDOverhead = 96 // map entry, queue entry, string headers
)

type idKey struct{ table, id string }

type idEntry struct {
	key    idKey
	seq    uint64
	expiry time.Time
}

// insertIDs is the window. Its zero value is not usable; see newInsertIDs.
type insertIDs struct {
	window time.Duration
	now    func() time.Time
	max    int64

	mu struct {
		sync.Mutex
		seen  map[idKey]uint64 // id -> seq of its live entry in queue
		queue []idEntry        // claims in time order; queue[head:] is live
		head  int
		bytes int64
		seq   uint64
	}
}

func newInsertIDs(window time.Duration, now func() time.Time, maxBytes int64) *insertIDs {
	d := &insertIDs{window: window, now: now, max: maxBytes}
	d.mu.seen = map[idKey]uint64{}
	return d
}

func entryBytes(k idKey) int64 { return int64(len(k.table) + len(k.id) + insertIDOverhead) }

// claim reports, for each id, whether it is a duplicate (remembered, or
// earlier in ids), and remembers the others. Empty ids are never
// duplicates and are not remembered.
func (d *insertIDs) claim(table string, ids []string) []bool {
	dup := make([]bool, len(ids))
	if d.window <= 0 {
		return dup
	}
	now := d.now()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.expireLocked(now)
	for i, id := range ids {
		if id == "" {
			continue
		}
		k := idKey{table, id}
		if _, ok := d.mu.seen[k]; ok {
			dup[i] = true
			continue
		}
		d.mu.seq++
		d.mu.seen[k] = d.mu.seq
		d.mu.queue = append(d.mu.queue, idEntry{key: k, seq: d.mu.seq, expiry: now.Add(d.window)})
		d.mu.bytes += entryBytes(k)
	}
	for d.mu.bytes > d.max && d.mu.head < len(d.mu.queue) {
		d.popLocked()
	}
	return dup
}

// release forgets ids[i] for each which[i] (ids claim remembered for rows
// that were then not written).
func (d *insertIDs) release(table string, ids []string, which []bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, id := range ids {
		if which[i] && id != "" {
			// Its queue entry stays until it expires; popLocked skips it.
			delete(d.mu.seen, idKey{table, id})
		}
	}
}

// REQUIRES: d.mu held.
func (d *insertIDs) expireLocked(now time.Time) {
	for d.mu.head < len(d.mu.queue) && !now.Before(d.mu.queue[d.mu.head].expiry) {
		d.popLocked()
	}
}

// popLocked drops the oldest queue entry (and its id, unless a later claim
// of the same id owns it).
// REQUIRES: d.mu held.
func (d *insertIDs) popLocked() {
	e := d.mu.queue[d.mu.head]
	d.mu.queue[d.mu.head] = idEntry{}
	d.mu.head++
	d.mu.bytes -= entryBytes(e.key)
	if d.mu.seen[e.key] == e.seq {
		delete(d.mu.seen, e.key)
	}
	if d.mu.head > 1024 && d.mu.head*2 > len(d.mu.queue) {
		n := copy(d.mu.queue, d.mu.queue[d.mu.head:])
		clear(d.mu.queue[n:])
		d.mu.queue = d.mu.queue[:n]
		d.mu.head = 0
	}
}

// size is the number of remembered ids (for tests).
func (d *insertIDs) size() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.mu.seen)
}
