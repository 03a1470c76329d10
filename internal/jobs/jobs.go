// Package jobs runs BigQuery jobs over the catalog and the engine: query
// jobs of internal/sql, run asynchronously by the Store, their results
// written to a table (an anonymous table of a hidden dataset, or the
// job's destinationTable), and the jobs kept for 24 hours in a log that
// survives a restart (log.go, docs/format/jobs.md). See docs/design/sql.md.
//
// Outline. Insert records the job (PENDING, synced to the log) and starts
// its goroutine, which waits for one of MaxRunning slots, records RUNNING,
// runs the query under the job's context (cancelled by Cancel or Close),
// writes the rows to the result table through the engine's ordinary append
// path (a PENDING stream committed at the job's end: the table holds all
// of the rows or none) and records DONE with the outcome. Wait waits for
// DONE up to a timeout (jobs.query and getQueryResults' timeoutMs).
//
// Goroutines: one per job from Insert until DONE, and the sweep that
// forgets expired jobs (startSweep), owned by the Store; Close cancels
// them and waits. Locks: Store.mu guards the job table only
// and is never held across the log, the catalog or the engine.
//
// A job RUNNING when the server stopped (a crash) is DONE with a
// BackendError when the log is replayed; its result table, created but
// never committed, is dropped.
package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/sql"
	"github.com/bqstore/bqstore/internal/storage"
	"github.com/bqstore/bqstore/internal/storage/vfs"
)

// Retention bounds what the store keeps: jobs older than Retention are
// forgotten with their anonymous result tables, and so are the oldest
// done jobs beyond MaxJobs.
const (
	Retention = 24 * time.Hour
	MaxJobs   = 1000
	// MaxRunning is how many queries run at once; more jobs wait PENDING.
	MaxRunning = 4
	// SweepInterval is how often the Store forgets the jobs past
	// Retention (and drops their anonymous tables) besides at Open and
	// Insert: a server that gets no new jobs forgets them too.
	SweepInterval = time.Minute
)

var (
	// ErrDuplicate: a job with this id exists.
	ErrDuplicate = errors.New("jobs: duplicate job id")
	// ErrNotFound: no such job (or it expired).
	ErrNotFound = errors.New("jobs: job not found")
	// ErrRunning: the job is not done (jobs.delete).
	ErrRunning = errors.New("jobs: job is running")
	// ErrClosed: the store is closed.
	ErrClosed = errors.New("jobs: store closed")
)

const internalMsg = "An internal error occurred and the request could not be completed."

// TableError is a query's table that cannot be read: not found, or named
// without a dataset and no default dataset.
type TableError struct {
	NotFound bool
	Msg      string
}

func (e *TableError) Error() string { return e.Msg }

// StoppedError is a job cancelled by jobs.cancel (BigQuery's reason
// "stopped"), or stopped at its Query.TimeoutMs (Timeout; BigQuery's
// reason "timeout").
type StoppedError struct {
	Msg     string
	Timeout bool
}

func (e *StoppedError) Error() string { return e.Msg }

// BackendError is a job that failed for a reason of the server, not of
// the query: a crash while it ran, a storage error. On the wire it is
// BigQuery's 400 jobInternalError (the job is over; a retry cannot help).
type BackendError struct{ Msg string }

func (e *BackendError) Error() string { return e.Msg }

// DestinationError is a destination table the job's dispositions refuse.
// Reason is BigQuery's: notFound (missing under CREATE_NEVER), duplicate
// (not empty under WRITE_EMPTY), invalid (a schema WRITE_APPEND cannot
// append, a view).
type DestinationError struct {
	Reason string
	Msg    string
}

func (e *DestinationError) Error() string { return e.Msg }

// Dispositions of a destination table (BigQuery's createDisposition and
// writeDisposition).
const (
	CreateIfNeeded = "CREATE_IF_NEEDED"
	CreateNever    = "CREATE_NEVER"
	WriteTruncate  = "WRITE_TRUNCATE"
	WriteAppend    = "WRITE_APPEND"
	WriteEmpty     = "WRITE_EMPTY"
)

// Query is a query job's configuration.
type Query struct {
	SQL            string `json:"sql"`
	DefaultProject string `json:"defaultProject,omitempty"` // of DefaultDataset; "" for the job's project
	DefaultDataset string `json:"defaultDataset,omitempty"`
	// MaxBytesBilled fails a query whose bytes billed (Billed) would pass
	// it (maximumBytesBilled); 0: no limit.
	MaxBytesBilled int64 `json:"maxBytesBilled,omitempty"`
	// Destination is the table the rows go to; nil: an anonymous table.
	Destination *TableRef `json:"destination,omitempty"`
	// CreateDisposition and WriteDisposition apply to Destination; ""
	// means CREATE_IF_NEEDED and WRITE_EMPTY, BigQuery's defaults.
	CreateDisposition string `json:"createDisposition,omitempty"`
	WriteDisposition  string `json:"writeDisposition,omitempty"`
	// Partitioning is the destination's timePartitioning,
	// rangePartitioning and clustering (each nil when not asked for):
	// a table the job creates or truncates gets them; an append checks
	// them against the table's (destination.go). nil: none asked.
	Partitioning *catalog.Partitioning `json:"partitioning,omitempty"`
	// SchemaUpdateOptions (ALLOW_FIELD_ADDITION, ALLOW_FIELD_RELAXATION)
	// let an append change the destination's schema to take the
	// result's (destination.go).
	SchemaUpdateOptions []string `json:"schemaUpdateOptions,omitempty"`
	// Params are the query parameters (nil: none); read-only once the
	// job runs. Not logged: a job does not run again after a restart.
	Params *filter.Params `json:"-"`
	// ParameterMode and Parameters are the request's parameterMode and
	// queryParameters as sent, echoed in the job resource.
	ParameterMode string          `json:"parameterMode,omitempty"`
	Parameters    json.RawMessage `json:"parameters,omitempty"`
	// TimeoutMs stops the job (a StoppedError with Timeout) once it has
	// run this long since it was created (jobTimeoutMs); 0: no limit.
	TimeoutMs int64 `json:"timeoutMs,omitempty"`
	// Priority (INTERACTIVE, BATCH; "": INTERACTIVE) and Labels are
	// the request's, kept to be echoed in the job resource; they change
	// nothing in how the job runs.
	Priority string            `json:"priority,omitempty"`
	Labels   map[string]string `json:"labels,omitempty"`
	// KeyResult is scriptOptions.keyResultStatement: which statement of
	// a script gives the job's result (schema and rows): KeyResultLast
	// ("" too: BigQuery's default) or KeyResultFirstSelect.
	KeyResult string `json:"keyResultStatement,omitempty"`

	// Not part of the configuration: set while the job runs.
	// spent is the bytes the script's statements before the running one
	// processed (billable); stage is the job's stage table, and location
	// its location (replace.go); temps are the script's temporary
	// tables by name (temp.go); job is the job's id; stmts is how many
	// statements the script has, and last whether the running one makes
	// the job's last change (commit.go); script records a script's
	// statements as child jobs (children.go).
	spent    int64
	stage    TableRef
	location string
	job      string
	temps    map[string]TableRef
	stmts    int
	last     bool
	script   *script
}

// BytesBilledError is a query refused because its bytes billed pass the
// job's MaxBytesBilled.
type BytesBilledError struct {
	Limit, Required int64
}

func (e *BytesBilledError) Error() string {
	return fmt.Sprintf("Query exceeded limit for bytes billed: %d. %d or higher required.", e.Limit, e.Required)
}

// Billed is BigQuery's on-demand billing of a query reading a table: the
// bytes processed rounded up to a whole MB, at least 10 MB.
func Billed(processed int64) int64 {
	const mb = 1 << 20
	return max(10*mb, (processed+mb-1)/mb*mb)
}

// State is a job's state.
type State int

const (
	StatePending State = iota
	StateRunning
	StateDone
)

func (s State) String() string {
	switch s {
	case StateRunning:
		return "RUNNING"
	case StateDone:
		return "DONE"
	}
	return "PENDING"
}

// Job is a job and, once done, its outcome. The Store hands out copies.
type Job struct {
	Project, ID, Location string
	Query                 Query
	State                 State
	// Created, Started (RUNNING) and End (DONE); zero until then.
	Created, Started, End time.Time
	// Err is the job's error once DONE, nil if it succeeded.
	Err error
	// Schema, NumRows: the result's, once DONE without error; nil and 0
	// for statements without rows (DDL, DML).
	Schema  *schema.Schema
	NumRows int64
	// BytesProcessed is what the statements read (Stats.BytesProcessed).
	BytesProcessed int64
	// Referenced are the tables the query read.
	Referenced []TableRef
	// Stats are the statements' statistics (statements.go).
	Stats Stats
	// Destination is the table holding the result: the anonymous table
	// or Query.Destination. Zero until DONE without error, and without a
	// data engine (Options.DB nil; the rows are then held in memory).
	Destination TableRef

	// Parent is the id of the script job this job is a statement of
	// ("" for a job of its own), and Frame that statement in its
	// script (children.go).
	Parent string
	Frame  *ScriptFrame

	// commit is the stream the job is committing (an INSERT's, an
	// append to its destination's) while it is RUNNING (commit.go);
	// logged only.
	commit *commitRecord
}

// Options configure a Store.
type Options struct {
	// DB is the engine the catalog's tables live in; nil: queries can only
	// be without FROM, and results are held in memory.
	DB *storage.DB
	// Clock is the time source. Default: time.Now.
	Clock func() time.Time
	// MaxMemory bounds the memory one query's operators hold; beyond it
	// the query fails with BigQuery's resourcesExceeded
	// (*sql.ResourcesError). Default: sql.DefaultMaxMemory.
	MaxMemory int64
	// Dir is where the jobs log lives (Open); "": jobs are not persisted.
	Dir string
	// FS is the file system of Dir. Default: vfs.Default.
	FS vfs.FS
	// Logger receives internal errors. Default: discard.
	Logger *slog.Logger
	// BeforeRun, if set, is called by a job's goroutine when the job is
	// RUNNING, before its query runs, with the job's context (tests use
	// it to hold a job RUNNING).
	BeforeRun func(ctx context.Context, project, id string)

	// beforeReplace, if set, is called by a job that replaces a table
	// right before the swap (tests read and cancel there).
	beforeReplace func()
	// afterMove, if set, is called by a job that created or replaced its
	// destination table right after the move (tests crash there).
	afterMove func()
	// afterResultAppend, if set, is called by a job each time it has
	// appended rows of its result (sink.go; tests cancel there).
	afterResultAppend func(id string)
	// sweepTick, if set, replaces the sweep's ticker (tests send on
	// it: once a second send on an unbuffered channel is received, the
	// sweep of the first is done).
	sweepTick <-chan time.Time
	// rowsCommit, if set, is called by an INSERT or a copy to a
	// destination table right before (after false) and right after
	// (after true) it commits its rows (tests take a crash image of the
	// jobs log there); an error before the commit fails the job there,
	// its rows not committed.
	rowsCommit func(after bool) error
	// beforeForget, if set, is called with each job a Delete or an
	// expiry removed from the table, before its removal is logged and
	// its result table dropped (tests insert the same id there).
	beforeForget func(j Job)
	// reinsertWait, if set, is called by an Insert that waits for the
	// removal of a job of the same id to be done.
	reinsertWait func()
}

// Store runs jobs and keeps them.
type Store struct {
	cat  *catalog.Catalog
	opts Options
	log  *slog.Logger
	jl   *jobLog // nil: not persisted

	bgCtx  context.Context
	cancel context.CancelFunc
	slots  chan struct{} // MaxRunning tokens
	wg     sync.WaitGroup

	mu struct {
		sync.Mutex
		jobs map[key]*entry
		// forgetting holds the jobs out of jobs whose removal (its log
		// record, their result tables) is not done yet, each with a
		// channel closed once it is: an Insert of the same id waits
		// for it, so that the removal neither drops the new job's
		// result table nor is logged after its creation.
		forgetting map[key]chan struct{}
		closed     bool
	}
}

type key struct{ project, id string }

// entry is a job in the store. job is guarded by Store.mu.
type entry struct {
	job    Job
	done   chan struct{}      // closed once job.State is DONE
	cancel context.CancelFunc // cancels the job's query; nil once done
	// rec holds the result rows when there is no engine (Options.DB nil).
	rec arrow.RecordBatch
}

// New returns a Store over cat that keeps jobs in memory only.
func New(cat *catalog.Catalog, opts Options) *Store {
	opts.Dir = ""
	s, _ := Open(cat, opts)
	return s
}

// Open returns a Store over cat, replaying the jobs log in opts.Dir (when
// set): jobs past Retention are forgotten, with their anonymous tables,
// and a job that was not DONE is DONE with a backendError.
func Open(cat *catalog.Catalog, opts Options) (*Store, error) {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	s := &Store{cat: cat, opts: opts, log: opts.Logger, slots: make(chan struct{}, MaxRunning)}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.bgCtx, s.cancel = context.WithCancel(context.Background())
	s.mu.jobs = map[key]*entry{}
	s.mu.forgetting = map[key]chan struct{}{}
	if opts.Dir == "" {
		s.startSweep()
		return s, nil
	}
	now := opts.Clock()
	var drop []TableRef
	jl, live, err := openLog(opts.FS, path.Clean(opts.Dir), func(all []*Job) []*Job {
		var keep []*Job
		for _, j := range all {
			if now.Sub(j.Created) > Retention {
				if j.anonymous() {
					drop = append(drop, j.Destination)
				}
				continue
			}
			if j.State != StateDone {
				if j.State == StateRunning {
					drop = append(drop, anonRef(j.Project, j.Location, j.ID), stageRef(j.Project, j.Location, j.ID))
					drop = append(drop, tempTables(cat, j.Project, j.Location, j.ID)...)
				}
				j.State, j.End = StateDone, now
				if j.Started.IsZero() {
					j.Started = now
				}
				if !recoverCommit(cat, opts.DB, j) {
					j.Err = &BackendError{Msg: "The job was running when the server stopped: it did not complete; run it again."}
				}
				j.commit = nil
			}
			keep = append(keep, j)
		}
		return keep
	})
	if err != nil {
		s.cancel()
		return nil, err
	}
	s.jl = jl
	for _, j := range live {
		e := &entry{job: *j, done: make(chan struct{})}
		close(e.done)
		s.mu.jobs[key{j.Project, j.ID}] = e
	}
	for _, t := range drop {
		s.dropTable(t)
	}
	s.startSweep()
	return s, nil
}

// startSweep starts the sweep's goroutine (owned by the Store: Close
// stops it and waits for it), which every SweepInterval forgets the jobs
// past Retention and drops their anonymous tables.
func (s *Store) startSweep() {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		pprof.Do(s.bgCtx, pprof.Labels("bqstore", "jobs-sweep"), func(ctx context.Context) {
			tick := s.opts.sweepTick
			if tick == nil {
				t := time.NewTicker(SweepInterval)
				defer t.Stop()
				tick = t.C
			}
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick:
				}
				s.sweep()
			}
		})
	}()
}

// sweep forgets the jobs past Retention (and the oldest done ones
// beyond MaxJobs), as Insert does.
func (s *Store) sweep() {
	s.mu.Lock()
	victims := s.expireLocked(s.opts.Clock())
	s.mu.Unlock()
	s.forget(victims)
}

// anonymous reports whether j's result is in its own anonymous table
// (a script's result statement's child names its parent's).
func (j *Job) anonymous() bool {
	return j.Query.Destination == nil && j.Destination != (TableRef{}) && j.Destination == anonRef(j.Project, j.Location, j.ID)
}

// Close cancels the running jobs, waits for their goroutines and closes
// the log. Jobs cancelled by Close are DONE with a backendError.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return nil
	}
	s.mu.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	if s.jl != nil {
		return s.jl.close()
	}
	return nil
}

// Insert creates the job project/id (id chosen by the caller) and starts
// it; it returns the job as created (PENDING). A repeated id is
// ErrDuplicate and starts nothing.
func (s *Store) Insert(project, id, location string, q Query) (Job, error) {
	now := s.opts.Clock()
	k := key{project, id}
	ctx, cancel := context.WithCancel(s.bgCtx)
	if q.TimeoutMs > 0 {
		ctx, cancel = context.WithTimeout(s.bgCtx, time.Duration(q.TimeoutMs)*time.Millisecond)
	}
	e := &entry{job: Job{Project: project, ID: id, Location: location, Query: q, Created: now, State: StatePending},
		done: make(chan struct{}), cancel: cancel}
	s.mu.Lock()
	for {
		gone, ok := s.mu.forgetting[k]
		if !ok {
			break
		}
		s.mu.Unlock()
		if h := s.opts.reinsertWait; h != nil {
			h()
		}
		<-gone
		s.mu.Lock()
	}
	if s.mu.closed {
		s.mu.Unlock()
		cancel()
		return Job{}, ErrClosed
	}
	if _, ok := s.mu.jobs[k]; ok {
		s.mu.Unlock()
		cancel()
		return Job{}, ErrDuplicate
	}
	s.mu.jobs[k] = e
	victims := s.expireLocked(now)
	j := e.job
	s.wg.Add(1)
	s.mu.Unlock()
	s.forget(victims)

	if err := s.persist(&j); err != nil {
		s.mu.Lock()
		delete(s.mu.jobs, k)
		s.mu.Unlock()
		cancel()
		s.wg.Done()
		return Job{}, err
	}
	go func() {
		defer s.wg.Done()
		s.run(ctx, e)
	}()
	return j, nil
}

// persist writes j's state to the log.
func (s *Store) persist(j *Job) error {
	if s.jl == nil {
		return nil
	}
	return s.jl.append(logRecord{Put: recordOf(j)})
}

// Wait returns the job project/id once it is DONE, or as it is when
// timeout passes or ctx ends first.
func (s *Store) Wait(ctx context.Context, project, id string, timeout time.Duration) (Job, error) {
	s.mu.Lock()
	e, ok := s.mu.jobs[key{project, id}]
	s.mu.Unlock()
	if !ok {
		return Job{}, ErrNotFound
	}
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		select {
		case <-e.done:
		case <-t.C:
		case <-ctx.Done():
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return e.job, nil
}

// Get returns the job project/id.
func (s *Store) Get(project, id string) (Job, error) {
	return s.Wait(context.Background(), project, id, 0)
}

// GetIn is Get of the job project/id in location: BigQuery names a job
// by project, location and id, so a job that ran in another location
// (compared ignoring case) is ErrNotFound; "" finds the job wherever it
// ran.
func (s *Store) GetIn(project, location, id string) (Job, error) {
	j, err := s.Get(project, id)
	if err == nil && location != "" && !strings.EqualFold(location, j.Location) {
		return Job{}, ErrNotFound
	}
	return j, err
}

// Cancel asks the job project/id to stop: a PENDING or RUNNING job ends
// DONE with a StoppedError (once its goroutine sees it); a DONE job is
// unchanged. It returns the job as it is.
func (s *Store) Cancel(project, id string) (Job, error) {
	s.mu.Lock()
	e, ok := s.mu.jobs[key{project, id}]
	if !ok {
		s.mu.Unlock()
		return Job{}, ErrNotFound
	}
	cancel := e.cancel
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	return s.Get(project, id)
}

// Delete forgets the job project/id, and its child jobs if it is a
// script, and drops their anonymous tables. A job not DONE is
// ErrRunning; a child job is ErrChildJob.
func (s *Store) Delete(project, id string) error {
	s.mu.Lock()
	e, ok := s.mu.jobs[key{project, id}]
	if !ok {
		s.mu.Unlock()
		return ErrNotFound
	}
	if e.job.State != StateDone {
		s.mu.Unlock()
		return ErrRunning
	}
	if e.job.Parent != "" {
		s.mu.Unlock()
		return ErrChildJob
	}
	gone := append(s.childrenLocked(project, id), e.job)
	for _, j := range gone {
		delete(s.mu.jobs, key{j.Project, j.ID})
		s.forgettingLocked(j)
	}
	s.mu.Unlock()
	s.forget(gone)
	return nil
}

// List returns the project's jobs, in no particular order.
func (s *Store) List(project string) []Job {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Job
	for k, e := range s.mu.jobs {
		if k.project == project {
			out = append(out, e.job)
		}
	}
	return out
}

// expireLocked removes jobs past Retention and the oldest done ones
// beyond MaxJobs, and returns them (forget drops their tables).
// REQUIRES: s.mu held.
func (s *Store) expireLocked(now time.Time) []Job {
	var victims []Job
	var all []*entry
	for k, e := range s.mu.jobs {
		if now.Sub(e.job.Created) > Retention && e.job.State == StateDone {
			delete(s.mu.jobs, k)
			s.forgettingLocked(e.job)
			victims = append(victims, e.job)
			continue
		}
		all = append(all, e)
	}
	// MaxJobs counts jobs of their own; a script's children go with it.
	all = slices.DeleteFunc(all, func(e *entry) bool { return e.job.Parent != "" })
	if len(all) <= MaxJobs {
		return victims
	}
	sort.Slice(all, func(a, b int) bool { return all[a].job.Created.Before(all[b].job.Created) })
	for _, e := range all[:len(all)-MaxJobs] {
		if e.job.State != StateDone {
			continue
		}
		for _, j := range append(s.childrenLocked(e.job.Project, e.job.ID), e.job) {
			delete(s.mu.jobs, key{j.Project, j.ID})
			s.forgettingLocked(j)
			victims = append(victims, j)
		}
	}
	return victims
}

// forgettingLocked records that j, just taken out of the table, is
// being forgotten (forget ends it).
// REQUIRES: s.mu held.
func (s *Store) forgettingLocked(j Job) {
	s.mu.forgetting[key{j.Project, j.ID}] = make(chan struct{})
}

// forget logs the removal of jobs (already out of the table, and marked
// forgetting) and drops their anonymous tables; then an Insert of one of
// their ids may go on.
func (s *Store) forget(jobs []Job) {
	for _, j := range jobs {
		if h := s.opts.beforeForget; h != nil {
			h(j)
		}
		if s.jl != nil {
			if err := s.jl.append(logRecord{Delete: &jobKey{j.Project, j.ID}}); err != nil {
				s.log.Error("jobs: log a removed job", "job", j.ID, "err", err)
			}
		}
		if j.anonymous() {
			s.dropTable(j.Destination)
		}
		k := key{j.Project, j.ID}
		s.mu.Lock()
		if gone, ok := s.mu.forgetting[k]; ok {
			close(gone)
			delete(s.mu.forgetting, k)
		}
		s.mu.Unlock()
	}
}

// dropTable deletes a result table (missing is fine).
func (s *Store) dropTable(t TableRef) {
	err := s.cat.DeleteTable(context.Background(), t.Project, t.Dataset, t.Table)
	if err != nil && !errors.Is(err, catalog.ErrNotFound) {
		s.log.Error("jobs: drop a result table", "table", t.Project+":"+t.Dataset+"."+t.Table, "err", err)
	}
}

// open resolves a table the query names and opens it at the snapshot at.
func (s *Store) open(project string, q Query, n sql.TableName, at time.Time) (sql.Table, error) {
	if r, ok := q.temp(n); ok {
		n.Project, n.Dataset, n.Table = r.Project, r.Dataset, r.Table
	}
	p, d := n.Project, n.Dataset
	if d == "" {
		if q.DefaultDataset == "" {
			return nil, &TableError{Msg: fmt.Sprintf("Table \"%s\" must be qualified with a dataset (e.g. dataset.table).", n.Table)}
		}
		d = q.DefaultDataset
		if p == "" {
			p = q.DefaultProject
		}
	}
	if p == "" {
		p = project
	}
	if err := s.checkLocation(q, p, d); err != nil {
		return nil, err
	}
	notFound := &TableError{NotFound: true, Msg: fmt.Sprintf("Not found: Table %s:%s.%s", p, d, n.Table) + q.inLocation()}
	ct, err := s.cat.Table(p, d, n.Table)
	if err != nil {
		if errors.Is(err, catalog.ErrNotFound) {
			if strings.HasPrefix(err.Error(), "Not found: Dataset") {
				notFound.Msg = fmt.Sprintf("Not found: Dataset %s:%s", p, d) + q.inLocation()
			}
			return nil, notFound
		}
		return nil, err
	}
	if s.opts.DB == nil {
		return nil, notFound
	}
	st, err := s.opts.DB.Table(ct.ID)
	if err != nil {
		if errors.Is(err, storage.ErrTableNotFound) {
			return nil, notFound
		}
		return nil, err
	}
	if !n.AsOf.IsZero() {
		at = n.AsOf // FOR SYSTEM_TIME AS OF
	}
	snap, err := st.Snapshot(at)
	if err != nil {
		if !n.AsOf.IsZero() && (errors.Is(err, storage.ErrSnapshotTooOld) || errors.Is(err, storage.ErrSnapshotInFuture)) {
			return nil, snapshotTimeError(p, d, n.Table, at, st.Created(), s.opts.Clock(), err)
		}
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
	return &table{snap: snap, schema: full, ref: TableRef{p, d, n.Table}, id: ct.ID, etag: ct.ETag}, nil
}

// wildcard lists the tables (not views) a wildcard table name matches:
// those of its dataset whose ids start with its prefix.
func (s *Store) wildcard(project string, q Query, n sql.TableName) ([]sql.WildcardTable, error) {
	ref, err := qualify(project, q, n)
	if err != nil {
		return nil, err
	}
	tables, err := s.cat.ListTables(ref.Project, ref.Dataset)
	if err != nil {
		if errors.Is(err, catalog.ErrNotFound) {
			return nil, &TableError{NotFound: true, Msg: fmt.Sprintf("Not found: Dataset %s:%s", ref.Project, ref.Dataset) + q.inLocation()}
		}
		return nil, err
	}
	prefix := strings.TrimSuffix(ref.Table, "*")
	var out []sql.WildcardTable
	for _, t := range tables {
		if t.View == nil && strings.HasPrefix(t.TableID, prefix) {
			out = append(out, sql.WildcardTable{Name: sql.TableName{Project: ref.Project, Dataset: ref.Dataset, Table: t.TableID}, Created: t.Created})
		}
	}
	return out, nil
}

// snapshotTimeError is BigQuery's error for a FOR SYSTEM_TIME AS OF time
// the engine does not keep ("Invalid snapshot time 1601168925462 for
// table myproject:mydataset.table1@1601168925462. Cannot read before
// 1601573410026.", BigQuery's time-travel documentation): the earliest
// readable time is the table's creation or the start of the engine's
// time-travel window (its default, seven days, as BigQuery's). A time
// in the future is not documented; it is answered alike, with the
// latest readable time.
func snapshotTimeError(p, d, t string, at, created, now time.Time, err error) error {
	ms := at.UnixMilli()
	if errors.Is(err, storage.ErrSnapshotInFuture) {
		return &TableError{Msg: fmt.Sprintf("Invalid snapshot time %d for table %s:%s.%s@%d. Cannot read after %d.", ms, p, d, t, ms, now.UnixMilli())}
	}
	earliest := now.Add(-7 * 24 * time.Hour)
	if created.After(earliest) {
		earliest = created
	}
	return &TableError{Msg: fmt.Sprintf("Invalid snapshot time %d for table %s:%s.%s@%d. Cannot read before %d.", ms, p, d, t, ms, earliest.UnixMilli())}
}

// table reads one snapshot of an engine table.
type table struct {
	snap   *storage.Snapshot
	schema *schema.Schema
	// ref names the table read; id and etag are its catalog entry's
	// (replace.go: reads).
	ref      TableRef
	id, etag string
}

func (t *table) Schema() *schema.Schema { return t.schema }

func (t *table) Close() { t.snap.Release() }

func (t *table) Scan(ctx context.Context, cols []string, fn func(arrow.RecordBatch) error) error {
	idx := make([]int, len(cols))
	for i, c := range cols {
		idx[i] = -1
		for j, f := range t.schema.Fields {
			if strings.EqualFold(f.Name, c) && j < t.snap.Schema().NumFields() {
				idx[i] = j
			}
		}
		if idx[i] < 0 {
			return fmt.Errorf("jobs: column %s not in the snapshot", c)
		}
	}
	for _, c := range t.snap.Chunks() {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := c.RowEnd - c.RowStart
		if n == 0 {
			continue
		}
		if len(cols) == 0 {
			rec := array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, n)
			if err := fn(rec); err != nil {
				return err
			}
			continue
		}
		rec, err := t.snap.ReadChunk(ctx, c, 0, n, idx)
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
