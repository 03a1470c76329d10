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
	"log/slog"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"github.com/prometheus/client_golang/prometheus"

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
	Clock          func() time.Time
	Logger         *slog.Logger
	Registerer     prometheus.Registerer
}

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
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Service implements storagepb.BigQueryReadServer.
//
// Goroutine lifetimes: New starts one janitor goroutine that expires
// sessions and releases their snapshots; Close stops it and waits.
type Service struct {
	storagepb.UnimplementedBigQueryReadServer
	tables  Tables
	db      *storage.DB
	opts    Options
	log     *slog.Logger
	metrics *metrics

	mu struct {
		sync.Mutex
		sessions map[string]*session // by session id
	}
	stop chan struct{}
	done chan struct{}
}

// New returns the service and starts its janitor.
func New(tables Tables, db *storage.DB, opts Options) *Service {
	opts.setDefaults()
	s := &Service{tables: tables, db: db, opts: opts, log: opts.Logger, metrics: newMetrics(opts.Registerer),
		stop: make(chan struct{}), done: make(chan struct{})}
	s.mu.sessions = make(map[string]*session)
	go s.janitor()
	return s
}

// Close stops the janitor and releases every session's snapshot.
func (s *Service) Close() {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, sess := range s.mu.sessions {
		sess.release()
		delete(s.mu.sessions, id)
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
			s.expire()
		}
	}
}

// expire drops sessions past their expire time (plus a grace period so a
// client reading at the deadline gets FAILED_PRECONDITION, not NOT_FOUND).
func (s *Service) expire() {
	now := s.opts.Clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, sess := range s.mu.sessions {
		if now.After(sess.expire.Add(time.Hour)) {
			sess.release()
			delete(s.mu.sessions, id)
		}
	}
	s.metrics.sessions.Set(float64(len(s.mu.sessions)))
}

func (s *Service) session(id string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.sessions[id]
}

func (s *Service) addSession(sess *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.sessions[sess.id] = sess
	s.metrics.sessions.Set(float64(len(s.mu.sessions)))
}

// newID returns a random id that is safe in a resource name.
func newID() string {
	var b [15]byte
	_, _ = rand.Read(b[:])
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

type metrics struct {
	sessions prometheus.Gauge
	rows     prometheus.Counter
	bytes    prometheus.Counter
	pruned   prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		sessions: prometheus.NewGauge(prometheus.GaugeOpts{Name: "bqstore_read_sessions", Help: "Open read sessions."}),
		rows:     prometheus.NewCounter(prometheus.CounterOpts{Name: "bqstore_read_rows_total", Help: "Rows sent by ReadRows."}),
		bytes:    prometheus.NewCounter(prometheus.CounterOpts{Name: "bqstore_read_bytes_total", Help: "Serialized row bytes sent by ReadRows."}),
		pruned:   prometheus.NewCounter(prometheus.CounterOpts{Name: "bqstore_read_chunks_pruned_total", Help: "Batches skipped by zone maps against row_restriction."}),
	}
	if reg != nil {
		reg.MustRegister(m.sessions, m.rows, m.bytes, m.pruned)
	}
	return m
}
