package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bqstore/bqstore/internal/storage/segment"
	"github.com/bqstore/bqstore/internal/storage/vfs"
	"github.com/bqstore/bqstore/internal/storage/wal"
)

// Recovery tests craft on-disk states a crash can produce (in the
// in-memory filesystem) and check that Open accepts them, keeps every
// acknowledged row and drops only what was never acknowledged.

func readMemFile(t testing.TB, fs vfs.FS, name string) []byte {
	t.Helper()
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	size, _ := f.Size()
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return b
}

// writeMemFile replaces name with data, durably.
func writeMemFile(t testing.TB, fs vfs.FS, name string, data []byte) {
	t.Helper()
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := fs.SyncDir(path.Dir(name)); err != nil {
		t.Fatal(err)
	}
}

// fileIDs returns the visible ids stored in file (by name), in order.
func visibleIDsIn(t testing.TB, tb *Table, file string) []int64 {
	t.Helper()
	s, err := tb.Snapshot(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	var ids []int64
	all := readIDs(t, s)
	for _, c := range s.Chunks() {
		if c.f.name == file {
			ids = append(ids, all[c.RowStart:c.RowEnd]...)
		}
	}
	return ids
}

// reopenAndCheck opens the crafted fs, checks the visible ids, appends
// one more batch and checks that a second reopen sees it too.
func reopenAndCheck(t *testing.T, fs vfs.FS, opts Options, want []int64) {
	t.Helper()
	opts.FS = fs
	db, err := Open("db", &opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	tb, err := db.Table("t")
	if err != nil {
		db.Close()
		t.Fatalf("Table: %v", err)
	}
	if got := tableIDs(t, tb, time.Time{}); !slices.Equal(got, want) {
		db.Close()
		t.Fatalf("after recovery: ids %v, want %v", got, want)
	}
	appendRows(t, tb, DefaultStreamID, -1, 9000, 2)
	db.Close()
	db, err = Open("db", &opts)
	if err != nil {
		t.Fatalf("second Open: %v", err)
	}
	defer db.Close()
	tb, err = db.Table("t")
	if err != nil {
		t.Fatalf("Table: %v", err)
	}
	want = append(slices.Clone(want), 9000, 9001)
	if got := tableIDs(t, tb, time.Time{}); !slices.Equal(got, want) {
		t.Fatalf("after an append and a second reopen: ids %v, want %v", got, want)
	}
}

// sealedFixture writes a table whose first file is sealed and returns
// the fs, the first file's name, its ids and the offset where its seal
// (CHECKPOINT, FOOTER, TRAILER) starts.
func sealedFixture(t *testing.T, opts Options) (fs *vfs.MemFS, file string, ids []int64, sealAt int64) {
	t.Helper()
	fs = vfs.NewMem()
	opts.FS = fs
	db, err := Open("db", &opts)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := db.CreateTable(context.Background(), "t", testSchema)
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(0); db.Metrics().Rolls == 0; i++ {
		appendRows(t, tb, DefaultStreamID, -1, i*10, 5)
	}
	file = path.Join(tb.dir, logName(1))
	ids = visibleIDsIn(t, tb, file)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	data := readMemFile(t, fs, file)
	tr, err := wal.ReadAt(bytesReaderAt(data), int64(len(data)), file, int64(len(data))-segment.TrailerLen, nil)
	if err != nil {
		t.Fatal(err)
	}
	footOff, err := segment.ParseTrailer(file, tr.Payload)
	if err != nil {
		t.Fatal(err)
	}
	ff, err := wal.ReadAt(bytesReaderAt(data), tr.Offset, file, footOff, nil)
	if err != nil {
		t.Fatal(err)
	}
	foot, err := segment.Decode(file, ff.Payload)
	if err != nil {
		t.Fatal(err)
	}
	return fs, file, ids, foot.CheckpointOffset
}

type bytesReaderAt []byte

func (b bytesReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(b)) {
		return 0, io.EOF
	}
	n := copy(p, b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// frameOffsets lists the offsets of the frames of data from off on.
func frameOffsets(t testing.TB, data []byte, off int64) []int64 {
	t.Helper()
	rd := wal.NewReader(bytesReaderAt(data), int64(len(data)), "f", off)
	var offs []int64
	for {
		fr, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return offs
		}
		if err != nil {
			t.Fatal(err)
		}
		offs = append(offs, fr.Offset)
	}
}

// TestTornSeal: a crash while sealing (CHECKPOINT, FOOTER and TRAILER
// are one write and one fdatasync, and the next file is created only
// after it) can leave any prefix of the seal, or any of its pages, on
// disk, and no next file. Each such state is a torn tail: Open truncates
// it, keeps the file active and loses no row (issue 11, finding 1).
func TestTornSeal(t *testing.T) {
	opts := Options{SegmentSize: 4096}
	fs, file, ids, sealAt := sealedFixture(t, opts)
	next := path.Join(path.Dir(file), logName(2))
	full := readMemFile(t, fs, file)
	seal := frameOffsets(t, full, sealAt) // CHECKPOINT, FOOTER, TRAILER
	if len(seal) != 3 {
		t.Fatalf("seal has %d frames", len(seal))
	}
	ends := append(seal[1:], int64(len(full)))
	type variant struct {
		name string
		data []byte
	}
	var vs []variant
	for cut := sealAt; cut < int64(len(full)); cut += 4 {
		vs = append(vs, variant{fmt.Sprintf("cut=%d", cut), full[:cut]})
	}
	// Out of order: one frame of the seal lost (zeroed), the others on
	// disk; and every 512-byte sector of the seal lost alone.
	for i, name := range []string{"CHECKPOINT", "FOOTER", "TRAILER"} {
		d := slices.Clone(full)
		clear(d[seal[i]:ends[i]])
		vs = append(vs, variant{"lost-" + name, d})
	}
	for sec := sealAt &^ 511; sec < int64(len(full)); sec += 512 {
		d := slices.Clone(full)
		clear(d[max(sec, sealAt):min(sec+512, int64(len(full)))])
		vs = append(vs, variant{fmt.Sprintf("lost-sector=%d", sec), d})
	}
	for _, v := range vs {
		t.Run(v.name, func(t *testing.T) {
			c := fs.CrashClone(nil)
			if err := c.Remove(next); err != nil {
				t.Fatal(err)
			}
			writeMemFile(t, c, file, v.data)
			reopenAndCheck(t, c, opts, ids)
		})
	}
}

// unsyncedGroupFixture acknowledges two appends (ids 0-4, 10-14), then
// writes one group of three appends (ids 20-24, 30-34, 40-44) whose
// fdatasync fails, as if the machine lost power before it returned. It
// returns the fs holding everything written (synced or not), the active
// file's name and its frame offsets.
func unsyncedGroupFixture(t *testing.T) (*vfs.MemFS, string, []int64) {
	t.Helper()
	ctx := context.Background()
	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := db.CreateTable(ctx, "t", testSchema)
	if err != nil {
		t.Fatal(err)
	}
	appendRows(t, tb, DefaultStreamID, -1, 0, 5)
	appendRows(t, tb, DefaultStreamID, -1, 10, 5)
	file := path.Join(tb.dir, logName(1))
	// Hold the log writer in its first write until the other two appends
	// are queued, so that all three form one group; then fail its sync.
	gate := make(chan struct{})
	held := make(chan struct{})
	armed := true
	fs.SetInjector(func(op vfs.Op, name string) error {
		if name != file {
			return nil
		}
		switch op {
		case vfs.OpWrite:
			if armed {
				armed = false
				close(held)
				<-gate
			}
		case vfs.OpSync:
			return vfs.ErrInjected
		}
		return nil
	})
	var pending []*PendingAppend
	for i, from := range []int64{20, 30, 40} {
		rec := makeBatch(testSchema, from, 5)
		p, err := tb.AppendAsync(ctx, AppendRequest{Stream: DefaultStreamID, Offset: -1, Batch: rec, SchemaVersion: 1})
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		pending = append(pending, p)
		if i == 0 {
			<-held
		}
	}
	close(gate)
	for _, p := range pending {
		if _, err := p.Wait(ctx); err == nil {
			t.Fatal("append acknowledged although its sync failed")
		}
	}
	fs.SetInjector(nil)
	db.Close()
	data := readMemFile(t, fs, file)
	offs := frameOffsets(t, data, 0)
	// HEADER, CHECKPOINT, 2 acknowledged ROWS, 3 unsynced ROWS.
	if len(offs) != 7 {
		t.Fatalf("file has %d frames, want 7", len(offs))
	}
	return fs, file, offs
}

// TestOutOfOrderUnsyncedGroup: page writeback order is not guaranteed, so
// after a power loss a later frame of the last, never-synced group can be
// on disk while an earlier one is not. That is a torn tail (nothing of the
// group was acknowledged), not mid-file corruption (issue 11, finding 4);
// a hole in synced data stays corruption.
func TestOutOfOrderUnsyncedGroup(t *testing.T) {
	fs, file, offs := unsyncedGroupFixture(t)
	full := readMemFile(t, fs, file)
	end := append(offs[1:], int64(len(full)))
	acked := append(idRange(0, 5), idRange(10, 5)...)
	for _, lost := range []int{4, 5} { // the group's first or second frame
		t.Run(fmt.Sprintf("lost-frame-%d-of-group", lost-3), func(t *testing.T) {
			d := slices.Clone(full)
			clear(d[offs[lost]:end[lost]])
			c := fs.CrashClone(nil)
			writeMemFile(t, c, file, d)
			// Frames of the group before the lost one are a valid prefix:
			// never acknowledged, but their rows may stay (as after any
			// torn tail).
			want := slices.Clone(acked)
			for i := 4; i < lost; i++ {
				want = append(want, idRange(int64(20+10*(i-4)), 5)...)
			}
			reopenAndCheck(t, c, Options{}, want)
		})
	}
	t.Run("damaged-synced-frame", func(t *testing.T) {
		// The second acknowledged batch is damaged and the group after it
		// was written once it was synced: corruption, named.
		d := slices.Clone(full)
		d[offs[3]+wal.HeaderSize+2] ^= 0x40
		c := fs.CrashClone(nil)
		writeMemFile(t, c, file, d)
		err := openErr(t, c, Options{})
		if err == nil {
			t.Fatal("Open accepted damaged acknowledged data")
		}
		var ce *wal.CorruptionError
		if !errors.As(err, &ce) || ce.File != file || ce.Offset != offs[3] {
			t.Fatalf("Open = %v, want corruption in %s at %d", err, file, offs[3])
		}
	})
}

// toFormatV1 rewrites a log file as format 1 wrote it: magic BQSLOG01,
// no synced offsets.
func toFormatV1(t testing.TB, data []byte) []byte {
	t.Helper()
	rd := wal.NewReader(bytesReaderAt(data), int64(len(data)), "f", 0)
	rd.Copy = true
	var out []byte
	for {
		fr, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		p := fr.Payload
		if fr.Type == recHeader {
			p = append([]byte(logMagicV1), p[len(logMagic):]...)
		}
		out = wal.AppendFrame(out, fr.Type, fr.TS, p)
	}
}

// TestFormatV1StillReadable: files written before synced offsets were
// recorded open, and a lost frame followed by a valid one is still
// treated as corruption there (the old rule: nothing tells it apart).
func TestFormatV1StillReadable(t *testing.T) {
	fs, file, offs := unsyncedGroupFixture(t)
	full := readMemFile(t, fs, file)
	c := fs.CrashClone(nil)
	writeMemFile(t, c, file, toFormatV1(t, full[:offs[4]]))
	reopenAndCheck(t, c, Options{}, append(idRange(0, 5), idRange(10, 5)...))

	v1 := toFormatV1(t, full)
	clear(v1[offs[4]:offs[5]])
	c = fs.CrashClone(nil)
	writeMemFile(t, c, file, v1)
	err := openErr(t, c, Options{})
	if err == nil {
		t.Fatal("format 1: a hole before a valid frame was accepted")
	}
	if !errors.Is(err, ErrCorruption) {
		t.Fatalf("Open = %v, want corruption", err)
	}
}

// multiFileFixture writes a table with at least five log files.
func multiFileFixture(t *testing.T) (*vfs.MemFS, string) {
	t.Helper()
	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs, SegmentSize: 2048})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := db.CreateTable(context.Background(), "t", testSchema)
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(0); db.Metrics().Rolls < 4; i++ {
		appendRows(t, tb, DefaultStreamID, -1, i*10, 3)
	}
	dir := tb.dir
	db.Close()
	return fs, dir
}

// openErr opens fs and returns the error that Open or the table gives.
func openErr(t *testing.T, fs vfs.FS, opts Options) error {
	t.Helper()
	opts.FS = fs
	db, err := Open("db", &opts)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.Table("t")
	return err
}

// TestMissingLogFile: a sealed file that is missing is corruption named
// with the missing file, never a table with fewer rows (issue 11,
// finding 6).
func TestMissingLogFile(t *testing.T) {
	for _, num := range []int{1, 2, 3} {
		t.Run(logName(num), func(t *testing.T) {
			fs, dir := multiFileFixture(t)
			c := fs.CrashClone(nil)
			name := path.Join(dir, logName(num))
			if err := c.Remove(name); err != nil {
				t.Fatal(err)
			}
			err := openErr(t, c, Options{SegmentSize: 2048})
			var ce *wal.CorruptionError
			if !errors.Is(err, ErrCorruption) || !errors.As(err, &ce) || ce.File != name {
				t.Fatalf("Open without %s: %v, want corruption naming it", name, err)
			}
		})
	}
	// The files renumbered to hide the gap: the batch index shows it.
	t.Run("renumbered", func(t *testing.T) {
		fs, dir := multiFileFixture(t)
		c := fs.CrashClone(nil)
		if err := c.Remove(path.Join(dir, logName(2))); err != nil {
			t.Fatal(err)
		}
		for num := 3; c.Exists(path.Join(dir, logName(num))); num++ {
			if err := c.Rename(path.Join(dir, logName(num)), path.Join(dir, logName(num-1))); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.SyncDir(dir); err != nil {
			t.Fatal(err)
		}
		err := openErr(t, c, Options{SegmentSize: 2048})
		var ce *wal.CorruptionError
		if !errors.Is(err, ErrCorruption) || !errors.As(err, &ce) || ce.File != path.Join(dir, logName(2)) {
			t.Fatalf("Open with a gap in the rows: %v, want corruption naming %s", err, logName(2))
		}
	})
}

// TestQuarantine: one table failing recovery does not take the database
// down: Open succeeds, the other tables serve, and every call on the bad
// table fails with an error naming file and offset; its files are left
// as they are, its id cannot be re-created, and dropping it works (issue
// 11, finding 10).
func TestQuarantine(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	good, _ := db.CreateTable(ctx, "good", testSchema)
	bad, _ := db.CreateTable(ctx, "bad", testSchema)
	for i := int64(0); i < 3; i++ {
		appendRows(t, good, DefaultStreamID, -1, i*10, 2)
		appendRows(t, bad, DefaultStreamID, -1, i*10, 2)
	}
	file := path.Join(bad.dir, logName(1))
	db.Close()
	data := readMemFile(t, fs, file)
	offs := frameOffsets(t, data, 0) // HEADER, CHECKPOINT, 3 × ROWS
	data[offs[3]+wal.HeaderSize+5] ^= 0x20
	writeMemFile(t, fs, file, data)

	for round := range 2 {
		db, err = Open("db", &Options{FS: fs})
		if err != nil {
			t.Fatalf("round %d: Open: %v", round, err)
		}
		g, err := db.Table("good")
		if err != nil {
			t.Fatal(err)
		}
		appendRows(t, g, DefaultStreamID, -1, 100+int64(round), 1)
		if got := len(tableIDs(t, g, time.Time{})); got != 7+round {
			t.Fatalf("good table has %d rows", got)
		}
		_, err = db.Table("bad")
		var qe *QuarantineError
		if !errors.Is(err, ErrQuarantined) || !errors.Is(err, ErrCorruption) || !errors.As(err, &qe) {
			t.Fatalf("Table(bad) = %v, want a QuarantineError wrapping ErrCorruption", err)
		}
		pub := qe.Public()
		want := fmt.Sprintf("%s at offset %d", path.Join(path.Base(bad.dir), logName(1)), offs[3])
		if !strings.Contains(pub, want) {
			t.Fatalf("public message %q does not name %q", pub, want)
		}
		if _, err := db.CreateTable(ctx, "bad", testSchema); !errors.Is(err, ErrQuarantined) {
			t.Fatalf("CreateTable over a quarantined table: %v", err)
		}
		if ids := db.TableIDs(); !slices.Equal(ids, []string{"good"}) {
			t.Fatalf("TableIDs = %v", ids)
		}
		if q := db.Quarantined(); len(q) != 1 || q[0].Table != "bad" {
			t.Fatalf("Quarantined = %v", q)
		}
		if !slices.Equal(readMemFile(t, fs, file), data) {
			t.Fatal("the quarantined table's file was changed")
		}
		if round == 1 {
			if err := db.DropTable(ctx, "bad"); err != nil {
				t.Fatalf("DropTable of a quarantined table: %v", err)
			}
			if _, err := db.Table("bad"); !errors.Is(err, ErrTableNotFound) {
				t.Fatalf("after drop: %v", err)
			}
		}
		db.Close()
	}
}

// TestOpenSyncsDataDir: Open makes tables/ durable (fsyncs the data
// directory, and its parent when it creates it) before any table is
// published in it (issue 11, finding 10).
func TestOpenSyncsDataDir(t *testing.T) {
	fs := vfs.NewMem()
	var synced []string
	fs.SetInjector(func(op vfs.Op, name string) error {
		if op == vfs.OpSyncDir {
			synced = append(synced, name)
		}
		return nil
	})
	db, err := Open("data/db", &Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if !slices.Contains(synced, "data/db") || !slices.Contains(synced, "data") {
		t.Fatalf("Open synced %v, want data/db and data", synced)
	}
}
