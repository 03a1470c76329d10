package storage

import "time"

// Now is the engine's current time: the clock, or the latest timestamp
// any table has stamped (or recovered) when that is later. Timestamps run
// ahead of the clock under load (each is later than the last and than
// every snapshot time) and stay ahead when the clock steps back (NTP, a
// resumed VM). A snapshot of any table at Now, or at any earlier time
// since its creation, is valid and sees every commit acknowledged before
// Now was called, whatever the clock did; a caller reading several
// tables at one time (a query) reads them at Now.
func (db *DB) Now() time.Time {
	now := db.clock()
	if last := usTime(db.lastTS.Load()); last.After(now) {
		return last
	}
	return now
}

// noteTS records ts, µs, as stamped or recovered by a table.
func (db *DB) noteTS(ts int64) {
	for {
		cur := db.lastTS.Load()
		if ts <= cur || db.lastTS.CompareAndSwap(cur, ts) {
			return
		}
	}
}
