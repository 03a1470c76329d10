package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/sql"
)

// A query job's destinationTable. The query runs to the end before the
// destination is touched, so a failed query leaves it as it was; then:
//
//   - missing: CREATE_NEVER fails (notFound); CREATE_IF_NEEDED creates it
//     with the result's schema;
//   - WRITE_EMPTY: a table with rows fails (duplicate, "Already Exists");
//   - WRITE_APPEND: the result's columns must be the table's (names and
//     types, in order; the table may have more columns, NULLABLE);
//   - WRITE_TRUNCATE: the table is replaced by one with the result's
//     schema and rows.
//
// The rows go through one PENDING stream committed at the end, so an
// append is atomic. A truncate is not: the catalog has no rename or swap
// and the engine no truncate (docs/design/row-changes.md's CHANGE record
// is the design for one), so it drops the table and creates it again,
// then writes the rows. A reader in between finds no table (404) or the
// new table empty (BigQuery swaps atomically). Once the table is dropped
// the job can no longer be stopped (jobs.cancel and a shutdown wait for
// it to write the rows), so the old rows are lost only if the server
// crashes or the storage fails between the drop and the commit; then the
// job fails and the table is missing, or empty with the new schema (a
// crash after the create).

// ValidDisposition reports whether v is a createDisposition (create) or
// writeDisposition (!create) BigQuery knows; "" is the default.
func ValidDisposition(v string, create bool) bool {
	if create {
		return v == "" || v == CreateIfNeeded || v == CreateNever
	}
	return v == "" || v == WriteTruncate || v == WriteAppend || v == WriteEmpty
}

// writeDestination writes res to j's destination table per its
// dispositions and returns the table.
func (s *Store) writeDestination(ctx context.Context, j *Job, res *sql.Result) (TableRef, error) {
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
	created := false
	if exists {
		switch q.WriteDisposition {
		case WriteAppend:
			if err := appendable(ct.Schema(), res.Schema, name); err != nil {
				return TableRef{}, err
			}
		case WriteTruncate:
			if err := s.cat.DeleteTable(ctx, d.Project, d.Dataset, d.Table); err != nil && !errors.Is(err, catalog.ErrNotFound) {
				return TableRef{}, err
			}
			exists = false
			// The old rows are gone: from here the job must put the new
			// ones in, so neither jobs.cancel nor a shutdown may stop it
			// halfway (the rows are in memory; the writes are bounded).
			ctx = context.WithoutCancel(ctx)
			if s.opts.afterTruncateDrop != nil {
				s.opts.afterTruncateDrop()
			}
		default: // WRITE_EMPTY
			n, err := s.numRows(ct)
			if err != nil {
				return TableRef{}, err
			}
			if n > 0 {
				return TableRef{}, &DestinationError{Reason: "duplicate", Msg: "Already Exists: Table " + name}
			}
		}
	}
	if !exists {
		ct, err = s.cat.CreateTable(ctx, catalog.TableSpec{ProjectID: d.Project, DatasetID: d.Dataset, TableID: d.Table, Schema: res.Schema})
		if errors.Is(err, catalog.ErrNotFound) {
			return TableRef{}, &DestinationError{Reason: "notFound", Msg: fmt.Sprintf("Not found: Dataset %s:%s", d.Project, d.Dataset)}
		}
		if err != nil {
			return TableRef{}, err
		}
		created = true
	}
	if err := s.appendResult(ctx, ct, res); err != nil {
		if created {
			s.dropTable(d)
		}
		return TableRef{}, err
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
