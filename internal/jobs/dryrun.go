package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/sql"
)

// DryRun checks q as a query job would run it and returns what BigQuery's
// dry run reports: the result's schema, the bytes the query would process
// (the logical size of the columns it reads, as a run bills them), the
// tables it reads and its statementType. The query is analyzed against
// its tables with no rows, so nothing is computed and no job is stored;
// the columns it reads are scanned to size them. Errors are the query's
// (the same as a run's, except runtime errors, which need rows). A lone
// INSERT or CREATE TABLE AS SELECT is checked as its run checks it before
// writing (the target table and its columns, the query analyzed and
// sized as above; nothing written or created); a script or another
// statement is only parsed: its statementType, no bytes. A query's
// destinationTable is checked as its run checks it (dryDestination).
// destinationTable with a script, DDL or DML is the run's error.
func (s *Store) DryRun(ctx context.Context, project, location string, q Query) (Job, error) {
	now := s.opts.Clock()
	at := s.readTime(now) // the snapshot a run would read
	j := Job{Project: project, Location: location, Query: q, State: StateDone, Created: now, Started: now, End: now}
	q.location = location // a dataset of another location is not found, as in a run
	sts, err := sql.ParseScript(q.SQL)
	if err != nil {
		return j, err
	}
	if q.Params != nil {
		q.Params.Index(q.SQL)
	}
	if typ, err := destinationRefused(q, sts); err != nil {
		j.Stats.StatementType = typ
		return j, err
	}
	if len(sts) != 1 {
		j.Stats.StatementType = "SCRIPT"
		return j, nil
	}
	st := sts[0]
	j.Stats.StatementType = st.Type
	text, from := st.Text, st.Pos
	switch {
	case st.Type == "SELECT":
	case st.Insert != nil:
		j.Stats.DML = true
		if err := s.dryInsert(project, q, st.Insert); err != nil {
			return j, err
		}
		text, from = st.Insert.Query, st.Insert.QueryPos
	case st.CreateTable != nil && st.CreateTable.Query != "":
		text, from = st.CreateTable.Query, st.CreateTable.QueryPos
	default:
		return j, nil
	}
	if text == "" {
		return j, nil // INSERT ... VALUES: reads no table
	}
	res, bytes, err := s.dryQuery(ctx, project, q, text, from, at)
	if err != nil {
		return j, err
	}
	if ins := st.Insert; ins != nil {
		want := len(ins.Columns)
		if ins.Columns == nil {
			ref, _ := qualify(project, q, ins.Table)
			ct, _ := s.cat.Table(ref.Project, ref.Dataset, ref.Table)
			want = len(ct.Schema().Fields)
		}
		if len(res.Schema.Fields) != want {
			return j, filter.NewError(q.SQL, ins.QueryPos, "Inserted row has wrong column count; Has %d, expected %d", len(res.Schema.Fields), want)
		}
	}
	if st.Type == "SELECT" {
		j.Schema = res.Schema
		if q.Destination != nil {
			if err := s.dryDestination(q, res.Schema); err != nil {
				return j, err
			}
		}
	}
	j.BytesProcessed, j.Stats.BytesProcessed = bytes, bytes
	for _, n := range res.Tables {
		j.Referenced = append(j.Referenced, resolveRef(j, n))
	}
	return j, nil
}

// dryInsert checks an INSERT's target as its run does before it reads:
// the table exists, is no view, and has the columns named.
func (s *Store) dryInsert(project string, q Query, ins *sql.Insert) error {
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
	names := schema.IndexNames(ct.Schema().Fields)
	for _, c := range ins.Columns {
		if names.Lookup(c) < 0 {
			return filter.NewError(q.SQL, ins.Table.Pos, "Column %s is not present in table %s", c, ct.FullID())
		}
	}
	return nil
}

// dryDestination checks q's destinationTable against the result's
// schema sch as openDestination does when the run has the result,
// changing nothing: a view, CREATE_NEVER of a missing table, the job's
// partitioning and clustering (against sch for a table the run would
// create or truncate, against the table's own for an append), and
// whether WRITE_APPEND can append sch once its schemaUpdateOptions
// applied. Whether a WRITE_EMPTY table is empty is left to the run.
func (s *Store) dryDestination(q Query, sch *schema.Schema) error {
	d := *q.Destination
	name := fmt.Sprintf("%s:%s.%s", d.Project, d.Dataset, d.Table)
	ct, err := s.cat.Table(d.Project, d.Dataset, d.Table)
	exists := err == nil
	if err != nil && !errors.Is(err, catalog.ErrNotFound) {
		return err
	}
	if exists && ct.View != nil {
		return &DestinationError{Reason: "invalid", Msg: fmt.Sprintf("Cannot write to a view: %s", name)}
	}
	if !exists && q.CreateDisposition == CreateNever {
		return &DestinationError{Reason: "notFound", Msg: "Not found: Table " + name}
	}
	if exists && q.WriteDisposition != WriteTruncate {
		if err := samePartitioning(q.Partitioning, ct); err != nil {
			return err
		}
		if q.WriteDisposition != WriteAppend {
			return nil
		}
		want := ct.Schema()
		add, relax := slices.Contains(q.SchemaUpdateOptions, AllowFieldAddition), slices.Contains(q.SchemaUpdateOptions, AllowFieldRelaxation)
		if next, changed := evolved(want, sch, add, relax); (add || relax) && changed {
			want = next
		}
		return appendable(want, sch, name)
	}
	if p := q.Partitioning; p != nil {
		return checkPartitioning(p, sch)
	}
	return nil
}

// dryQuery analyzes the query text against its tables with no rows, the
// columns it reads sized: the result (schema, tables) and the bytes.
func (s *Store) dryQuery(ctx context.Context, project string, q Query, text string, from int, at time.Time) (*sql.Result, int64, error) {
	var bytes int64
	res, err := sql.Run(ctx, text, func(ctx context.Context, n sql.TableName) (sql.Table, error) {
		var t sql.Table
		var err error
		if ref, qerr := qualify(project, q, n); qerr == nil {
			if ct, cerr := s.cat.Table(ref.Project, ref.Dataset, ref.Table); cerr == nil && ct.View != nil {
				t, err = s.openView(ctx, ct, at)
			} else {
				t, err = s.open(project, q, n, at)
			}
		} else {
			t, err = s.open(project, q, n, at)
		}
		if err != nil {
			return nil, err
		}
		return &sizingTable{Table: t, bytes: &bytes}, nil
	}, sql.Options{MaxMemory: s.opts.MaxMemory, Params: q.Params, Now: at, Offset: from,
		Wildcard: func(ctx context.Context, n sql.TableName) ([]sql.WildcardTable, error) {
			return s.wildcard(project, q, n)
		}})
	return res, bytes, err
}

// sizingTable scans a table's columns to add up their logical size and
// hands the query no rows.
type sizingTable struct {
	sql.Table
	bytes *int64
}

func (t *sizingTable) Scan(ctx context.Context, cols []string, fn func(arrow.RecordBatch) error) error {
	if ct, ok := t.Table.(sql.ComputedTable); ok {
		// A view: what its query read, as the run bills it.
		*t.bytes += ct.ReadBytes()
		return nil
	}
	return t.Table.Scan(ctx, cols, func(rec arrow.RecordBatch) error {
		*t.bytes += sql.LogicalBytes(rec)
		return nil
	})
}
