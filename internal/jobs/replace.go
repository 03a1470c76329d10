package jobs

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
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
		_, err = s.cat.MoveTable(ctx, q.stage.Project, q.stage.Dataset, q.stage.Table,
			catalog.TableName{ProjectID: ref.Project, DatasetID: ref.Dataset, TableID: ref.Table},
			catalog.MoveSpec{Replace: replace, Expiration: exp})
	}
	if err != nil {
		// After a move whose observer failed, the stage name is free
		// and this drops nothing.
		s.dropTable(q.stage)
	}
	return err
}
