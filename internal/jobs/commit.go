package jobs

import (
	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/sql"
	"github.com/bqstore/bqstore/internal/storage"
)

// An INSERT commits its rows (one PENDING stream, BatchCommit) before its
// job's DONE record is logged, and so does a query job appending its
// rows to an existing destination table (WRITE_APPEND, WRITE_EMPTY); a
// crash between the two would leave the rows committed and the job,
// recovered, failed ("run it again"): a client that reruns it duplicates
// the rows. So the job first logs, on its RUNNING job, the stream it is
// about to commit and the outcome the job has once it is committed (a
// commitRecord); Open asks the engine about the stream of a job a crash
// cut after that record: committed, the job is DONE with that outcome;
// otherwise it failed as any job the server stopped (its stream, never
// committed, is given up when its PENDING TTL passes:
// storage.AbandonExpired).
//
// A query job creating or replacing its destination table moves its
// stage table over the name (replace.go), its last change too: it logs
// the stage table's id first, and Open finds the job done if the
// destination has that id (a moved table keeps its id). A statement
// that builds its table aside (CREATE TABLE AS SELECT, CREATE OR
// REPLACE TABLE|VIEW) does the same with its target table (commitSwap).
//
// A DDL statement logs its catalog change the same way (ddlcommit.go).
//
// A statement's change (commitInsert, commitSwap) is the job's outcome
// only when it is the job's last change (Last): the last statement of
// its script, with no query result to write to a destination table
// after it. Only such a statement logs a record; a script cut after an
// earlier statement did not complete, whatever that statement
// committed, and recovers failed: as in BigQuery, a script is not
// atomic, each of its statements commits on its own and a failed
// script keeps the changes of the statements before the failure. A
// recovered script has the statistics it would have had (SCRIPT, its
// statements, its bytes) but no result rows: its result query's rows,
// never committed to its anonymous table, are dropped with it. The
// append to a destination is always a job's last change.

// Kinds of commitRecord.
const (
	commitInsert      = "insert"
	commitDestination = "destination"
	// commitMove: the job's stage table (replace.go) is about to be
	// moved over its destination, creating or replacing it; Table is
	// the stage's id, which the moved table keeps, and Stream is "".
	commitMove = "move"
	// commitSwap: a statement's stage table is about to be moved over
	// its Target (CREATE TABLE AS SELECT, CREATE OR REPLACE
	// TABLE|VIEW); Table is the stage's id, Stream is "".
	commitSwap = "swap"
)

// commitRecord is the last change a job is making: Kind is one of the
// kinds above, Table the engine table's id (the stage's for a move or
// a swap), Stream the PENDING stream's ("" for a move or a swap),
// Target the table a swap creates or replaces; the rest is the job's
// outcome once it is made (Schema, NumRows, Referenced and
// Destination: a destination's only). Last marks a statement's change
// that is its job's last (see above): records of a script without it
// (written before it existed) are not the job's outcome.
type commitRecord struct {
	Kind        string         `json:"kind"`
	Table       string         `json:"table"`
	Stream      string         `json:"stream"`
	Stats       Stats          `json:"stats"`
	Schema      *schema.Schema `json:"schema,omitempty"`
	NumRows     int64          `json:"numRows,omitempty"`
	Referenced  []TableRef     `json:"referenced,omitempty"`
	Destination *TableRef      `json:"destination,omitempty"`
	Target      *TableRef      `json:"target,omitempty"`
	Last        bool           `json:"last,omitempty"`
	// Dataset and ETag: a DDL statement's (ddlcommit.go).
	Dataset *DatasetRef `json:"dataset,omitempty"`
	ETag    string      `json:"etag,omitempty"`
	// View: a CREATE VIEW's query (ddlcommit.go), absent in older records.
	View string `json:"view,omitempty"`
}

// logCommit logs, durably, that a statement of q (job project/q.job) is
// about to commit c.Stream. It fails when the record cannot be logged:
// committing without it would reopen the window.
func (s *Store) logCommit(project string, q Query, c *commitRecord) error {
	if s.jl == nil || q.job == "" {
		return nil
	}
	s.mu.Lock()
	e, ok := s.mu.jobs[key{project, q.job}]
	if !ok || e.job.State != StateRunning {
		s.mu.Unlock()
		return nil
	}
	j := e.job
	s.mu.Unlock()
	j.commit = c
	return s.persist(&j)
}

// logStatementCommit logs c, the change statement stats one of q is
// about to make, if it is q's job's last change (q.last; see above),
// with the job's outcome once it is made (q.outcome).
func (s *Store) logStatementCommit(project string, q Query, c *commitRecord) error {
	if !q.last {
		return nil
	}
	c.Last, c.Stats = true, q.outcome(c.Stats)
	return s.logCommit(project, q, c)
}

// logSwap logs that the statement of q with statistics stats is about
// to move its stage table, engine table stage, over target (swap).
func (s *Store) logSwap(project string, q Query, stage string, target TableRef, stats Stats) error {
	return s.logStatementCommit(project, q, &commitRecord{Kind: commitSwap, Table: stage, Target: &target, Stats: stats})
}

// outcome is the Stats of q's job once the statement of q with
// statistics one, its last, is done: one, or a script's.
func (q Query) outcome(one Stats) Stats {
	if q.stmts > 1 {
		return Stats{StatementType: "SCRIPT", NumChildJobs: q.stmts, BytesProcessed: q.spent + one.BytesProcessed}
	}
	return one
}

// destinationIntent is the intent of j's append to its destination d,
// engine table table: j holds the job's outcome but Destination.
func (s *Store) destinationIntent(j *Job, d TableRef, table string) func(stream string, rows int64) error {
	return func(stream string, _ int64) error {
		return s.logCommit(j.Project, j.Query, destinationRecord(j, d, commitDestination, table, stream))
	}
}

// destinationRecord is the commitRecord of a change of kind to j's
// destination d: j holds the job's outcome but Destination.
func destinationRecord(j *Job, d TableRef, kind, table, stream string) *commitRecord {
	return &commitRecord{Kind: kind, Table: table, Stream: stream,
		Stats: j.Stats, Schema: j.Schema, NumRows: j.NumRows, Referenced: j.Referenced, Destination: &d}
}

// recoverCommit completes job j, RUNNING when the server stopped, if it
// had committed the stream of its commit record (see above); it reports
// whether it did.
func recoverCommit(cat *catalog.Catalog, db *storage.DB, j *Job) bool {
	c := j.commit
	if c != nil && ddlKinds[c.Kind] {
		return recoverDDL(cat, j)
	}
	if c == nil || db == nil {
		return false
	}
	if c.Kind == commitMove {
		// The move happened if the destination is the stage table.
		if j.Query.Destination == nil || c.Destination == nil {
			return false
		}
		d := c.Destination
		t, err := cat.Table(d.Project, d.Dataset, d.Table)
		if err != nil || t.ID != c.Table {
			return false
		}
		j.Err, j.Stats, j.BytesProcessed = nil, c.Stats, c.Stats.BytesProcessed
		j.Schema, j.NumRows, j.Referenced, j.Destination = c.Schema, c.NumRows, c.Referenced, *d
		return true
	}
	switch c.Kind {
	case commitInsert, "": // "": the first records had no kind
		sts, err := sql.ParseScript(j.Query.SQL)
		if err != nil || len(sts) == 0 || sts[len(sts)-1].Insert == nil || len(sts) > 1 && !c.Last {
			return false
		}
	case commitDestination:
		if j.Query.Destination == nil || c.Destination == nil {
			return false
		}
	case commitSwap:
		// The swap happened if the target is the stage table.
		d := c.Target
		if !c.Last || d == nil {
			return false
		}
		t, err := cat.Table(d.Project, d.Dataset, d.Table)
		if err != nil || t.ID != c.Table {
			return false
		}
		j.Err, j.Stats, j.BytesProcessed = nil, c.Stats, c.Stats.BytesProcessed
		return true
	default:
		return false
	}
	t, err := db.Table(c.Table)
	if err != nil {
		return false
	}
	info, err := t.Stream(c.Stream)
	if err != nil || info.State != storage.StreamCommittedState {
		return false
	}
	j.Err, j.Stats, j.BytesProcessed = nil, c.Stats, c.Stats.BytesProcessed
	if c.Kind == commitDestination {
		j.Schema, j.NumRows, j.Referenced, j.Destination = c.Schema, c.NumRows, c.Referenced, *c.Destination
	}
	return true
}
