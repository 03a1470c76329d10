package storage

import (
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/bqstore/bqstore/internal/storage/segment"
	"github.com/bqstore/bqstore/internal/storage/stream"
	"github.com/bqstore/bqstore/internal/storage/vfs"
	"github.com/bqstore/bqstore/internal/storage/wal"
)

// openTable recovers a table from its directory and starts its log
// writer.
func openTable(db *DB, dir string) (*Table, error) {
	t := &Table{db: db, dir: dir, kick: make(chan struct{}, 1), stop: make(chan struct{}), loopDone: make(chan struct{})}
	t.mu.hidden = map[string]int64{}
	t.applied = sync.NewCond(&t.mu.Mutex)
	if err := t.recover(); err != nil {
		for _, f := range t.mu.files {
			f.unref()
		}
		return nil, err
	}
	t.mu.Lock()
	t.recountLocked()
	t.mu.admit = t.mu.durable.Clone()
	t.mu.admitSchemas = slices.Clone(t.mu.schemas)
	t.mu.Unlock()
	go t.run()
	return t, nil
}

func (t *Table) recover() error {
	fs := t.db.fs
	names, err := fs.List(t.dir)
	if err != nil {
		return fmt.Errorf("storage: open table %s: %w", t.dir, err)
	}
	// Files to delete, deleted only once the table recovered: a table
	// that fails recovery keeps every file as it was (quarantine), and
	// no file is deleted on the word of one that does not read.
	type removal struct{ name, why string }
	var obsolete []removal
	var nums []int
	for _, n := range names {
		if num, ok := parseLogName(n); ok {
			nums = append(nums, num)
		} else if strings.HasSuffix(n, ".tmp") {
			obsolete = append(obsolete, removal{path.Join(t.dir, n), "left by an interrupted compaction"})
		}
	}
	slices.Sort(nums)
	if len(nums) == 0 {
		return fmt.Errorf("storage: open table %s: no log files: %w", t.dir, ErrCorruption)
	}
	// A compacted file replaces files [from, num]: files it covers that
	// are still there (a crash before their deletion) are obsolete.
	var live []int
	froms := map[int]int{}
	floor := math.MaxInt
	for i := len(nums) - 1; i >= 0; i-- {
		num := nums[i]
		if num >= floor {
			obsolete = append(obsolete, removal{path.Join(t.dir, logName(num)), "replaced by a compacted file"})
			continue
		}
		live = append(live, num)
		from := t.fileFrom(path.Join(t.dir, logName(num)), num)
		froms[num] = from
		floor = min(floor, from)
	}
	slices.Reverse(live)
	nums = live
	if err := t.checkFileNumbers(nums, froms); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, num := range nums {
		name := path.Join(t.dir, logName(num))
		last := i == len(nums)-1
		var f vfs.File
		if last && !t.dryRun() {
			f, err = fs.OpenAppend(name)
		} else {
			f, err = fs.Open(name)
		}
		if err != nil {
			return fmt.Errorf("storage: open table %s: %w", t.dir, err)
		}
		lf := &logFile{num: num, from: froms[num], name: name, f: f}
		lf.ref()
		t.mu.files = append(t.mu.files, lf)
		size, err := f.Size()
		if err != nil {
			return fmt.Errorf("storage: open table %s: %w", t.dir, err)
		}
		lf.size = size
		foot, ck, sealErr := t.readSealed(lf, size)
		if sealErr == nil {
			t.mu.activeStart = len(t.mu.batches)
			for _, b := range foot.Batches {
				t.mu.batches = append(t.mu.batches, batchRef{f: lf, b: b})
			}
			t.loadCheckpointLocked(ck)
			t.id = ck.tableID
			if last {
				// Sealed, but the next file was never made durable.
				err := t.repair("create "+path.Join(t.dir, logName(num+1))+" (the last file is sealed, its successor was never made durable)", func() error {
					return t.startFileLocked(num + 1)
				})
				if err != nil {
					return err
				}
			}
			continue
		} else if !last {
			return sealErr
		}
		// The active file: replay it.
		t.mu.activeStart = len(t.mu.batches)
		t.active = lf
		if err := t.replayLocked(lf, size, i > 0, sealErr); err != nil {
			return err
		}
	}
	if t.mu.durable == nil || len(t.mu.schemas) == 0 {
		return fmt.Errorf("storage: open table %s: no checkpoint: %w", t.dir, ErrCorruption)
	}
	if err := t.checkRowsLocked(); err != nil {
		return err
	}
	for _, o := range obsolete {
		if err := t.repair("remove "+o.name+" ("+o.why+")", func() error { return fs.Remove(o.name) }); err != nil {
			return fmt.Errorf("storage: open table %s: remove %s: %w", t.dir, o.name, err)
		}
	}
	return nil
}

// checkFileNumbers checks that the live files (ascending) cover the file
// numbers 1, 2, … without a gap: file num holds the data of files
// [froms[num], num]. A missing file is corruption naming it, never
// silently fewer rows.
func (t *Table) checkFileNumbers(nums []int, froms map[int]int) error {
	next := 1
	for _, num := range nums {
		if from := froms[num]; from != next {
			missing := logName(next)
			if from < next {
				missing = logName(from) // a range that overlaps its predecessor
			}
			return &wal.CorruptionError{File: path.Join(t.dir, missing), Offset: 0,
				Reason: fmt.Sprintf("log file missing: %s holds files from %d, the previous file ends at %d", logName(num), from, next-1)}
		}
		next = num + 1
	}
	return nil
}

// checkRowsLocked checks that every live stream's batches hold its rows
// [0, next) exactly once, in log order: a batch index with a gap (a lost
// file, a footer that lost entries) is corruption naming the file where
// the gap shows. Abandoned streams (compaction drops their rows) and
// streams no longer in the state are not checked.
// REQUIRES: t.mu held.
func (t *Table) checkRowsLocked() error {
	lookup := func(id string) (*stream.Stream, bool) {
		st, err := t.mu.durable.Get(id) // synthesizes the default stream
		return st, err == nil
	}
	next := map[string]int64{}
	for _, br := range t.mu.batches {
		st, ok := lookup(br.b.Stream)
		if !ok || st.State == stream.Abandoned {
			continue
		}
		if want := next[br.b.Stream]; br.b.First != want {
			return &wal.CorruptionError{File: br.f.name, Offset: br.b.Offset,
				Reason: fmt.Sprintf("rows of stream %q start at offset %d, the rows before end at %d", br.b.Stream, br.b.First, want)}
		}
		next[br.b.Stream] = br.b.First + br.b.Rows
	}
	for _, id := range append(t.mu.durable.IDs(), DefaultStreamID) {
		st, _ := lookup(id)
		if st.State == stream.Abandoned || next[id] == st.Next {
			continue
		}
		last := t.mu.files[len(t.mu.files)-1].name
		return &wal.CorruptionError{File: last, Offset: 0,
			Reason: fmt.Sprintf("stream %q has %d rows, the log files hold %d", id, st.Next, next[id])}
	}
	return nil
}

// fileFrom reads the range start from a file's HEADER (num if it cannot
// be read: only the active file may have a torn header, and it is never
// a compacted file).
func (t *Table) fileFrom(name string, num int) int {
	f, err := t.db.fs.Open(name)
	if err != nil {
		return num
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return num
	}
	rd := wal.NewReader(f, size, name, 0)
	fr, err := rd.Next()
	if err != nil || fr.Type != recHeader {
		return num
	}
	_, n, from, err := decodeHeader(name, fr.Payload)
	if err != nil || n != num {
		return num
	}
	return from
}

// readSealed reads a sealed file's trailer, footer and checkpoint.
func (t *Table) readSealed(lf *logFile, size int64) (*segment.Footer, *checkpoint, error) {
	if size < segment.TrailerLen {
		return nil, nil, &wal.CorruptionError{File: lf.name, Offset: size, Reason: "sealed file shorter than its trailer"}
	}
	tr, err := wal.ReadAt(lf.f, size, lf.name, size-segment.TrailerLen, nil)
	if err != nil {
		return nil, nil, err
	}
	if tr.Type != recTrailer {
		return nil, nil, &wal.CorruptionError{File: lf.name, Offset: tr.Offset, Reason: "last frame is " + recName(tr.Type) + ", not TRAILER"}
	}
	footOff, err := segment.ParseTrailer(lf.name, tr.Payload)
	if err != nil {
		return nil, nil, err
	}
	ff, err := wal.ReadAt(lf.f, tr.Offset, lf.name, footOff, nil)
	if err != nil {
		return nil, nil, err
	}
	if ff.Type != recFooter {
		return nil, nil, &wal.CorruptionError{File: lf.name, Offset: footOff, Reason: "trailer points at " + recName(ff.Type)}
	}
	foot, err := segment.Decode(lf.name, ff.Payload)
	if err != nil {
		return nil, nil, err
	}
	for _, b := range foot.Batches {
		if b.Offset+b.Len > foot.CheckpointOffset {
			return nil, nil, &wal.CorruptionError{File: lf.name, Offset: footOff, Reason: "footer batch extent past the checkpoint"}
		}
	}
	cf, err := wal.ReadAt(lf.f, footOff, lf.name, foot.CheckpointOffset, nil)
	if err != nil {
		return nil, nil, err
	}
	if cf.Type != recCheckpoint {
		return nil, nil, &wal.CorruptionError{File: lf.name, Offset: foot.CheckpointOffset, Reason: "footer points at " + recName(cf.Type)}
	}
	ck, err := decodeCheckpoint(lf.name, cf.Payload, decodeSchema)
	if err != nil {
		return nil, nil, err
	}
	return foot, ck, nil
}

// replayLocked replays the active file: its HEADER, then every record
// (a CHECKPOINT replaces the state). A torn tail is truncated, and so is
// an incomplete seal (a FOOTER not followed by a valid TRAILER): the file
// stays active. sealErr is why the file did not open as sealed.
// REQUIRES: t.mu held.
func (t *Table) replayLocked(lf *logFile, size int64, hasPrev bool, sealErr error) error {
	rd := wal.NewReader(lf.f, size, lf.name, 0)
	rd.Copy = true
	first := true
	for {
		fr, err := rd.Next()
		if errors.Is(err, io.EOF) {
			if first {
				if !hasPrev {
					return &wal.CorruptionError{File: lf.name, Offset: 0, Reason: "empty first log file"}
				}
				return t.repair("rewrite the HEADER of "+lf.name+" (it never became durable)", func() error {
					return t.rewriteHeaderLocked(lf)
				})
			}
			return t.syncReplayedLocked(lf)
		}
		var torn *wal.TornError
		if errors.As(err, &torn) {
			if first {
				if !hasPrev {
					return torn.AsCorruption()
				}
				return t.repair("rewrite the HEADER of "+lf.name+" (it never became durable)", func() error {
					return t.rewriteHeaderLocked(lf)
				})
			}
			if !hasPrev && t.mu.durable == nil {
				// The first file's HEADER and CHECKPOINT were synced
				// before the table was published: never a torn tail.
				return torn.AsCorruption()
			}
			return t.truncateTailLocked(lf, torn.Offset, torn.Reason)
		}
		if err != nil {
			return err
		}
		if first {
			if fr.Type != recHeader {
				return &wal.CorruptionError{File: lf.name, Offset: fr.Offset, Reason: "first frame is " + recName(fr.Type)}
			}
			id, _, _, err := decodeHeader(lf.name, fr.Payload)
			if err != nil {
				return err
			}
			if t.id != "" && t.id != id {
				return &wal.CorruptionError{File: lf.name, Offset: 0, Reason: fmt.Sprintf("table %q in a file of table %q", id, t.id)}
			}
			t.id = id
			rd.SyncedOffsets = headerSyncedOffsets(fr.Payload)
			first = false
			continue
		}
		switch fr.Type {
		case recCheckpoint:
			ck, err := decodeCheckpoint(lf.name, fr.Payload, decodeSchema)
			if err != nil {
				return err
			}
			t.loadCheckpointLocked(ck)
			continue
		case recFooter:
			return t.incompleteSealLocked(lf, rd, fr, sealErr)
		case recHeader, recTrailer:
			return &wal.CorruptionError{File: lf.name, Offset: fr.Offset, Reason: "unexpected " + recName(fr.Type)}
		}
		if t.mu.durable == nil {
			return &wal.CorruptionError{File: lf.name, Offset: fr.Offset, Reason: recName(fr.Type) + " before any checkpoint"}
		}
		r, err := decodeRec(fr.Type, fr.Payload, decodeSchema)
		if err != nil {
			return &wal.CorruptionError{File: lf.name, Offset: fr.Offset, Reason: fmt.Sprintf("%s: %v", recName(fr.Type), err)}
		}
		if err := t.applyLocked(r, fr.TS, lf, fr.Offset, fr.Len); err != nil {
			return &wal.CorruptionError{File: lf.name, Offset: fr.Offset, Reason: fmt.Sprintf("%s does not apply: %v", recName(fr.Type), err)}
		}
	}
}

// incompleteSealLocked handles a FOOTER met while replaying: the seal
// (CHECKPOINT, FOOTER, TRAILER: one write, one fdatasync) was cut by a
// crash before its TRAILER became durable, so the file was never sealed
// and nothing after its last record was acknowledged. The seal is a torn
// tail: truncate it (the CHECKPOINT before it, already applied, equals
// the replayed state) and keep the file active. A FOOTER followed by a
// valid TRAILER is a complete seal that failed validation (sealErr).
// REQUIRES: t.mu held.
func (t *Table) incompleteSealLocked(lf *logFile, rd *wal.Reader, foot wal.Frame, sealErr error) error {
	next, err := rd.Next()
	var torn *wal.TornError
	switch {
	case errors.Is(err, io.EOF), errors.As(err, &torn):
		return t.truncateTailLocked(lf, foot.Offset, "incomplete seal: FOOTER without a durable TRAILER")
	case err != nil:
		return err
	case next.Type == recTrailer && sealErr != nil:
		return sealErr
	}
	return &wal.CorruptionError{File: lf.name, Offset: next.Offset, Reason: "unexpected " + recName(next.Type) + " after FOOTER"}
}

// truncateTailLocked cuts the active file at off (the start of a torn,
// never-acknowledged tail), durably.
// REQUIRES: t.mu held.
func (t *Table) truncateTailLocked(lf *logFile, off int64, reason string) error {
	t.db.log.Warn("storage: truncating torn log tail", "file", lf.name, "offset", off, "reason", reason)
	return t.repair(fmt.Sprintf("truncate %s at offset %d (%d bytes): torn tail: %s", lf.name, off, lf.size-off, reason), func() error {
		if err := lf.f.Truncate(off); err != nil {
			return fmt.Errorf("storage: truncate %s: %w", lf.name, err)
		}
		lf.size = off
		return t.syncReplayedLocked(lf)
	})
}

// syncReplayedLocked makes the replayed active file durable as read (a
// process crash can leave written but unsynced bytes that replay just
// accepted), so that the synced offset recorded by the next group is
// true.
// REQUIRES: t.mu held.
func (t *Table) syncReplayedLocked(lf *logFile) error {
	if t.dryRun() {
		return nil
	}
	if err := lf.f.Sync(); err != nil {
		return fmt.Errorf("storage: sync %s: %w", lf.name, err)
	}
	lf.synced = lf.size
	return nil
}

// rewriteHeaderLocked restarts an active file whose header never became
// durable.
// REQUIRES: t.mu held.
func (t *Table) rewriteHeaderLocked(lf *logFile) error {
	if err := lf.f.Truncate(0); err != nil {
		return fmt.Errorf("storage: reset %s: %w", lf.name, err)
	}
	hdr := wal.AppendFrame(nil, recHeader, t.mu.lastTS, encodeHeader(t.id, lf.num, lf.num))
	if _, err := lf.f.Write(hdr); err != nil {
		return fmt.Errorf("storage: reset %s: %w", lf.name, err)
	}
	if err := lf.f.Sync(); err != nil {
		return fmt.Errorf("storage: reset %s: %w", lf.name, err)
	}
	lf.size = int64(len(hdr))
	lf.synced = lf.size
	return nil
}

// checkRun, set on a Table that Check recovers, records what recovery
// changes on disk and, in a dry run, changes nothing.
type checkRun struct {
	dryRun  bool
	actions []string
}

func (t *Table) dryRun() bool { return t.check != nil && t.check.dryRun }

// repair does a change of the table's files that recovery needs (do),
// recording it for Check; a dry run records it only.
func (t *Table) repair(what string, do func() error) error {
	if t.check != nil {
		t.check.actions = append(t.check.actions, what)
		if t.check.dryRun {
			return nil
		}
	}
	return do()
}
