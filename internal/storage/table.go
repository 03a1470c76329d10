package storage

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/bqstore/bqstore/internal/storage/segment"
	"github.com/bqstore/bqstore/internal/storage/stream"
	"github.com/bqstore/bqstore/internal/storage/vfs"
	"github.com/bqstore/bqstore/internal/storage/wal"
)

// Table is one table: its log files, its streams and its batch index.
//
// Every mutation is a log record. A request is first admitted under mu
// against the admission state (admit: the stream states as if every queued
// record were already durable — this is what makes the offset check
// atomic with the append), then queued; the table's single log writer
// goroutine (run) stamps each record with a strictly increasing
// timestamp later than any snapshot time taken so far, writes the group, fdatasyncs once, then applies the records
// to the durable state (durable, schemas, batches) in log order under mu
// and only then acknowledges them. Readers see only the durable state.
//
// Invariants:
//   - log order == admission order == timestamp order;
//   - a record is acknowledged only after the fdatasync that covers it
//     returned nil and it was applied to the durable state;
//   - after a failed write or sync the table is fail-stopped (failErr):
//     nothing queued or later is acknowledged;
//   - a snapshot at T waits until every record stamped <= T is applied,
//     so two snapshots at the same T see the same rows.
type Table struct {
	db  *DB
	id  string
	dir string

	kick     chan struct{} // cap 1: work queued
	stop     chan struct{} // closed by close
	loopDone chan struct{} // closed when run exits
	closeErr error

	// Owned by the log writer goroutine (and by openTable before it
	// starts).
	active *logFile

	mu struct {
		sync.Mutex
		closed  bool
		dropped bool
		// failErr, once set, wraps ErrFailStop and the I/O error.
		failErr error
		queue   []*op

		admit        *stream.Set
		admitSchemas []schemaVer

		durable *stream.Set
		schemas []schemaVer // ascending version and ts
		batches []batchRef  // log order
		// activeStart indexes the first batch of the active file.
		activeStart int
		files       []*logFile
		createTS    int64
		lastTS      int64 // last stamped timestamp, µs
		// vis is the stream view snapshots plan with (nil: rebuild);
		// see visibilityLocked.
		vis map[string]*stream.Stream
		// numRows, numBytes count the rows visible now and their frame
		// bytes; hidden is the frame bytes of streams whose rows are
		// not all visible yet (see countLocked).
		numRows, numBytes int64
		hidden            map[string]int64
		// readTS is the latest time a snapshot was taken at, µs:
		// records are stamped after it, so a snapshot at T is final
		// once taken (not persisted: after a restart the clock and
		// lastTS are past every earlier snapshot time).
		readTS int64
		// inflight is the timestamp of the oldest stamped record not yet
		// applied (0: none).
		inflight int64
		// fenced holds new requests (usableLocked waits on applied)
		// until its Fence is released (fence.go).
		fenced bool
	}
	applied *sync.Cond // L = &mu; signalled when inflight drops

	compactMu sync.Mutex // serializes Compact

	// check is set only by Check (fsck): see checkRun.
	check *checkRun
}

// logFile is one log file and its reference count: the table holds one
// reference while the file is part of it, each snapshot one per file it
// reads. The handle is closed at zero.
type logFile struct {
	num  int
	from int    // a compacted file holds the data of files [from, num]
	name string // path
	f    vfs.File
	refs atomic.Int32
	size int64 // log writer only: bytes written
	// synced is the log writer's: bytes known durable (the size at the
	// last fdatasync); every frame records the value it had when the
	// frame's group was written (wal.SealSynced).
	synced int64
}

func (f *logFile) ref() { f.refs.Add(1) }
func (f *logFile) unref() {
	if f.refs.Add(-1) == 0 {
		_ = f.f.Close()
	}
}

type batchRef struct {
	f *logFile
	b segment.Batch
}

// op is one queued record.
type op struct {
	r      *rec
	buf    []byte // the whole frame; nil: a barrier (waits for the log)
	n      int    // payload length
	crc    uint32 // payload CRC
	budget int64

	ts   int64 // stamped by the log writer
	file *logFile
	off  int64
	err  error
	done chan struct{}
}

func logName(num int) string { return fmt.Sprintf("L-%06d.log", num) }

func parseLogName(name string) (int, bool) {
	if !strings.HasPrefix(name, "L-") || !strings.HasSuffix(name, ".log") {
		return 0, false
	}
	n, err := strconv.Atoi(name[2 : len(name)-4])
	return n, err == nil && n > 0
}

func (t *Table) newOpLocked(r *rec) *op {
	o := &op{r: r, done: make(chan struct{})}
	if r != nil && r.typ != recRows {
		p := r.encodeMeta()
		o.n = len(p)
		o.buf = make([]byte, wal.FrameLen(len(p)))
		copy(o.buf[wal.HeaderSize:], p)
		o.crc = wal.PayloadCRC(p)
	}
	return o
}

// enqueueLocked queues o for the log writer.
// REQUIRES: t.mu held.
func (t *Table) enqueueLocked(o *op) {
	t.mu.queue = append(t.mu.queue, o)
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// usableLocked reports why the table cannot take a request; while the
// table is fenced (fence.go) it waits, releasing t.mu, until the fence
// is released, the table dropped or closed, or ctx done (its error).
// REQUIRES: t.mu held.
func (t *Table) usableLocked(ctx context.Context) error {
	if t.mu.fenced {
		// Wake the wait below when ctx ends: the broadcast needs t.mu,
		// which Wait releases, so it cannot come between the check of
		// ctx and the Wait.
		stop := context.AfterFunc(ctx, func() {
			t.mu.Lock()
			t.applied.Broadcast()
			t.mu.Unlock()
		})
		defer stop()
	}
	for t.mu.fenced && !t.mu.dropped && !t.mu.closed && t.mu.failErr == nil {
		if err := ctx.Err(); err != nil {
			return err
		}
		t.applied.Wait()
	}
	switch {
	case t.mu.dropped:
		return fmt.Errorf("storage: table %q: %w", t.id, ErrTableNotFound)
	case t.mu.closed:
		return ErrClosed
	case t.mu.failErr != nil:
		return t.mu.failErr
	}
	return nil
}

// submitLocked queues a metadata record (or a barrier, r == nil) and
// returns its op; the caller releases t.mu and then waits on op.done,
// which is closed once the record is durable and applied (or failed).
// REQUIRES: t.mu held.
func (t *Table) submitLocked(r *rec) *op {
	o := t.newOpLocked(r)
	t.enqueueLocked(o)
	return o
}

// ID is the table's id.
func (t *Table) ID() string { return t.id }

// cutoff is the creation time before which uncommitted PENDING streams
// are expired.
func (t *Table) cutoff() int64 {
	return t.db.clock().Add(-t.db.opts.PendingStreamTTL).UnixMicro()
}

// checkLiveLocked reports an expired (or abandoned) stream of set s as
// not found. Requests check the admission state, so that a stream
// abandoned by a record still in flight is already gone for them.
// REQUIRES: t.mu held.
func (t *Table) checkLiveLocked(s *stream.Set, id string, cutoff int64) error {
	if st, ok := s.Lookup(id); ok && stream.Expired(st, cutoff) {
		return fmt.Errorf("stream %q expired: %w", id, ErrStreamNotFound)
	}
	return nil
}

// SetSchema installs schema as version, durably. Versions increase;
// setting the current version again with an equal schema is a no-op; the
// change must be additive (new nullable columns at the end of the table
// or of a struct, REQUIRED -> NULLABLE), else ErrSchemaMismatch.
func (t *Table) SetSchema(ctx context.Context, version int, schema *arrow.Schema) error {
	if schema == nil {
		return fmt.Errorf("storage: set schema: nil schema: %w", ErrInvalidArgument)
	}
	sipc, err := encodeSchema(schema)
	if err != nil {
		return fmt.Errorf("storage: set schema: %v: %w", err, ErrInvalidArgument)
	}
	t.mu.Lock()
	if err := t.usableLocked(ctx); err != nil {
		t.mu.Unlock()
		return err
	}
	cur := t.mu.admitSchemas[len(t.mu.admitSchemas)-1]
	var o *op
	switch {
	case version == cur.version:
		if !cur.schema.Equal(schema) {
			t.mu.Unlock()
			return fmt.Errorf("storage: table %q: schema version %d already set to a different schema: %w", t.id, version, ErrSchemaMismatch)
		}
		o = t.submitLocked(nil)
	case version < cur.version:
		t.mu.Unlock()
		return fmt.Errorf("storage: table %q: schema version %d is older than the current version %d: %w", t.id, version, cur.version, ErrSchemaMismatch)
	default:
		if err := checkAdditive(cur.schema.Fields(), schema.Fields(), ""); err != nil {
			t.mu.Unlock()
			return fmt.Errorf("storage: table %q: schema version %d is not an additive change of version %d: %v: %w", t.id, version, cur.version, err, ErrSchemaMismatch)
		}
		t.mu.admitSchemas = append(t.mu.admitSchemas, schemaVer{version: version, schema: schema, ipc: sipc})
		o = t.submitLocked(&rec{typ: recSchema, schemaVersion: version, schema: schema, schemaIPC: sipc})
	}
	t.mu.Unlock()
	<-o.done
	return o.err
}

// Schema returns the current schema and its version.
func (t *Table) Schema() (version int, schema *arrow.Schema) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.mu.schemas[len(t.mu.schemas)-1]
	return s.version, s.schema
}

// StreamInfo describes a write stream.
type StreamInfo struct {
	ID    string
	Type  StreamType
	State StreamState
	// CreateTime, FinalizeTime, CommitTime: zero when not reached.
	CreateTime, FinalizeTime, CommitTime time.Time
	// NextOffset is the number of rows appended (durably).
	NextOffset int64
	// FlushedOffset is the number of rows visible now: for BUFFERED the
	// flush watermark (rows [0, FlushedOffset) are visible); NextOffset
	// for COMMITTED and _default and committed PENDING streams; 0 for
	// uncommitted PENDING streams.
	FlushedOffset int64
	// SchemaVersion is the table schema version at stream creation.
	SchemaVersion int
}

func usTime(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us)
}

func infoOf(st *stream.Stream) StreamInfo {
	si := StreamInfo{
		ID: st.ID, Type: StreamType(st.Type), State: StreamState(st.State),
		CreateTime: usTime(st.CreateTS), FinalizeTime: usTime(st.FinalizeTS), CommitTime: usTime(st.CommitTS),
		NextOffset: st.Next, SchemaVersion: st.SchemaVersion,
	}
	if st.Type == stream.Committed {
		// BigQuery reports a COMMITTED stream's commit_time as its
		// create_time (rows are committed as they are appended).
		si.CommitTime = si.CreateTime
	}
	switch {
	case st.Type == stream.Buffered:
		si.FlushedOffset = st.Flushed()
	case st.Type == stream.Pending && st.State != stream.CommittedState:
	default:
		si.FlushedOffset = st.Next
	}
	return si
}

// CreateStream creates a COMMITTED, PENDING or BUFFERED stream with a
// random URL-safe id, durably.
func (t *Table) CreateStream(ctx context.Context, typ StreamType) (StreamInfo, error) {
	if typ != StreamCommitted && typ != StreamPending && typ != StreamBuffered {
		return StreamInfo{}, fmt.Errorf("storage: create stream of type %v: %w", typ, ErrInvalidStreamType)
	}
	id := newID(12)
	t.mu.Lock()
	if err := t.usableLocked(ctx); err != nil {
		t.mu.Unlock()
		return StreamInfo{}, err
	}
	sv := t.mu.admitSchemas[len(t.mu.admitSchemas)-1].version
	if err := t.mu.admit.Create(id, stream.Type(typ), 0, sv); err != nil {
		t.mu.Unlock()
		return StreamInfo{}, fmt.Errorf("storage: %w", err)
	}
	o := t.submitLocked(&rec{typ: recStreamCreate, stream: id, streamType: stream.Type(typ), schemaVersion: sv})
	t.mu.Unlock()
	<-o.done
	if o.err != nil {
		return StreamInfo{}, o.err
	}
	return t.Stream(id)
}

// Stream describes a stream; DefaultStreamID reports the default stream.
func (t *Table) Stream(id string) (StreamInfo, error) {
	cutoff := t.cutoff()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.dropped {
		return StreamInfo{}, fmt.Errorf("storage: table %q: %w", t.id, ErrTableNotFound)
	}
	if err := t.checkLiveLocked(t.mu.durable, id, cutoff); err != nil {
		return StreamInfo{}, fmt.Errorf("storage: %w", err)
	}
	st, err := t.mu.durable.Get(id)
	if err != nil {
		return StreamInfo{}, fmt.Errorf("storage: %w", err)
	}
	si := infoOf(st)
	if id == DefaultStreamID {
		si.CreateTime = usTime(t.mu.createTS)
		si.SchemaVersion = t.mu.schemas[len(t.mu.schemas)-1].version
	}
	return si, nil
}

// AppendRequest is one append.
type AppendRequest struct {
	// Stream is the stream id (DefaultStreamID for the default stream).
	Stream string
	// Offset is the expected offset of the first row; -1: no check.
	Offset int64
	// Batch holds the rows; it must match the table schema of
	// SchemaVersion (same column names and types). The caller keeps its
	// reference.
	Batch arrow.Record
	// SchemaVersion names the table schema version the batch was built
	// for; 0 means the current version.
	SchemaVersion int
	// Reservation, if set, is in-flight budget the caller took before
	// decoding the batch (DB.Reserve); the append uses it for its frame
	// instead of taking budget anew. The caller still calls Release.
	Reservation *Reservation
}

// AppendResult is an acknowledged append.
type AppendResult struct {
	// Offset is the first row's stream offset; -1 for the default stream.
	Offset int64
	// Time is when the rows became durable (and, for COMMITTED and
	// _default streams, visible).
	Time time.Time
}

// Append appends a batch to a stream and returns once it is durable.
// The offset check (equal: append; below: ErrOffsetExists; above:
// ErrOffsetOutOfRange) is atomic with the append.
func (t *Table) Append(ctx context.Context, req AppendRequest) (AppendResult, error) {
	p, err := t.AppendAsync(ctx, req)
	if err != nil {
		return AppendResult{}, err
	}
	return p.Wait(ctx)
}

// PendingAppend is an append that passed its checks, has its offsets
// reserved and is queued for the log; Wait returns once it is durable.
type PendingAppend struct {
	t      *Table
	o      *op
	first  int64
	rows   int64
	bytes  int64
	stream string
}

// Wait blocks until the append is durable (or failed) and returns its
// result. If ctx ends first, Wait returns ctx's error; the append may
// still become durable (a lost acknowledgement: a retry at the same offset
// gets ErrOffsetExists).
func (p *PendingAppend) Wait(ctx context.Context) (AppendResult, error) {
	select {
	case <-p.o.done:
	case <-ctx.Done():
		return AppendResult{}, ctx.Err()
	}
	if p.o.err != nil {
		return AppendResult{}, p.o.err
	}
	m := &p.t.db.m
	m.appends.Add(1)
	m.appendedRows.Add(p.rows)
	m.appendedBytes.Add(p.bytes)
	first := p.first
	if p.stream == DefaultStreamID {
		first = -1
	}
	return AppendResult{Offset: first, Time: time.UnixMicro(p.o.ts)}, nil
}

// AppendAsync does the synchronous part of Append: validation, the offset
// check and reservation, and queueing for the log, in the caller's order.
// Callers that must keep several appends in order (one AppendRows
// connection) call AppendAsync in that order and Wait for each later.
func (t *Table) AppendAsync(ctx context.Context, req AppendRequest) (*PendingAppend, error) {
	if req.Batch == nil || req.Batch.NumRows() == 0 {
		return nil, fmt.Errorf("storage: append to %q: no rows: %w", req.Stream, ErrInvalidArgument)
	}
	if req.Offset < -1 {
		return nil, fmt.Errorf("storage: append to %q: offset %d: %w", req.Stream, req.Offset, ErrInvalidArgument)
	}
	if req.Stream == DefaultStreamID && req.Offset != -1 {
		return nil, fmt.Errorf("storage: append with offset %d to the default stream: %w", req.Offset, ErrInvalidStreamType)
	}
	if req.Stream == "" {
		return nil, fmt.Errorf("storage: append: empty stream id: %w", ErrInvalidArgument)
	}
	t.mu.Lock()
	sv, ok := t.schemaLocked(t.mu.admitSchemas, req.SchemaVersion)
	t.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("storage: append to %q: unknown schema version %d: %w", req.Stream, req.SchemaVersion, ErrSchemaMismatch)
	}
	if err := checkBatchSchema(req.Batch.Schema(), sv.schema); err != nil {
		return nil, fmt.Errorf("storage: append to %q: schema version %d: %v: %w", req.Stream, sv.version, err, ErrSchemaMismatch)
	}
	rows := req.Batch.NumRows()

	// Encode and checksum outside the lock.
	msg, err := encodeRows(req.Batch)
	if err != nil {
		return nil, fmt.Errorf("storage: append to %q: %v: %w", req.Stream, err, ErrInvalidArgument)
	}
	stats := msg.stats
	buf := frameBufs.get(wal.HeaderSize, wal.HeaderSize+msg.size()+rowsMetaSizeHint(req.Stream, stats)+rowsTrailerLen+wal.Align)
	buf, err = msg.appendTo(buf)
	msg.release()
	if err != nil {
		return nil, fmt.Errorf("storage: append to %q: %v: %w", req.Stream, err, ErrInvalidArgument)
	}
	ipcEnd := len(buf)
	buf = encodeRowsMeta(buf, req.Stream, stats)
	metaLen := len(buf) - ipcEnd
	crc := wal.PayloadCRC(buf[wal.HeaderSize:])
	n := len(buf) - wal.HeaderSize + rowsTrailerLen
	buf = append(buf, make([]byte, wal.FrameLen(n)-len(buf))...)
	trailer := buf[wal.HeaderSize+n-rowsTrailerLen : wal.HeaderSize+n]

	got, err := t.frameBudget(ctx, req.Reservation, int64(len(buf)))
	if err != nil {
		return nil, err
	}
	cutoff := t.cutoff()
	t.mu.Lock()
	if err := t.usableLocked(ctx); err != nil {
		t.mu.Unlock()
		t.db.budget.release(got)
		return nil, err
	}
	err = t.checkLiveLocked(t.mu.admit, req.Stream, cutoff)
	var first int64
	if err == nil {
		first, err = t.mu.admit.Append(req.Stream, req.Offset, rows)
	}
	if err != nil {
		t.mu.Unlock()
		t.db.budget.release(got)
		return nil, fmt.Errorf("storage: append: %w", err)
	}
	putRowsTrailer(trailer, first, rows, sv.version, metaLen)
	o := &op{
		r:   &rec{typ: recRows, stream: req.Stream, first: first, rows: rows, schemaVersion: sv.version, stats: stats},
		buf: buf, n: n, crc: wal.UpdateCRC(crc, trailer), budget: got,
		done: make(chan struct{}),
	}
	t.enqueueLocked(o)
	t.mu.Unlock()
	return &PendingAppend{t: t, o: o, first: first, rows: rows, bytes: int64(len(buf)), stream: req.Stream}, nil
}

// frameBudget takes the in-flight budget of a frame of need bytes: from res
// when the caller reserved ahead (the surplus goes back to the budget),
// topped up from the budget when the reservation is short.
func (t *Table) frameBudget(ctx context.Context, res *Reservation, need int64) (int64, error) {
	got := res.take()
	need = min(need, t.db.budget.max)
	switch {
	case got > need:
		t.db.budget.release(got - need)
		return need, nil
	case got < need:
		more, err := t.db.budget.acquire(ctx, need-got, &t.db.m.budgetWaits)
		if err != nil {
			t.db.budget.release(got)
			return 0, err
		}
		return got + more, nil
	}
	return got, nil
}

// schemaLocked finds schema version v in list (0: the latest).
// REQUIRES: t.mu held.
func (t *Table) schemaLocked(list []schemaVer, v int) (schemaVer, bool) {
	if v == 0 {
		return list[len(list)-1], true
	}
	for _, s := range list {
		if s.version == v {
			return s, true
		}
	}
	return schemaVer{}, false
}

// Finalize finalizes a stream and returns its row count; finalizing
// again returns the same count.
func (t *Table) Finalize(ctx context.Context, id string) (int64, error) {
	cutoff := t.cutoff()
	t.mu.Lock()
	if err := t.usableLocked(ctx); err != nil {
		t.mu.Unlock()
		return 0, err
	}
	if err := t.checkLiveLocked(t.mu.admit, id, cutoff); err != nil {
		t.mu.Unlock()
		return 0, fmt.Errorf("storage: finalize: %w", err)
	}
	rows, again, err := t.mu.admit.Finalize(id, 0)
	if err != nil {
		t.mu.Unlock()
		return 0, fmt.Errorf("storage: finalize: %w", err)
	}
	var o *op
	if again {
		o = t.submitLocked(nil)
	} else {
		o = t.submitLocked(&rec{typ: recFinalize, stream: id, first: rows})
	}
	t.mu.Unlock()
	<-o.done
	if o.err != nil {
		return 0, o.err
	}
	return rows, nil
}

// Flush makes rows at offsets <= offset of a BUFFERED stream visible and
// returns the flush watermark (rows [0, flushed) are visible). Flushing
// below the watermark is a no-op.
func (t *Table) Flush(ctx context.Context, id string, offset int64) (int64, error) {
	cutoff := t.cutoff()
	t.mu.Lock()
	if err := t.usableLocked(ctx); err != nil {
		t.mu.Unlock()
		return 0, err
	}
	if err := t.checkLiveLocked(t.mu.admit, id, cutoff); err != nil {
		t.mu.Unlock()
		return 0, fmt.Errorf("storage: flush: %w", err)
	}
	w, moves, err := t.mu.admit.CheckFlush(id, offset)
	if err != nil {
		t.mu.Unlock()
		return 0, fmt.Errorf("storage: flush: %w", err)
	}
	var o *op
	if moves {
		if _, err := t.mu.admit.Flush(id, offset, 0); err != nil {
			t.mu.Unlock()
			return 0, fmt.Errorf("storage: flush: %w", err)
		}
		o = t.submitLocked(&rec{typ: recFlush, stream: id, first: offset})
	} else {
		o = t.submitLocked(nil)
	}
	t.mu.Unlock()
	<-o.done
	if o.err != nil {
		return 0, o.err
	}
	return w, nil
}

// BatchCommit commits finalized PENDING streams atomically (one log
// record) and returns the commit time. If any stream cannot be committed,
// errs says why for each and nothing is committed.
func (t *Table) BatchCommit(ctx context.Context, streams []string) (time.Time, []StreamError, error) {
	return t.batchCommit(ctx, streams, false)
}

// BatchCommitIfEmpty is BatchCommit made only if the table holds no rows
// (BigQuery's WRITE_EMPTY): none visible, none admitted to become
// visible (an append to the default or a COMMITTED stream, a flush, a
// commit, not yet durable). The check and the commit's admission are
// one step under the table's lock: no append, flush or commit comes
// between them. A table with rows commits nothing and the error is
// ErrTableNotEmpty (the streams stay finalized). The commit's record is
// BatchCommit's.
func (t *Table) BatchCommitIfEmpty(ctx context.Context, streams []string) (time.Time, []StreamError, error) {
	return t.batchCommit(ctx, streams, true)
}

func (t *Table) batchCommit(ctx context.Context, streams []string, ifEmpty bool) (time.Time, []StreamError, error) {
	if len(streams) == 0 {
		return time.Time{}, nil, fmt.Errorf("storage: batch commit: no streams: %w", ErrInvalidArgument)
	}
	cutoff := t.cutoff()
	t.mu.Lock()
	if err := t.usableLocked(ctx); err != nil {
		t.mu.Unlock()
		return time.Time{}, nil, err
	}
	var errs []StreamError
	for _, id := range streams {
		if err := t.checkLiveLocked(t.mu.admit, id, cutoff); err != nil {
			errs = append(errs, StreamError{Stream: id, Err: err})
		} else if _, ok := t.mu.admit.Lookup(id); !ok && id != DefaultStreamID {
			// Unknown, or collected (gc.go) like an abandoned stream:
			// reported with the expired ones.
			errs = append(errs, StreamError{Stream: id, Err: fmt.Errorf("stream %q: %w", id, ErrStreamNotFound)})
		}
	}
	if len(errs) == 0 && ifEmpty && t.hasRowsLocked() {
		t.mu.Unlock()
		return time.Time{}, nil, fmt.Errorf("storage: batch commit: table %q: %w", t.id, ErrTableNotEmpty)
	}
	if len(errs) == 0 {
		for _, e := range t.mu.admit.Commit(streams, 0) {
			errs = append(errs, StreamError{Stream: e.Stream, Err: e.Err})
		}
	}
	if len(errs) > 0 {
		t.mu.Unlock()
		return time.Time{}, errs, nil
	}
	o := t.submitLocked(&rec{typ: recBatchCommit, ids: slices.Clone(streams)})
	t.mu.Unlock()
	<-o.done
	if o.err != nil {
		return time.Time{}, nil, o.err
	}
	return time.UnixMicro(o.ts), nil, nil
}

// applyLocked applies a durable record to the durable state. Live
// records were admitted against the same rules, so an error here means a
// log that contradicts itself.
// REQUIRES: t.mu held.
func (t *Table) applyLocked(r *rec, ts int64, f *logFile, off, flen int64) error {
	s := t.mu.durable
	if r.typ == recRows || r.typ == recFlush || r.typ == recFinalize {
		// Only data dirs written before ABANDON records existed have
		// these: compaction then marked streams abandoned in its
		// checkpoint, ahead of records of them in the active file. The
		// live path admits nothing for an abandoned stream.
		if st, ok := s.Lookup(r.stream); ok && st.State == stream.Abandoned {
			return nil
		}
	}
	t.countLocked(r, flen)
	switch r.typ {
	case recStreamCreate, recFlush, recBatchCommit, recAbandon:
		t.invalidateVisLocked()
	}
	var err error
	switch r.typ {
	case recSchema:
		last := t.mu.schemas[len(t.mu.schemas)-1]
		if r.schemaVersion <= last.version {
			return fmt.Errorf("schema version %d after version %d", r.schemaVersion, last.version)
		}
		t.mu.schemas = append(t.mu.schemas, schemaVer{version: r.schemaVersion, ts: ts, schema: r.schema, ipc: r.schemaIPC})
	case recStreamCreate:
		err = s.Create(r.stream, r.streamType, ts, r.schemaVersion)
	case recRows:
		off0 := r.first
		if r.stream == DefaultStreamID {
			off0 = -1
		}
		var first int64
		first, err = s.Append(r.stream, off0, r.rows)
		if err == nil && first != r.first {
			err = fmt.Errorf("ROWS of %q at offset %d, expected %d", r.stream, r.first, first)
		}
		if err == nil {
			t.mu.batches = append(t.mu.batches, batchRef{f: f, b: segment.Batch{
				Offset: off, Len: flen, Stream: r.stream, First: r.first, Rows: r.rows,
				TS: ts, SchemaVersion: r.schemaVersion, Stats: r.stats,
			}})
		}
	case recFlush:
		_, err = s.Flush(r.stream, r.first, ts)
	case recFinalize:
		_, _, err = s.Finalize(r.stream, ts)
	case recBatchCommit:
		if errs := s.Commit(r.ids, ts); len(errs) > 0 {
			err = errs[0].Err
		}
	case recAbandon:
		for _, id := range r.ids {
			if err = s.Abandon(id); err != nil {
				break
			}
		}
	default:
		err = fmt.Errorf("unexpected %s record", recName(r.typ))
	}
	if ts > t.mu.lastTS {
		t.mu.lastTS = ts
		t.db.noteTS(ts)
	}
	return err
}

func (t *Table) loadCheckpointLocked(c *checkpoint) {
	t.invalidateVisLocked()
	t.mu.durable = c.streams
	t.mu.schemas = c.schemas
	t.mu.createTS = c.createTS
	if c.lastTS > t.mu.lastTS {
		t.mu.lastTS = c.lastTS
	}
	t.db.noteTS(t.mu.lastTS)
}

func (t *Table) checkpointLocked() *checkpoint {
	return &checkpoint{tableID: t.id, createTS: t.mu.createTS, lastTS: t.mu.lastTS,
		schemas: t.mu.schemas, streams: t.mu.durable}
}

// startFileLocked creates active log file num and makes it the active
// file (recovery only: it does I/O under t.mu).
// REQUIRES: t.mu held.
func (t *Table) startFileLocked(num int) error {
	lf, err := t.createLogFile(num, t.mu.lastTS)
	if err != nil {
		return err
	}
	t.installActiveLocked(lf)
	return nil
}

// installActiveLocked makes lf the active file.
// REQUIRES: t.mu held.
func (t *Table) installActiveLocked(lf *logFile) {
	t.mu.files = append(t.mu.files, lf)
	t.mu.activeStart = len(t.mu.batches)
	t.active = lf
}

// createLogFile creates log file num holding its HEADER, durably.
func (t *Table) createLogFile(num int, ts int64) (*logFile, error) {
	name := path.Join(t.dir, logName(num))
	f, err := t.db.fs.Create(name)
	if err != nil {
		return nil, fmt.Errorf("storage: create %s: %w", name, err)
	}
	hdr := wal.AppendFrame(nil, recHeader, ts, encodeHeader(t.id, num, num))
	if _, err := f.Write(hdr); err != nil {
		f.Close()
		return nil, fmt.Errorf("storage: write %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, fmt.Errorf("storage: sync %s: %w", name, err)
	}
	if err := t.db.fs.SyncDir(t.dir); err != nil {
		f.Close()
		return nil, fmt.Errorf("storage: sync dir %s: %w", t.dir, err)
	}
	lf := &logFile{num: num, from: num, name: name, f: f, size: int64(len(hdr)), synced: int64(len(hdr))}
	lf.ref()
	return lf, nil
}

// close stops the log writer (queued records are written first) and
// drops the table's file references.
func (t *Table) close() error {
	t.mu.Lock()
	if t.mu.closed {
		t.mu.Unlock()
		<-t.loopDone
		return t.closeErr
	}
	t.mu.closed = true
	t.applied.Broadcast()
	t.mu.Unlock()
	close(t.stop)
	<-t.loopDone
	t.mu.Lock()
	files := t.mu.files
	t.mu.files = nil
	t.mu.Unlock()
	for _, f := range files {
		f.unref()
	}
	return t.closeErr
}

// Created is the table's creation time in the engine: the earliest time
// a Snapshot can read (read-only; for time-travel errors).
func (t *Table) Created() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return usTime(t.mu.createTS)
}
