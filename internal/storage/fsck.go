package storage

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"

	"github.com/bqstore/bqstore/internal/storage/wal"
)

// TableReport is what Check found in one table directory.
type TableReport struct {
	// Dir is the table's directory.
	Dir string
	// ID is the table id ("" if no HEADER of the table is readable).
	ID string
	// Files, Batches, Rows, Streams describe what recovery found: live
	// log files, row batches, rows stored (every stream, committed or
	// not), explicit write streams.
	Files, Batches int
	Rows           int64
	Streams        int
	// SchemaVersion is the table's current schema version.
	SchemaVersion int
	// Actions are the changes to the table's files that recovery makes
	// (truncating a torn tail, removing a compaction's leftovers, …):
	// made if Check was told to repair, else only listed.
	Actions []string
	// Err is why the table does not recover or a batch fails its CRC
	// (nil: healthy). Open quarantines such a table.
	Err error
}

// CheckReport is what Check found under a database directory.
type CheckReport struct {
	Tables []TableReport
	// Actions are changes outside the tables (leftover directories of an
	// interrupted create or drop), made or listed like TableReport's.
	Actions []string
}

// Check checks, offline, every table of the database in dir: it runs
// the recovery Open runs (file continuity, seals, replay of the active
// file, row continuity of every stream) and then reads every row batch
// and checks its CRC, which Open does not. Without repair it changes
// nothing and lists what recovery would change; with repair it makes
// those changes, which are exactly the ones Open makes at start-up
// (truncating torn, never-acknowledged tails, removing leftovers): it
// never deletes acknowledged data, and leaves a failing table's files as
// they are (Open quarantines it). It takes the directory's lock, so it
// fails while a server has the database open.
func Check(dir string, opts *Options, repair bool) (*CheckReport, error) {
	db := newDB(dir, opts)
	td := path.Join(dir, tablesDir)
	if !db.fs.Exists(td) {
		return nil, fmt.Errorf("storage: check %s: no %s directory: not a database", dir, tablesDir)
	}
	lock, err := db.fs.Lock(path.Join(dir, "LOCK"))
	if err != nil {
		return nil, fmt.Errorf("storage: check %s: %w", dir, err)
	}
	defer lock.Close()
	names, err := db.fs.List(td)
	if err != nil {
		return nil, fmt.Errorf("storage: check %s: %w", dir, err)
	}
	rep := &CheckReport{}
	for _, name := range names {
		p := path.Join(td, name)
		switch {
		case strings.HasSuffix(name, ".tmp"), strings.HasSuffix(name, ".drop"):
			rep.Actions = append(rep.Actions, "remove "+p+" (left by an interrupted table create or drop)")
			if repair {
				if err := db.fs.RemoveAll(p); err != nil {
					return rep, fmt.Errorf("storage: check %s: remove %s: %w", dir, name, err)
				}
			}
		case strings.HasPrefix(name, "t-"):
			rep.Tables = append(rep.Tables, db.checkTable(p, repair))
		}
	}
	return rep, nil
}

// checkTable recovers the table in tdir without starting it, then reads
// every batch.
func (db *DB) checkTable(tdir string, repair bool) TableReport {
	t := &Table{db: db, dir: tdir, check: &checkRun{dryRun: !repair}}
	t.applied = sync.NewCond(&t.mu.Mutex)
	r := TableReport{Dir: tdir}
	r.Err = t.recover()
	defer func() {
		for _, f := range t.mu.files {
			f.unref()
		}
	}()
	r.Actions = t.check.actions
	r.ID = t.id
	if r.ID == "" || r.Err != nil {
		if id, err := tableIDOf(db.fs, tdir); err == nil {
			r.ID = id
		}
	}
	if r.Err != nil {
		return r
	}
	r.Files = len(t.mu.files)
	r.Batches = len(t.mu.batches)
	r.Streams = t.mu.durable.Len()
	r.SchemaVersion = t.mu.schemas[len(t.mu.schemas)-1].version
	var buf []byte
	for _, br := range t.mu.batches {
		r.Rows += br.b.Rows
		fr, err := wal.ReadAt(br.f.f, br.b.Offset+br.b.Len, br.f.name, br.b.Offset, buf)
		if err == nil && !isRows(fr.Type) {
			err = &wal.CorruptionError{File: br.f.name, Offset: br.b.Offset, Reason: "the batch index points at " + recName(fr.Type)}
		}
		if err != nil {
			var ce *wal.CorruptionError
			if !errors.As(err, &ce) {
				err = fmt.Errorf("read %s at %d: %w", br.f.name, br.b.Offset, err)
			}
			r.Err = err
			return r
		}
		buf = fr.Payload[:0]
	}
	return r
}
