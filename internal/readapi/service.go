// Package readapi is the BigQueryRead gRPC service: read sessions over a
// storage snapshot, streams as ranges of the snapshot's plan, splitting,
// row_restriction, projection, and Arrow or Avro encoding. Storage
// semantics (what is visible at a time) live in internal/storage; errors
// reach the wire through internal/apierr.
package readapi

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"

	"github.com/bqstore/bqstore/internal/apierr"
	"github.com/bqstore/bqstore/internal/resource"
	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/storage"
)

// TableInfo is what the Read API needs to know of a table from the
// catalog.
type TableInfo struct {
	// ID is the storage engine's table id.
	ID string
	// Location names the session's location ("US" -> locations/us).
	Location string
}

// Tables resolves table names and schema versions (the catalog implements
// it). LookupTable returns an error wrapping storage.ErrTableNotFound for a
// missing project, dataset or table.
type Tables interface {
	LookupTable(ctx context.Context, project, dataset, table string) (TableInfo, error)
	// SchemaVersion returns the table's schema as it was at a version (the
	// catalog keeps every version; a snapshot names the one in force).
	SchemaVersion(ctx context.Context, tableID string, version int) (*schema.Schema, error)
}

// Options configures the service; zero values mean the defaults.
type Options struct {
	// SessionTTL is how long a session can be read (default 6 h, the real
	// service's).
	SessionTTL time.Duration
	// MaxResponseBytes bounds one ReadRows response's record batch
	// (default 8 MiB; the real limit is 128 MB).
	MaxResponseBytes int64
	// MinStreamBytes is the data size below which a session gets no more
	// streams (default 1 MiB): small tables get few streams.
	MinStreamBytes int64
	// Dir is where sessions are persisted, one file each, so that they
	// survive a restart (docs/format/readsession.md). Empty: sessions
	// live in memory only.
	Dir string
	// MaxSessionsPerProject bounds a project's live sessions (default
	// DefaultMaxSessionsPerProject); CreateReadSession past it is
	// RESOURCE_EXHAUSTED until sessions expire.
	MaxSessionsPerProject int
	// MaxSessionMemory bounds the estimated memory of open sessions
	// (snapshot plans, compiled filters, schemas; default
	// DefaultMaxSessionMemory). Idle sessions are closed (their plan is
	// rebuilt when they are read again) to make room; when every open
	// session is being read, opening one more is RESOURCE_EXHAUSTED. One
	// session is always admitted, whatever its size.
	MaxSessionMemory int64
	// MaxStreamsPerSession bounds the streams of a session, splits
	// included (default DefaultMaxStreamsPerSession); past it
	// SplitReadStream answers that the stream cannot be split.
	MaxStreamsPerSession int
	// IdleClose is how long an open session stays open without readers
	// before the janitor closes it (default 5 min). A session whose
	// streams have all been read to their end closes at once.
	IdleClose  time.Duration
	Clock      func() time.Time
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Defaults of Options.
const (
	DefaultMaxSessionsPerProject = 10000
	DefaultMaxSessionMemory      = 256 << 20
	DefaultMaxStreamsPerSession  = 2 * maxSystemStreams
)

// expireGrace is how long an expired session is kept, so that a client
// reading at the deadline gets FAILED_PRECONDITION, not NOT_FOUND.
const expireGrace = time.Hour

func (o *Options) setDefaults() {
	if o.SessionTTL <= 0 {
		o.SessionTTL = 6 * time.Hour
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = 8 << 20
	}
	if o.MinStreamBytes <= 0 {
		o.MinStreamBytes = 1 << 20
	}
	if o.MaxSessionsPerProject <= 0 {
		o.MaxSessionsPerProject = DefaultMaxSessionsPerProject
	}
	if o.MaxSessionMemory <= 0 {
		o.MaxSessionMemory = DefaultMaxSessionMemory
	}
	if o.MaxStreamsPerSession <= 0 {
		o.MaxStreamsPerSession = DefaultMaxStreamsPerSession
	}
	if o.IdleClose <= 0 {
		o.IdleClose = 5 * time.Minute
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Service implements storagepb.BigQueryReadServer.
//
// A session is either open (it holds a plan: a pinned snapshot, the
// compiled filter, the schemas) or closed (its metadata is on disk, or in
// memory without Options.Dir). Reads and splits open it; it closes when
// its last reader is done and every stream has been read to its end, when
// it stays idle for Options.IdleClose, or when another session needs the
// memory. Re-opening takes the snapshot again at the persisted time,
// which the engine reproduces exactly, so a closed session, or one that
// survived a restart, reads the same rows.
//
// Goroutine lifetimes: New starts one janitor goroutine that closes idle
// sessions and removes expired ones; Close stops it and waits.
//
// Lock order: session.persistMu, then Service.mu. No I/O under mu
// (snapshots are released and files written after unlocking).
type Service struct {
	storagepb.UnimplementedBigQueryReadServer
	tables  Tables
	db      *storage.DB
	opts    Options
	log     *slog.Logger
	metrics *metrics
	store   *sessionStore // nil: no persistence

	mu struct {
		sync.Mutex
		sessions   map[string]*session // by session id
		perProject map[string]int      // live sessions per project
		openBytes  int64               // sum of the open plans' cost
	}
	// bigCompiles bounds concurrent compiles of long row_restrictions,
	// whose transient memory is large (a semaphore).
	bigCompiles chan struct{}
	stop        chan struct{}
	done        chan struct{}
}

// session is one read session's entry.
type session struct {
	id, name, project string
	expire            time.Time

	persistMu sync.Mutex // serializes changes to the session file

	// Guarded by Service.mu.
	meta     *sessionMeta  // closed session without a store; nil otherwise
	plan     *plan         // nil: closed
	readers  int           // calls using plan
	lastUsed time.Time     // when the last reader finished
	loading  chan struct{} // closed when a plan being built is installed (or failed)
	removed  bool
}

// New returns the service, with the sessions persisted in opts.Dir, and
// starts its janitor.
func New(tables Tables, db *storage.DB, opts Options) (*Service, error) {
	opts.setDefaults()
	s := &Service{tables: tables, db: db, opts: opts, log: opts.Logger, metrics: newMetrics(opts.Registerer),
		bigCompiles: make(chan struct{}, maxBigCompiles), stop: make(chan struct{}), done: make(chan struct{})}
	s.mu.sessions = make(map[string]*session)
	s.mu.perProject = make(map[string]int)
	if opts.Dir != "" {
		st, err := openSessionStore(opts.Dir)
		if err != nil {
			return nil, err
		}
		s.store = st
		if err := s.load(); err != nil {
			return nil, err
		}
	}
	go s.janitor()
	return s, nil
}

// load registers the persisted sessions, closed, and deletes the files
// of sessions past their expiry.
func (s *Service) load() error {
	metas, bad, err := s.store.list()
	if err != nil {
		return fmt.Errorf("readapi: load sessions: %w", err)
	}
	for name, err := range bad {
		s.log.Warn("read session file ignored", "file", name, "err", err)
	}
	now := s.opts.Clock()
	for _, m := range metas {
		if now.After(m.Expire.Add(expireGrace)) {
			_ = s.store.remove(m.ID)
			continue
		}
		s.mu.sessions[m.ID] = &session{id: m.ID, name: resource.SessionName(m.Project, m.Location, m.ID),
			project: m.Project, expire: m.Expire, lastUsed: now}
		s.mu.perProject[m.Project]++
	}
	s.metrics.sessions.Set(float64(len(s.mu.sessions)))
	if len(metas) > 0 {
		s.log.Info("read sessions restored", "sessions", len(metas))
	}
	return nil
}

// Close stops the janitor and releases every open session's snapshot.
// The persisted sessions stay for the next start.
func (s *Service) Close() {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	var rel []*storage.Snapshot
	for _, sess := range s.mu.sessions {
		if sess.plan != nil {
			rel = append(rel, s.closeLocked(sess))
		}
	}
	s.mu.Unlock()
	for _, snap := range rel {
		snap.Release()
	}
}

func (s *Service) janitor() {
	defer close(s.done)
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.sweep()
		}
	}
}

// sweep closes sessions idle for IdleClose and removes the sessions past
// their expiry (plus a grace period).
func (s *Service) sweep() {
	now := s.opts.Clock()
	var rel []*storage.Snapshot
	var gone []string
	s.mu.Lock()
	for id, sess := range s.mu.sessions {
		if sess.readers > 0 || sess.loading != nil {
			continue
		}
		switch {
		case now.After(sess.expire.Add(expireGrace)):
			if sess.plan != nil {
				rel = append(rel, s.closeLocked(sess))
			}
			sess.removed = true
			delete(s.mu.sessions, id)
			s.mu.perProject[sess.project]--
			if s.mu.perProject[sess.project] <= 0 {
				delete(s.mu.perProject, sess.project)
			}
			gone = append(gone, id)
		case sess.plan != nil && now.Sub(sess.lastUsed) >= s.opts.IdleClose:
			rel = append(rel, s.closeLocked(sess))
		}
	}
	s.metrics.sessions.Set(float64(len(s.mu.sessions)))
	s.mu.Unlock()
	for _, snap := range rel {
		snap.Release()
	}
	if s.store != nil {
		for _, id := range gone {
			if err := s.store.remove(id); err != nil {
				s.log.Warn("remove read session file", "session", id, "err", err)
			}
		}
	}
}

// closeLocked releases sess's plan and returns its snapshot, for the
// caller to release after unlocking. REQUIRES: s.mu held, sess.plan set,
// no readers.
func (s *Service) closeLocked(sess *session) *storage.Snapshot {
	p := sess.plan
	sess.plan = nil
	if s.store == nil {
		sess.meta = p.meta
	}
	s.mu.openBytes -= p.cost
	s.metrics.open.Dec()
	s.metrics.openBytes.Set(float64(s.mu.openBytes))
	return p.snap
}

// reserveLocked makes room for a plan of cost bytes by closing idle
// sessions, least recently used first; it returns their snapshots, for
// the caller to release after unlocking (also on error).
// REQUIRES: s.mu held.
func (s *Service) reserveLocked(cost int64) ([]*storage.Snapshot, error) {
	var rel []*storage.Snapshot
	for s.mu.openBytes > 0 && s.mu.openBytes+cost > s.opts.MaxSessionMemory {
		var victim *session
		for _, sess := range s.mu.sessions {
			if sess.plan != nil && sess.readers == 0 && (victim == nil || sess.lastUsed.Before(victim.lastUsed)) {
				victim = sess
			}
		}
		if victim == nil {
			return rel, apierr.New(codes.ResourceExhausted, 0, "",
				"Exceeds 'read session memory' limit: the open read sessions hold %d bytes of %d (serve --read-session-memory); retry when a read finishes", s.mu.openBytes, s.opts.MaxSessionMemory)
		}
		rel = append(rel, s.closeLocked(victim))
	}
	return rel, nil
}

func releaseAll(snaps []*storage.Snapshot) {
	for _, snap := range snaps {
		snap.Release()
	}
}

// checkProjectCap refuses a new session for a project at its cap.
func (s *Service) checkProjectCap(project string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.projectCapLocked(project)
}

// REQUIRES: s.mu held.
func (s *Service) projectCapLocked(project string) error {
	if n := s.mu.perProject[project]; n >= s.opts.MaxSessionsPerProject {
		return apierr.New(codes.ResourceExhausted, 0, "",
			"Exceeds 'read sessions per project' limit: project %s has %d live read sessions (serve --max-read-sessions); sessions expire %v after creation", project, n, s.opts.SessionTTL)
	}
	return nil
}

// addSession registers a new session, open with plan p, and persists it.
func (s *Service) addSession(p *plan) error {
	m := p.meta
	sess := &session{id: m.ID, name: resource.SessionName(m.Project, m.Location, m.ID), project: m.Project,
		expire: m.Expire, plan: p, lastUsed: s.opts.Clock()}
	s.mu.Lock()
	if err := s.projectCapLocked(m.Project); err != nil {
		s.mu.Unlock()
		p.snap.Release()
		return err
	}
	rel, err := s.reserveLocked(p.cost)
	if err != nil {
		s.mu.Unlock()
		releaseAll(rel)
		p.snap.Release()
		return err
	}
	var meta *sessionMeta
	if s.store != nil {
		meta = m.clone()
	}
	s.mu.sessions[sess.id] = sess
	s.mu.perProject[sess.project]++
	s.mu.openBytes += p.cost
	s.metrics.open.Inc()
	s.metrics.openBytes.Set(float64(s.mu.openBytes))
	s.metrics.sessions.Set(float64(len(s.mu.sessions)))
	s.mu.Unlock()
	releaseAll(rel)
	if meta == nil {
		return nil
	}
	sess.persistMu.Lock()
	err = s.store.put(meta)
	sess.persistMu.Unlock()
	if err != nil {
		s.log.Error("persist read session", "session", sess.name, "err", err)
		s.mu.Lock()
		var snap *storage.Snapshot
		if sess.plan != nil && sess.readers == 0 {
			snap = s.closeLocked(sess)
		}
		sess.removed = true
		delete(s.mu.sessions, sess.id)
		s.mu.perProject[sess.project]--
		s.mu.Unlock()
		if snap != nil {
			snap.Release()
		}
		return err
	}
	return nil
}

// open returns session id open (its plan built if needed) with one more
// reader; the caller calls close when done. name is the resource the
// request named, for errors.
func (s *Service) open(ctx context.Context, id, name string) (*session, *plan, error) {
	s.mu.Lock()
	for {
		sess := s.mu.sessions[id]
		if sess == nil || sess.removed {
			s.mu.Unlock()
			return nil, nil, apierr.New(codes.NotFound, 0, name, "read stream not found: %s", name)
		}
		if s.opts.Clock().After(sess.expire) {
			s.mu.Unlock()
			return nil, nil, expiredError(name, sess.expire)
		}
		if p := sess.plan; p != nil {
			sess.readers++
			s.mu.Unlock()
			return sess, p, nil
		}
		if ch := sess.loading; ch != nil {
			s.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
			s.mu.Lock()
			continue
		}
		ch := make(chan struct{})
		sess.loading = ch
		meta := sess.meta
		s.mu.Unlock()
		p, err := s.reopen(ctx, sess, meta)
		s.mu.Lock()
		sess.loading = nil
		close(ch)
		if err == nil && sess.removed {
			err = apierr.New(codes.NotFound, 0, name, "read stream not found: %s", name)
		}
		var rel []*storage.Snapshot
		if err == nil {
			rel, err = s.reserveLocked(p.cost)
		}
		if err != nil {
			s.mu.Unlock()
			releaseAll(rel)
			if p != nil {
				p.snap.Release()
			}
			return nil, nil, err
		}
		sess.plan, sess.meta = p, nil
		s.mu.openBytes += p.cost
		s.metrics.open.Inc()
		s.metrics.openBytes.Set(float64(s.mu.openBytes))
		s.mu.Unlock()
		releaseAll(rel)
		s.mu.Lock()
	}
}

// reopen rebuilds a closed session's plan from its metadata (meta, or the
// session file when nil): the snapshot at the persisted time, the filter
// and the streams.
func (s *Service) reopen(ctx context.Context, sess *session, meta *sessionMeta) (*plan, error) {
	if meta == nil {
		if s.store == nil {
			return nil, fmt.Errorf("readapi: session %s has no metadata", sess.id)
		}
		m, err := s.store.get(sess.id)
		if err != nil {
			return nil, fmt.Errorf("readapi: read session %s: %w", sess.id, err)
		}
		meta = m
	}
	tbl, err := s.db.Table(meta.TableID)
	if err != nil {
		return nil, err
	}
	snap, err := tbl.Snapshot(time.UnixMicro(meta.SnapshotMicros))
	if errors.Is(err, storage.ErrSnapshotTooOld) {
		// The time-travel window (storage.Options.TimeTravel) is shorter
		// than the session's age: like an expired session, not the
		// caller's argument.
		s.log.Warn("read session snapshot left the time-travel window", "session", sess.name, "err", err)
		return nil, apierr.New(codes.FailedPrecondition, 0, sess.name, "there was an error operating on '%s': the session's snapshot is older than the time-travel window; create a new session", sess.name)
	}
	if err != nil {
		return nil, err
	}
	p, err := s.buildPlan(ctx, meta, snap)
	if err == nil && p.total() != meta.Rows {
		err = fmt.Errorf("readapi: session %s: the snapshot at %d has %d plan rows, the session %d", sess.id, meta.SnapshotMicros, p.total(), meta.Rows)
		s.log.Error("read session cannot be re-opened", "session", sess.name, "err", err)
		err = apierr.New(codes.FailedPrecondition, 0, sess.name, "there was an error operating on '%s': the session's snapshot can no longer be read; create a new session", sess.name)
	}
	if err != nil {
		snap.Release()
		return nil, err
	}
	return p, nil
}

// close ends a reader's use of sess. doneStream, when set, names a stream
// the reader read to its end; a session whose streams have all been read
// closes when its last reader is done.
func (s *Service) close(sess *session, doneStream string) {
	s.mu.Lock()
	sess.readers--
	sess.lastUsed = s.opts.Clock()
	var snap *storage.Snapshot
	if p := sess.plan; p != nil {
		if doneStream != "" {
			p.done[doneStream] = true
		}
		if sess.readers == 0 && p.allDone() {
			snap = s.closeLocked(sess)
		}
	}
	s.mu.Unlock()
	if snap != nil {
		snap.Release()
	}
}

// newID returns a random id that is safe in a resource name.
func newID() string {
	var b [15]byte
	_, _ = rand.Read(b[:])
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

type metrics struct {
	sessions  prometheus.Gauge
	open      prometheus.Gauge
	openBytes prometheus.Gauge
	rows      prometheus.Counter
	bytes     prometheus.Counter
	pruned    prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		sessions:  prometheus.NewGauge(prometheus.GaugeOpts{Name: "bqstore_read_sessions", Help: "Live (unexpired) read sessions."}),
		open:      prometheus.NewGauge(prometheus.GaugeOpts{Name: "bqstore_read_sessions_open", Help: "Read sessions holding a pinned snapshot and plan."}),
		openBytes: prometheus.NewGauge(prometheus.GaugeOpts{Name: "bqstore_read_sessions_open_bytes", Help: "Estimated memory held by open read sessions."}),
		rows:      prometheus.NewCounter(prometheus.CounterOpts{Name: "bqstore_read_rows_total", Help: "Rows sent by ReadRows."}),
		bytes:     prometheus.NewCounter(prometheus.CounterOpts{Name: "bqstore_read_bytes_total", Help: "Serialized row bytes sent by ReadRows."}),
		pruned:    prometheus.NewCounter(prometheus.CounterOpts{Name: "bqstore_read_chunks_pruned_total", Help: "Batches skipped by zone maps against row_restriction."}),
	}
	if reg != nil {
		reg.MustRegister(m.sessions, m.open, m.openBytes, m.rows, m.bytes, m.pruned)
	}
	return m
}
