package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/bqstore/bqstore/ingest/rows"
)

// worker runs one partition through the protocol of docs/ingest-protocol.md
// section 3.4, one batch at a time:
//
//	S0 resolve the stored state (commit a sealed batch, then DONE)
//	S1 read records from X, map them, stop at a bound on a record boundary Y
//	S2 take a PENDING stream (created ahead of time)
//	S3 append with explicit offsets, pipelined
//	S4 finalize, check row_count
//	S5 SEAL {X, Y, streams}      <- the decision; only the owner can write it
//	S6 BatchCommit (the committer, shared by the table's partitions)
//	S7 DONE: state IDLE at Y (or carried by seal k+1 when batch k+1 waits)
//
// Any failure before S5 abandons the batch: its stream is never sealed, so
// never committed, and [X, Y) is read again into a new stream. A failure at
// or after S5 leaves a seal that the next run (or owner) resolves.
type worker struct {
	p      *pipeline
	d      *dest // the partition's table (its route)
	part   Partition
	key    string
	reader RecordReader
	at     int64                  // offset the reader will read next; valid when reader != nil
	spare  *storagepb.WriteStream // an unused stream kept for the next batch
	// spareAt is when spare was created. A spare older than MaxSpareAge is
	// dropped: its schema may predate a table change (an idle partition
	// would otherwise map new columns with an old schema).
	spareAt time.Time
	// draining is set when the partition's revoke started (Revoker).
	draining atomic.Bool
	// forceFresh makes the next batch create its stream in the foreground
	// (after a record named a column the batch's schema lacked).
	forceFresh bool
	ahead      chan createResult // a stream being created for the next batch
	// rejected maps the source end offset of records whose rows the server
	// refused (row_errors) to the reason; the replay dead-letters them.
	// Entries below the state's offset are dropped as batches close.
	rejected map[int64]string
}

type createResult struct {
	ws  *storagepb.WriteStream
	at  time.Time // when the creation returned
	err error
}

// errRevoked ends a worker whose partition was revoked (Revoker) once its
// sealed batches are finished.
var errRevoked = errors.New("ingest: partition revoked")

// abandonError is a batch thrown away before its seal; the worker replays it.
type abandonError struct {
	cause error
	// learned is set when the attempt found rows the server refuses: the
	// replay differs (they become dead letters), so it is progress.
	learned bool
}

func (e *abandonError) Error() string { return "ingest: batch abandoned: " + e.cause.Error() }
func (e *abandonError) Unwrap() error { return e.cause }

func abandon(format string, args ...any) error {
	return &abandonError{cause: fmt.Errorf(format, args...)}
}

func (w *worker) run(ctx context.Context) error {
	defer w.p.metrics.Lag.DeleteLabelValues(w.key)
	defer w.closeReader()
	defer w.drainAhead()
	st, err := w.load(ctx)
	if err != nil {
		return err
	}
	if st.Config != "" && st.Config != w.d.configID {
		return fmt.Errorf("%w: partition %s: its state (offset %d) was written for another destination (config %s; this run writes to %s, config %s): "+
			"taking its offset would skip every range committed there; use a new --state-dir (or consumer group) with --start for the new table, or the old --table",
			ErrConfigChanged, w.key, st.Offset, st.Config, w.d.table, w.d.configID)
	}
	if id, ok := w.part.(identifier); ok && st.Source != "" {
		cur, err := id.identity(st.Offset)
		if err != nil {
			return err
		}
		if cur != st.Source {
			return fmt.Errorf("%w: partition %s: read up to offset %d, the source was %s; now it is %s (rotated or replaced?): "+
				"reading on at %d would skip or repeat records; restore the file, or use a new --state-dir with --start",
				ErrSourceChanged, w.key, st.Offset, st.Source, cur, st.Offset)
		}
	}
	if st.Missing {
		if st, err = w.start(ctx, st); err != nil {
			return err
		}
	}
	w.p.log.Info(describeState(w.key, st), "partition", w.key)
	st, err = w.resolve(ctx, st)
	if err != nil {
		return err
	}
	if dl := w.p.cfg.DeadLetters; dl != nil && w.p.single {
		if err := dl.Truncate(st.DeadLetterEnd); err != nil {
			return err
		}
		if st.DeadLetterEnd < 0 {
			// A state that never recorded the sink's size (the first run):
			// record it now, so that a crash in the first batch truncates
			// the dead letters it wrote instead of writing them twice.
			size, err := dl.Sync()
			if err != nil {
				return err
			}
			next := st
			next.DeadLetterEnd, next.Owner = size, w.p.owner
			if err := w.store(ctx, next, st, "dead-letter size"); err != nil {
				return err
			}
			st = next
		}
	}
	off, batch := st.Offset, st.Batch

	// S5-S7 of batch k run on the closer goroutine while this one appends
	// batch k+1 (docs/ingest-protocol.md: unsealed streams are always safe to
	// throw away). Seals stay in order: the closer handles one batch at a
	// time, so seal k+1 is written only after k is committed, and DONE k
	// before it, unless seal k+1 carries it (docs/ingest-protocol.md, "One
	// write for DONE k and seal k+1").
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// cctx is the closer's. An injected crash in the worker ends it at
	// once: the process is dead, so nothing of an earlier batch runs after
	// the crash point either (Hooks).
	cctx, ccancel := context.WithCancel(ctx)
	defer ccancel()
	// A cooperative revoke (Revoker) stops the batch in progress (it is
	// not sealed: dropped) and every batch not yet sealed, while the
	// closer finishes a sealed one: crash table row 13.
	var revokeErr error       // set by the watcher before watched closes
	var watched chan struct{} // closed when the revoke watcher ends
	if r, ok := w.part.(Revoker); ok {
		stop := make(chan struct{})
		watched = make(chan struct{})
		defer func() {
			close(stop)
			<-watched
		}()
		go func() {
			defer close(watched)
			select {
			case <-r.Revoking():
			case <-stop:
				return
			}
			w.draining.Store(true)
			cancel()
			if err := hook(w.p.cfg.Hooks, OnRevoke, w.key, 0); err != nil {
				revokeErr = err
				ccancel()
			}
		}()
	}
	items := make(chan *closeItem, 1)
	var closeErr error
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		last := st // the state stored last
		// owed is a batch sealed and committed whose DONE the next state
		// stored carries (last is its seal).
		var owed *closeItem
		for it := range items {
			if closeErr != nil {
				continue
			}
			if w.draining.Load() {
				w.p.log.Info("partition revoked: dropping a batch not yet sealed", "partition", w.key, "batch", it.b, "from", it.x)
				continue
			}
			// A batch already waiting once this one is committed will
			// carry its DONE.
			next, err := w.close(cctx, it, last, owed, func() bool { return len(items) > 0 })
			if err != nil {
				closeErr = err
				cancel()
				continue
			}
			last, owed = next, nil
			if next.Sealed {
				owed = it
			}
		}
		if owed != nil && closeErr == nil && cctx.Err() == nil {
			// No batch came to carry it (the source ended, a revoke
			// dropped the rest): DONE on its own, as S7 always was.
			if _, err := w.done(cctx, owed, last, nil, last.DeadLetterEnd); err != nil {
				closeErr = err
			}
		}
	}()
	finish := func(err error) error {
		if isHookError(err) {
			ccancel()
		}
		close(items)
		<-closed
		if w.draining.Load() {
			<-watched // draining is set only by the watcher, which ends soon after
		}
		switch {
		case revokeErr != nil:
			return revokeErr
		case closeErr != nil && !isHookError(err):
			return closeErr
		case w.draining.Load() && !isHookError(err):
			return errRevoked
		}
		return err
	}
	for attempt := 0; ; {
		it, err := w.batch(wctx, off, batch+1)
		var ab *abandonError
		if errors.As(err, &ab) && wctx.Err() == nil {
			w.p.metrics.BatchesAbandoned.Inc()
			w.p.log.Warn("batch abandoned, replaying its range", "partition", w.key, "batch", batch+1, "from", off, "err", ab.cause)
			w.closeReader()
			if ab.learned {
				attempt = 0 // the replay leaves the refused rows out
			}
			if attempt+1 >= w.p.cfg.MaxReplays {
				return finish(fmt.Errorf("ingest: partition %s: the batch from offset %d was abandoned %d times in a row without progress, last: %w; stopping (fail closed: nothing of it was committed)",
					w.key, off, attempt+1, ab.cause))
			}
			if err := w.p.cfg.Backoff.Wait(wctx, attempt); err != nil {
				return finish(err)
			}
			attempt++
			continue
		}
		if err != nil {
			return finish(err)
		}
		attempt = 0
		for o := range w.rejected {
			if o <= it.to {
				delete(w.rejected, o)
			}
		}
		if it.to > off {
			select {
			case items <- it:
			case <-wctx.Done():
				return finish(wctx.Err())
			}
			off, batch = it.to, batch+1
		}
		if it.eof {
			if err := finish(nil); err != nil {
				return err
			}
			w.p.log.Info(partitionDone(w.key, off, batch), "partition", w.key, "offset", off, "batches", batch)
			return nil
		}
	}
}

// start resolves Config.Start for a partition without a stored state and
// stores it as the partition's first state, so a restart continues there
// instead of resolving "latest" or a time again. Without a start position
// the partition fails closed (ErrNoStart); a partition that lost its state
// while others of the source kept theirs may only start at earliest.
func (w *worker) start(ctx context.Context, st State) (State, error) {
	pos := w.p.cfg.Start
	switch {
	case !pos.IsSet() && st.PeersWithState > 0:
		return st, noStartError(w.key, fmt.Sprintf("while %d other partitions of the source have one: its state was lost, or it was added to the topic", st.PeersWithState))
	case !pos.IsSet():
		return st, noStartError(w.key, "a first run, a wiped state directory, or Kafka offsets that expired")
	case st.PeersWithState > 0 && pos.kind != startEarliest:
		return st, fmt.Errorf("%w: partition %s has no stored state while %d other partitions of the source have one: starting it at %s could skip records; only --start earliest is accepted for it (right for a partition added to the topic)",
			ErrNoStart, w.key, st.PeersWithState, pos)
	}
	off := int64(0)
	if s, ok := w.part.(Starter); ok {
		var err error
		if off, err = s.StartOffset(ctx, pos); err != nil {
			return st, err
		}
	} else if pos.kind != startEarliest {
		return st, fmt.Errorf("ingest: partition %s cannot start at %s: only earliest", w.key, pos)
	}
	w.p.log.Warn("partition has no stored state: starting at the given position", "partition", w.key, "start", pos.String(), "offset", off, "partitions_with_state", st.PeersWithState)
	next := State{Offset: off, DeadLetterEnd: st.DeadLetterEnd, Owner: w.p.owner}
	if err := w.store(ctx, next, st, "start position"); err != nil {
		return st, err
	}
	return next, nil
}

// resolve finishes a sealed batch (docs/ingest-protocol.md, "Recovery"): streams
// already committed are done; the others are finalized (idempotent) and
// committed; a missing stream fails closed. It returns the IDLE state.
func (w *worker) resolve(ctx context.Context, st State) (State, error) {
	if !st.Sealed {
		return st, nil
	}
	var pending []SealedStream
	var latest time.Time
	for _, s := range st.Streams {
		if s.Table >= len(w.d.tables) {
			return st, fmt.Errorf("%w: partition %s: the seal of range [%d, %d) names a stream of table #%d, and this run has %d (a dead-letter table the run lacks?)",
				errFailClosed, w.key, st.Offset, st.To, s.Table, len(w.d.tables))
		}
		name := streamName(w.d.tables[s.Table], s.ID)
		ws, err := w.p.getStream(ctx, name, storagepb.WriteStreamView_BASIC)
		if isNotFound(err) {
			return st, fmt.Errorf("%w: partition %s, %s, range [%d, %d)", errFailClosed, w.key, name, st.Offset, st.To)
		}
		if err != nil {
			return st, err
		}
		if ws.GetCommitTime() != nil {
			if ct := ws.GetCommitTime().AsTime(); ct.After(latest) {
				latest = ct
			}
			continue
		}
		n, err := w.p.finalize(ctx, name)
		if err != nil {
			return st, err
		}
		if n >= 0 && n != s.Rows {
			return st, fmt.Errorf("ingest: partition %s: sealed %s has %d rows, the seal says %d: refusing to commit", w.key, name, n, s.Rows)
		}
		pending = append(pending, s)
	}
	if len(pending) > 0 {
		w.p.metrics.ActiveStreams.Add(float64(len(pending)))
		ct, err := w.commitSealed(ctx, st.Batch, pending, 0, time.Time{})
		if err != nil {
			return st, err
		}
		if ct.After(latest) {
			latest = ct
		}
	}
	if f := w.p.cfg.OnCommit; f != nil {
		var n int64
		for _, s := range st.Streams {
			if s.Table == 0 {
				n += s.Rows
			}
		}
		f(Committed{Partition: w.key, Batch: st.Batch, From: st.Offset, To: st.To, Rows: n, Time: latest})
	}
	done := State{Batch: st.Batch, Offset: st.To, DeadLetterEnd: st.DeadLetterEnd, Owner: w.p.owner}
	if err := w.store(ctx, done, st, "DONE"); err != nil {
		return st, err
	}
	w.p.log.Info("resolved sealed batch", "partition", w.key, "batch", st.Batch, "committed", len(pending), "streams", len(st.Streams), "to", st.To)
	return done, nil
}

// closeItem is a batch whose appends are done and whose stream (if any)
// is finalized: what is left is S5-S7.
type closeItem struct {
	b        uint64
	x, to    int64
	eof      bool
	stream   string // empty: no rows (only dead letters or blank lines)
	n, bytes int64
	start    time.Time
	dls      []pendingDeadLetter
	sealed   bool // set by the closer once its seal is stored (it had streams)
}

// stream returns a PENDING stream for the next batch: the unused one from
// an earlier batch, the one created ahead, or a new one.
func (w *worker) stream(ctx context.Context) (*storagepb.WriteStream, time.Time, error) {
	if w.forceFresh {
		w.forceFresh = false
		if w.spare != nil {
			w.spare = nil
			w.p.metrics.ActiveStreams.Dec()
		}
		if w.ahead != nil {
			r := <-w.ahead // ends with the run's context
			w.ahead = nil
			if r.err == nil {
				w.p.metrics.ActiveStreams.Dec()
			}
		}
		ws, err := w.p.createStreamOn(ctx, w.d.table)
		return ws, time.Now(), err
	}
	if w.spare != nil {
		ws := w.spare
		w.spare = nil
		if time.Since(w.spareAt) < w.p.cfg.MaxSpareAge {
			return ws, w.spareAt, nil
		}
		w.p.metrics.ActiveStreams.Dec()
	}
	return w.freshStream(ctx)
}

func (w *worker) freshStream(ctx context.Context) (*storagepb.WriteStream, time.Time, error) {
	if w.ahead != nil {
		ch := w.ahead
		w.ahead = nil
		select {
		case r := <-ch:
			if r.err == nil && time.Since(r.at) < w.p.cfg.MaxSpareAge {
				return r.ws, r.at, nil
			}
			if r.err == nil {
				w.p.metrics.ActiveStreams.Dec() // too old: its schema may be stale
			}
			if ctx.Err() != nil {
				return nil, time.Time{}, ctx.Err()
			}
			// Fall through: create one in the foreground.
		case <-ctx.Done():
			w.ahead = ch
			return nil, time.Time{}, ctx.Err()
		}
	}
	ws, err := w.p.createStreamOn(ctx, w.d.table)
	return ws, time.Now(), err
}

// createAhead starts creating the next batch's stream, hiding the creation
// latency behind this batch's appends.
func (w *worker) createAhead(ctx context.Context) {
	if w.ahead != nil || w.spare != nil {
		return
	}
	ch := make(chan createResult, 1)
	w.ahead = ch
	go func() {
		ws, err := w.p.createStreamOn(ctx, w.d.table)
		ch <- createResult{ws, time.Now(), err}
	}()
}

func (w *worker) drainAhead() {
	if w.ahead != nil {
		<-w.ahead // the creating goroutine ends with the run's context
		w.ahead = nil
	}
}

func (w *worker) closeReader() {
	if w.reader != nil {
		_ = w.reader.Close()
		w.reader = nil
	}
}

// batch runs S1-S4 for batch b starting at offset x.
func (w *worker) batch(ctx context.Context, x int64, b uint64) (*closeItem, error) {
	p := w.p
	lease, cancel := context.WithTimeout(ctx, p.cfg.Lease)
	defer cancel()

	fresh := w.forceFresh
	ws, createdAt, err := w.stream(lease)
	if err != nil {
		if ctx.Err() == nil && leaseOver(lease, err) {
			return nil, abandon("lease expired creating a stream: %v", err)
		}
		return nil, err
	}
	// A stream that neither reaches the closer nor is kept for the next
	// batch is abandoned: it is never sealed, so never committed.
	handedOn := false
	defer func() {
		if !handedOn && w.spare != ws {
			p.metrics.ActiveStreams.Dec()
		}
	}()
	if err := hook(p.cfg.Hooks, AfterCreate, w.key, b); err != nil {
		return nil, err
	}
	mapper, err := w.d.mapperFor(p, ws.GetTableSchema())
	if err != nil {
		return nil, err
	}
	w.createAhead(ctx)

	if w.reader == nil || w.at != x {
		w.closeReader()
		r, err := w.part.Open(ctx, x)
		if err != nil {
			return nil, err
		}
		w.reader, w.at = r, x
	}

	// The AppendRows connection opens with the first request, so an idle
	// partition costs no RPCs.
	var app *appender
	ok := false
	defer func() {
		if !ok && app != nil {
			app.abort()
		}
	}()

	var (
		start    = time.Now()
		n, bytes int64
		to       = x
		eof      bool
		buf      = make([]byte, 0, p.cfg.RequestBytes+p.cfg.RequestBytes/4)
		rowsOf   [][]byte
		reqBytes int64   // encoded size of rowsOf in a request
		srcOf    []int64 // the source end offset of each row of the stream, by stream offset
		dls      []pendingDeadLetter
		// maxRow is the largest row one request can carry next to the
		// writer schema and the request's other fields.
		maxRow = maxAppendRequestBytes - proto.Size(mapper.Descriptor()) - 1<<10
	)
	flush := func() error {
		if len(rowsOf) == 0 {
			return nil
		}
		if app == nil {
			var err error
			if app, err = newAppender(lease, p, ws.GetName(), mapper.Descriptor()); err != nil {
				return err
			}
		}
		first := app.sent == 0
		if err := app.send(lease, buf, rowsOf); err != nil {
			return err
		}
		buf = make([]byte, 0, cap(buf))
		rowsOf, reqBytes = nil, 0
		if first && p.cfg.Hooks != nil {
			<-app.firstAck
			if err := hook(p.cfg.Hooks, MidAppend, w.key, b); err != nil {
				return err
			}
		}
		return nil
	}
	// The age bound also interrupts a source that has nothing to read.
	ageCtx, ageCancel := context.WithDeadline(lease, start.Add(p.cfg.MaxBatchAge))
	defer ageCancel()
	for n < p.cfg.MaxBatchRows && bytes < p.cfg.MaxBatchBytes {
		rec, end, err := w.reader.Next(ageCtx)
		if errors.Is(err, io.EOF) {
			var ut *UnterminatedError
			if errors.As(err, &ut) {
				p.log.Warn(w.unterminated(ut), "partition", w.key, "offset", ut.Offset, "bytes", ut.Bytes)
			}
			eof = true
			break
		}
		if err != nil && ageCtx.Err() != nil && lease.Err() == nil && ctx.Err() == nil {
			break // the age bound
		}
		var gone *RecordsGoneError
		if errors.As(err, &gone) {
			if !p.cfg.SkipDeletedRecords || gone.Start <= gone.Want {
				p.metrics.SourceGaps.WithLabelValues("fail_closed").Inc()
				w.closeReader()
				return nil, err
			}
			// Told to carry on: the gap is logged, counted and stepped over;
			// the batch's range covers it, so the state moves past it.
			p.metrics.SourceGaps.WithLabelValues("skipped").Inc()
			p.log.Error("source records deleted before they were committed, skipping them (SkipDeletedRecords)",
				"partition", w.key, "from", gone.Want, "to", gone.Start, "records", gone.Lost())
			w.closeReader()
			r, oerr := w.part.Open(ctx, gone.Start)
			if oerr != nil {
				return nil, oerr
			}
			w.reader, w.at, to = r, gone.Start, gone.Start
			continue
		}
		if err != nil {
			w.closeReader()
			if ctx.Err() == nil && leaseOver(lease, err) {
				return nil, abandon("lease expired reading the source: %v", err)
			}
			return nil, err
		}
		recAt := to
		w.at, to = end, end
		if rec == nil {
			continue // a skip (a transaction marker): the range covers it
		}
		if reason, bad := w.rejected[end]; bad {
			// The server refused this record's row on an earlier attempt
			// of this range: a dead letter now, so the range can commit.
			if !p.hasDeadLetterSink() {
				return nil, fmt.Errorf("ingest: %s: %s (no dead-letter sink configured)", w.where(recAt), reason)
			}
			dls = append(dls, w.deadLetter(recAt, rec, reason))
			continue
		}
		rowAt := len(buf)
		buf, err = mapper.Append(buf, rec)
		var re *rows.RecordError
		if err != nil && errors.As(err, &re) && re.UnknownColumn && !fresh {
			// The table may have gained the column after this batch's
			// stream was created: end the batch before the record and map
			// it again with a stream created now (schema evolution).
			to = recAt
			w.closeReader()
			w.forceFresh = true
			break
		}
		if err != nil {
			if !p.hasDeadLetterSink() {
				return nil, fmt.Errorf("ingest: %s: %w (no dead-letter sink configured)", w.where(recAt), err)
			}
			dls = append(dls, w.deadLetter(recAt, rec, err.Error()))
			continue
		}
		rowLen := len(buf) - rowAt
		if rowLen > maxRow {
			// No request can carry it: the server would refuse the
			// request on every replay.
			buf = buf[:rowAt]
			reason := fmt.Sprintf("the row is %d bytes serialized, over the %d bytes one AppendRows request can carry", rowLen, maxRow)
			if !p.hasDeadLetterSink() {
				return nil, fmt.Errorf("ingest: %s: %s (no dead-letter sink configured)", w.where(recAt), reason)
			}
			dls = append(dls, w.deadLetter(recAt, rec, reason))
			continue
		}
		// A request never grows past RequestBytes because of a row:
		// the rows before it go first (one row alone may exceed it).
		rowCost := int64(1 + protowire.SizeBytes(rowLen))
		if len(rowsOf) > 0 && reqBytes+rowCost > int64(p.cfg.RequestBytes) {
			row := append([]byte(nil), buf[rowAt:]...)
			buf = buf[:rowAt]
			if err := flush(); err != nil {
				return nil, w.sendFailure(ctx, lease, err, app, srcOf)
			}
			rowAt = len(buf)
			buf = append(buf, row...)
		}
		rowsOf = append(rowsOf, buf[rowAt:len(buf):len(buf)])
		srcOf = append(srcOf, end)
		reqBytes += rowCost
		n++
		bytes += int64(rowLen)
		if reqBytes >= int64(p.cfg.RequestBytes) {
			if err := flush(); err != nil {
				return nil, w.sendFailure(ctx, lease, err, app, srcOf)
			}
		}
	}
	if err := flush(); err != nil {
		return nil, w.sendFailure(ctx, lease, err, app, srcOf)
	}
	ok = true
	if app != nil {
		if err := app.close(); err != nil {
			w.closeReader()
			return nil, w.rowErrors(app, srcOf, err)
		}
	}

	if n == 0 {
		// Nothing to append: keep the stream for the next batch. A range
		// of only dead letters (or blank lines) still moves the state.
		w.spare, w.spareAt = ws, createdAt
		return &closeItem{b: b, x: x, to: to, eof: eof, dls: dls}, nil
	}

	// S4.
	count, err := p.finalize(lease, ws.GetName())
	if err != nil {
		w.closeReader()
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, abandon("%v", err)
	}
	if count >= 0 && count != n {
		w.closeReader()
		p.log.Error("finalized stream row count differs from rows appended (server bug?)", "stream", ws.GetName(), "row_count", count, "appended", n)
		return nil, abandon("%s: row_count %d, appended %d", ws.GetName(), count, n)
	}
	if err := hook(p.cfg.Hooks, AfterFinalize, w.key, b); err != nil {
		return nil, err
	}
	if lease.Err() != nil {
		w.closeReader()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, abandon("lease expired before the seal")
	}

	handedOn = true
	return &closeItem{b: b, x: x, to: to, eof: eof, stream: ws.GetName(), n: n, bytes: bytes, start: start, dls: dls}, nil
}

// close runs S5-S7 for a finalized batch, given prev, the state stored
// last, and returns the state it stored last: DONE, or, when the batch
// has streams and more reports another batch waiting for the closer once
// they are committed, its seal, leaving S7 to the next state stored
// (docs/ingest-protocol.md, "One write for DONE k and seal k+1"). owed,
// if set, is the batch whose DONE the first state this call stores
// carries (prev is its seal).
func (w *worker) close(ctx context.Context, it *closeItem, prev State, owed *closeItem, more func() bool) (State, error) {
	p := w.p
	// Dead letters are durable before the state that covers them.
	end, err := w.writeDeadLetters(it.dls, prev.DeadLetterEnd)
	if err != nil {
		return State{}, err
	}
	// Each step starts only while ctx lives: after an injected crash (or
	// the end of the run) a reply that still arrives starts nothing.
	if err := ctx.Err(); err != nil {
		return State{}, err
	}
	var streams []SealedStream
	if it.stream != "" {
		streams = append(streams, SealedStream{Table: 0, ID: streamID(it.stream), Rows: it.n})
	}
	if len(it.dls) > 0 && p.cfg.DeadLetterTable != "" {
		// The dead letters' own stream, finalized before the seal names it.
		name, n, err := w.writeDeadLetterStream(ctx, it.dls)
		if err != nil {
			return State{}, err
		}
		p.metrics.DeadLetters.Add(float64(n))
		streams = append(streams, SealedStream{Table: 1, ID: streamID(name), Rows: n})
		if err := ctx.Err(); err != nil {
			return State{}, err
		}
	}
	if len(streams) > 0 {
		// S5: the decision.
		seal := State{Batch: it.b, Offset: it.x, Sealed: true, To: it.to, DeadLetterEnd: end,
			Streams: streams, Owner: p.owner}
		if err := w.store(ctx, seal, prev, "seal"); err != nil {
			return State{}, err
		}
		prev = seal
		it.sealed = true
		if owed != nil {
			// The seal is owed's DONE too: its offset is owed's end.
			if err := w.doneStored(ctx, owed); err != nil {
				return State{}, err
			}
			owed = nil
		}
		if err := ctx.Err(); err != nil {
			return State{}, err
		}
		if err := hook(p.cfg.Hooks, AfterSeal, w.key, it.b); err != nil {
			return State{}, err
		}
		// S6, one BatchCommit per table the seal names.
		commitTime, err := w.commitSealed(ctx, it.b, streams, it.bytes, it.start)
		if err != nil {
			return State{}, err
		}
		if p.cfg.OnCommit != nil {
			p.cfg.OnCommit(Committed{Partition: w.key, Batch: it.b, From: it.x, To: it.to, Rows: it.n, Time: commitTime})
		}
		if err := hook(p.cfg.Hooks, AfterCommit, w.key, it.b); err != nil {
			return State{}, err
		}
		if more() {
			// The waiting batch's seal (or DONE) will carry this DONE.
			return seal, nil
		}
	}
	return w.done(ctx, it, prev, owed, end)
}

// done runs S7 for it: stores DONE at its end, given prev, the state
// stored last, and dlEnd, the dead-letter file's size with its dead
// letters; owed, if set, is an earlier batch whose DONE this one carries.
func (w *worker) done(ctx context.Context, it *closeItem, prev State, owed *closeItem, dlEnd int64) (State, error) {
	done := State{Batch: it.b, Offset: it.to, DeadLetterEnd: dlEnd, Owner: w.p.owner}
	if err := w.store(ctx, done, prev, "DONE"); err != nil {
		return State{}, err
	}
	if owed != nil {
		if err := w.doneStored(ctx, owed); err != nil {
			return State{}, err
		}
	}
	if err := w.doneStored(ctx, it); err != nil {
		return State{}, err
	}
	return done, nil
}

// doneStored follows a stored DONE of it (its own, or carried by a later
// state): the lag, the AfterDone hook of a batch that had streams.
func (w *worker) doneStored(ctx context.Context, it *closeItem) error {
	p := w.p
	if err := ctx.Err(); err != nil {
		return err
	}
	if e, ok := w.part.(Ender); ok {
		if end := e.End(); end >= it.to {
			p.metrics.Lag.WithLabelValues(w.key).Set(float64(end - it.to))
		}
	}
	if it.sealed {
		if err := hook(p.cfg.Hooks, AfterDone, w.key, it.b); err != nil {
			return err
		}
	}
	p.log.Debug("batch committed", "partition", w.key, "batch", it.b, "from", it.x, "to", it.to, "rows", it.n, "dead_letters", len(it.dls))
	return nil
}

// store writes st as the partition's state; prev is the state stored
// before it. A failed Store is settled by reading the state back
// (docs/ingest-protocol.md, rule 1: a read-back proves only what it names):
//
//   - exactly st (our streams, range and owner token): stored, go on;
//   - exactly prev: not stored; write st again, with the group's current
//     generation, for as long as the worker owns the partition (its
//     context ends when the partition is revoked or lost). ILLEGAL_GENERATION,
//     REBALANCE_IN_PROGRESS and coordinator moves take this path;
//   - anything else: another owner wrote the state (a new owner may seal
//     the same batch number and offset with its own streams): ErrFenced,
//     and nothing of this batch is committed.
//
// ErrStoreFinal and the end of ctx stop at once.
func (w *worker) store(ctx context.Context, st, prev State, what string) error {
	st.Config = w.d.configID
	if id, ok := w.part.(identifier); ok {
		src, err := id.identity(st.Offset)
		if err != nil {
			return err
		}
		st.Source = src
	}
	for attempt := 0; ; attempt++ {
		err := w.p.cfg.Ledger.Store(ctx, w.key, st)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || errors.Is(err, ErrStoreFinal) {
			return err
		}
		got, lerr := w.load(ctx)
		if lerr != nil {
			return fmt.Errorf("%w (and re-reading the state: %v)", err, lerr)
		}
		if sameState(got, st) {
			w.p.log.Warn("ambiguous reply; the state was stored", "partition", w.key, "state", what, "batch", st.Batch, "err", err)
			return nil
		}
		if !sameState(got, prev) {
			w.p.metrics.Fenced.Inc()
			return fmt.Errorf("%w: %s: %s of batch %d not stored, and the state is now %s written by %q (this run is %q): %v",
				ErrFenced, w.key, what, st.Batch, got, got.Owner, w.p.owner, err)
		}
		w.p.metrics.StoreRetries.Inc()
		w.p.log.Warn("state not stored, retrying", "partition", w.key, "state", what, "batch", st.Batch, "attempt", attempt, "err", err)
		if werr := w.p.cfg.Backoff.Wait(ctx, attempt); werr != nil {
			return err
		}
	}
}

// maxLoadAttempts bounds the retries of a failing Load.
const maxLoadAttempts = 20

// load reads the partition's state, retrying failures (a coordinator
// moving or loading) with backoff.
func (w *worker) load(ctx context.Context) (State, error) {
	for attempt := 0; ; attempt++ {
		st, err := w.p.cfg.Ledger.Load(ctx, w.key)
		if err == nil || ctx.Err() != nil || attempt+1 >= maxLoadAttempts {
			return st, err
		}
		w.p.log.Warn("reading the partition state failed, retrying", "partition", w.key, "attempt", attempt, "err", err)
		if werr := w.p.cfg.Backoff.Wait(ctx, attempt); werr != nil {
			return st, err
		}
	}
}

// sendFailure classifies an error while sending: the run's end is returned
// as is, anything else abandons the batch (learning the rows the server
// refused, if it said so before the failure).
func (w *worker) sendFailure(ctx context.Context, lease context.Context, err error, app *appender, srcOf []int64) error {
	w.closeReader()
	if ctx.Err() != nil || isHookError(err) {
		return err
	}
	if leaseOver(lease, err) {
		return abandon("lease expired appending: %v", err)
	}
	if app != nil {
		app.abort() // waits for the receiver: rowErrs is final
		return w.rowErrors(app, srcOf, err)
	}
	return abandon("%v", err)
}

// rowErrors abandons a batch after a failed append. When the server named
// the rows it refused (row_errors), their records are remembered by
// source offset: the replay dead-letters them instead of appending them,
// so a permanent row error costs one replay, never a loop.
// REQUIRES: app's receiver has ended (close or abort returned).
func (w *worker) rowErrors(app *appender, srcOf []int64, err error) error {
	learned := 0
	for _, re := range app.rowErrs {
		if re.offset < 0 || re.offset >= int64(len(srcOf)) {
			continue
		}
		if w.rejected == nil {
			w.rejected = map[int64]string{}
		}
		if _, known := w.rejected[srcOf[re.offset]]; !known {
			w.rejected[srcOf[re.offset]] = "rejected by the server: " + re.msg
			learned++
		}
	}
	if learned > 0 {
		w.p.metrics.RowsRejected.Add(float64(learned))
		w.p.log.Warn("the server refused rows; replaying the batch with them as dead letters", "partition", w.key, "rows", learned, "err", err)
	}
	return &abandonError{cause: err, learned: learned > 0}
}

type pendingDeadLetter struct {
	offset int64
	key    []byte // the Kafka record key (nil: none)
	line   int64  // files: the record's line number (0: unknown)
	rec    []byte
	reason string
}

// writeDeadLetters writes a batch's dead letters and makes them durable,
// returning the sink's size (prev if there were none).
func (w *worker) writeDeadLetters(dls []pendingDeadLetter, prev int64) (int64, error) {
	sink := w.p.cfg.DeadLetters
	if sink == nil {
		return -1, nil
	}
	if len(dls) == 0 && prev >= 0 {
		return prev, nil
	}
	for _, d := range dls {
		if err := sink.Write(w.key, d.offset, d.line, d.rec, d.reason); err != nil {
			return 0, err
		}
	}
	w.p.metrics.DeadLetters.Add(float64(len(dls)))
	return sink.Sync()
}
