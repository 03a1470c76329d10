package storage

import (
	"context"
	"errors"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/bqstore/bqstore/internal/storage/vfs"
	"github.com/bqstore/bqstore/internal/storage/wal"
)

// snapshotFiles returns every file under dir with its bytes.
func snapshotFiles(t *testing.T, fs vfs.FS, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(d string)
	walk = func(d string) {
		names, err := fs.List(d)
		if err != nil {
			return
		}
		for _, n := range names {
			p := path.Join(d, n)
			if f, err := fs.Open(p); err == nil {
				f.Close()
				out[p] = string(readMemFile(t, fs, p))
			}
			walk(p)
		}
	}
	walk(dir)
	return out
}

func findTable(rep *CheckReport, id string) *TableReport {
	for i := range rep.Tables {
		if rep.Tables[i].ID == id {
			return &rep.Tables[i]
		}
	}
	return nil
}

// TestCheck: Check finds a torn tail (listed, truncated only with
// repair), a table that fails recovery (reported, files untouched even
// with repair), a batch whose CRC fails in a sealed file (which Open does
// not read), and leftovers; without repair it changes nothing.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs, SegmentSize: 2048})
	if err != nil {
		t.Fatal(err)
	}
	var dirs = map[string]string{}
	for _, id := range []string{"good", "torn", "bad", "badcrc"} {
		tb, err := db.CreateTable(ctx, id, testSchema)
		if err != nil {
			t.Fatal(err)
		}
		n := int64(3)
		if id == "badcrc" {
			n = 40 // several sealed files
		}
		for i := range n {
			appendRows(t, tb, DefaultStreamID, -1, i*10, 2)
		}
		dirs[id] = tb.dir
	}
	db.Close()
	// torn: garbage after the last frame.
	torn := path.Join(dirs["torn"], logName(1))
	data := readMemFile(t, fs, torn)
	tornSize := len(data)
	writeMemFile(t, fs, torn, append(data, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7))
	// bad: the first ROWS frame damaged, valid frames after it.
	bad := path.Join(dirs["bad"], logName(1))
	data = readMemFile(t, fs, bad)
	offs := frameOffsets(t, data, 0)
	data[offs[2]+wal.HeaderSize+1] ^= 1
	writeMemFile(t, fs, bad, data)
	// badcrc: a batch of the first (sealed) file damaged.
	bc := path.Join(dirs["badcrc"], logName(1))
	data = readMemFile(t, fs, bc)
	offs = frameOffsets(t, data, 0)
	data[offs[3]+wal.HeaderSize+1] ^= 1
	writeMemFile(t, fs, bc, data)
	// A leftover of an interrupted create.
	if err := fs.MkdirAll("db/tables/t-0000000000000000.tmp"); err != nil {
		t.Fatal(err)
	}
	writeMemFile(t, fs, "db/tables/t-0000000000000000.tmp/L-000001.log", []byte("x"))

	before := snapshotFiles(t, fs, "db")
	rep, err := Check("db", &Options{FS: fs}, false)
	if err != nil {
		t.Fatal(err)
	}
	if after := snapshotFiles(t, fs, "db"); len(after) != len(before) {
		t.Fatalf("Check without repair changed the files: %d before, %d after", len(before), len(after))
	} else {
		for k, v := range before {
			if after[k] != v {
				t.Fatalf("Check without repair changed %s", k)
			}
		}
	}
	if len(rep.Tables) != 4 || len(rep.Actions) != 1 {
		t.Fatalf("report: %d tables, actions %v", len(rep.Tables), rep.Actions)
	}
	if g := findTable(rep, "good"); g == nil || g.Err != nil || g.Rows != 6 || len(g.Actions) != 0 {
		t.Fatalf("good: %+v", g)
	}
	tr := findTable(rep, "torn")
	if tr == nil || tr.Err != nil || tr.Rows != 6 || len(tr.Actions) != 1 || !strings.Contains(tr.Actions[0], "truncate") {
		t.Fatalf("torn: %+v", tr)
	}
	var ce *wal.CorruptionError
	if b := findTable(rep, "bad"); b == nil || !errors.As(b.Err, &ce) || ce.File != bad {
		t.Fatalf("bad: %+v", b)
	}
	if b := findTable(rep, "badcrc"); b == nil || !errors.As(b.Err, &ce) || ce.File != bc || ce.Offset != offs[3] {
		t.Fatalf("badcrc: %+v", b)
	}

	rep, err = Check("db", &Options{FS: fs}, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(readMemFile(t, fs, torn)); got != tornSize {
		t.Fatalf("repair left the torn file at %d bytes, want %d", got, tornSize)
	}
	if !slices.Equal(readMemFile(t, fs, bad), []byte(before[bad])) {
		t.Fatal("repair changed the failing table's file")
	}
	if fs.Exists("db/tables/t-0000000000000000.tmp") {
		t.Fatal("repair left the leftover directory")
	}
	rep, err = Check("db", &Options{FS: fs}, false)
	if err != nil {
		t.Fatal(err)
	}
	if tr := findTable(rep, "torn"); tr == nil || len(tr.Actions) != 0 || len(rep.Actions) != 0 {
		t.Fatalf("after repair: %+v, %v", tr, rep.Actions)
	}
	// The repaired database opens; the failing tables are quarantined.
	db, err = Open("db", &Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if len(db.Quarantined()) != 1 {
		t.Fatalf("quarantined: %v", db.Quarantined())
	}
}
