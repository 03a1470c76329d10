package storage

// The simulator's crashes, recoveries and checks. See sim_test.go.

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/bqstore/bqstore/internal/storage/stream"
	"github.com/bqstore/bqstore/internal/storage/vfs"
)

// restart closes the DB cleanly and opens it again.
func (w *sim) restart() {
	w.tracef("restart")
	for _, h := range w.held {
		h.s.Release()
	}
	w.held = nil
	if err := w.closeDB(); err != nil {
		w.failf("close: %v", err)
	}
	w.mem.SetCrashAfter(-1)
	w.reopen(w.mem)
}

// closeDB closes the DB and counts what it did.
func (w *sim) closeDB() error {
	m := w.db.Metrics()
	w.st.Rolls += m.Rolls
	w.st.Compactions += m.Compactions
	w.st.FailStops += m.FailStops
	err := w.db.Close()
	w.db = nil
	if lost(err) {
		return nil // a fail-stopped table reports its error again
	}
	return err
}

// crash loses power, recovers (sometimes crashing recovery too) and
// checks the recovered table against the model.
func (w *sim) crash(why string) {
	w.st.Crashes++
	w.st.InFlight += len(w.inflight)
	w.tracef("%s: power loss (crash %d), %d records in flight", why, w.st.Crashes, len(w.inflight))
	for _, h := range w.held {
		h.s.Release()
	}
	w.held = nil
	w.closeDB()
	fs := w.powerLoss(w.mem)
	if w.rng.IntN(4) == 0 {
		// Crash recovery itself, then recover from that.
		k := w.rng.IntN(8)
		fs.SetCrashAfter(k)
		w.st.RecoveryCrashes++
		o := w.opts
		o.FS = fs
		db, err := Open("db", &o)
		w.tracef("recovery crashed after %d operations: %v", k, err)
		if err == nil {
			_ = db.Close()
		} else if !lost(err) {
			w.failf("recovery (to be crashed after %d operations) failed: %v", k, err)
		}
		fs = w.powerLoss(fs)
	}
	w.reopen(fs)
}

func (w *sim) powerLoss(fs *vfs.MemFS) *vfs.MemFS {
	if simNarrowed(4) {
		return fs.PowerLossInOrder(w.rng) // see simNarrowed
	}
	return fs.PowerLoss(w.rng)
}

// reopen opens the DB on fs, reconciles the records in flight and checks
// everything.
func (w *sim) reopen(fs *vfs.MemFS) {
	w.open(fs)
	tb, err := w.db.Table(simTable)
	if err != nil {
		w.failf("acknowledged table lost: %v", err)
	}
	w.tb = tb
	w.reconcile()
	w.verify("after recovery")
	w.verifyOthers("after recovery")
	w.armCrash()
	// A checkpoint may carry the timestamp of a record lost to the
	// crash (stamped in the group that sealed the file): step past it so
	// the model predicts the next timestamps exactly.
	w.clk.Advance(time.Millisecond)
}

// reconcile decides, for each record in flight, whether recovery found it
// durable, and adopts those into the model. They must be a prefix of the
// records in flight (the log is recovered up to its first torn frame),
// each whole.
func (w *sim) reconcile() {
	info := func(s *simStream) StreamInfo {
		si, err := w.tb.Stream(s.id)
		if err != nil {
			w.failf("stream %s after recovery: %v", s.id, err)
		}
		return si
	}
	lostOne := -1
	for i, r := range w.inflight {
		var durable bool
		switch r.kind {
		case "append":
			next := info(r.s).NextOffset
			end := r.first + int64(len(r.ids))
			durable = next >= end
			if !durable && next > r.first {
				w.failf("append of %d rows to %s at %d partly durable: next offset %d", len(r.ids), r.s.id, r.first, next)
			}
		case "finalize":
			durable = info(r.s).State != StreamOpen
		case "flush":
			durable = info(r.s).FlushedOffset >= r.w
		case "schema":
			v, _ := w.tb.Schema()
			durable = v >= r.version
		case "commit":
			n := 0
			for _, s := range r.streams {
				if info(s).State == StreamCommittedState {
					n++
				}
			}
			if n != 0 && n != len(r.streams) {
				w.failf("batch commit of %d streams partly durable: %d committed", len(r.streams), n)
			}
			durable = n > 0
		}
		w.tracef("in flight: %s %s: durable %v", r.kind, streamName(r), durable)
		if !durable {
			if lostOne < 0 {
				lostOne = i
			}
			continue
		}
		w.st.Adopted++
		if lostOne >= 0 {
			w.failf("record %d in flight (%s) durable after record %d was lost: recovery is not a log prefix", i, r.kind, lostOne)
		}
		w.m.lastTS = max(w.m.lastTS, r.ts)
		switch r.kind {
		case "append":
			for _, id := range r.ids {
				r.s.rows = append(r.s.rows, simRow{id: id, ts: r.ts})
			}
		case "finalize":
			r.s.state, r.s.finTS = stream.Finalized, r.ts
		case "flush":
			r.s.flushes = append(r.s.flushes, stream.FlushPoint{TS: r.ts, Offset: r.w})
		case "commit":
			for _, s := range r.streams {
				s.state, s.commitTS = stream.CommittedState, r.ts
			}
		case "schema":
			w.m.schemas = append(w.m.schemas, simSchema{version: r.version, ts: r.ts, schema: r.schema})
		}
	}
	w.inflight = nil
	if g := w.lostCreate; g != nil {
		w.lostCreate = nil
		switch d := w.tb.ActiveStreams()[g.typ] - w.activeStreams()[g.typ]; d {
		case 0:
		case 1:
			w.ghosts = append(w.ghosts, g)
		default:
			w.failf("%d more %v streams than acknowledged, one creation in flight", d, g.typ)
		}
		w.tracef("in flight: create %v stream: durable %v", g.typ, len(w.ghosts) > 0 && w.ghosts[len(w.ghosts)-1] == g)
	}
	// Offsets reserved by lost appends are free again.
	w.m.def.next = int64(len(w.m.def.rows))
	for _, s := range w.m.streams {
		s.next = int64(len(s.rows))
	}
}

func streamName(r simInflight) string {
	if r.s != nil {
		return r.s.id
	}
	var ids []string
	for _, s := range r.streams {
		ids = append(ids, s.id)
	}
	return strings.Join(ids, ",")
}

// verify checks every stream's metadata, the table now, at every earlier
// snapshot time and at a few random past times.
func (w *sim) verify(what string) {
	now := w.now()
	w.m.def.schemaVersion = w.m.schema().version // the default stream reports the current one
	if v, sc := w.tb.Schema(); v != w.m.schema().version || !sc.Equal(w.m.schema().schema) {
		w.failf("%s: schema version %d %v, want %d %v", what, v, sc, w.m.schema().version, w.m.schema().schema)
	}
	for _, s := range append([]*simStream{w.m.def}, w.m.streams...) {
		si, err := w.tb.Stream(s.id)
		if s != w.m.def && w.m.expired(s, now) {
			if !errors.Is(err, ErrStreamNotFound) {
				w.failf("%s: expired stream %s: %+v %v, want not found", what, s.id, si, err)
			}
			continue
		}
		if w.collected(s, err) {
			continue
		}
		if err != nil {
			w.failf("%s: stream %s: %v", what, s.id, err)
		}
		want := StreamInfo{ID: s.id, Type: s.typ, State: StreamState(s.state), NextOffset: int64(len(s.rows)),
			CreateTime: usTime(s.createTS), FinalizeTime: usTime(s.finTS), CommitTime: usTime(s.commitTS), SchemaVersion: s.schemaVersion}
		switch s.typ {
		case StreamBuffered:
			want.FlushedOffset = s.flushed()
		case StreamPending:
			if s.state == stream.CommittedState {
				want.FlushedOffset = want.NextOffset
			}
		default:
			want.FlushedOffset = want.NextOffset
		}
		if s.typ == StreamCommitted {
			want.CommitTime = want.CreateTime
		}
		if !si.CreateTime.Equal(want.CreateTime) || !si.FinalizeTime.Equal(want.FinalizeTime) || !si.CommitTime.Equal(want.CommitTime) {
			w.failf("%s: stream %s times: %+v, want %+v", what, s.id, si, want)
		}
		si.CreateTime, si.FinalizeTime, si.CommitTime = want.CreateTime, want.FinalizeTime, want.CommitTime
		if si != want {
			w.failf("%s: stream %s: %+v, want %+v", what, s.id, si, want)
		}
	}
	w.checkAt(0, what+": now")
	times := make([]int64, 0, len(w.m.history))
	for ts := range w.m.history {
		if ts >= w.m.oldest(now) {
			times = append(times, ts)
		}
	}
	slices.Sort(times)
	for range min(len(times), 4) {
		w.checkAt(times[w.rng.IntN(len(times))], what+": earlier snapshot time")
	}
	for range 3 {
		w.checkAt(w.pastTS(), what+": time travel")
	}
}
