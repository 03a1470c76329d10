package jobs

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/bqstore/bqstore/internal/sql"
)

// DryRun checks q as a query job would run it and returns what BigQuery's
// dry run reports: the result's schema, the bytes the query would process
// (the logical size of the columns it reads, as a run bills them), the
// tables it reads and its statementType. The query is analyzed against
// its tables with no rows, so nothing is computed and no job is stored;
// the columns it reads are scanned to size them. Errors are the query's
// (the same as a run's, except runtime errors, which need rows). A script
// or a statement other than a query is only parsed: its statementType,
// no bytes.
func (s *Store) DryRun(ctx context.Context, project, location string, q Query) (Job, error) {
	now := s.opts.Clock()
	at := s.readTime(now) // the snapshot a run would read
	j := Job{Project: project, Location: location, Query: q, State: StateDone, Created: now, Started: now, End: now}
	sts, err := sql.ParseScript(q.SQL)
	if err != nil {
		return j, err
	}
	if q.Params != nil {
		q.Params.Index(q.SQL)
	}
	if len(sts) != 1 || sts[0].Type != "SELECT" {
		j.Stats.StatementType = "SCRIPT"
		if len(sts) == 1 {
			j.Stats.StatementType = sts[0].Type
		}
		return j, nil
	}
	var bytes int64
	res, err := sql.Run(ctx, sts[0].Text, func(ctx context.Context, n sql.TableName) (sql.Table, error) {
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
	}, sql.Options{MaxMemory: s.opts.MaxMemory, Params: q.Params, Now: at,
		Wildcard: func(ctx context.Context, n sql.TableName) ([]sql.WildcardTable, error) {
			return s.wildcard(project, q, n)
		}})
	if err != nil {
		return j, err
	}
	j.Stats.StatementType = "SELECT"
	j.Schema, j.BytesProcessed, j.Stats.BytesProcessed = res.Schema, bytes, bytes
	for _, n := range res.Tables {
		j.Referenced = append(j.Referenced, resolveRef(j, n))
	}
	return j, nil
}

// sizingTable scans a table's columns to add up their logical size and
// hands the query no rows.
type sizingTable struct {
	sql.Table
	bytes *int64
}

func (t *sizingTable) Scan(ctx context.Context, cols []string, fn func(arrow.RecordBatch) error) error {
	return t.Table.Scan(ctx, cols, func(rec arrow.RecordBatch) error {
		*t.bytes += sql.LogicalBytes(rec)
		return nil
	})
}
