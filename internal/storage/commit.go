package storage

import (
	"context"
	"fmt"
	"runtime/pprof"

	"github.com/bqstore/bqstore/internal/storage/segment"
	"github.com/bqstore/bqstore/internal/storage/wal"
)

// run is the table's log writer: the only goroutine that writes the
// table's files after openTable. It is started by openTable and stopped
// by close, which waits for it (loopDone); queued records are written
// before it exits.
//
// Group commit: each round takes everything queued, stamps the records
// with strictly increasing timestamps (each later than every snapshot
// time taken, see Table.mu.readTS), writes them, fdatasyncs once,
// applies them to the durable state in order and acknowledges them. While
// it syncs, new appends queue up and form the next group, so many
// concurrent appenders share one fdatasync.
func (t *Table) run() {
	defer close(t.loopDone)
	pprof.Do(context.Background(), pprof.Labels("storage", "log-writer", "table", t.id), func(context.Context) {
		for {
			stopping := false
			select {
			case <-t.kick:
			case <-t.stop:
				stopping = true
			}
			for t.round() {
			}
			if stopping {
				return
			}
		}
	})
}

// round writes one group; it reports whether there was one.
func (t *Table) round() bool {
	t.mu.Lock()
	ops := t.mu.queue
	t.mu.queue = nil
	if len(ops) == 0 {
		t.mu.Unlock()
		return false
	}
	failErr := t.mu.failErr
	if failErr == nil {
		t.stampLocked(ops)
	}
	t.mu.Unlock()
	if failErr != nil {
		t.finish(ops, failErr)
		return true
	}
	t.writeGroup(ops)
	return true
}

// stampLocked gives each record of ops its timestamp.
// REQUIRES: t.mu held.
func (t *Table) stampLocked(ops []*op) {
	now := t.db.clock().UnixMicro()
	for _, o := range ops {
		if o.buf == nil {
			o.ts = t.mu.lastTS
			continue
		}
		o.ts = max(now, t.mu.lastTS+1, t.mu.readTS+1)
		t.mu.lastTS = o.ts
		t.db.noteTS(o.ts)
		if t.mu.inflight == 0 {
			t.mu.inflight = o.ts
		}
	}
}

// takeMore takes (and stamps) what was queued while the group was being
// written, so that it joins the group's fdatasync: appenders that were
// still encoding when the group started need not wait for a whole extra
// sync. Called once per group, so a steady stream of arrivals cannot
// postpone the sync.
func (t *Table) takeMore() []*op {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.failErr != nil || len(t.mu.queue) == 0 {
		return nil
	}
	ops := t.mu.queue
	t.mu.queue = nil
	t.stampLocked(ops)
	return ops
}

// finish completes ops with err (nil: success) and returns their budget.
func (t *Table) finish(ops []*op, err error) {
	for _, o := range ops {
		o.err = err
		t.db.budget.release(o.budget)
		if o.r != nil && o.r.typ == recRows {
			frameBufs.put(o.buf)
			o.buf = nil
		}
		close(o.done)
	}
}

// failStop puts the table in fail-stop after an I/O error and fails ops.
func (t *Table) failStop(ops []*op, cause error) {
	err := fmt.Errorf("storage: table %q: %w: %v", t.id, ErrFailStop, cause)
	t.db.log.Error("storage: table fail-stopped", "table", t.id, "err", cause)
	t.db.m.failStops.Add(1)
	t.mu.Lock()
	if t.mu.failErr == nil {
		t.mu.failErr = err
	} else {
		err = t.mu.failErr
	}
	t.mu.inflight = 0
	t.applied.Broadcast()
	t.mu.Unlock()
	t.finish(ops, err)
}

func (t *Table) writeGroup(ops []*op) {
	start := 0 // first op not yet synced and applied
	tookMore := false
	for i := 0; ; i++ {
		if i == len(ops) {
			if tookMore {
				break
			}
			tookMore = true
			more := t.takeMore()
			if len(more) == 0 {
				break
			}
			ops = append(ops, more...)
		}
		o := ops[i]
		if o.buf == nil {
			continue
		}
		a := t.active
		if a.size+int64(len(o.buf)) > t.db.opts.SegmentSize && t.hasActiveBatches() {
			if err := t.syncApply(ops[start:i]); err != nil {
				t.failStop(ops[start:], err)
				return
			}
			start = i
			if err := t.roll(); err != nil {
				t.failStop(ops[start:], err)
				return
			}
			a = t.active
		}
		wal.SealSynced(o.buf, frameType(o.r.typ), o.ts, a.synced, o.n, o.crc)
		o.file, o.off = a, a.size
		if _, err := a.f.Write(o.buf); err != nil {
			t.failStop(ops[start:], fmt.Errorf("write %s: %w", a.name, err))
			return
		}
		a.size += int64(len(o.buf))
	}
	if err := t.syncApply(ops[start:]); err != nil {
		t.failStop(ops[start:], err)
		return
	}
	t.mu.Lock()
	t.mu.inflight = 0
	t.applied.Broadcast()
	t.mu.Unlock()
}

func (t *Table) hasActiveBatches() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.mu.batches) > t.mu.activeStart
}

// syncApply makes ops durable, applies them and acknowledges them.
func (t *Table) syncApply(ops []*op) error {
	frames, bytes := 0, 0
	for _, o := range ops {
		if o.buf != nil {
			frames++
			bytes += len(o.buf)
		}
	}
	if frames > 0 {
		if err := t.active.f.Sync(); err != nil {
			return fmt.Errorf("fdatasync %s: %w", t.active.name, err)
		}
		t.active.synced = t.active.size
		t.db.m.syncs.Add(1)
		t.db.m.syncedFrames.Add(int64(frames))
		t.db.m.syncedBytes.Add(int64(bytes))
	}
	t.mu.Lock()
	var applyErr error
	for _, o := range ops {
		if o.buf == nil {
			continue
		}
		if err := t.applyLocked(o.r, o.ts, o.file, o.off, int64(len(o.buf))); err != nil && applyErr == nil {
			applyErr = err
		}
		if o.r.typ == recStreamCreate {
			// The admission state learns the creation time (the TTL
			// counts from it) when the stream becomes durable; until
			// then only CreateStream knows its id.
			if st, ok := t.mu.admit.Lookup(o.r.stream); ok {
				st.CreateTS = o.ts
			}
		}
	}
	t.mu.Unlock()
	if applyErr != nil {
		// The admission state and the log disagree: a bug. Stop
		// acknowledging rather than diverge.
		return fmt.Errorf("internal error: admitted record does not apply: %w", applyErr)
	}
	t.finish(ops, nil)
	return nil
}

// roll seals the active file (CHECKPOINT, FOOTER, TRAILER, fdatasync) and
// starts the next one. Everything written so far is applied. Streams past
// the time-travel window are collected first (gc.go), so the checkpoint
// does not carry them.
func (t *Table) roll() error {
	a := t.active
	t.mu.Lock()
	// The window is the log's, not the clock's: snapshots bound theirs
	// by max(clock, last ts), which a clock read here may run ahead of.
	t.collectStreamsLocked(t.mu.lastTS)
	ck := t.checkpointLocked().encode()
	ts := t.mu.lastTS
	foot := segment.Footer{CheckpointOffset: a.size}
	for _, b := range t.mu.batches[t.mu.activeStart:] {
		foot.Batches = append(foot.Batches, b.b)
	}
	t.mu.Unlock()
	// The seal is one unsynced group: a crash that persists part of it
	// leaves a torn tail that recovery truncates (the file stays active).
	var buf []byte
	buf = wal.AppendFrameSynced(buf, recCheckpoint, ts, a.synced, ck)
	footOff := a.size + int64(len(buf))
	buf = wal.AppendFrameSynced(buf, recFooter, ts, a.synced, foot.Encode(nil))
	buf = wal.AppendFrameSynced(buf, recTrailer, ts, a.synced, segment.Trailer(footOff))
	if _, err := a.f.Write(buf); err != nil {
		return fmt.Errorf("seal %s: %w", a.name, err)
	}
	if err := a.f.Sync(); err != nil {
		return fmt.Errorf("seal %s: fdatasync: %w", a.name, err)
	}
	a.size += int64(len(buf))
	a.synced = a.size
	lf, err := t.createLogFile(a.num+1, ts)
	if err != nil {
		return err
	}
	t.mu.Lock()
	t.installActiveLocked(lf)
	t.mu.Unlock()
	t.db.m.rolls.Add(1)
	return nil
}
