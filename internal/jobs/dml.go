package jobs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/schema/arrowrows"
	"github.com/bqstore/bqstore/internal/schema/protorows"
	"github.com/bqstore/bqstore/internal/sql"
	"github.com/bqstore/bqstore/internal/storage"
)

// appendBatchRows bounds the rows of one append of an INSERT.
const appendBatchRows = 4096

// rowGroup is rows that give values for the same table columns (cols,
// indexes into the table's fields); the other columns take their
// defaults.
type rowGroup struct {
	cols []int
	rows [][]any
}

// insert runs INSERT: the rows (VALUES, or the query's result) are
// coerced to the columns' types and appended atomically.
func (s *Store) insert(ctx context.Context, project string, q Query, st *sql.Statement, at time.Time, stats *Stats) error {
	ins := st.Insert
	stats.DML = true
	ref, err := s.target(project, q, ins.Table)
	if err != nil {
		return err
	}
	ct, err := s.cat.Table(ref.Project, ref.Dataset, ref.Table)
	if err != nil {
		return err
	}
	if ct.View != nil {
		return notViewError(q.SQL, ins.Table.Pos, ct, true)
	}
	fields := ct.Schema().Fields
	var cols []int
	if ins.Columns == nil {
		for i := range fields {
			cols = append(cols, i)
		}
	} else {
		names := schema.IndexNames(fields)
		for _, c := range ins.Columns {
			i := names.Lookup(c)
			if i < 0 {
				return filter.NewError(q.SQL, ins.Table.Pos, "Column %s is not present in table %s", c, ct.FullID())
			}
			cols = append(cols, i)
		}
	}
	var groups []rowGroup
	if ins.Query != "" {
		res, err := s.query(ctx, project, q, ins.Query, ins.QueryPos, at)
		if err != nil {
			return err
		}
		stats.BytesProcessed = res.BytesProcessed
		if err := billable(q, res); err != nil {
			return err
		}
		if len(res.Schema.Fields) != len(cols) {
			return filter.NewError(q.SQL, ins.QueryPos, "Inserted row has wrong column count; Has %d, expected %d", len(res.Schema.Fields), len(cols))
		}
		for i, rf := range res.Schema.Fields {
			from := sql.TypeName(rf.Type)
			if rf.Type == schema.Record || rf.EffectiveMode() == schema.Repeated {
				from = filter.FieldTypeName(rf) // ARRAY<INT64>, STRUCT<a INT64>
			}
			for _, row := range res.Rows {
				v, err := sql.Coerce(row[i], from, "", fields[cols[i]])
				if err != nil {
					return coerceError(q.SQL, ins.QueryPos, fmt.Sprintf("Query column %d", i+1), fields[cols[i]], err)
				}
				row[i] = v
			}
		}
		groups = []rowGroup{{cols: cols, rows: res.Rows}}
	} else {
		// Rows with DEFAULT in the same columns share a group: the
		// defaults are filled as the Write API fills missing columns.
		byPattern := map[string]int{}
		for _, vals := range ins.Rows {
			if len(vals) != len(cols) {
				pos := st.Pos
				for _, v := range vals {
					if v != nil {
						pos = v.Pos
						break
					}
				}
				return filter.NewError(q.SQL, pos, "Inserted row has wrong column count; Has %d, expected %d", len(vals), len(cols))
			}
			var key strings.Builder
			var gcols []int
			var row []any
			for i, v := range vals {
				if v == nil {
					key.WriteByte('d')
					continue
				}
				key.WriteByte('v')
				x, err := v.Compile(q.Params)
				if err != nil {
					return err
				}
				out, err := x.Values(ctx, nil, 1)
				if err != nil {
					return err
				}
				c, err := sql.Coerce(out[0], x.Type(), v.Literal, fields[cols[i]])
				if err != nil {
					return coerceError(q.SQL, v.Pos, "Value", fields[cols[i]], err)
				}
				gcols = append(gcols, cols[i])
				row = append(row, c)
			}
			g, ok := byPattern[key.String()]
			if !ok {
				g = len(groups)
				byPattern[key.String()] = g
				groups = append(groups, rowGroup{cols: gcols})
			}
			groups[g].rows = append(groups[g].rows, row)
		}
	}
	// The job's outcome once the rows are committed, logged before the
	// commit (commit.go).
	intent := func(stream string, rows int64) error {
		done := *stats
		done.AffectedRows = rows
		return s.logStatementCommit(project, q, &commitRecord{Kind: commitInsert, Table: ct.ID, Stream: stream, Stats: done})
	}
	n, err := s.appendRowsLogged(ctx, ct, groups, intent)
	if err != nil {
		var re *rowsError
		if errors.As(err, &re) {
			return filter.NewError(q.SQL, st.Pos, "%s", re.msg)
		}
		return err
	}
	stats.AffectedRows = n
	return nil
}

func coerceError(src string, pos int, what string, f *schema.Field, err error) error {
	var ce *sql.CoerceError
	if errors.As(err, &ce) {
		return filter.NewError(src, pos, "%s has type %s which cannot be inserted into column %s, which has type %s", what, ce.From, f.Name, ce.To)
	}
	var fe *filter.Error
	if errors.As(err, &fe) {
		return filter.NewError(src, pos, "Could not cast literal to type %s: %s", sql.TypeName(f.Type), fe.Msg)
	}
	return err
}

// rowsError is rows the table refuses (a NULL in a REQUIRED column, a
// value out of its type's range or length).
type rowsError struct{ msg string }

func (e *rowsError) Error() string { return e.msg }

// appendRows appends the groups' rows to table t through one PENDING
// stream committed at the end (all rows or none become visible), filling
// the columns a group lacks as the Write API does (their default, else
// NULL; a REQUIRED column without one is an error). It returns the rows
// appended.
func (s *Store) appendRows(ctx context.Context, t *catalog.Table, groups []rowGroup) (int64, error) {
	return s.appendRowsLogged(ctx, t, groups, nil)
}

// appendRowsLogged is appendRows calling intent (if not nil) with the
// stream and its rows right before the commit; an error from it fails
// the append, nothing committed.
func (s *Store) appendRowsLogged(ctx context.Context, t *catalog.Table, groups []rowGroup, intent func(stream string, rows int64) error) (int64, error) {
	var total int64
	for _, g := range groups {
		total += int64(len(g.rows))
	}
	if total == 0 {
		return 0, nil
	}
	if s.opts.DB == nil {
		return 0, fmt.Errorf("jobs: no storage engine to insert into %s", t.FullID())
	}
	sv := t.Schemas[len(t.Schemas)-1]
	var recs []arrow.RecordBatch
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for _, g := range groups {
		in := &schema.Schema{}
		for _, c := range g.cols {
			f := *sv.Schema.Fields[c]
			// REQUIRED relaxes to NULLABLE (the values were checked);
			// a REPEATED column stays one (it was made a scalar column
			// and an ARRAY value failed to build).
			if f.Mode != schema.Repeated {
				f.Mode = schema.Nullable
			}
			f.DefaultValueExpression = ""
			in.Fields = append(in.Fields, &f)
		}
		rec, err := sql.BuildRecordRows(in, g.rows)
		if err != nil {
			return 0, err
		}
		defer rec.Release()
		var buf bytes.Buffer
		w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()))
		if err := w.Close(); err != nil {
			return 0, err
		}
		dec, err := arrowrows.Compile(bytes.TrimSuffix(buf.Bytes(), []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}), sv.Schema)
		if err != nil {
			return 0, fmt.Errorf("jobs: insert into %s: %w", t.FullID(), err)
		}
		dec.Now = s.opts.Clock
		out, rowErrs, err := dec.Conform(rec, protorows.MissingValues{Default: protorows.DefaultValue})
		if err != nil {
			return 0, fmt.Errorf("jobs: insert into %s: %w", t.FullID(), err)
		}
		if len(rowErrs) > 0 {
			return 0, &rowsError{msg: fmt.Sprintf("Invalid value in row %d: %s", rowErrs[0].Index+1, rowErrs[0].Message)}
		}
		recs = append(recs, out)
	}
	et, err := s.opts.DB.Table(t.ID)
	if err != nil {
		return 0, err
	}
	info, err := et.CreateStream(ctx, storage.StreamPending)
	if err != nil {
		return 0, err
	}
	var off int64
	for _, rec := range recs {
		for lo := int64(0); lo < rec.NumRows(); lo += appendBatchRows {
			hi := min(rec.NumRows(), lo+appendBatchRows)
			part := rec.NewSlice(lo, hi)
			_, err := et.Append(ctx, storage.AppendRequest{Stream: info.ID, Offset: off, Batch: part, SchemaVersion: sv.Version})
			part.Release()
			if err != nil {
				return 0, err
			}
			off += hi - lo
		}
	}
	if _, err := et.Finalize(ctx, info.ID); err != nil {
		return 0, err
	}
	if intent != nil {
		if err := intent(info.ID, off); err != nil {
			return 0, err
		}
	}
	if h := s.opts.rowsCommit; h != nil {
		if err := h(false); err != nil {
			return 0, err
		}
	}
	_, serrs, err := et.BatchCommit(ctx, []string{info.ID})
	if err != nil {
		return 0, err
	}
	if len(serrs) > 0 {
		return 0, fmt.Errorf("jobs: insert into %s: commit: %w", t.FullID(), serrs[0].Err)
	}
	if h := s.opts.rowsCommit; h != nil {
		_ = h(true)
	}
	return off, nil
}
