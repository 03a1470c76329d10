package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/sql"
)

// This file serves logical views: a view is a catalog entry with a query
// (catalog.View); a query that names it runs that query, at the same
// snapshot time, and reads its result as a table.

// MaxViewDepth bounds views reading views (BigQuery allows 16 levels).
const MaxViewDepth = 16

type viewDepthKey struct{}

// creatingViewKey is the full id of the view a CREATE OR REPLACE VIEW
// checks its query for: a query reading it, directly or through other
// views, would make the view read itself.
type creatingViewKey struct{}

// viewError is an error of the query of a view: it names the innermost
// view once (a chain of views does not repeat the prefix).
type viewError struct {
	view string
	err  error
}

func (e *viewError) Error() string { return fmt.Sprintf("in view %s: %v", e.view, e.err) }
func (e *viewError) Unwrap() error { return e.err }

// ViewSchema runs the query of view self ("p:d.t", the full id of the
// view tables.insert/update/patch defines) in project and returns its
// result schema: the schema tables.insert and CREATE VIEW give the view.
// A query reading self, directly or through other views, is refused as
// CREATE OR REPLACE VIEW refuses it.
func (s *Store) ViewSchema(ctx context.Context, project, self, query string) (*schema.Schema, error) {
	ctx = context.WithValue(ctx, creatingViewKey{}, self)
	res, err := s.query(ctx, project, Query{}, query, 0, s.readTime(s.opts.Clock()))
	if err != nil {
		return nil, err
	}
	return res.Schema, nil
}

// openView runs view v (of table ct) at snapshot time at.
func (s *Store) openView(ctx context.Context, ct *catalog.Table, at time.Time) (sql.Table, error) {
	depth, _ := ctx.Value(viewDepthKey{}).(int)
	if depth >= MaxViewDepth {
		return nil, &TableError{Msg: fmt.Sprintf("View %s: views nest more than %d levels deep", ct.FullID(), MaxViewDepth)}
	}
	if v, _ := ctx.Value(creatingViewKey{}).(string); v == ct.FullID() {
		return nil, &TableError{Msg: fmt.Sprintf("View %s cannot read itself: its query references it", v)}
	}
	ctx = context.WithValue(ctx, viewDepthKey{}, depth+1)
	res, err := s.query(ctx, ct.ProjectID, Query{}, ct.View.Query, 0, at)
	if err != nil {
		var ve *viewError
		if errors.As(err, &ve) {
			return nil, err
		}
		return nil, &viewError{view: ct.FullID(), err: err}
	}
	return &resultTable{res: res}, nil
}

// resultTable is a query result read as a table: a view's, which costs
// what its query read (sql.ComputedTable), not the size of its rows.
type resultTable struct{ res *sql.Result }

func (t *resultTable) Schema() *schema.Schema { return t.res.Schema }

func (t *resultTable) ReadBytes() int64 { return t.res.BytesProcessed }

func (t *resultTable) Close() {}

// resultBatchRows is the rows of one batch Scan hands on.
const resultBatchRows = 8192

func (t *resultTable) Scan(ctx context.Context, cols []string, fn func(arrow.RecordBatch) error) error {
	sub := &schema.Schema{}
	idx := make([]int, len(cols))
	for i, c := range cols {
		idx[i] = schema.IndexNames(t.res.Schema.Fields).Lookup(c)
		if idx[i] < 0 {
			return fmt.Errorf("jobs: column %s not in the view's result", c)
		}
		sub.Fields = append(sub.Fields, t.res.Schema.Fields[idx[i]])
	}
	rows := t.res.Rows
	for lo := 0; lo < len(rows); lo += resultBatchRows {
		hi := min(len(rows), lo+resultBatchRows)
		if len(cols) == 0 {
			// No columns (COUNT(*)): batches that still count rows.
			if err := fn(array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, int64(hi-lo))); err != nil {
				return err
			}
			continue
		}
		part := make([][]any, hi-lo)
		for r := range part {
			row := make([]any, len(idx))
			for i, j := range idx {
				row[i] = rows[lo+r][j]
			}
			part[r] = row
		}
		rec, err := sql.BuildRelationRows(sub, part)
		if err != nil {
			return err
		}
		err = fn(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) createView(ctx context.Context, project string, q Query, st *sql.Statement, at time.Time, stats *Stats) error {
	cv := st.CreateView
	ref, err := s.target(project, q, cv.Name)
	if err != nil {
		return err
	}
	stats.DDLTargetTable = &ref
	cur, err := s.cat.Table(ref.Project, ref.Dataset, ref.Table)
	exists := err == nil
	if err != nil && !isNotFound(err) {
		return err
	}
	if exists && cv.IfNotExists {
		stats.DDLOperation = "SKIP"
		return nil
	}
	if exists && cv.OrReplace && cur.View == nil {
		return filter.NewError(q.SQL, cv.Name.Pos, "%s is a table, not a view: CREATE OR REPLACE VIEW cannot replace it", cur.FullID())
	}
	// The query runs as it will when read: in the view's project, no
	// default dataset. Its errors carry the statement's positions.
	qctx := ctx
	if exists {
		qctx = context.WithValue(ctx, creatingViewKey{}, cur.FullID())
	}
	res, err := s.query(qctx, ref.Project, Query{}, cv.QueryText, cv.QueryPos, at)
	if err != nil {
		return err
	}
	var patch catalog.TablePatch
	tableOptions(cv.Options, &patch)
	spec := catalog.TableSpec{ProjectID: ref.Project, DatasetID: ref.Dataset, TableID: ref.Table, Schema: res.Schema,
		View: &catalog.View{Query: cv.Query}}
	applyToSpec(patch, &spec)
	stats.DDLOperation = "CREATE"
	if exists && !cv.OrReplace {
		// Failed before it logs anything: a logged create whose target
		// exists would recover done (ddlcommit.go).
		return s.alreadyExists(ref)
	}
	if !exists {
		// One catalog change, logged before it (ddlcommit.go).
		if err := s.logDDL(project, q, &commitRecord{Kind: commitCreate, Target: &ref, View: cv.Query}, *stats); err != nil {
			return err
		}
		_, err = s.cat.CreateTable(ctx, spec)
		return skipExisting(err, cv.IfNotExists, stats)
	}
	// Built aside and swapped in (replace.go): readers find the old
	// view until the new one replaces it.
	var exp *time.Time
	if patch.Expiration != nil {
		exp = &spec.Expiration
	}
	t, err := s.stageTable(ctx, q, spec)
	if err != nil {
		return err
	}
	done := *stats
	done.DDLOperation = "REPLACE"
	if err := s.logSwap(project, q, t.ID, ref, done); err != nil {
		s.dropTable(q.stage)
		return err
	}
	if err := s.swap(ctx, q, ref, true, exp); err != nil {
		return err
	}
	*stats = done
	return nil
}

// notViewError is a VIEW statement naming a table, or a table statement
// naming a view.
func notViewError(src string, pos int, t *catalog.Table, isView bool) error {
	if isView {
		return filter.NewError(src, pos, "%s is a view, not a table", t.FullID())
	}
	return filter.NewError(src, pos, "%s is a table, not a view", strings.TrimSpace(t.FullID()))
}
