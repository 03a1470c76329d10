package storage

// The simulator's operations: each runs one engine call, predicts its
// outcome from the model and records it. See sim_test.go.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/bqstore/bqstore/internal/storage/stream"
)

// pickStream picks a stream (the default one included).
func (w *sim) pickStream() *simStream {
	n := len(w.m.streams)
	if i := w.rng.IntN(n + 1); i < n {
		return w.m.streams[i]
	}
	return w.m.def
}

func (w *sim) newIDs(n int64) (int64, []int64) {
	from := w.ids
	w.ids += n
	return from, idRange(from, n)
}

func (w *sim) rows() int64 {
	if w.rng.IntN(8) == 0 {
		return 50 + w.rng.Int64N(250) // a frame of several pages
	}
	return 1 + w.rng.Int64N(20)
}

// expectAppend is the error an append at off should get (nil: success)
// and its first offset.
func (w *sim) expectAppend(s *simStream, off int64) (int64, error) {
	if s == w.m.def {
		return s.next, nil
	}
	switch {
	case w.m.expired(s, w.now()):
		return 0, ErrStreamNotFound
	case s.state != stream.Open:
		return 0, ErrStreamFinalized
	case off == -1:
		return s.next, nil
	case off < s.next:
		return 0, ErrOffsetExists
	case off > s.next:
		return 0, ErrOffsetOutOfRange
	}
	return off, nil
}

func (w *sim) pickOffset(s *simStream) int64 {
	if s == w.m.def {
		return -1
	}
	switch p := w.rng.IntN(10); {
	case p == 0:
		return -1
	case p == 1 && s.next > 0:
		return w.rng.Int64N(s.next) // a retry of rows already there
	case p == 2:
		return s.next + 1 + w.rng.Int64N(3)
	}
	return s.next
}

// collected reports whether err is the not-found of a stream the engine
// may have collected (see simModel.collectable).
func (w *sim) collected(s *simStream, err error) bool {
	if s != w.m.def && errors.Is(err, ErrStreamNotFound) && w.m.collectable(s, w.now()) {
		w.st.Collected++
		return true
	}
	return false
}

// checkErr fails unless err matches want.
func (w *sim) checkErr(what string, err, want error) {
	if want == nil && err != nil || want != nil && !errors.Is(err, want) {
		w.failf("%s: got error %v, want %v", what, err, want)
	}
}

// nextTS is the timestamp the next record gets.
func (w *sim) nextTS() int64 { return max(w.now(), w.m.lastTS+1, w.queuedTS+1, w.readTS+1) }

type simAppend struct {
	s     *simStream
	first int64
	ids   []int64
	ts    int64
	p     *PendingAppend
}

// queueAppend admits one append and returns it, or nil if it was refused
// (as expected).
func (w *sim) queueAppend(ctx context.Context, s *simStream) *simAppend {
	off := w.pickOffset(s)
	n := w.rows()
	first, want := w.expectAppend(s, off)
	from, ids := w.newIDs(n)
	// Rows of the current schema (version 0), or of an older version.
	sv, version := w.m.schema(), 0
	if w.rng.IntN(5) == 0 {
		sv = w.m.schemas[w.rng.IntN(len(w.m.schemas))]
		version = sv.version
	}
	rec := makeBatch(sv.schema, from, n)
	defer rec.Release()
	p, err := w.tb.AppendAsync(ctx, AppendRequest{Stream: s.id, Offset: off, Batch: rec, SchemaVersion: version})
	w.tracef("append %s(%v) offset %d rows %d ids [%d,%d) schema v%d: %v", s.id, s.typ, off, n, from, from+n, sv.version, err)
	if w.collected(s, err) {
		return nil
	}
	w.checkErr("append", err, want)
	if err != nil {
		return nil
	}
	a := &simAppend{s: s, first: first, ids: ids, ts: w.nextTS(), p: p}
	w.queuedTS = a.ts
	s.next = first + n
	return a
}

// finishAppend waits for a queued append and records the outcome.
func (w *sim) finishAppend(ctx context.Context, a *simAppend) {
	res, err := a.p.Wait(ctx)
	if err != nil {
		if !lost(err) {
			w.failf("append to %s: %v", a.s.id, err)
		}
		w.inflight = append(w.inflight, simInflight{kind: "append", s: a.s, first: a.first, ids: a.ids, ts: a.ts})
		return
	}
	wantOff := a.first
	if a.s == w.m.def {
		wantOff = -1
	}
	if res.Offset != wantOff || res.Time.UnixMicro() != a.ts {
		w.failf("append to %s: offset %d time %d, want %d and %d", a.s.id, res.Offset, res.Time.UnixMicro(), wantOff, a.ts)
	}
	w.m.lastTS = max(w.m.lastTS, a.ts)
	for i, id := range a.ids {
		if int64(len(a.s.rows)) != a.first+int64(i) {
			w.failf("model: append to %s at %d with %d rows", a.s.id, a.first, len(a.s.rows))
		}
		a.s.rows = append(a.s.rows, simRow{id: id, ts: a.ts})
	}
}

func (w *sim) opAppend() {
	ctx := context.Background()
	if a := w.queueAppend(ctx, w.pickStream()); a != nil {
		w.finishAppend(ctx, a)
		w.afterLoss()
	}
}

// opAppendGroup pipelines several appends into one group (one write
// burst, one fdatasync).
func (w *sim) opAppendGroup() {
	ctx := context.Background()
	w.gate.set(true)
	var as []*simAppend
	for range 2 + w.rng.IntN(5) {
		if a := w.queueAppend(ctx, w.pickStream()); a != nil {
			as = append(as, a)
		}
	}
	w.gate.set(false)
	for _, a := range as {
		w.finishAppend(ctx, a)
	}
	w.afterLoss()
}

// afterLoss crashes if an acknowledgement was lost.
func (w *sim) afterLoss() {
	if len(w.inflight) > 0 {
		w.crash("crash point")
	}
}

func (w *sim) opCreateStream() {
	if len(w.m.streams) >= 16 {
		return
	}
	typ := []StreamType{StreamCommitted, StreamPending, StreamBuffered}[w.rng.IntN(3)]
	ts := w.nextTS()
	w.maybeTS = max(w.maybeTS, ts)
	info, err := w.tb.CreateStream(context.Background(), typ)
	w.tracef("create %v stream: %s %v", typ, info.ID, err)
	if err != nil {
		if !lost(err) {
			w.failf("create stream: %v", err)
		}
		// The stream may exist after recovery; we do not know its id,
		// and it has no rows; reconcile counts it.
		w.lostCreate = &simStream{typ: typ, createTS: ts, state: stream.Open}
		w.crash("crash point")
		return
	}
	w.m.lastTS = ts
	if info.CreateTime.UnixMicro() != ts || info.Type != typ || info.State != StreamOpen {
		w.failf("create stream: %+v, want type %v created at %d", info, typ, ts)
	}
	if info.SchemaVersion != w.m.schema().version {
		w.failf("create stream: schema version %d, want %d", info.SchemaVersion, w.m.schema().version)
	}
	w.m.streams = append(w.m.streams, &simStream{id: info.ID, typ: typ, createTS: ts, state: stream.Open, schemaVersion: info.SchemaVersion})
}

func (w *sim) opFinalize() {
	s := w.pickStream()
	var want error
	record := false
	switch {
	case s == w.m.def:
		want = ErrInvalidStreamType
	case w.m.expired(s, w.now()):
		want = ErrStreamNotFound
	case s.state == stream.Open:
		record = true
	}
	ts := w.nextTS()
	w.maybeTS = max(w.maybeTS, ts)
	rows, err := w.tb.Finalize(context.Background(), s.id)
	w.tracef("finalize %s(%v): %d rows, %v", s.id, s.typ, rows, err)
	if record && lost(err) {
		w.inflight = append(w.inflight, simInflight{kind: "finalize", s: s, ts: ts})
		w.crash("crash point")
		return
	}
	if w.collected(s, err) {
		return
	}
	w.checkErr("finalize", err, want)
	if err != nil {
		return
	}
	if rows != s.next {
		w.failf("finalize %s: %d rows, want %d", s.id, rows, s.next)
	}
	if record {
		w.m.lastTS = ts
		s.state, s.finTS = stream.Finalized, ts
	}
}

func (w *sim) opFlush() {
	s := w.pickStream()
	off := s.flushed() + w.rng.Int64N(max(1, s.next-s.flushed()+1)) - 1
	if w.rng.IntN(6) == 0 && s.flushed() > 0 {
		off = w.rng.Int64N(s.flushed()) // below the watermark: a no-op
	}
	var want error
	var wm int64
	record := false
	switch {
	case s == w.m.def:
		want = ErrInvalidStreamType
	case w.m.expired(s, w.now()):
		want = ErrStreamNotFound
	case s.typ != StreamBuffered:
		want = ErrInvalidStreamType
	case off < 0:
		want = ErrInvalidArgument
	case off >= s.next:
		want = ErrOffsetOutOfRange
	case off+1 <= s.flushed():
		wm = s.flushed()
	default:
		wm, record = off+1, true
	}
	ts := w.nextTS()
	w.maybeTS = max(w.maybeTS, ts)
	got, err := w.tb.Flush(context.Background(), s.id, off)
	w.tracef("flush %s(%v) at %d: %d, %v", s.id, s.typ, off, got, err)
	if record && lost(err) {
		w.inflight = append(w.inflight, simInflight{kind: "flush", s: s, w: wm, ts: ts})
		w.crash("crash point")
		return
	}
	if w.collected(s, err) {
		return
	}
	w.checkErr("flush", err, want)
	if err != nil {
		return
	}
	if got != wm {
		w.failf("flush %s at %d: watermark %d, want %d", s.id, off, got, wm)
	}
	if record {
		w.m.lastTS = ts
		s.flushes = append(s.flushes, stream.FlushPoint{TS: ts, Offset: wm})
	}
}

func (w *sim) opCommit() {
	var list []*simStream
	for _, s := range w.m.streams {
		if s.typ == StreamPending && w.rng.IntN(2) == 0 {
			list = append(list, s)
		}
	}
	if w.rng.IntN(10) == 0 {
		list = append(list, w.pickStream()) // maybe not PENDING, maybe twice
	}
	if len(list) == 0 {
		return
	}
	ids := make([]string, len(list))
	for i, s := range list {
		ids[i] = s.id
	}
	// The errors the engine should report, in its order, if the streams
	// in gone were collected (see simModel.collectable): first the
	// expired and missing ones; if none, the ones that cannot commit.
	now := w.now()
	expect := func(gone map[*simStream]bool) []StreamError {
		var want []StreamError
		for _, s := range list {
			if s != w.m.def && (w.m.expired(s, now) || gone[s]) {
				want = append(want, StreamError{Stream: s.id, Err: ErrStreamNotFound})
			}
		}
		if len(want) > 0 {
			return want
		}
		seen := map[*simStream]bool{}
		for _, s := range list {
			var e error
			switch {
			case seen[s]:
				e = ErrInvalidArgument
			case s == w.m.def:
				e = ErrInvalidStreamType
			case s.typ != StreamPending:
				e = ErrInvalidStreamType
			case s.state == stream.CommittedState:
				e = ErrStreamCommitted
			case s.state != stream.Finalized:
				e = ErrInvalidStreamState
			}
			if e != nil {
				want = append(want, StreamError{Stream: s.id, Err: e})
			}
			seen[s] = true
		}
		return want
	}
	want := expect(nil)
	ts := w.nextTS()
	w.maybeTS = max(w.maybeTS, ts)
	at, serrs, err := w.tb.BatchCommit(context.Background(), ids)
	w.tracef("batch commit %v: %v %v %v", ids, at.UnixMicro(), serrs, err)
	if len(want) == 0 && lost(err) {
		w.inflight = append(w.inflight, simInflight{kind: "commit", streams: list, ts: ts})
		w.crash("crash point")
		return
	}
	if err != nil {
		w.failf("batch commit %v: %v", ids, err)
	}
	// The streams the engine reports not found that it may have
	// collected: take them as collected.
	gone := map[*simStream]bool{}
	for _, se := range serrs {
		for _, s := range list {
			if s.id == se.Stream && w.collected(s, se.Err) {
				gone[s] = true
			}
		}
	}
	if len(gone) > 0 {
		want = expect(gone)
	}
	if len(serrs) != len(want) {
		w.failf("batch commit %v: errors %v, want %v", ids, serrs, want)
	}
	for i, se := range serrs {
		if se.Stream != want[i].Stream || !errors.Is(se.Err, want[i].Err) {
			w.failf("batch commit %v: errors %v, want %v", ids, serrs, want)
		}
	}
	if len(want) > 0 {
		return
	}
	if at.UnixMicro() != ts {
		w.failf("batch commit %v at %d, want %d", ids, at.UnixMicro(), ts)
	}
	w.m.lastTS = ts
	for _, s := range list {
		s.state, s.commitTS = stream.CommittedState, ts
	}
}

// opCompact compacts the sealed files, abandoning expired PENDING
// streams first (an ABANDON record); sometimes it only abandons them.
func (w *sim) opCompact() {
	expired := 0
	for _, s := range w.m.streams {
		if w.m.expired(s, w.now()) {
			expired++
		}
	}
	ts := w.nextTS()
	w.maybeTS = max(w.maybeTS, ts)
	var err error
	if w.rng.IntN(4) == 0 {
		err = w.tb.AbandonExpired(context.Background())
		w.tracef("abandon expired (%d expired streams): %v", expired, err)
	} else {
		var st CompactStats
		st, err = w.tb.Compact(context.Background())
		w.tracef("compact (%d expired streams): %+v %v", expired, st, err)
	}
	// An ABANDON record is written if an expired stream is not yet
	// abandoned, which the model cannot tell after a crash took an
	// ABANDON record's acknowledgement (the stream is gone either way):
	// the record may have taken ts, and the next operation starts later.
	if expired > 0 {
		w.queuedTS = max(w.queuedTS, ts)
	}
	w.clk.Advance(time.Millisecond)
	if err != nil {
		if !lost(err) {
			w.failf("compact: %v", err)
		}
		w.crash("crash point")
	}
}

// opSchema sets a schema version: the next one (a new nullable column),
// the current one again (a no-op), or a refused one (the current
// version with another schema, an older version, a dropped column).
func (w *sim) opSchema() {
	cur := w.m.schema()
	fields := cur.schema.Fields()
	version := cur.version
	var want error
	record := false
	switch p := w.rng.IntN(6); {
	case p < 3 && len(fields) < 6:
		version++
		fields = append(fields, arrow.Field{Name: fmt.Sprintf("c%d", version), Type: arrow.BinaryTypes.String, Nullable: true})
		record = true
	case p == 3:
		// The current version again.
	case p == 4:
		version = w.rng.IntN(cur.version + 1)
		if version == cur.version {
			fields = append(fields, arrow.Field{Name: "other", Type: arrow.BinaryTypes.String, Nullable: true})
		}
		want = ErrSchemaMismatch
	default:
		version++
		fields = fields[:len(fields)-1]
		want = ErrSchemaMismatch
	}
	schema := arrow.NewSchema(fields, nil)
	ts := w.nextTS()
	w.maybeTS = max(w.maybeTS, ts)
	err := w.tb.SetSchema(context.Background(), version, schema)
	w.tracef("set schema v%d (%d columns): %v", version, len(fields), err)
	if version == 0 && errors.Is(err, ErrInvalidArgument) {
		err = fmt.Errorf("%w (version 0)", ErrSchemaMismatch) // either refusal will do
	}
	if record && lost(err) {
		w.inflight = append(w.inflight, simInflight{kind: "schema", version: version, schema: schema, ts: ts})
		w.crash("crash point")
		return
	}
	w.checkErr("set schema", err, want)
	if record && err == nil {
		w.m.lastTS = ts
		w.m.schemas = append(w.m.schemas, simSchema{version: version, ts: ts, schema: schema})
	}
}

// readSnapshot reads every id of s (sorted) and checks the plan's counts
// and a random partial, projected read of one chunk.
func (w *sim) readSnapshot(s *Snapshot, what string) []int64 {
	ctx := context.Background()
	var ids []int64
	var chunkIDs [][]int64
	for _, c := range s.Chunks() {
		rec, err := s.ReadChunk(ctx, c, 0, c.NumRows, nil)
		if err != nil {
			w.failf("%s: read chunk: %v", what, err)
		}
		if !rec.Schema().Equal(s.Schema()) {
			w.failf("%s: chunk read as %v, snapshot schema %v", what, rec.Schema(), s.Schema())
		}
		col := rec.Column(0).(*array.Int64)
		var cids []int64
		for i := range col.Len() {
			cids = append(cids, col.Value(i))
		}
		rec.Release()
		if int64(len(cids)) != c.NumRows {
			w.failf("%s: chunk of %d rows read %d", what, c.NumRows, len(cids))
		}
		chunkIDs = append(chunkIDs, cids)
		ids = append(ids, cids...)
	}
	if int64(len(ids)) != s.NumRows() {
		w.failf("%s: NumRows %d, read %d", what, s.NumRows(), len(ids))
	}
	if n := len(s.Chunks()); n > 0 {
		i := w.rng.IntN(n)
		c := s.Chunks()[i]
		lo := w.rng.Int64N(c.NumRows + 1)
		hi := lo + w.rng.Int64N(c.NumRows-lo+1)
		rec, err := s.ReadChunk(ctx, c, lo, hi, []int{0})
		if err != nil {
			w.failf("%s: read rows [%d,%d) of chunk %d: %v", what, lo, hi, i, err)
		}
		col := rec.Column(0).(*array.Int64)
		got := make([]int64, col.Len())
		for j := range got {
			got[j] = col.Value(j)
		}
		rec.Release()
		if !slices.Equal(got, chunkIDs[i][lo:hi]) {
			w.failf("%s: rows [%d,%d) of chunk %d: %v, want %v", what, lo, hi, i, got, chunkIDs[i][lo:hi])
		}
	}
	slices.Sort(ids)
	return ids
}

// checkAt takes a snapshot at ts (0: now) and compares it with the model
// and with every earlier snapshot at the same time.
func (w *sim) checkAt(ts int64, what string) {
	at := time.Time{}
	if ts != 0 {
		at = usTime(ts)
	}
	s, err := w.tb.Snapshot(at)
	if err != nil {
		w.failf("%s: snapshot at %d: %v", what, ts, err)
	}
	defer s.Release()
	w.readTS = max(w.readTS, s.Time().UnixMicro())
	if ts == 0 {
		// Now is the clock, or the last timestamp if a group's
		// timestamps ran ahead of it.
		// (A checkpoint may carry the timestamp of a record stamped in
		// the same group but lost to a crash: up to queuedTS.)
		ts = s.Time().UnixMicro()
		if lo, hi := max(w.now(), w.m.lastTS), max(w.now(), w.m.lastTS, w.queuedTS, w.maybeTS); ts < lo || ts > hi {
			w.failf("%s: snapshot now at %d, want [%d, %d]", what, ts, lo, hi)
		}
	}
	if sv := w.m.schemaAt(s.Time().UnixMicro()); s.SchemaVersion() != sv.version || !s.Schema().Equal(sv.schema) {
		w.failf("%s: snapshot at %d: schema version %d %v, want %d %v", what, ts, s.SchemaVersion(), s.Schema(), sv.version, sv.schema)
	}
	got := w.readSnapshot(s, what)
	w.st.Checks++
	if at.IsZero() {
		// The counters REST serves numRows from, and the active stream
		// counts, agree with a snapshot now.
		if rows, _ := w.tb.Stats(); rows != int64(len(got)) {
			w.failf("%s: Stats() %d rows, snapshot now %d", what, rows, len(got))
		}
		want := w.activeStreams()
		got := w.tb.ActiveStreams()
		for _, typ := range []StreamType{StreamCommitted, StreamPending, StreamBuffered} {
			if got[typ] != want[typ] {
				w.failf("%s: active streams %v, want %v", what, got, want)
			}
		}
	}
	if d := diffIDs(got, w.m.visibleAt(ts)); d != "" {
		w.failf("%s: snapshot at %d: %s", what, ts, d)
	}
	if prev, ok := w.m.history[ts]; ok {
		if d := diffIDs(got, prev); d != "" {
			w.failf("%s: snapshot at %d differs from an earlier one at the same time: %s", what, ts, d)
		}
	} else {
		w.m.history[ts] = got
	}
}

// activeStreams counts the open, unexpired streams of the model and the
// ghosts (streams whose creation was not acknowledged but is durable).
func (w *sim) activeStreams() map[StreamType]int {
	n := map[StreamType]int{}
	for _, st := range append(slices.Clone(w.m.streams), w.ghosts...) {
		if st.state == stream.Open && !w.m.expired(st, w.now()) {
			n[st.typ]++
		}
	}
	return n
}

func (w *sim) opSnapshot() {
	w.tracef("snapshot now (%d)", w.now())
	w.checkAt(0, "snapshot now")
}

// pastTS picks a time to travel to: one the model knows a record at (or
// next to), a time of an earlier snapshot, or any time since the table
// was created.
func (w *sim) pastTS() int64 {
	var known []int64
	for _, s := range append([]*simStream{w.m.def}, w.m.streams...) {
		known = append(known, s.createTS, s.finTS, s.commitTS)
		for _, r := range s.rows {
			known = append(known, r.ts)
		}
		for _, f := range s.flushes {
			known = append(known, f.TS)
		}
	}
	for ts := range w.m.history {
		known = append(known, ts)
	}
	slices.Sort(known)
	oldest := w.m.oldest(w.now())
	if len(known) > 0 && w.rng.IntN(4) != 0 {
		ts := known[w.rng.IntN(len(known))] + w.rng.Int64N(3) - 1
		if ts >= oldest && ts <= w.now() {
			return ts
		}
	}
	return oldest + w.rng.Int64N(w.now()-oldest+1)
}

func (w *sim) opTimeTravel() {
	ts := w.pastTS()
	w.tracef("time travel to %d", ts)
	w.checkAt(ts, "time travel")
}

func (w *sim) opHold() {
	if len(w.held) >= 3 {
		return
	}
	ts := w.now()
	if w.rng.IntN(2) == 0 {
		ts = w.pastTS()
	}
	s, err := w.tb.Snapshot(usTime(ts))
	if err != nil {
		w.failf("hold snapshot at %d: %v", ts, err)
	}
	w.readTS = max(w.readTS, ts)
	ids := w.readSnapshot(s, "hold")
	w.tracef("hold snapshot at %d: %d rows", ts, len(ids))
	if d := diffIDs(ids, w.m.visibleAt(ts)); d != "" {
		s.Release()
		w.failf("held snapshot at %d: %s", ts, d)
	}
	w.held = append(w.held, simHeld{s: s, ts: ts, ids: ids})
}

func (w *sim) opReadHeld() {
	if len(w.held) == 0 {
		return
	}
	h := w.held[w.rng.IntN(len(w.held))]
	w.tracef("read held snapshot at %d", h.ts)
	got := w.readSnapshot(h.s, "read held")
	if d := diffIDs(got, h.ids); d != "" {
		w.failf("held snapshot at %d changed: %s", h.ts, d)
	}
}

func (w *sim) opRelease() {
	if len(w.held) == 0 {
		return
	}
	i := w.rng.IntN(len(w.held))
	w.held[i].s.Release()
	w.held = slices.Delete(w.held, i, i+1)
}
