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

// A query job's destinationTable. Once the query's result schema is
// known (before its first row), the destination is checked and its rows
// go there, once, through a PENDING stream committed only when the query
// has succeeded, so a failed query leaves the destination as it was:
//
//   - missing: CREATE_NEVER fails (notFound); CREATE_IF_NEEDED creates it
//     with the result's schema;
//   - WRITE_EMPTY: a table with rows fails (duplicate, "Already Exists"),
//     checked again by the commit itself (storage.BatchCommitIfEmpty), so
//     that two jobs cannot both find the table empty and both append;
//   - WRITE_APPEND: the result's columns must be the table's (names and
//     types, in order; the table may have more columns, NULLABLE); the
//     schemaUpdateOptions let the table take the result's extra columns
//     and relax its REQUIRED ones first (destination_evolve.go);
//   - WRITE_TRUNCATE: the table is replaced by one with the result's
//     schema and rows.
//
// A new or truncated table gets the job's timePartitioning,
// rangePartitioning and clustering; an append checks them against the
// table's (destination_part.go).
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

// destination is where a query job with a destinationTable writes its
// rows, chosen when the result's schema is known (resultSink.Begin):
// the destination itself for WRITE_APPEND and WRITE_EMPTY of an existing
// table, else the job's stage table, swapped in at the end. The rows are
// written once, there; the job's result is the destination
// (getQueryResults reads it, as BigQuery's does).
type destination struct {
	d       TableRef
	name    string         // d as errors print it
	ct      *catalog.Table // the table the rows go to: d's, or the stage
	stage   bool           // ct is the stage, swapped in at the end
	ifEmpty bool           // WRITE_EMPTY: the commit checks d is still empty
	exists  bool           // d exists (the stage replaces it)
	exp     *time.Time     // the replaced table's expiration
}

// openDestination checks j's destination against the result's schema
// sch per its dispositions and returns where the rows go.
func (s *Store) openDestination(ctx context.Context, j *Job, sch *schema.Schema) (*destination, error) {
	q := j.Query
	d := *q.Destination
	name := fmt.Sprintf("%s:%s.%s", d.Project, d.Dataset, d.Table)
	ct, err := s.cat.Table(d.Project, d.Dataset, d.Table)
	exists := err == nil
	if err != nil && !errors.Is(err, catalog.ErrNotFound) {
		return nil, err
	}
	if exists && ct.View != nil {
		return nil, &DestinationError{Reason: "invalid", Msg: fmt.Sprintf("Cannot write to a view: %s", name)}
	}
	if !exists && q.CreateDisposition == CreateNever {
		return nil, &DestinationError{Reason: "notFound", Msg: "Not found: Table " + name}
	}
	if exists {
		switch q.WriteDisposition {
		case WriteAppend:
			if err := samePartitioning(q.Partitioning, ct); err != nil {
				return nil, err
			}
			if ct, err = s.evolveDestination(ctx, q, ct, sch, name); err != nil {
				return nil, err
			}
			if err := appendable(ct.Schema(), sch, name); err != nil {
				return nil, err
			}
			return &destination{d: d, name: name, ct: ct, exists: true}, nil
		case WriteTruncate:
		default: // WRITE_EMPTY
			if err := samePartitioning(q.Partitioning, ct); err != nil {
				return nil, err
			}
			n, err := s.numRows(ct)
			if err != nil {
				return nil, err
			}
			if n > 0 {
				return nil, notEmpty(name)
			}
			// Rows may come between this check and the commit (another
			// job, an INSERT, the Write API): the commit checks again,
			// in the same step as it commits.
			return &destination{d: d, name: name, ct: ct, exists: true, ifEmpty: true}, nil
		}
	}
	// A new table, or WRITE_TRUNCATE: built aside and swapped in
	// (replace.go). A truncated table keeps its description, friendly
	// name, labels and expiration; its schema is the result's, and its
	// constraints, partitioning and clustering go (they may name columns
	// the result lacks). The job's own partitioning and clustering, if
	// any, apply (destination_part.go).
	spec := catalog.TableSpec{Schema: sch}
	if p := q.Partitioning; p != nil {
		if err := checkPartitioning(p, sch); err != nil {
			return nil, err
		}
		spec.Partitioning = *p
	}
	var exp *time.Time
	if exists {
		spec.Description, spec.FriendlyName, spec.Labels = ct.Description, ct.FriendlyName, ct.Labels
		exp = &ct.Expiration
	}
	staged, err := s.stageTable(ctx, q, spec)
	if err != nil {
		return nil, err
	}
	return &destination{d: d, name: name, ct: staged, stage: true, exists: exists, exp: exp}, nil
}

func notEmpty(name string) error {
	return &DestinationError{Reason: "duplicate", Msg: "Already Exists: Table " + name}
}

// finish makes the rows of stream (rows of them, appended to t.ct's
// engine table st) the destination's: it commits the stream into the
// destination, or into the stage and swaps the stage in. j holds the
// job's outcome but Destination (what the commit record logs).
func (s *Store) finishDestination(ctx context.Context, j *Job, t *destination, st *storage.Table, stream string, rows int64) error {
	q := j.Query
	if !t.stage {
		// One PENDING stream: the rows are appended all at once.
		err := s.commitStream(ctx, st, stream, rows, s.destinationIntent(j, t.d, t.ct.ID), t.ifEmpty)
		if errors.Is(err, storage.ErrTableNotEmpty) {
			return notEmpty(t.name)
		}
		return err
	}
	if err := s.commitStream(ctx, st, stream, rows, nil, false); err != nil {
		s.dropTable(q.stage)
		return err
	}
	// The move is the job's last change: logged before it (commit.go).
	if err := s.logCommit(j.Project, q, destinationRecord(j, t.d, commitMove, t.ct.ID, "")); err != nil {
		s.dropTable(q.stage)
		return err
	}
	if err := s.swap(ctx, q, t.d, t.exists, t.exp); err != nil {
		if errors.Is(err, catalog.ErrNotFound) {
			return &DestinationError{Reason: "notFound", Msg: fmt.Sprintf("Not found: Dataset %s:%s", t.d.Project, t.d.Dataset)}
		}
		return err
	}
	if h := s.opts.afterMove; h != nil {
		h()
	}
	return nil
}

// appendable checks that rows of schema got can be appended to a table of
// schema want: got's columns are want's first ones, same names and types,
// and NULLABLE only where want's are.
func appendable(want, got *schema.Schema, name string) error {
	if len(got.Fields) > len(want.Fields) {
		return &DestinationError{Reason: "invalid", Msg: fmt.Sprintf("Provided Schema does not match Table %s. Cannot add fields (field: %s)", name, got.Fields[len(want.Fields)].Name)}
	}
	for i, g := range got.Fields {
		w := want.Fields[i]
		if !strings.EqualFold(g.Name, w.Name) {
			// Name what differs: a column the table lacks is one the
			// append would add; one it has elsewhere is out of order.
			for k, f := range want.Fields {
				if strings.EqualFold(f.Name, g.Name) {
					return &DestinationError{Reason: "invalid", Msg: fmt.Sprintf("Provided Schema does not match Table %s. Field %s is column %d of the table and column %d of the query's result", name, f.Name, k+1, i+1)}
				}
			}
			return &DestinationError{Reason: "invalid", Msg: fmt.Sprintf("Provided Schema does not match Table %s. Cannot add fields (field: %s)", name, g.Name)}
		}
		if err := sameField(w, g, w.Name, name); err != nil {
			return err
		}
	}
	// The table's columns past the result's read NULL in the rows
	// appended (the result sink pads them).
	for _, w := range want.Fields[len(got.Fields):] {
		if w.EffectiveMode() == schema.Required {
			return &DestinationError{Reason: "invalid", Msg: fmt.Sprintf("Provided Schema does not match Table %s. Required field %s is missing from the query's result", name, w.Name)}
		}
	}
	return nil
}

// sameField checks that values of the result's field g (path: its name,
// a.b inside a RECORD) can be stored in the table's field w: the same
// type, REPEATED on both or neither, not NULLABLE where w is REQUIRED,
// and for a RECORD the same fields in the same order, each alike.
func sameField(w, g *schema.Field, path, name string) error {
	if g.Type != w.Type && !(isInt(g.Type) && isInt(w.Type)) && !(isFloat(g.Type) && isFloat(w.Type)) && !(isRecord(g.Type) && isRecord(w.Type)) {
		return &DestinationError{Reason: "invalid", Msg: fmt.Sprintf("Provided Schema does not match Table %s. Field %s has changed type from %s to %s", name, path, w.Type, g.Type)}
	}
	wm, gm := w.EffectiveMode(), g.EffectiveMode()
	// A result's column may be NULL where the table's may not
	// (ALLOW_FIELD_RELAXATION relaxes the table's first); an array is
	// not a scalar either way.
	if (wm == schema.Repeated) != (gm == schema.Repeated) || wm == schema.Required && gm != schema.Required {
		return &DestinationError{Reason: "invalid", Msg: fmt.Sprintf("Provided Schema does not match Table %s. Field %s has changed mode from %s to %s", name, path, wm, gm)}
	}
	if !isRecord(w.Type) {
		return nil
	}
	// The engine takes a RECORD's values only with its exact fields.
	for i, wf := range w.Fields {
		if i >= len(g.Fields) {
			return &DestinationError{Reason: "invalid", Msg: fmt.Sprintf("Provided Schema does not match Table %s. Field %s.%s is missing from the query's result", name, path, wf.Name)}
		}
		gf := g.Fields[i]
		if !strings.EqualFold(gf.Name, wf.Name) {
			return &DestinationError{Reason: "invalid", Msg: fmt.Sprintf("Provided Schema does not match Table %s. Field %s.%s of the query's result is not field %s.%s of the table", name, path, gf.Name, path, wf.Name)}
		}
		if err := sameField(wf, gf, path+"."+wf.Name, name); err != nil {
			return err
		}
	}
	if len(g.Fields) > len(w.Fields) {
		return &DestinationError{Reason: "invalid", Msg: fmt.Sprintf("Provided Schema does not match Table %s. Cannot add fields (field: %s.%s)", name, path, g.Fields[len(w.Fields)].Name)}
	}
	return nil
}

func isRecord(t schema.Type) bool { return t == schema.Record || t == "STRUCT" }

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
