package storage

import (
	"slices"

	"github.com/bqstore/bqstore/internal/storage/stream"
)

// Stream garbage collection. Without it the stream table, and with it
// every checkpoint, grows by one entry per stream ever created.
//
// At each seal (roll), before the checkpoint is encoded, the log writer
// removes from the durable and the admission state the streams that no
// snapshot and no request can tell from absent any more:
//
//   - COMMITTED streams finalized before the time-travel window;
//   - PENDING streams committed before the window;
//   - BUFFERED streams finalized and flushed to their end before the
//     window;
//   - ABANDONED streams once no batch holds their rows (compaction
//     dropped them); their rows were never visible.
//
// Why this is safe:
//
//   - Snapshots. A snapshot plans a batch of a stream it does not find
//     as visible from its append time (Snapshot.plan). For a collected
//     stream that is exact at every time a snapshot can be taken at: all
//     its rows became visible (commit, flush) before the window's start,
//     and snapshots before it are refused. Batches of collected
//     ABANDONED streams no longer exist.
//   - Requests. A collected stream is terminal: no request can produce a
//     record of it (appends are refused as finalized, a commit as already
//     committed, a flush below the watermark or a second finalize write
//     nothing), so removing it at a log position is ordered against every
//     record: nothing admitted before the seal and written after it names
//     it. Requests now get ErrStreamNotFound instead (a BatchCommit retry
//     more than the window after the commit gets NOT_FOUND, not
//     ALREADY_COMMITTED; the window is 7 days by default).
//   - Replay. The seal's checkpoint holds the state after the removal and
//     no later record names a removed stream; the batch continuity check
//     of recovery skips streams not in the state.
//
// BUFFERED flush histories are trimmed the same way: flush points older
// than the window but the last of them answer no snapshot any more.

// collectStreamsLocked removes the collectable streams (see above) as of
// nowUS, the log's last timestamp: every snapshot that can still be
// taken has a window starting at or after nowUS - TimeTravel (a
// snapshot's now is at least the last timestamp, also after a restart
// with a clock behind it), so a stream collected here is visible in all
// of them.
// REQUIRES: t.mu held; called by the log writer at a seal, with every
// written record applied.
func (t *Table) collectStreamsLocked(nowUS int64) {
	window := nowUS - t.db.opts.TimeTravel.Microseconds()
	var gone []string
	var abandoned map[string]bool
	t.mu.durable.Range(func(st *stream.Stream) {
		switch {
		case st.State == stream.Abandoned:
			if abandoned == nil {
				abandoned = map[string]bool{}
			}
			abandoned[st.ID] = true
		case collectable(st, window):
			gone = append(gone, st.ID)
		case st.Type == stream.Buffered:
			if fl := trimFlushes(st.Flushes, window); len(fl) != len(st.Flushes) {
				st.Flushes = fl
				if a, ok := t.mu.admit.Lookup(st.ID); ok {
					a.Flushes = trimFlushes(a.Flushes, window)
				}
				t.invalidateVisLocked()
			}
		}
	})
	if len(abandoned) > 0 {
		for i := range t.mu.batches {
			delete(abandoned, t.mu.batches[i].b.Stream)
		}
		for id := range abandoned {
			gone = append(gone, id)
		}
	}
	if len(gone) == 0 {
		return
	}
	for _, id := range gone {
		t.mu.durable.Remove(id)
		t.mu.admit.Remove(id)
		delete(t.mu.hidden, id)
	}
	t.invalidateVisLocked()
}

// collectable reports whether a stream's rows are all visible since
// before window (µs) and nothing can change it any more.
func collectable(st *stream.Stream, window int64) bool {
	switch st.Type {
	case stream.Committed:
		return st.State == stream.Finalized && st.FinalizeTS < window
	case stream.Pending:
		return st.State == stream.CommittedState && st.CommitTS < window
	case stream.Buffered:
		if st.State != stream.Finalized || st.FinalizeTS >= window || st.Flushed() != st.Next {
			return false
		}
		return len(st.Flushes) == 0 || st.Flushes[len(st.Flushes)-1].TS < window
	}
	return false
}

// trimFlushes drops the flush points before window but the last of them
// (which gives the watermark at the window's start); it returns a new
// slice when it drops any (the old array may be shared by snapshot views).
func trimFlushes(fl []stream.FlushPoint, window int64) []stream.FlushPoint {
	i := 0
	for i+1 < len(fl) && fl[i+1].TS < window {
		i++
	}
	if i == 0 {
		return fl
	}
	return slices.Clone(fl[i:])
}
