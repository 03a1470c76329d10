package jobs

import (
	"github.com/bqstore/bqstore/internal/sql"
	"github.com/bqstore/bqstore/internal/storage"
)

// An INSERT commits its rows (one PENDING stream, BatchCommit) before its
// job's DONE record is logged; a crash between the two would leave the
// rows committed and the job, recovered, failed ("run it again"): a
// client that reruns it duplicates the rows. So the INSERT first logs,
// on its RUNNING job, the stream it is about to commit and the outcome
// the job has once it is committed (a commitRecord); Open asks the
// engine about the stream of a job a crash cut after that record:
// committed, the job is DONE with that outcome; otherwise it failed as
// any job the server stopped (its stream, never committed, is given up
// when its PENDING TTL passes: storage.AbandonExpired).
//
// The outcome is the job's only when the INSERT is its only statement:
// a script cut after one of its statements did not complete, whatever
// that statement committed (as in BigQuery, a script's statements each
// commit on their own).

// commitRecord is the stream an INSERT of a job is committing: Table is
// the engine table's id, Stream the PENDING stream's, Stats the job's
// statistics once it is committed.
type commitRecord struct {
	Table  string `json:"table"`
	Stream string `json:"stream"`
	Stats  Stats  `json:"stats"`
}

// logCommit logs, durably, that the INSERT of q (a statement of job
// project/q.job) is about to commit stream of engine table table with
// outcome stats. It fails when the record cannot be logged: committing
// without it would reopen the window.
func (s *Store) logCommit(project string, q Query, table, stream string, stats Stats) error {
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
	j.commit = &commitRecord{Table: table, Stream: stream, Stats: stats}
	return s.persist(&j)
}

// recoverCommit completes job j, RUNNING when the server stopped, if its
// INSERT had committed the stream of its commit record (see above); it
// reports whether it did.
func recoverCommit(db *storage.DB, j *Job) bool {
	c := j.commit
	if c == nil || db == nil {
		return false
	}
	if sts, err := sql.ParseScript(j.Query.SQL); err != nil || len(sts) != 1 || sts[0].Insert == nil {
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
	return true
}
