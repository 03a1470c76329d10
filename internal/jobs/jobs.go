// Package jobs runs BigQuery jobs over the catalog and the engine: today
// query jobs of the first SQL slice (internal/sql), run synchronously when
// they are created and kept in memory with their results. See
// docs/design/sql.md for where this goes (persisted jobs, results in
// anonymous tables, load/extract/copy jobs).
package jobs

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/sql"
	"github.com/bqstore/bqstore/internal/storage"
)

// Retention bounds what the store keeps: jobs older than Retention are
// forgotten, and so are the oldest beyond MaxJobs (results are in memory).
const (
	Retention = 24 * time.Hour
	MaxJobs   = 1000
)

var (
	// ErrDuplicate: a job with this id exists.
	ErrDuplicate = errors.New("jobs: duplicate job id")
	// ErrNotFound: no such job (or it expired).
	ErrNotFound = errors.New("jobs: job not found")
)

// TableError is a query's table that cannot be read: not found, or named
// without a dataset and no default dataset.
type TableError struct {
	NotFound bool
	Msg      string
}

func (e *TableError) Error() string { return e.Msg }

// Query is a query job's configuration.
type Query struct {
	SQL            string
	DefaultProject string // of DefaultDataset; "" for the job's project
	DefaultDataset string
	// MaxBytesBilled fails a query whose bytes billed (Billed) would pass
	// it (maximumBytesBilled); 0: no limit.
	MaxBytesBilled int64
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

// Job is a job and, once done, its outcome. Fields are not changed after
// Run returns it.
type Job struct {
	Project, ID, Location string
	Query                 Query
	Created, Started, End time.Time
	// Err is the query's error, nil if it succeeded.
	Err error
	// Result and Record hold the result's rows (Record in the Arrow
	// mapping of Result.Schema); nil if the query failed or returns no
	// rows (DDL, DML).
	Result *sql.Result
	Record arrow.RecordBatch
	// Stats are the statement's statistics (statements.go).
	Stats Stats
}

// Options configure a Store.
type Options struct {
	// DB is the engine the catalog's tables live in; nil: queries can only
	// be without FROM.
	DB *storage.DB
	// Clock is the time source. Default: time.Now.
	Clock func() time.Time
	// MaxRows bounds a result's rows (held in memory). Default:
	// sql.DefaultMaxRows.
	MaxRows int
}

// Store runs jobs and keeps them.
type Store struct {
	cat  *catalog.Catalog
	opts Options

	mu struct {
		sync.Mutex
		jobs map[key]*Job
	}
}

type key struct{ project, id string }

// New returns a Store over cat.
func New(cat *catalog.Catalog, opts Options) *Store {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	s := &Store{cat: cat, opts: opts}
	s.mu.jobs = map[key]*Job{}
	return s
}

// RunQuery creates the job project/id (id chosen by the caller) and runs
// its query to the end. A repeated id is ErrDuplicate and runs nothing.
func (s *Store) RunQuery(ctx context.Context, project, id, location string, q Query) (*Job, error) {
	now := s.opts.Clock()
	j := &Job{Project: project, ID: id, Location: location, Query: q, Created: now}
	s.mu.Lock()
	k := key{project, id}
	if _, ok := s.mu.jobs[k]; ok {
		s.mu.Unlock()
		return nil, ErrDuplicate
	}
	s.mu.jobs[k] = j // reserve the id while it runs
	s.mu.Unlock()

	done := &Job{Project: project, ID: id, Location: location, Query: q, Created: now, Started: now}
	res, stats, err := s.runScript(ctx, project, q, now)
	done.Stats = stats
	// BigQuery refuses such a query before it runs, from an estimate;
	// here the exact figure is known once it ran, and its result is
	// dropped: the caller sees the same error and no rows.
	if err == nil && res != nil && res.Table != nil && q.MaxBytesBilled > 0 && Billed(res.BytesProcessed) > q.MaxBytesBilled {
		err = &BytesBilledError{Limit: q.MaxBytesBilled, Required: Billed(res.BytesProcessed)}
	}
	if err == nil && res != nil {
		done.Result = res
		done.Record, err = res.Record()
	}
	if err != nil {
		done.Result, done.Err = nil, err
	}
	done.End = s.opts.Clock()

	s.mu.Lock()
	s.mu.jobs[k] = done
	s.expireLocked(done.End)
	s.mu.Unlock()
	return done, nil
}

// expireLocked forgets jobs past Retention and the oldest beyond MaxJobs.
// REQUIRES: s.mu held.
func (s *Store) expireLocked(now time.Time) {
	var all []*Job
	for k, j := range s.mu.jobs {
		if now.Sub(j.Created) > Retention {
			delete(s.mu.jobs, k)
			release(j)
			continue
		}
		all = append(all, j)
	}
	if len(all) <= MaxJobs {
		return
	}
	sort.Slice(all, func(a, b int) bool { return all[a].Created.Before(all[b].Created) })
	for _, j := range all[:len(all)-MaxJobs] {
		if j.End.IsZero() {
			continue // running
		}
		delete(s.mu.jobs, key{j.Project, j.ID})
		release(j)
	}
}

func release(j *Job) {
	// Readers may still be formatting a page from the record; the garbage
	// collector frees it (records of the Go allocator need no Release).
	_ = j
}

// Get returns the job project/id.
func (s *Store) Get(project, id string) (*Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.mu.jobs[key{project, id}]
	if !ok {
		return nil, ErrNotFound
	}
	return j, nil
}

// Delete forgets the job project/id.
func (s *Store) Delete(project, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.mu.jobs, key{project, id})
}

// List returns the project's jobs, in no particular order.
func (s *Store) List(project string) []*Job {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Job
	for k, j := range s.mu.jobs {
		if k.project == project {
			out = append(out, j)
		}
	}
	return out
}

// open resolves a table the query names and opens it at the snapshot at.
func (s *Store) open(project string, q Query, n sql.TableName, at time.Time) (sql.Table, error) {
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
	notFound := &TableError{NotFound: true, Msg: fmt.Sprintf("Not found: Table %s:%s.%s", p, d, n.Table)}
	ct, err := s.cat.Table(p, d, n.Table)
	if err != nil {
		if errors.Is(err, catalog.ErrNotFound) {
			if strings.HasPrefix(err.Error(), "Not found: Dataset") {
				notFound.Msg = fmt.Sprintf("Not found: Dataset %s:%s", p, d)
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
	snap, err := st.Snapshot(at)
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
	return &table{snap: snap, schema: full}, nil
}

// table reads one snapshot of an engine table.
type table struct {
	snap   *storage.Snapshot
	schema *schema.Schema
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
