package jobs

import "github.com/bqstore/bqstore/internal/catalog"

// A DDL statement that is its job's last change (CREATE TABLE without a
// query, CREATE VIEW, CREATE SCHEMA, DROP, ALTER, RENAME) logs, durably,
// what it is about to change before the catalog change, as an INSERT
// logs its stream (commit.go): a crash between the change and the job's
// DONE record would otherwise recover the job failed ("run it again")
// with its change made, and the rerun fail ("Already Exists", "Not
// found", "Column already exists"). Open finds the job done if the
// catalog shows the change:
//
//   - commitCreate: Target (a table or view) or Dataset exists (the
//     statement saw it missing before it logged: one that finds it
//     fails, or skips, without logging), and for a view (View, its
//     query) is a view of that query;
//   - commitDrop: no table has the id Table any more (table ids are never
//     reused), or Dataset is missing;
//   - commitAlter: Target or Dataset exists with another etag than ETag,
//     the one it had before (every catalog change of it gives a new one);
//   - commitRename: Target is the table of id Table.
//
// A CREATE that another job's create of the same name beat recovers done
// too (the name exists), as an IF NOT EXISTS that found it would be.
const (
	commitCreate = "create"
	commitDrop   = "drop"
	commitAlter  = "alter"
	commitRename = "rename"
)

var ddlKinds = map[string]bool{commitCreate: true, commitDrop: true, commitAlter: true, commitRename: true}

// logDDL logs c, the catalog change the DDL statement of q is about to
// make with outcome stats, if it is its job's last change.
func (s *Store) logDDL(project string, q Query, c *commitRecord, stats Stats) error {
	c.Stats = stats
	return s.logStatementCommit(project, q, c)
}

// recoverDDL completes job j, RUNNING when the server stopped with the
// DDL commit record j.commit, if the catalog shows its change; it reports
// whether it did.
func recoverDDL(cat *catalog.Catalog, j *Job) bool {
	c := j.commit
	if !c.Last {
		return false
	}
	done := false
	switch {
	case c.Target != nil:
		d := c.Target
		t, err := cat.Table(d.Project, d.Dataset, d.Table)
		switch c.Kind {
		case commitCreate:
			done = err == nil && (c.View == "" || t.View != nil && t.View.Query == c.View)
		case commitDrop:
			_, err := cat.TableByID(c.Table)
			done = isNotFound(err)
		case commitAlter:
			done = err == nil && t.ETag != c.ETag
		case commitRename:
			done = err == nil && t.ID == c.Table
		}
	case c.Dataset != nil:
		ds, err := cat.Dataset(c.Dataset.Project, c.Dataset.Dataset)
		switch c.Kind {
		case commitCreate:
			done = err == nil
		case commitDrop:
			done = isNotFound(err)
		case commitAlter:
			done = err == nil && ds.ETag != c.ETag
		}
	}
	if done {
		j.Err, j.Stats, j.BytesProcessed = nil, c.Stats, c.Stats.BytesProcessed
	}
	return done
}
