package jobs

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"path"
	"sync"
	"time"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/storage/vfs"
)

// The jobs log (docs/format/jobs.md) is JOBS.log in the store's directory:
// one record per change of a job (created, started, done, deleted), each
// synced before the change is acknowledged. Frame: uint32 LE payload
// length, uint32 LE CRC-32C of the length bytes and the payload, the
// payload (JSON: logRecord), zero padding to a multiple of 8 (the catalog
// log's frame, docs/format/catalog.md). Records are synced one at a time,
// so a crash can damage only the last: an invalid frame with no valid
// frame after it is a torn tail (an unacknowledged change), cut at open;
// one followed by a valid frame is corruption (ErrCorrupt).
//
// At open the log is replayed (the last record of a job wins; a delete
// forgets it), then rewritten with only the live jobs (JOBS.log.tmp,
// fsync, rename, directory fsync), so it holds at most the changes of one
// server run beyond the live jobs.

const (
	logName       = "JOBS.log"
	logHeaderLen  = 8
	maxRecordSize = 64 << 20
)

// ErrCorrupt: the jobs log is damaged before its last record.
var ErrCorrupt = errors.New("jobs: corrupt jobs log")

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// logRecord is one change: Put replaces the job's entry, Delete forgets it.
type logRecord struct {
	Put    *jobRecord `json:"put,omitempty"`
	Delete *jobKey    `json:"delete,omitempty"`
}

type jobKey struct {
	Project string `json:"project"`
	ID      string `json:"id"`
}

// jobRecord is a Job in the log.
type jobRecord struct {
	Project        string         `json:"project"`
	ID             string         `json:"id"`
	Location       string         `json:"location"`
	Query          Query          `json:"query"`
	State          string         `json:"state"`
	Created        int64          `json:"created"` // µs since the epoch
	Started        int64          `json:"started,omitempty"`
	End            int64          `json:"end,omitempty"`
	Err            *errRecord     `json:"error,omitempty"`
	Schema         *schema.Schema `json:"schema,omitempty"`
	NumRows        int64          `json:"numRows,omitempty"`
	BytesProcessed int64          `json:"bytesProcessed,omitempty"`
	Referenced     []TableRef     `json:"referenced,omitempty"`
	Destination    *TableRef      `json:"destination,omitempty"`
	Stats          Stats          `json:"stats"`
	// Commit is the stream a RUNNING job is committing
	// (commit.go); absent in older logs.
	Commit *commitRecord `json:"commit,omitempty"`
	// Parent and Frame: a script's child job (children.go); absent
	// in older logs and for other jobs.
	Parent string       `json:"parent,omitempty"`
	Frame  *ScriptFrame `json:"frame,omitempty"`
}

// errRecord is a job's error, of one of the kinds the API layer maps.
type errRecord struct {
	Kind     string `json:"kind"` // query, table, billed, stopped, destination, conflict, backend
	Msg      string `json:"msg"`
	Pos      int    `json:"pos,omitempty"`
	Line     int    `json:"line,omitempty"`
	Column   int    `json:"column,omitempty"`
	NotFound bool   `json:"notFound,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Limit    int64  `json:"limit,omitempty"`
	Required int64  `json:"required,omitempty"`
}

func encodeErr(err error) *errRecord {
	if err == nil {
		return nil
	}
	var fe *filter.Error
	var te *TableError
	var be *BytesBilledError
	var se *StoppedError
	var de *DestinationError
	switch {
	case errors.As(err, &fe):
		return &errRecord{Kind: "query", Msg: fe.Msg, Pos: fe.Pos, Line: fe.Line, Column: fe.Column}
	case errors.As(err, &te):
		return &errRecord{Kind: "table", Msg: te.Msg, NotFound: te.NotFound}
	case errors.As(err, &be):
		return &errRecord{Kind: "billed", Limit: be.Limit, Required: be.Required}
	case errors.As(err, &se):
		r := &errRecord{Kind: "stopped", Msg: se.Msg}
		if se.Timeout {
			r.Reason = "timeout"
		}
		return r
	case errors.As(err, &de):
		return &errRecord{Kind: "destination", Msg: de.Msg, Reason: de.Reason}
	}
	var ce *ConcurrentUpdateError
	if errors.As(err, &ce) {
		return &errRecord{Kind: "conflict", Msg: ce.Msg}
	}
	var bk *BackendError
	if errors.As(err, &bk) {
		return &errRecord{Kind: "backend", Msg: bk.Msg}
	}
	// Internal errors are kept as a backend error with a generic
	// message: their text is for the log, not for clients.
	return &errRecord{Kind: "backend", Msg: internalMsg}
}

func (r *errRecord) decode() error {
	if r == nil {
		return nil
	}
	switch r.Kind {
	case "query":
		return &filter.Error{Pos: r.Pos, Line: r.Line, Column: r.Column, Msg: r.Msg}
	case "table":
		return &TableError{NotFound: r.NotFound, Msg: r.Msg}
	case "billed":
		return &BytesBilledError{Limit: r.Limit, Required: r.Required}
	case "stopped":
		return &StoppedError{Msg: r.Msg, Timeout: r.Reason == "timeout"}
	case "destination":
		return &DestinationError{Msg: r.Msg, Reason: r.Reason}
	case "conflict":
		return &ConcurrentUpdateError{Msg: r.Msg}
	}
	return &BackendError{Msg: r.Msg}
}

func usOf(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

func timeOf(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us)
}

func recordOf(j *Job) *jobRecord {
	r := &jobRecord{
		Project: j.Project, ID: j.ID, Location: j.Location, Query: j.Query, State: j.State.String(),
		Created: usOf(j.Created), Started: usOf(j.Started), End: usOf(j.End), Err: encodeErr(j.Err),
		Schema: j.Schema, NumRows: j.NumRows, BytesProcessed: j.BytesProcessed,
		Referenced: j.Referenced, Stats: j.Stats, Commit: j.commit, Parent: j.Parent, Frame: j.Frame,
	}
	if j.Destination != (TableRef{}) {
		d := j.Destination
		r.Destination = &d
	}
	return r
}

func (r *jobRecord) job() *Job {
	j := &Job{
		Project: r.Project, ID: r.ID, Location: r.Location, Query: r.Query,
		Created: timeOf(r.Created), Started: timeOf(r.Started), End: timeOf(r.End), Err: r.Err.decode(),
		Schema: r.Schema, NumRows: r.NumRows, BytesProcessed: r.BytesProcessed,
		Referenced: r.Referenced, Stats: r.Stats, commit: r.Commit, Parent: r.Parent, Frame: r.Frame,
	}
	switch r.State {
	case "DONE":
		j.State = StateDone
	case "RUNNING":
		j.State = StateRunning
	default:
		j.State = StatePending
	}
	if r.Destination != nil {
		j.Destination = *r.Destination
	}
	return j
}

// jobLog appends records to JOBS.log. Its methods are safe for concurrent
// use; mu is held across the write and its fsync (records are small and
// one sync covers one record; the Store never holds its own lock here).
type jobLog struct {
	fs  vfs.FS
	dir string

	mu struct {
		sync.Mutex
		f vfs.File
		// err is the first failed write or sync: the file may end in a
		// partial frame, so nothing more is appended (later records
		// would turn a torn tail into corruption).
		err error
	}
}

// frame appends the frame of payload to dst.
func frame(dst, payload []byte) []byte {
	var hdr [logHeaderLen]byte
	binary.LittleEndian.PutUint32(hdr[:4], uint32(len(payload)))
	crc := crc32.Update(0, crcTable, hdr[:4])
	crc = crc32.Update(crc, crcTable, payload)
	binary.LittleEndian.PutUint32(hdr[4:], crc)
	dst = append(dst, hdr[:]...)
	dst = append(dst, payload...)
	for len(dst)%8 != 0 {
		dst = append(dst, 0)
	}
	return dst
}

// parseLog returns the records of a log's bytes and the length of its
// valid prefix (less than len(b) for a torn tail).
func parseLog(b []byte) ([]logRecord, int, error) {
	var out []logRecord
	off := 0
	for off < len(b) {
		rec, n, ok := parseFrame(b[off:])
		if !ok {
			// Torn tail, unless a valid frame follows.
			for p := off + 8; p+logHeaderLen <= len(b); p += 8 {
				if _, _, ok := parseFrame(b[p:]); ok {
					return nil, 0, fmt.Errorf("%w: invalid record at offset %d followed by a valid one at %d", ErrCorrupt, off, p)
				}
			}
			return out, off, nil
		}
		out = append(out, rec)
		off += n
	}
	return out, off, nil
}

func parseFrame(b []byte) (logRecord, int, bool) {
	var rec logRecord
	if len(b) < logHeaderLen {
		return rec, 0, false
	}
	n := int(binary.LittleEndian.Uint32(b[:4]))
	if n == 0 || n > maxRecordSize || logHeaderLen+n > len(b) {
		return rec, 0, false
	}
	crc := crc32.Update(0, crcTable, b[:4])
	crc = crc32.Update(crc, crcTable, b[logHeaderLen:logHeaderLen+n])
	if crc != binary.LittleEndian.Uint32(b[4:8]) {
		return rec, 0, false
	}
	if err := json.Unmarshal(b[logHeaderLen:logHeaderLen+n], &rec); err != nil {
		return rec, 0, false
	}
	size := (logHeaderLen + n + 7) / 8 * 8
	return rec, min(size, len(b)), true
}

// openLog replays dir/JOBS.log and rewrites it with the jobs replay
// keeps: it returns them, and the log open for appending.
func openLog(fs vfs.FS, dir string, keep func(jobs []*Job) []*Job) (*jobLog, []*Job, error) {
	if err := fs.MkdirAll(dir); err != nil {
		return nil, nil, fmt.Errorf("jobs: %w", err)
	}
	name := path.Join(dir, logName)
	var recs []logRecord
	if fs.Exists(name) {
		f, err := fs.Open(name)
		if err != nil {
			return nil, nil, fmt.Errorf("jobs: %w", err)
		}
		size, err := f.Size()
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("jobs: %w", err)
		}
		b := make([]byte, size)
		_, err = f.ReadAt(b, 0)
		f.Close()
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, nil, fmt.Errorf("jobs: read %s: %w", name, err)
		}
		if recs, _, err = parseLog(b); err != nil {
			return nil, nil, fmt.Errorf("%w (%s)", err, name)
		}
	}
	type k = jobKey
	byKey := map[k]*Job{}
	var order []k
	for _, r := range recs {
		switch {
		case r.Put != nil:
			kk := k{r.Put.Project, r.Put.ID}
			if _, ok := byKey[kk]; !ok {
				order = append(order, kk)
			}
			byKey[kk] = r.Put.job()
		case r.Delete != nil:
			delete(byKey, *r.Delete)
		}
	}
	var live []*Job
	for _, kk := range order {
		if j, ok := byKey[kk]; ok {
			live = append(live, j)
		}
	}
	live = keep(live)
	// Rewrite: the live jobs only.
	var buf []byte
	for _, j := range live {
		p, err := json.Marshal(logRecord{Put: recordOf(j)})
		if err != nil {
			return nil, nil, fmt.Errorf("jobs: %w", err)
		}
		buf = frame(buf, p)
	}
	tmp := name + ".tmp"
	f, err := fs.Create(tmp)
	if err != nil {
		return nil, nil, fmt.Errorf("jobs: %w", err)
	}
	if _, err := f.Write(buf); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("jobs: write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("jobs: sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return nil, nil, fmt.Errorf("jobs: %w", err)
	}
	if err := fs.Rename(tmp, name); err != nil {
		return nil, nil, fmt.Errorf("jobs: %w", err)
	}
	if err := fs.SyncDir(dir); err != nil {
		return nil, nil, fmt.Errorf("jobs: %w", err)
	}
	l := &jobLog{fs: fs, dir: dir}
	if l.mu.f, err = fs.OpenAppend(name); err != nil {
		return nil, nil, fmt.Errorf("jobs: %w", err)
	}
	return l, live, nil
}

// append writes r and syncs it.
func (l *jobLog) append(r logRecord) error {
	p, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	b := frame(nil, p)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.f == nil {
		return fmt.Errorf("jobs: log closed")
	}
	if l.mu.err != nil {
		return l.mu.err
	}
	if _, err := l.mu.f.Write(b); err != nil {
		l.mu.err = fmt.Errorf("jobs: append to %s: %w", logName, err)
		return l.mu.err
	}
	if err := l.mu.f.Sync(); err != nil {
		l.mu.err = fmt.Errorf("jobs: sync %s: %w", logName, err)
		return l.mu.err
	}
	return nil
}

func (l *jobLog) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.f == nil {
		return nil
	}
	err := l.mu.f.Close()
	l.mu.f = nil
	return err
}
