package jobs

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/sql"
	"github.com/bqstore/bqstore/internal/storage"
)

// The messages of a cancelled job and of one stopped by the server.
const (
	cancelledMsg = "Job execution was cancelled: User requested cancellation"
	shutdownMsg  = "The job was stopped by a server shutdown; run it again."
	timedOutMsg  = "Job execution was cancelled: Job timed out after %v"
)

// appendRows is how many result rows go in one append (one engine frame).
const appendRows = 4096

// run is a job's goroutine: it waits for a slot, runs the query, writes
// its rows and records the outcome.
func (s *Store) run(ctx context.Context, e *entry) {
	pprof.Do(ctx, pprof.Labels("bqstore", "job"), func(ctx context.Context) {
		select {
		case s.slots <- struct{}{}:
		case <-ctx.Done():
			s.finish(e, Job{}, nil, ctx.Err())
			return
		}
		defer func() { <-s.slots }()

		s.mu.Lock()
		e.job.State, e.job.Started = StateRunning, s.opts.Clock()
		j := e.job
		s.mu.Unlock()
		if err := s.persist(&j); err != nil {
			s.log.Error("jobs: log a started job", "job", j.ID, "err", err)
		}
		out, rec, err := s.executeRecovered(ctx, j)
		s.finish(e, out, rec, err)
	})
}

// executeRecovered is execute (after the BeforeRun hook) on a job's own
// goroutine, where a panic (a bug in a statement's execution) would end
// the server's process: it fails the job with a BackendError instead and
// logs the stack.
func (s *Store) executeRecovered(ctx context.Context, j Job) (out Job, rec arrow.RecordBatch, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("jobs: panic while running a job (a bug)", "job", j.ID, "panic", p, "stack", string(debug.Stack()))
			out, rec, err = Job{}, nil, &BackendError{Msg: internalErrorMsg}
		}
	}()
	if s.opts.BeforeRun != nil {
		s.opts.BeforeRun(ctx, j.Project, j.ID)
	}
	return s.execute(ctx, j)
}

// internalErrorMsg is BigQuery's message for an internal error.
const internalErrorMsg = "An internal error occurred and the request could not be completed."

// finish records the job's outcome: out's result fields when err is nil.
func (s *Store) finish(e *entry, out Job, rec arrow.RecordBatch, err error) {
	if err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		switch {
		case s.bgCtx.Err() != nil:
			err = &BackendError{Msg: shutdownMsg}
		case errors.Is(err, context.DeadlineExceeded):
			s.mu.Lock()
			limit := time.Duration(e.job.Query.TimeoutMs) * time.Millisecond
			s.mu.Unlock()
			err = &StoppedError{Msg: fmt.Sprintf(timedOutMsg, limit), Timeout: true}
		default:
			err = &StoppedError{Msg: cancelledMsg}
		}
	}
	s.mu.Lock()
	done := e.job
	s.mu.Unlock()
	if done.Started.IsZero() {
		done.Started = s.opts.Clock()
	}
	done.State, done.End, done.Err = StateDone, s.opts.Clock(), err
	done.BytesProcessed, done.Referenced, done.Stats = out.BytesProcessed, out.Referenced, out.Stats
	if err == nil {
		done.Schema, done.NumRows, done.Destination = out.Schema, out.NumRows, out.Destination
	}
	done.commit = nil
	// Logged before it is published: a client that saw DONE (Get, List,
	// getQueryResults) sees it after a crash too, and a Delete (which
	// needs DONE) is logged after it, never replayed before it.
	if err := s.persist(&done); err != nil {
		s.log.Error("jobs: log a finished job", "job", done.ID, "err", err)
	}
	s.mu.Lock()
	e.job = done
	if err == nil {
		e.rec = rec
	}
	e.cancel()
	e.cancel = nil
	s.mu.Unlock()
	close(e.done)
}

// execute runs j's statements (internal/sql: a query, DDL, DML or a
// script) and writes the rows of its result statement (runScript), if any. It returns the
// result's fields of a Job, and the rows when there is no engine.
//
// With an engine, a query's rows stream into the job's anonymous table,
// or its destinationTable (resultSink), as the executor produces them,
// committed only once the query succeeded.
func (s *Store) execute(ctx context.Context, j Job) (out Job, rec arrow.RecordBatch, err error) {
	j.Query.stage, j.Query.location, j.Query.job = stageRef(j.Project, j.Location, j.ID), j.Location, j.ID
	ctx = withReads(ctx) // what a replace of a table the job read checks (replace.go)
	j.Query.script = &script{project: j.Project, id: j.ID, location: j.Location}
	q := j.Query
	var sink *resultSink
	var ssink sql.Sink // nil without an engine (not a nil *resultSink)
	if s.opts.DB != nil {
		sink = s.newResultSink(&j)
		ssink = sink
	}
	defer func() {
		if p := recover(); p != nil {
			sink.abort()
			panic(p)
		}
		if err != nil {
			sink.abort()
			s.finishScript(q.script, TableRef{}, nil, false)
		}
	}()
	q.temps = map[string]TableRef{} // runScript fills it
	res, stats, err := s.runScript(ctx, j.Project, q, j.Started, ssink)
	out.Stats, out.BytesProcessed = stats, stats.BytesProcessed
	// A script's temporary table is named as it exists: in the job's
	// hidden dataset (BigQuery's _script dataset).
	out.Referenced = referenced(j, q, res)
	if err != nil {
		return out, nil, err
	}
	// BigQuery refuses such a query before it runs, from an estimate;
	// here the exact figure is known once it ran, and its result is
	// dropped: the caller sees the same error and no rows.
	if len(out.Referenced) > 0 && q.MaxBytesBilled > 0 && Billed(out.BytesProcessed) > q.MaxBytesBilled {
		return out, nil, &BytesBilledError{Limit: q.MaxBytesBilled, Required: Billed(out.BytesProcessed)}
	}
	if res == nil {
		return out, nil, nil // DDL, DML: no rows
	}
	out.Schema, out.NumRows = res.Schema, res.NumRows
	if s.opts.DB == nil {
		if q.Destination != nil {
			return out, nil, &BackendError{Msg: "bqstore runs without a storage engine here: no destination table"}
		}
		rec, err := res.Record()
		if err == nil {
			s.finishScript(q.script, TableRef{}, rec, true)
		}
		return out, rec, err
	}
	if !sink.began() {
		// A result whose rows were held (none with an engine today:
		// the result's query, a script's too, writes to the sink).
		if err := sink.Begin(ctx, res.Schema); err != nil {
			return out, nil, err
		}
		if err := sink.Write(ctx, res.Rows); err != nil {
			return out, nil, err
		}
		res.Rows = nil
	}
	// The job's outcome but its destination, which a commit to a
	// destination table logs before it (commit.go).
	j.Schema, j.NumRows, j.Stats, j.BytesProcessed, j.Referenced = out.Schema, out.NumRows, out.Stats, out.BytesProcessed, out.Referenced
	if err := sink.commit(ctx); err != nil {
		return out, nil, err
	}
	out.Destination = sink.ref
	s.finishScript(q.script, sink.ref, nil, true)
	return out, nil, nil
}

// resolveRef is the full name of a table the query named.
func resolveRef(j Job, n sql.TableName) TableRef {
	p, d := n.Project, n.Dataset
	if d == "" {
		p, d = j.Query.DefaultProject, j.Query.DefaultDataset
	}
	if p == "" {
		p = j.Project
	}
	return TableRef{Project: p, Dataset: d, Table: n.Table}
}

// AnonDataset is the hidden dataset of the anonymous result tables of a
// project's jobs in location: "_" and 40 hex digits, as BigQuery names
// them (datasets.list leaves out datasets whose id starts with "_").
func AnonDataset(project, location string) string {
	h := sha1.Sum([]byte("bqstore anonymous dataset\x00" + project + "\x00" + location))
	return "_" + hex.EncodeToString(h[:])
}

// anonRef is the anonymous result table of job project/id: "anon" and 40
// hex digits, in AnonDataset.
func anonRef(project, location, id string) TableRef {
	h := sha1.Sum([]byte("bqstore anonymous table\x00" + project + "\x00" + id))
	return TableRef{Project: project, Dataset: AnonDataset(project, location), Table: "anon" + hex.EncodeToString(h[:])}
}

// commitStream finalizes stream (rows of them) of engine table st and
// commits it, calling intent (if not nil) with the stream and its rows
// right before the commit (an error from it fails the commit, nothing
// committed); ifEmpty commits only into an empty table
// (storage.ErrTableNotEmpty).
func (s *Store) commitStream(ctx context.Context, st *storage.Table, stream string, rows int64, intent func(stream string, rows int64) error, ifEmpty bool) error {
	if _, err := st.Finalize(ctx, stream); err != nil {
		return err
	}
	if intent != nil {
		if err := intent(stream, rows); err != nil {
			return err
		}
	}
	if h := s.opts.rowsCommit; h != nil {
		if err := h(false); err != nil {
			return err
		}
	}
	commit := st.BatchCommit
	if ifEmpty {
		commit = st.BatchCommitIfEmpty
	}
	_, serrs, err := commit(ctx, []string{stream})
	if err != nil {
		return err
	}
	if len(serrs) > 0 {
		return fmt.Errorf("jobs: commit result stream: %w", serrs[0].Err)
	}
	if h := s.opts.rowsCommit; h != nil {
		_ = h(true)
	}
	return nil
}

// Rows reads a done job's result rows.
type Rows struct {
	// Schema is the result's schema (of the result table).
	Schema *schema.Schema
	// Total is the number of rows.
	Total int64

	snap *storage.Snapshot // nil: rec holds the rows
	cols []int
	rec  arrow.RecordBatch
}

// Rows opens the result of job j (DONE, without error). The caller closes
// it.
func (s *Store) Rows(j Job) (*Rows, error) {
	if j.State != StateDone {
		return nil, fmt.Errorf("jobs: job %s is not done", j.ID)
	}
	if j.Err != nil {
		return nil, j.Err
	}
	if j.Schema == nil {
		return &Rows{}, nil // DDL, DML: no rows
	}
	if j.Destination == (TableRef{}) {
		s.mu.Lock()
		e, ok := s.mu.jobs[key{j.Project, j.ID}]
		s.mu.Unlock()
		if !ok || e.rec == nil {
			return nil, ErrNotFound
		}
		return &Rows{Schema: j.Schema, Total: e.rec.NumRows(), rec: e.rec}, nil
	}
	d := j.Destination
	gone := &TableError{NotFound: true, Msg: fmt.Sprintf("Not found: Table %s:%s.%s", d.Project, d.Dataset, d.Table)}
	ct, err := s.cat.Table(d.Project, d.Dataset, d.Table)
	if errors.Is(err, catalog.ErrNotFound) || err == nil && s.opts.DB == nil {
		return nil, gone
	}
	if err != nil {
		return nil, err
	}
	st, err := s.opts.DB.Table(ct.ID)
	if errors.Is(err, storage.ErrTableNotFound) {
		return nil, gone
	}
	if err != nil {
		return nil, err
	}
	snap, err := st.Snapshot(time.Time{})
	if err != nil {
		return nil, err
	}
	var full *schema.Schema
	for _, sv := range ct.Schemas {
		if sv.Version == snap.SchemaVersion() {
			full = sv.Schema
		}
	}
	if full == nil {
		snap.Release()
		return nil, fmt.Errorf("jobs: table %s has no schema version %d", ct.ID, snap.SchemaVersion())
	}
	cols := make([]int, min(len(full.Fields), snap.Schema().NumFields()))
	for i := range cols {
		cols[i] = i
	}
	return &Rows{Schema: &schema.Schema{Fields: full.Fields[:len(cols)]}, Total: snap.NumRows(), snap: snap, cols: cols}, nil
}

// Read calls fn with the rows [start, end) in order, in one or more
// records (fn must not keep them).
func (r *Rows) Read(ctx context.Context, start, end int64, fn func(rec arrow.RecordBatch) error) error {
	end = min(end, r.Total)
	if start >= end {
		return nil
	}
	if r.snap == nil {
		sub := r.rec.NewSlice(start, end)
		defer sub.Release()
		return fn(sub)
	}
	chunks := r.snap.Chunks()
	for pos := start; pos < end; {
		ci := sort.Search(len(chunks), func(i int) bool { return chunks[i].RowEnd > pos })
		if ci == len(chunks) {
			return nil
		}
		c := chunks[ci]
		hi := min(end, c.RowEnd)
		rec, err := r.snap.ReadChunk(ctx, c, pos-c.RowStart, hi-c.RowStart, r.cols)
		if err != nil {
			return err
		}
		err = fn(rec)
		rec.Release()
		if err != nil {
			return err
		}
		pos = hi
	}
	return nil
}

// Close releases the rows' snapshot.
func (r *Rows) Close() {
	if r.snap != nil {
		r.snap.Release()
	}
}
