package jobs

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/bqstore/bqstore/internal/catalog"
)

// A statement that replaces a table (CREATE OR REPLACE TABLE|VIEW, a
// WRITE_TRUNCATE destination) or creates one with rows (CREATE TABLE AS
// SELECT, a new destination) builds the new table under a name nobody
// reads, its job's stage table in the hidden dataset of anonymous
// results, writes its rows there and commits them, then moves it over
// the old name in one catalog change (catalog.MoveTable: the old table
// dropped, the staged one renamed, its storage kept). Until the move a
// reader finds the old table, whole; after it, the new one, whole. A job
// that fails or is cancelled before the move drops its stage table and
// leaves the old table as it was; a crash before the move leaves the
// stage table of a RUNNING job, which Open drops (as it drops the job's
// anonymous table); a crash after it leaves the old table's tombstone,
// whose storage the server's start-up drops.

// A replace of a table the job read (CREATE OR REPLACE TABLE t AS
// SELECT ... FROM t, a query over t with destination t and
// WRITE_TRUNCATE: a rewrite in place) is conditional: the table must
// still be what the job's query read when the stage moves over it, else
// a change committed in between (an INSERT, the Write API's rows, an
// ALTER TABLE) would vanish with it, its writer told it succeeded. So
// the statement remembers each table it read (its catalog id and etag, the
// rows and schema version of its snapshot: reads, in its context), and
// at the swap, inside the catalog's change (catalog.MoveSpec.Hold, its
// write lock held: that lock before the fence, docs/LOCKING.md), it
// fences the table's writes in the engine (storage.Table.Fence: the
// writes taken before are applied, later ones wait), checks that the rows and schema version are still those read,
// and moves the stage with catalog.MoveSpec.IfMatch, the etag read: the
// catalog checks it in the same change. The move drops the old table
// before the fence is released, so a write held there fails as one
// after the drop. A table changed since the read fails the job with
// BigQuery's 400 invalidQuery "Could not serialize access to table ...
// due to concurrent update" (ConcurrentUpdateError), the table as it
// was: running the job again reads the change. A table read AS OF a
// time (FOR SYSTEM_TIME AS OF) is not a read of its current state and
// sets no condition.

// ConcurrentUpdateError is a statement that replaces a table it read,
// failed because the table changed in between (see above). On the wire
// it is BigQuery's 400 invalidQuery.
type ConcurrentUpdateError struct{ Msg string }

func (e *ConcurrentUpdateError) Error() string { return e.Msg }

func concurrentUpdate(ref TableRef) error {
	return &ConcurrentUpdateError{Msg: fmt.Sprintf("Could not serialize access to table %s:%s.%s due to concurrent update", ref.Project, ref.Dataset, ref.Table)}
}

// tableRead is a table as a job read it: its catalog entry's id and
// etag, the rows and schema version of the snapshot.
type tableRead struct {
	id, etag string
	rows     int64
	version  int
}

// reads are the tables a statement read, by name (the last read of a
// name wins). Each statement of a script has its own (runScript): a
// replace checks only what its own statement read, at its start, which
// sees what the script's earlier statements wrote; the job's, that its
// destination's replace checks, are those of its result's statement.
type reads struct {
	mu sync.Mutex
	m  map[TableRef]tableRead
}

type readsKey struct{}

// withReads is ctx recording the tables its queries read.
func withReads(ctx context.Context) context.Context {
	return context.WithValue(ctx, readsKey{}, &reads{m: map[TableRef]tableRead{}})
}

// recordRead records the read of t in ctx's reads, if any.
func recordRead(ctx context.Context, t *table) {
	r, _ := ctx.Value(readsKey{}).(*reads)
	if r == nil {
		return
	}
	r.mu.Lock()
	r.m[t.ref] = tableRead{id: t.id, etag: t.etag, rows: t.snap.NumRows(), version: t.snap.SchemaVersion()}
	r.mu.Unlock()
}

// adoptReads makes the reads recorded in from ctx's reads, if both have
// them.
func adoptReads(ctx, from context.Context) {
	r, _ := ctx.Value(readsKey{}).(*reads)
	f, _ := from.Value(readsKey{}).(*reads)
	if r == nil || f == nil || r == f {
		return
	}
	f.mu.Lock()
	m := maps.Clone(f.m)
	f.mu.Unlock()
	r.mu.Lock()
	r.m = m
	r.mu.Unlock()
}

// readOf is the read of table ref recorded in ctx.
func readOf(ctx context.Context, ref TableRef) (tableRead, bool) {
	r, _ := ctx.Value(readsKey{}).(*reads)
	if r == nil {
		return tableRead{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	tr, ok := r.m[ref]
	return tr, ok
}

// stageRef is the stage table of job project/id: "stage" and 40 hex
// digits, in AnonDataset.
func stageRef(project, location, id string) TableRef {
	h := sha1.Sum([]byte("bqstore stage table\x00" + project + "\x00" + id))
	return TableRef{Project: project, Dataset: AnonDataset(project, location), Table: "stage" + hex.EncodeToString(h[:])}
}

// stageTable creates spec's table as q's stage table (spec's name is
// ignored) and returns it; the caller fills it and calls swap, or drops
// it (s.dropTable(q.stage)).
func (s *Store) stageTable(ctx context.Context, q Query, spec catalog.TableSpec) (*catalog.Table, error) {
	st := q.stage
	if st == (TableRef{}) {
		return nil, errors.New("jobs: a statement that replaces a table runs outside a job")
	}
	if err := s.ensureHidden(ctx, q); err != nil {
		return nil, err
	}
	s.dropTable(st) // a stage a failed drop left behind
	spec.ProjectID, spec.DatasetID, spec.TableID = st.Project, st.Dataset, st.Table
	spec.Expiration = s.opts.Clock().Add(Retention)
	return s.cat.CreateTable(ctx, spec)
}

// swap moves q's stage table to ref, replacing the table named ref if
// replace (else a table named ref is an error), with expiration exp
// (nil: the dataset's default). A job cancelled before the swap fails
// and drops its stage; so does a failed swap.
func (s *Store) swap(ctx context.Context, q Query, ref TableRef, replace bool, exp *time.Time) error {
	if s.opts.beforeReplace != nil {
		s.opts.beforeReplace()
	}
	err := ctx.Err()
	if err == nil {
		err = s.move(ctx, q, ref, catalog.MoveSpec{Replace: replace, Expiration: exp})
	}
	if err != nil {
		// After a move whose observer failed, the stage name is free
		// and this drops nothing.
		s.dropTable(q.stage)
	}
	return err
}

// move moves q's stage table to ref per spec; a replace of a table the
// job read is conditional on its being unchanged (see above).
func (s *Store) move(ctx context.Context, q Query, ref TableRef, spec catalog.MoveSpec) error {
	read, ok := readOf(ctx, ref)
	if ok && spec.Replace && s.opts.DB != nil {
		ct, err := s.cat.Table(ref.Project, ref.Dataset, ref.Table)
		if isNotFound(err) || err == nil && ct.ID != read.id {
			return concurrentUpdate(ref) // dropped, or replaced
		}
		if err != nil {
			return err
		}
		spec.IfMatch = read.etag
		// The fence is taken inside the catalog's change, its write lock
		// held (lock order: catalog, then fence; docs/LOCKING.md): an
		// ALTER TABLE holds that lock while the engine applies its
		// schema, which waits at a fence.
		spec.Hold = func(old *catalog.Table) (func(), error) {
			if old.ID != read.id {
				return nil, concurrentUpdate(ref)
			}
			st, err := s.opts.DB.Table(old.ID)
			if err != nil {
				return nil, err
			}
			release, err := st.Fence(ctx)
			if err != nil {
				return nil, err
			}
			snap, err := st.Snapshot(time.Time{})
			if err != nil {
				release()
				return nil, err
			}
			rows, version := snap.NumRows(), snap.SchemaVersion()
			snap.Release()
			if rows != read.rows || version != read.version {
				release()
				return nil, concurrentUpdate(ref)
			}
			return release, nil // after the move's drop of the old table
		}
	}
	_, err := s.cat.MoveTable(ctx, q.stage.Project, q.stage.Dataset, q.stage.Table,
		catalog.TableName{ProjectID: ref.Project, DatasetID: ref.Dataset, TableID: ref.Table}, spec)
	if spec.IfMatch != "" && errors.Is(err, catalog.ErrPrecondition) {
		return concurrentUpdate(ref)
	}
	return err
}

// readTime is the snapshot time of a statement that starts at wall-clock
// time at: at, or the engine's time (storage.DB.Now) when that is later,
// so that the statement sees every commit acknowledged before it started
// even after the wall clock stepped back (the engine stamps commits
// monotonically, ahead of a clock that went back).
func (s *Store) readTime(at time.Time) time.Time {
	if s.opts.DB != nil {
		if now := s.opts.DB.Now(); now.After(at) {
			return now
		}
	}
	return at
}
