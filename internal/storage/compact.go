package storage

import (
	"context"
	"fmt"
	"path"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/bqstore/bqstore/internal/storage/segment"
	"github.com/bqstore/bqstore/internal/storage/stream"
	"github.com/bqstore/bqstore/internal/storage/wal"
)

// compactTargetBytes bounds a merged batch.
const compactTargetBytes = 4 << 20

// CompactStats reports what a compaction did.
type CompactStats struct {
	FilesIn     int   // sealed files replaced
	BatchesIn   int   // stored batches read
	BatchesOut  int   // stored batches written
	RowsDropped int64 // rows of expired (never committed) PENDING streams
}

// Compact rewrites the table's sealed log files as one sealed file:
// batches of a stream adjacent in the log (contiguous offsets, same
// schema version) are merged up to 4 MiB, keeping log order (see
// planCompaction), and batches of abandoned PENDING streams (never
// committed, so never visible) are dropped; expired streams are
// abandoned first (AbandonExpired). What any
// snapshot returns is unchanged: a merged batch keeps the append time of
// each of its row runs (segment.Batch.Runs), so time travel still cuts it
// exactly; snapshots taken before keep reading the old files, which are
// deleted from the directory at once but stay open until released.
//
// The swap is atomic without a manifest: the new file is written as
// L-<last>.log.tmp, synced, and renamed over L-<last>.log; its HEADER
// names the range of files it replaces, so files of the range left over
// by a crash are deleted at the next Open. Appends continue meanwhile;
// compactions of one table are serialized. It is a no-op when nothing
// would change.
func (t *Table) Compact(ctx context.Context) (CompactStats, error) {
	t.compactMu.Lock()
	defer t.compactMu.Unlock()
	if err := t.AbandonExpired(ctx); err != nil {
		return CompactStats{}, err
	}

	t.mu.Lock()
	if err := t.usableLocked(ctx); err != nil {
		t.mu.Unlock()
		return CompactStats{}, err
	}
	files := t.mu.files
	if len(files) < 2 {
		t.mu.Unlock()
		return CompactStats{}, nil
	}
	sealed := files[:len(files)-1]
	inSet := map[*logFile]bool{}
	for _, f := range sealed {
		inSet[f] = true
	}
	n := 0
	for n < len(t.mu.batches) && inSet[t.mu.batches[n].f] {
		n++
	}
	old := t.mu.batches[:n:n]
	// Rows of abandoned streams are dropped. Abandonment is durable
	// (an ABANDON record, at or before the last record applied), so the
	// decision needs no clock and nothing can revive the stream.
	drop := map[string]bool{}
	for _, br := range old {
		st, ok := t.mu.durable.Lookup(br.b.Stream)
		if ok && st.State == stream.Abandoned {
			drop[br.b.Stream] = true
		}
	}
	schemas := map[int]schemaVer{}
	for _, sv := range t.mu.schemas {
		schemas[sv.version] = sv
	}
	for _, f := range sealed {
		f.ref() // held while we read them
	}
	t.mu.Unlock()
	defer func() {
		for _, f := range sealed {
			f.unref()
		}
	}()

	groups, stats := planCompaction(old, drop)
	stats.FilesIn = len(sealed)
	if len(sealed) < 2 && stats.BatchesOut == stats.BatchesIn && stats.RowsDropped == 0 {
		return CompactStats{}, nil
	}
	last := sealed[len(sealed)-1]
	_, ck, err := t.readSealed(last, last.size)
	if err != nil {
		return CompactStats{}, err
	}
	final := path.Join(t.dir, logName(last.num))
	tmp := final + ".tmp"
	f, err := t.db.fs.Create(tmp)
	if err != nil {
		return CompactStats{}, fmt.Errorf("storage: compact: %w", err)
	}
	lf := &logFile{num: last.num, from: sealed[0].from, name: final, f: f}
	lf.ref()
	fail := func(err error) (CompactStats, error) {
		lf.unref()
		_ = t.db.fs.Remove(tmp)
		return CompactStats{}, fmt.Errorf("storage: compact %s: %w", t.dir, err)
	}
	w := &fileWriter{f: f}
	w.frame(wal.AppendFrame(nil, recHeader, ck.lastTS, encodeHeader(t.id, lf.num, lf.from)))
	var newBatches []segment.Batch
	for _, g := range groups {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		b, err := t.writeGroup1(w, g, schemas)
		if err != nil {
			return fail(err)
		}
		newBatches = append(newBatches, b)
	}
	ckOff := w.off
	w.frame(wal.AppendFrame(nil, recCheckpoint, ck.lastTS, ck.encode()))
	foot := segment.Footer{CheckpointOffset: ckOff, Batches: newBatches}
	footOff := w.off
	w.frame(wal.AppendFrame(nil, recFooter, ck.lastTS, foot.Encode(nil)))
	w.frame(wal.AppendFrame(nil, recTrailer, ck.lastTS, segment.Trailer(footOff)))
	if w.err != nil {
		return fail(w.err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	lf.size = w.off

	t.mu.Lock()
	if err := t.usableLocked(ctx); err != nil {
		t.mu.Unlock()
		return fail(err)
	}
	// The commit point: the rename. Under t.mu so that a concurrent
	// close cannot interleave with it.
	if err := t.db.fs.Rename(tmp, final); err != nil {
		t.mu.Unlock()
		return fail(err)
	}
	t.mu.Unlock()
	// The swap is published only once the rename is durable: from then
	// on the next seal collects the abandoned streams whose rows the new
	// file dropped (gc.go), and a checkpoint without them must never be
	// durable next to the replaced files, whose rows would then plan as
	// visible. Until it is published the table reads the old files (their
	// handles stay open) and recovery accepts either file.
	if err := t.db.fs.SyncDir(t.dir); err != nil {
		lf.unref()
		return CompactStats{}, fmt.Errorf("storage: compact %s: %w", t.dir, err)
	}
	t.mu.Lock()
	if err := t.usableLocked(ctx); err != nil {
		t.mu.Unlock()
		lf.unref()
		return CompactStats{}, fmt.Errorf("storage: compact %s: %w", t.dir, err)
	}
	refs := make([]batchRef, 0, len(newBatches)+len(t.mu.batches)-n)
	for _, b := range newBatches {
		refs = append(refs, batchRef{f: lf, b: b})
	}
	refs = append(refs, t.mu.batches[n:]...)
	t.mu.activeStart += len(newBatches) - n
	t.mu.batches = refs
	t.mu.files = append([]*logFile{lf}, t.mu.files[len(sealed):]...)
	t.mu.Unlock()
	t.db.m.compactions.Add(1)
	for _, f := range sealed {
		f.unref() // the table's reference
	}
	for _, f := range sealed[:len(sealed)-1] {
		if err := t.db.fs.Remove(f.name); err != nil {
			return stats, fmt.Errorf("storage: compact %s: %w", t.dir, err)
		}
	}
	if err := t.db.fs.SyncDir(t.dir); err != nil {
		return stats, fmt.Errorf("storage: compact %s: %w", t.dir, err)
	}
	return stats, nil
}

// planCompaction groups the batches to merge, keeping log order: a
// group is a run of batches adjacent in the log (once the batches of
// streams in drop, which are never visible, are left out) of one stream,
// with contiguous offsets and one schema version, up to
// compactTargetBytes.
//
// Log order is kept because it is the order of a snapshot's plan, and
// readers address rows by their position in it (REST page tokens carry
// the snapshot time and a row index; read streams split by row
// position): a merge of adjacent batches shows exactly the rows the
// batches showed at any time, in the same places. Regrouping all of a
// stream's batches would merge more when streams interleave, but it
// moves rows, so a listing that spans a compaction skips and repeats
// rows.
func planCompaction(old []batchRef, drop map[string]bool) ([][]batchRef, CompactStats) {
	st := CompactStats{BatchesIn: len(old)}
	var groups [][]batchRef
	var cur []batchRef
	var size int64
	for _, br := range old {
		if drop[br.b.Stream] {
			st.RowsDropped += br.b.Rows
			continue
		}
		if len(cur) > 0 {
			prev := cur[len(cur)-1].b
			if prev.Stream != br.b.Stream || prev.First+prev.Rows != br.b.First || prev.SchemaVersion != br.b.SchemaVersion || size+br.b.Len > compactTargetBytes {
				groups = append(groups, cur)
				cur, size = nil, 0
			}
		}
		cur = append(cur, br)
		size += br.b.Len
	}
	if len(cur) > 0 {
		groups = append(groups, cur)
	}
	st.BatchesOut = len(groups)
	return groups, st
}

// AbandonExpired gives up the uncommitted PENDING streams whose TTL has
// run out, durably: one ABANDON record, admitted under t.mu against the
// admission state like every other mutation, so it is ordered against
// BatchCommit: a commit admitted first wins (the stream is no longer
// uncommitted in the admission state), a commit admitted later finds the
// stream gone (ErrStreamNotFound). Compact calls it first; it returns
// once the record is durable and applied.
func (t *Table) AbandonExpired(ctx context.Context) error {
	cutoff := t.cutoff()
	t.mu.Lock()
	if err := t.usableLocked(ctx); err != nil {
		t.mu.Unlock()
		return err
	}
	var ids []string
	for _, id := range t.mu.admit.IDs() {
		st, _ := t.mu.admit.Lookup(id)
		// CreateTS == 0: the stream's creation is not durable yet.
		if st.CreateTS != 0 && st.State != stream.Abandoned && stream.Expired(st, cutoff) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		t.mu.Unlock()
		return nil
	}
	for _, id := range ids {
		if err := t.mu.admit.Abandon(id); err != nil {
			t.mu.Unlock()
			return fmt.Errorf("storage: abandon: %w", err)
		}
	}
	o := t.submitLocked(&rec{typ: recAbandon, ids: ids})
	t.mu.Unlock()
	select {
	case <-o.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return o.err
}

// fileWriter appends frames, remembering the offset and the first error.
type fileWriter struct {
	f interface {
		Write([]byte) (int, error)
	}
	off int64
	err error
}

func (w *fileWriter) frame(b []byte) {
	if w.err != nil {
		return
	}
	if _, err := w.f.Write(b); err != nil {
		w.err = err
		return
	}
	w.off += int64(len(b))
}

// writeGroup1 writes one group as one ROWS frame: a single batch is
// copied verbatim, several are decoded, concatenated and re-encoded.
func (t *Table) writeGroup1(w *fileWriter, g []batchRef, schemas map[int]schemaVer) (segment.Batch, error) {
	first := g[0].b
	if len(g) == 1 {
		fr, err := wal.ReadAt(g[0].f.f, first.Offset+first.Len, g[0].f.name, first.Offset, nil)
		if err != nil {
			return segment.Batch{}, err
		}
		b := first
		b.Offset = w.off
		w.frame(wal.AppendFrame(nil, fr.Type, fr.TS, fr.Payload))
		return b, w.err
	}
	sv, ok := schemas[first.SchemaVersion]
	if !ok {
		return segment.Batch{}, fmt.Errorf("batch of unknown schema version %d", first.SchemaVersion)
	}
	recs := make([]arrow.Record, 0, len(g))
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	var runs []segment.Run
	var rows int64
	for _, br := range g {
		fr, err := wal.ReadAt(br.f.f, br.b.Offset+br.b.Len, br.f.name, br.b.Offset, nil)
		if err != nil {
			return segment.Batch{}, err
		}
		msg, r, err := splitRows(fr.Type, fr.Payload)
		if err != nil {
			return segment.Batch{}, &wal.CorruptionError{File: br.f.name, Offset: br.b.Offset, Reason: err.Error()}
		}
		rec, err := decodeRows(sv, fr.Type, r, memory.NewBufferBytes(fr.Payload), len(msg), 0, r.rows)
		if err != nil {
			return segment.Batch{}, &wal.CorruptionError{File: br.f.name, Offset: br.b.Offset, Reason: err.Error()}
		}
		recs = append(recs, rec)
		rows += br.b.Rows
		src := br.b.Runs
		if len(src) == 0 {
			src = []segment.Run{{Rows: br.b.Rows, TS: br.b.TS}}
		}
		for _, r := range src {
			if len(runs) > 0 && runs[len(runs)-1].TS == r.TS {
				runs[len(runs)-1].Rows += r.Rows
			} else {
				runs = append(runs, r)
			}
		}
	}
	cols := make([]arrow.Array, sv.schema.NumFields())
	for i := range cols {
		parts := make([]arrow.Array, len(recs))
		for j, r := range recs {
			parts[j] = r.Column(i)
		}
		c, err := array.Concatenate(parts, memory.DefaultAllocator)
		if err != nil {
			return segment.Batch{}, fmt.Errorf("merge column %d: %w", i, err)
		}
		cols[i] = c
	}
	merged := array.NewRecordBatch(sv.schema, cols, rows)
	for _, c := range cols {
		c.Release()
	}
	defer merged.Release()
	msg, err := encodeRows(merged)
	if err != nil {
		return segment.Batch{}, err
	}
	stats := msg.stats
	buf := make([]byte, wal.HeaderSize, wal.HeaderSize+msg.size()+rowsMetaSizeHint(first.Stream, stats)+rowsTrailerLen+wal.Align)
	buf, err = msg.appendTo(buf)
	msg.release()
	if err != nil {
		return segment.Batch{}, err
	}
	ipcEnd := len(buf)
	buf = encodeRowsMeta(buf, first.Stream, stats)
	metaLen := len(buf) - ipcEnd
	n := len(buf) - wal.HeaderSize + rowsTrailerLen
	buf = append(buf, make([]byte, wal.FrameLen(n)-len(buf))...)
	putRowsTrailer(buf[wal.HeaderSize+n-rowsTrailerLen:], first.First, rows, first.SchemaVersion, metaLen)
	wal.Seal(buf, recRowsSparse, runs[0].TS, n, wal.PayloadCRC(buf[wal.HeaderSize:wal.HeaderSize+n]))
	b := segment.Batch{
		Offset: w.off, Len: int64(len(buf)), Stream: first.Stream, First: first.First, Rows: rows,
		TS: runs[0].TS, SchemaVersion: first.SchemaVersion, Stats: stats, Runs: runs,
	}
	w.frame(buf)
	return b, w.err
}
