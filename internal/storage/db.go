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
	// lastTS is the latest timestamp any table stamped or recovered, µs
	// (Now; noteTS).
	lastTS atomic.Int64
	mu     struct {
		sync.Mutex
		tables map[string]*Table
		// quarantined: tables whose files failed recovery at Open, by id.
		quarantined map[string]*QuarantineError
		closed      bool
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
// file's tail after its checkpoint is replayed, and a torn tail is
// truncated. A table whose files fail recovery (mid-file corruption, a
// missing file, an I/O error) does not fail Open: it is quarantined (its
// files are left as they are) and every call on it fails with a
// *QuarantineError naming file and offset (errors.Is ErrQuarantined and,
// for bad bytes, ErrCorruption); the other tables serve. Open fails only
// if the directory cannot be read or a failed table's id cannot be read.
func Open(dir string, opts *Options) (*DB, error) {
	db := newDB(dir, opts)
	td := path.Join(dir, tablesDir)
	existed := db.fs.Exists(dir)
	if err := db.fs.MkdirAll(td); err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", dir, err)
	}
	// Make tables/ (and dir, if new) durable before any table is
	// published under it.
	if err := db.fs.SyncDir(dir); err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", dir, err)
	}
	if !existed {
		if err := db.fs.SyncDir(path.Dir(dir)); err != nil {
			return nil, fmt.Errorf("storage: open %s: %w", dir, err)
		}
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
			var id string
			if err != nil {
				id, err = db.quarantine(p, err)
				if err != nil {
					db.closeTables()
					return nil, err
				}
			} else {
				id = t.id
			}
			prevDir := ""
			if prev, dup := db.mu.tables[id]; dup {
				prevDir = prev.dir
			} else if q, dup := db.mu.quarantined[id]; dup && q.Dir != p {
				prevDir = q.Dir
			}
			if prevDir != "" {
				if t != nil {
					t.close()
				}
				db.closeTables()
				return nil, fmt.Errorf("storage: open %s: table %q in both %s and %s", dir, id, prevDir, p)
			}
			if t != nil {
				db.mu.tables[id] = t
			}
		}
	}
	return db, nil
}

// quarantine sets aside the table in tdir whose recovery failed with
// cause, and returns its id. It fails if the id cannot be read from any
// of the table's HEADERs (nothing could then keep the table's name from
// being reused).
func (db *DB) quarantine(tdir string, cause error) (string, error) {
	id, err := tableIDOf(db.fs, tdir)
	if err != nil {
		return "", fmt.Errorf("storage: open %s: recovery failed (%w) and the table id cannot be read: %v", tdir, cause, err)
	}
	db.log.Error("storage: table quarantined: its files failed recovery; the other tables serve", "table", id, "dir", tdir, "err", cause)
	db.mu.quarantined[id] = &QuarantineError{Table: id, Dir: tdir, Err: cause}
	return id, nil
}

// tableIDOf reads the table id from the first readable HEADER of the log
// files in tdir.
func tableIDOf(fs vfs.FS, tdir string) (string, error) {
	names, err := fs.List(tdir)
	if err != nil {
		return "", err
	}
	var nums []int
	for _, n := range names {
		if num, ok := parseLogName(n); ok {
			nums = append(nums, num)
		}
	}
	slices.Sort(nums)
	for _, num := range nums {
		name := path.Join(tdir, logName(num))
		f, err := fs.Open(name)
		if err != nil {
			continue
		}
		size, err := f.Size()
		if err == nil {
			var fr wal.Frame
			fr, err = wal.NewReader(f, size, name, 0).Next()
			if err == nil && fr.Type == recHeader {
				var id string
				id, _, _, err = decodeHeader(name, fr.Payload)
				if err == nil {
					f.Close()
					return id, nil
				}
			}
		}
		f.Close()
	}
	return "", fmt.Errorf("no log file with a readable HEADER: %w", ErrCorruption)
}

// Quarantined returns the tables whose files failed recovery at Open
// (sorted by id); their files are left as recovery found them (only a
// torn, never acknowledged tail may have been cut).
func (db *DB) Quarantined() []*QuarantineError {
	db.mu.Lock()
	defer db.mu.Unlock()
	out := make([]*QuarantineError, 0, len(db.mu.quarantined))
	for _, q := range db.mu.quarantined {
		out = append(out, q)
	}
	slices.SortFunc(out, func(a, b *QuarantineError) int { return strings.Compare(a.Table, b.Table) })
	return out
}

// newDB is a DB on dir with opts' defaults filled in, holding no table.
func newDB(dir string, opts *Options) *DB {
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
	db.mu.quarantined = map[string]*QuarantineError{}
	return db
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
	if q, ok := db.mu.quarantined[id]; ok {
		db.mu.Unlock()
		return nil, q
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
	db.noteTS(now)
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
		if q, ok := db.mu.quarantined[id]; ok {
			return nil, q
		}
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
	var tdir string
	switch {
	case ok:
		delete(db.mu.tables, id)
		tdir = t.dir
	case db.mu.quarantined[id] != nil:
		// Dropping is what the caller asks for; a quarantined table's
		// files go like any other's.
		tdir = db.mu.quarantined[id].Dir
		delete(db.mu.quarantined, id)
	default:
		db.mu.Unlock()
		return fmt.Errorf("storage: table %q: %w", id, ErrTableNotFound)
	}
	db.mu.Unlock()
	if t != nil {
		t.mu.Lock()
		t.mu.dropped = true
		t.mu.Unlock()
		_ = t.close()
	}
	td := path.Join(db.dir, tablesDir)
	gone := tdir + ".drop"
	if err := db.fs.Rename(tdir, gone); err != nil {
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

// TableIDs returns the ids of all tables that opened (not the
// quarantined ones), sorted.
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

// Reservation is in-flight budget taken ahead of an append, before the
// request it belongs to is decoded, so that the budget bounds the memory
// of requests being decoded and not only of log frames waiting for their
// sync. Hand it to AppendAsync in AppendRequest.Reservation: the append
// keeps what its frame needs (taking more if the reservation is short) and
// returns the rest. Release returns what was not handed over; it is
// idempotent and safe after AppendAsync. A Reservation is used by one
// goroutine at a time.
type Reservation struct {
	db *DB
	n  int64
}

// Reserve takes n bytes of the in-flight budget (at most the whole
// budget), waiting FIFO behind other appends while it is exhausted, until
// ctx is done.
func (db *DB) Reserve(ctx context.Context, n int64) (*Reservation, error) {
	got, err := db.budget.acquire(ctx, max(n, 0), &db.m.budgetWaits)
	if err != nil {
		return nil, err
	}
	return &Reservation{db: db, n: got}, nil
}

// Release returns the reservation's bytes to the budget.
func (r *Reservation) Release() {
	if r == nil || r.n == 0 {
		return
	}
	r.db.budget.release(r.n)
	r.n = 0
}

// take hands the reservation's bytes over to the caller.
func (r *Reservation) take() int64 {
	if r == nil {
		return 0
	}
	n := r.n
	r.n = 0
	return n
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
