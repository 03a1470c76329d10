package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/storage"
)

// A query job's destinationTable. The query runs to the end (its rows
// committed to the job's anonymous table, run.go) before the destination
// is touched, so a failed query leaves it as it was; then:
//
//   - missing: CREATE_NEVER fails (notFound); CREATE_IF_NEEDED creates it
//     with the result's schema;
//   - WRITE_EMPTY: a table with rows fails (duplicate, "Already Exists"),
//     checked again by the commit itself (storage.BatchCommitIfEmpty), so
//     that two jobs cannot both find the table empty and both append;
//   - WRITE_APPEND: the result's columns must be the table's (names and
//     types, in order; the table may have more columns, NULLABLE);
//   - WRITE_TRUNCATE: the table is replaced by one with the result's
//     schema and rows.
//
// The rows go through one PENDING stream committed at the end, so an
// append is atomic; the job logs the stream before committing it, so
// that a crash after the commit recovers the job DONE (commit.go). A new table and a truncated one are built aside and
// swapped in (replace.go): a reader finds the old table (or none) until
// the new one, whole, takes its name, and a failure or a crash before
// the swap leaves the old table as it was (BigQuery, too, replaces the
// table atomically); the job logs the stage's id before the swap, so
// that a crash after it recovers the job DONE (commit.go).

// ValidDisposition reports whether v is a createDisposition (create) or
// writeDisposition (!create) BigQuery knows; "" is the default.
func ValidDisposition(v string, create bool) bool {
	if create {
		return v == "" || v == CreateIfNeeded || v == CreateNever
	}
	return v == "" || v == WriteTruncate || v == WriteAppend || v == WriteEmpty
}

// writeDestination writes the result (schema sch, rows in the committed
// table rows) to j's destination table per its dispositions and returns
// the table.
func (s *Store) writeDestination(ctx context.Context, j *Job, sch *schema.Schema, rows TableRef) (TableRef, error) {
	q := j.Query
	d := *q.Destination
	name := fmt.Sprintf("%s:%s.%s", d.Project, d.Dataset, d.Table)
	ct, err := s.cat.Table(d.Project, d.Dataset, d.Table)
	exists := err == nil
	if err != nil && !errors.Is(err, catalog.ErrNotFound) {
		return TableRef{}, err
	}
	if exists && ct.View != nil {
		return TableRef{}, &DestinationError{Reason: "invalid", Msg: fmt.Sprintf("Cannot write to a view: %s", name)}
	}
	if !exists && q.CreateDisposition == CreateNever {
		return TableRef{}, &DestinationError{Reason: "notFound", Msg: "Not found: Table " + name}
	}
	if exists {
		switch q.WriteDisposition {
		case WriteAppend:
			if err := appendable(ct.Schema(), sch, name); err != nil {
				return TableRef{}, err
			}
			// One PENDING stream: the rows are appended all at once.
			return d, s.copyRowsLogged(ctx, rows, ct, s.destinationIntent(j, d, ct.ID), false)
		case WriteTruncate:
		default: // WRITE_EMPTY
			n, err := s.numRows(ct)
			if err != nil {
				return TableRef{}, err
			}
			notEmpty := &DestinationError{Reason: "duplicate", Msg: "Already Exists: Table " + name}
			if n > 0 {
				return TableRef{}, notEmpty
			}
			// Rows may come between this check and the commit (another
			// job, an INSERT, the Write API): the commit checks again,
			// in the same step as it commits.
			err = s.copyRowsLogged(ctx, rows, ct, s.destinationIntent(j, d, ct.ID), true)
			if errors.Is(err, storage.ErrTableNotEmpty) {
				return TableRef{}, notEmpty
			}
			return d, err
		}
	}
	// A new table, or WRITE_TRUNCATE: built aside and swapped in
	// (replace.go). A truncated table keeps its description, friendly
	// name, labels and expiration; its schema is the result's, and its
	// constraints, partitioning and clustering go (they may name columns
	// the result lacks).
	spec := catalog.TableSpec{Schema: sch}
	var exp *time.Time
	if exists {
		spec.Description, spec.FriendlyName, spec.Labels = ct.Description, ct.FriendlyName, ct.Labels
		exp = &ct.Expiration
	}
	staged, err := s.stageTable(ctx, q, spec)
	if err != nil {
		return TableRef{}, err
	}
	if err := s.copyRows(ctx, rows, staged); err != nil {
		s.dropTable(q.stage)
		return TableRef{}, err
	}
	// The move is the job's last change: logged before it (commit.go).
	if err := s.logCommit(j.Project, q, destinationRecord(j, d, commitMove, staged.ID, "")); err != nil {
		s.dropTable(q.stage)
		return TableRef{}, err
	}
	if err := s.swap(ctx, q, d, exists, exp); err != nil {
		if errors.Is(err, catalog.ErrNotFound) {
			return TableRef{}, &DestinationError{Reason: "notFound", Msg: fmt.Sprintf("Not found: Dataset %s:%s", d.Project, d.Dataset)}
		}
		return TableRef{}, err
	}
	if h := s.opts.afterMove; h != nil {
		h()
	}
	return d, nil
}

// appendable checks that rows of schema got can be appended to a table of
// schema want: got's columns are want's first ones, same names and types.
func appendable(want, got *schema.Schema, name string) error {
	if len(got.Fields) > len(want.Fields) {
		return &DestinationError{Reason: "invalid", Msg: fmt.Sprintf("Provided Schema does not match Table %s. Cannot add fields (field: %s)", name, got.Fields[len(want.Fields)].Name)}
	}
	for i, g := range got.Fields {
		w := want.Fields[i]
		if !strings.EqualFold(g.Name, w.Name) || g.Type != w.Type && !(isInt(g.Type) && isInt(w.Type)) && !(isFloat(g.Type) && isFloat(w.Type)) {
			return &DestinationError{Reason: "invalid", Msg: fmt.Sprintf("Provided Schema does not match Table %s. Field %s has changed type from %s to %s", name, w.Name, w.Type, g.Type)}
		}
	}
	return nil
}

func isInt(t schema.Type) bool   { return t == "INTEGER" || t == "INT64" }
func isFloat(t schema.Type) bool { return t == "FLOAT" || t == "FLOAT64" }

// numRows is the committed rows of table ct now.
func (s *Store) numRows(ct *catalog.Table) (int64, error) {
	if s.opts.DB == nil {
		return 0, nil
	}
	st, err := s.opts.DB.Table(ct.ID)
	if err != nil {
		return 0, err
	}
	snap, err := st.Snapshot(time.Time{})
	if err != nil {
		return 0, err
	}
	defer snap.Release()
	return snap.NumRows(), nil
}
