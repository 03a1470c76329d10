package jobs

import (
	"context"
	"errors"
	"fmt"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/sql"
	"github.com/bqstore/bqstore/internal/storage"
)

// resultSink writes a query's rows, as the executor produces them, to the
// job's anonymous table, or to its destinationTable (destination.go),
// through one PENDING stream (sql.Sink). Nothing is visible until
// commit: a query that fails or is cancelled midway leaves no rows
// anywhere (abort drops the anonymous table or the stage; an append's
// stream is never committed).
//
// It is used by the job's goroutine only.
type resultSink struct {
	s   *Store
	j   *Job
	ref TableRef     // the result's table: the anonymous one, or the destination
	dst *destination // nil: the anonymous table

	schema *schema.Schema // the rows' schema: the table's (see open)
	pad    int            // NULLs each row gets at its end (see open)
	ct     *catalog.Table
	st     *storage.Table
	sv     int
	stream string
	rows   int64   // appended so far: the next append's offset
	buf    [][]any // rows not yet appended (fewer than appendRows)
}

func (s *Store) newResultSink(j *Job) *resultSink {
	return &resultSink{s: s, j: j, ref: anonRef(j.Project, j.Location, j.ID)}
}

// began reports whether the query produced its result's schema.
func (r *resultSink) began() bool { return r.ct != nil }

// Begin creates the anonymous table (it expires with the job) and the
// PENDING stream the rows go to.
func (r *resultSink) Begin(ctx context.Context, sch *schema.Schema) error {
	if r.ct != nil {
		return fmt.Errorf("jobs: a query result began twice")
	}
	s, j, ref := r.s, r.j, r.ref
	if j.Query.Destination != nil {
		dst, err := s.openDestination(ctx, j, sch)
		if err != nil {
			return err
		}
		r.dst, r.ref = dst, dst.d
		return r.open(ctx, dst.ct, sch)
	}
	_, err := s.cat.CreateDataset(ctx, catalog.Dataset{ProjectID: ref.Project, DatasetID: ref.Dataset, Location: j.Location,
		Description: "Anonymous query results (hidden; each table expires with its job)"})
	if err != nil && !errors.Is(err, catalog.ErrExists) {
		return err
	}
	ct, err := s.cat.CreateTable(ctx, catalog.TableSpec{
		ProjectID: ref.Project, DatasetID: ref.Dataset, TableID: ref.Table, Schema: sch,
		Expiration:  j.Created.Add(Retention),
		Description: fmt.Sprintf("Results of job %s:%s.%s", j.Project, j.Location, j.ID),
	})
	if err != nil {
		return err
	}
	return r.open(ctx, ct, sch)
}

// open opens the PENDING stream of table ct the rows of schema sch go to.
func (r *resultSink) open(ctx context.Context, ct *catalog.Table, sch *schema.Schema) error {
	r.ct, r.schema = ct, sch
	// A destination appended to may have more columns than the result
	// (appendable: they are NULLABLE): each row gets NULLs there, and
	// the rows are built with the table's schema.
	if want := ct.Schema(); len(want.Fields) > len(sch.Fields) {
		r.schema, r.pad = want, len(want.Fields)-len(sch.Fields)
	}
	var err error
	if r.st, err = r.s.opts.DB.Table(ct.ID); err != nil {
		return err
	}
	r.sv = ct.Schemas[len(ct.Schemas)-1].Version
	info, err := r.st.CreateStream(ctx, storage.StreamPending)
	if err != nil {
		return err
	}
	r.stream = info.ID
	return nil
}

// Write buffers rows and appends them appendRows at a time.
func (r *resultSink) Write(ctx context.Context, rows [][]any) error {
	for len(rows) > 0 {
		if len(r.buf) == 0 && len(rows) >= appendRows {
			if err := r.append(ctx, rows[:appendRows]); err != nil {
				return err
			}
			rows = rows[appendRows:]
			continue
		}
		k := min(len(rows), appendRows-len(r.buf))
		r.buf = append(r.buf, rows[:k]...)
		rows = rows[k:]
		if len(r.buf) == appendRows {
			if err := r.flush(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *resultSink) flush(ctx context.Context) error {
	if len(r.buf) == 0 {
		return nil
	}
	err := r.append(ctx, r.buf)
	clear(r.buf)
	r.buf = r.buf[:0]
	return err
}

func (r *resultSink) append(ctx context.Context, rows [][]any) error {
	if r.pad > 0 {
		padded := make([][]any, len(rows))
		for i, row := range rows {
			padded[i] = append(append(make([]any, 0, len(row)+r.pad), row...), make([]any, r.pad)...)
		}
		rows = padded
	}
	part := &sql.Result{Schema: r.schema, Rows: rows}
	rec, err := part.Record()
	if err != nil {
		return err
	}
	defer rec.Release()
	if _, err := r.st.Append(ctx, storage.AppendRequest{Stream: r.stream, Offset: r.rows, Batch: rec, SchemaVersion: r.sv}); err != nil {
		return err
	}
	r.rows += int64(len(rows))
	if h := r.s.opts.afterResultAppend; h != nil {
		h(r.j.ID)
	}
	return nil
}

// commit makes the rows visible, all at once: the anonymous table's, or
// the destination's (destination.go).
func (r *resultSink) commit(ctx context.Context) error {
	if err := r.flush(ctx); err != nil {
		return err
	}
	if r.dst != nil {
		err := r.s.finishDestination(ctx, r.j, r.dst, r.st, r.stream, r.rows)
		r.ct = nil // done: nothing for abort to drop
		return err
	}
	if _, err := r.st.Finalize(ctx, r.stream); err != nil {
		return err
	}
	_, serrs, err := r.st.BatchCommit(ctx, []string{r.stream})
	if err != nil {
		return err
	}
	if len(serrs) > 0 {
		return fmt.Errorf("jobs: commit result stream: %w", serrs[0].Err)
	}
	return nil
}

// abort drops the anonymous table or the destination's stage, if the
// query got as far as creating it, with its uncommitted rows; rows
// appended to a destination table stay in their stream, never committed.
func (r *resultSink) abort() {
	if r == nil || r.ct == nil {
		return
	}
	switch {
	case r.dst == nil:
		r.s.dropTable(r.ref)
	case r.dst.stage:
		r.s.dropTable(r.j.Query.stage)
	}
	r.ct = nil
}
