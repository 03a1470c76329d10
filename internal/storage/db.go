package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/bqstore/bqstore/internal/storage/stream"
	"github.com/bqstore/bqstore/internal/storage/vfs"
	"github.com/bqstore/bqstore/internal/storage/wal"
)

// StreamType is a write stream's type.
type StreamType int

// Stream types; the values equal stream.Type's.
const (
	// StreamDefault is the implicit "_default" stream: committed on append.
	StreamDefault StreamType = StreamType(stream.Default)
	// StreamCommitted: rows visible on append.
	StreamCommitted StreamType = StreamType(stream.Committed)
	// StreamPending: rows visible at batch commit.
	StreamPending StreamType = StreamType(stream.Pending)
	// StreamBuffered: rows visible up to the flush watermark.
	StreamBuffered StreamType = StreamType(stream.Buffered)
)

func (t StreamType) String() string { return stream.Type(t).String() }

// StreamState is a write stream's state.
type StreamState int

// Stream states; the values equal stream.State's.
const (
	StreamOpen      StreamState = StreamState(stream.Open)
	StreamFinalized StreamState = StreamState(stream.Finalized)
	// StreamCommittedState: a PENDING stream after batch commit.
	StreamCommittedState StreamState = StreamState(stream.CommittedState)
)

func (s StreamState) String() string { return stream.State(s).String() }

// DefaultStreamID is the id of the implicit default stream of every table.
const DefaultStreamID = stream.DefaultID

// Options configure a DB. The zero value of each field means its default.
type Options struct {
	// FS is the filesystem (default vfs.Default, the disk).
	FS vfs.FS
	// Clock is the time source (default time.Now).
	Clock func() time.Time
	// Logger receives fail-stop and recovery events (default: discard).
	Logger *slog.Logger
	// TimeTravel is how far back a snapshot may read (default 7 days):
	// older snapshot times fail with ErrSnapshotTooOld.
	TimeTravel time.Duration
	// PendingStreamTTL is how long an uncommitted PENDING stream lives
	// after its creation (default 7 days, the time-travel window: BigQuery
	// documents that pending streams that are never committed are
	// garbage-collected, and we keep them for the longest plausible time).
	// An expired stream is reported as not found and its rows can never
	// become visible.
	PendingStreamTTL time.Duration
	// MaxInflightBytes is the byte budget of appends in flight (default
	// 512 MiB); at the budget, appends wait (ctx-cancellable).
	MaxInflightBytes int64
	// SegmentSize is the size at which the active log file is sealed and
	// a new one started (default 256 MiB).
	SegmentSize int64
}

// DB is a set of tables under one directory.
//
// Lock order: DB.createMu, then DB.mu, then Table.mu; the budget's mutex
// is a leaf. No lock is held across I/O except DB.createMu (table
// creation and deletion are rare and serialized).
type DB struct {
	fs    vfs.FS
	dir   string
	opts  Options
	clock func() time.Time
	log   *slog.Logger

	createMu sync.Mutex // serializes CreateTable and DropTable
	mu       struct {
		sync.Mutex
		tables map[string]*Table
		closed bool
	}
	budget *budget
	m      counters
	lock   io.Closer // the data directory's LOCK file
}

type counters struct {
	appends, appendedRows, appendedBytes atomic.Int64
	syncs, syncedFrames, syncedBytes     atomic.Int64
	failStops, rolls, budgetWaits        atomic.Int64
	compactions                          atomic.Int64
}

// Metrics are cumulative counters of a DB.
type Metrics struct {
	Tables        int
	Appends       int64 // acknowledged appends
	AppendedRows  int64
	AppendedBytes int64 // frame bytes of acknowledged appends
	Syncs         int64 // fdatasyncs of log files
	SyncedFrames  int64 // frames made durable by those syncs
	SyncedBytes   int64
	FailStops     int64 // tables put in fail-stop
	Rolls         int64 // log files sealed
	BudgetWaits   int64 // appends that waited for the in-flight budget
	Compactions   int64 // compactions that replaced files
	InflightBytes int64 // bytes of appends in flight now
}

// FramesPerSync is the mean group-commit size.
func (m Metrics) FramesPerSync() float64 {
	if m.Syncs == 0 {
		return 0
	}
	return float64(m.SyncedFrames) / float64(m.Syncs)
}

const tablesDir = "tables"

// Open opens (creating if needed) the database in dir and recovers every
// table: sealed log files are indexed from their footers, the active
// file's tail after its checkpoint is replayed, a torn tail is truncated,
// and mid-file corruption fails Open with an error naming file and offset
// (errors.Is(err, ErrCorruption)).
func Open(dir string, opts *Options) (*DB, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.TimeTravel <= 0 {
		o.TimeTravel = 7 * 24 * time.Hour
	}
	if o.PendingStreamTTL <= 0 {
		o.PendingStreamTTL = 7 * 24 * time.Hour
	}
	if o.MaxInflightBytes <= 0 {
		o.MaxInflightBytes = 512 << 20
	}
	if o.SegmentSize <= 0 {
		o.SegmentSize = 256 << 20
	}
	db := &DB{fs: o.FS, dir: dir, opts: o, clock: o.Clock, log: o.Logger}
	db.budget = newBudget(o.MaxInflightBytes)
	db.mu.tables = map[string]*Table{}
	td := path.Join(dir, tablesDir)
	if err := db.fs.MkdirAll(td); err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", dir, err)
	}
	// One process per data directory: a second one would interleave
	// its log writes with ours.
	lock, err := db.fs.Lock(path.Join(dir, "LOCK"))
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", dir, err)
	}
	db.lock = lock
	names, err := db.fs.List(td)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("storage: open %s: %w", dir, err)
	}
	for _, name := range names {
		p := path.Join(td, name)
		switch {
		case strings.HasSuffix(name, ".tmp"), strings.HasSuffix(name, ".drop"):
			// An interrupted create or drop.
			if err := db.fs.RemoveAll(p); err != nil {
				db.closeTables()
				return nil, fmt.Errorf("storage: open %s: remove %s: %w", dir, name, err)
			}
		case strings.HasPrefix(name, "t-"):
			t, err := openTable(db, p)
			if err != nil {
				db.closeTables()
				return nil, err
			}
			if prev, dup := db.mu.tables[t.id]; dup {
				t.close()
				db.closeTables()
				return nil, fmt.Errorf("storage: open %s: table %q in both %s and %s", dir, t.id, prev.dir, t.dir)
			}
			db.mu.tables[t.id] = t
		}
	}
	return db, nil
}

// closeTables closes the tables and the lock after a failed Open.
func (db *DB) closeTables() {
	for _, t := range db.mu.tables {
		t.close()
	}
	db.lock.Close()
}

// Close closes every table, waiting for the log writers (queued appends
// are written first). Snapshots stay readable until released.
func (db *DB) Close() error {
	db.createMu.Lock()
	defer db.createMu.Unlock()
	db.mu.Lock()
	if db.mu.closed {
		db.mu.Unlock()
		return nil
	}
	db.mu.closed = true
	tables := db.mu.tables
	db.mu.tables = map[string]*Table{}
	db.mu.Unlock()
	var firstErr error
	for _, t := range tables {
		if err := t.close(); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	if err := db.lock.Close(); err != nil && firstErr == nil {
		firstErr = err
	}
	return firstErr
}

func newID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// CreateTable creates a table with schema as version 1. For an existing
// id it returns the existing table (whatever schema it has).
func (db *DB) CreateTable(ctx context.Context, id string, schema *arrow.Schema) (*Table, error) {
	if id == "" {
		return nil, fmt.Errorf("storage: create table: empty id: %w", ErrInvalidArgument)
	}
	if schema == nil {
		return nil, fmt.Errorf("storage: create table %q: nil schema: %w", id, ErrInvalidArgument)
	}
	db.createMu.Lock()
	defer db.createMu.Unlock()
	db.mu.Lock()
	if db.mu.closed {
		db.mu.Unlock()
		return nil, ErrClosed
	}
	if t, ok := db.mu.tables[id]; ok {
		db.mu.Unlock()
		return t, nil
	}
	db.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sipc, err := encodeSchema(schema)
	if err != nil {
		return nil, fmt.Errorf("storage: create table %q: %v: %w", id, err, ErrInvalidArgument)
	}
	td := path.Join(db.dir, tablesDir)
	name := "t-" + newID(8)
	tmp := path.Join(td, name+".tmp")
	now := db.clock().UnixMicro()
	ck := &checkpoint{tableID: id, createTS: now, lastTS: now, streams: stream.NewSet(),
		schemas: []schemaVer{{version: 1, ts: now, schema: schema, ipc: sipc}}}
	var buf []byte
	buf = wal.AppendFrame(buf, recHeader, now, encodeHeader(id, 1, 1))
	buf = wal.AppendFrame(buf, recCheckpoint, now, ck.encode())
	if err := db.writeNewFile(tmp, logName(1), buf); err != nil {
		_ = db.fs.RemoveAll(tmp)
		return nil, fmt.Errorf("storage: create table %q: %w", id, err)
	}
	final := path.Join(td, name)
	if err := db.fs.Rename(tmp, final); err != nil {
		_ = db.fs.RemoveAll(tmp)
		return nil, fmt.Errorf("storage: create table %q: %w", id, err)
	}
	if err := db.fs.SyncDir(td); err != nil {
		return nil, fmt.Errorf("storage: create table %q: %w", id, err)
	}
	t, err := openTable(db, final)
	if err != nil {
		return nil, err
	}
	db.mu.Lock()
	db.mu.tables[id] = t
	db.mu.Unlock()
	return t, nil
}

// writeNewFile creates dir/name holding data, durably.
func (db *DB) writeNewFile(dir, name string, data []byte) error {
	if err := db.fs.MkdirAll(dir); err != nil {
		return err
	}
	f, err := db.fs.Create(path.Join(dir, name))
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return db.fs.SyncDir(dir)
}

// Table returns the table with this id, or ErrTableNotFound.
func (db *DB) Table(id string) (*Table, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.mu.closed {
		return nil, ErrClosed
	}
	t, ok := db.mu.tables[id]
	if !ok {
		return nil, fmt.Errorf("storage: table %q: %w", id, ErrTableNotFound)
	}
	return t, nil
}

// DropTable closes the table and removes its files. Open snapshots of it
// stay readable until released.
func (db *DB) DropTable(ctx context.Context, id string) error {
	db.createMu.Lock()
	defer db.createMu.Unlock()
	db.mu.Lock()
	t, ok := db.mu.tables[id]
	if !ok {
		db.mu.Unlock()
		return fmt.Errorf("storage: table %q: %w", id, ErrTableNotFound)
	}
	delete(db.mu.tables, id)
	db.mu.Unlock()
	t.mu.Lock()
	t.mu.dropped = true
	t.mu.Unlock()
	_ = t.close()
	td := path.Join(db.dir, tablesDir)
	gone := t.dir + ".drop"
	if err := db.fs.Rename(t.dir, gone); err != nil {
		return fmt.Errorf("storage: drop table %q: %w", id, err)
	}
	if err := db.fs.SyncDir(td); err != nil {
		return fmt.Errorf("storage: drop table %q: %w", id, err)
	}
	if err := db.fs.RemoveAll(gone); err != nil {
		return fmt.Errorf("storage: drop table %q: %w", id, err)
	}
	return nil
}

// TableIDs returns the ids of all tables, sorted.
func (db *DB) TableIDs() []string {
	db.mu.Lock()
	defer db.mu.Unlock()
	ids := make([]string, 0, len(db.mu.tables))
	for id := range db.mu.tables {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Metrics returns the DB's counters.
func (db *DB) Metrics() Metrics {
	db.mu.Lock()
	n := len(db.mu.tables)
	db.mu.Unlock()
	return Metrics{
		Tables:        n,
		Appends:       db.m.appends.Load(),
		AppendedRows:  db.m.appendedRows.Load(),
		AppendedBytes: db.m.appendedBytes.Load(),
		Syncs:         db.m.syncs.Load(),
		SyncedFrames:  db.m.syncedFrames.Load(),
		SyncedBytes:   db.m.syncedBytes.Load(),
		FailStops:     db.m.failStops.Load(),
		Rolls:         db.m.rolls.Load(),
		BudgetWaits:   db.m.budgetWaits.Load(),
		Compactions:   db.m.compactions.Load(),
		InflightBytes: db.budget.inUse(),
	}
}

// budget is the in-flight byte budget of appends (FIFO, ctx-cancellable).
type budget struct {
	mu      sync.Mutex
	max     int64
	used    int64
	waiters []*budgetWaiter
}

type budgetWaiter struct {
	n       int64
	granted chan struct{}
}

func newBudget(max int64) *budget { return &budget{max: max} }

func (b *budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// acquire takes n bytes (at most the whole budget) and returns what it
// took, waiting while the budget is exhausted.
func (b *budget) acquire(ctx context.Context, n int64, waits *atomic.Int64) (int64, error) {
	n = min(n, b.max)
	b.mu.Lock()
	if len(b.waiters) == 0 && b.used+n <= b.max {
		b.used += n
		b.mu.Unlock()
		return n, nil
	}
	w := &budgetWaiter{n: n, granted: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()
	waits.Add(1)
	select {
	case <-w.granted:
		return n, nil
	case <-ctx.Done():
		b.mu.Lock()
		select {
		case <-w.granted:
			b.mu.Unlock()
			b.release(n)
		default:
			b.waiters = slices.DeleteFunc(b.waiters, func(x *budgetWaiter) bool { return x == w })
			b.grantLocked()
			b.mu.Unlock()
		}
		return 0, ctx.Err()
	}
}

func (b *budget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.grantLocked()
	b.mu.Unlock()
}

// REQUIRES: b.mu held.
func (b *budget) grantLocked() {
	for len(b.waiters) > 0 && b.used+b.waiters[0].n <= b.max {
		w := b.waiters[0]
		b.waiters = b.waiters[1:]
		b.used += w.n
		close(w.granted)
	}
}
