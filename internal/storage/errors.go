package storage

import (
	"errors"
	"fmt"
	"path"

	"github.com/bqstore/bqstore/internal/storage/base"
	"github.com/bqstore/bqstore/internal/storage/wal"
)

// Sentinel errors callers branch on (errors.Is). internal/apierr maps each
// to its gRPC code and StorageError code; nothing else does.
var (
	// ErrClosed: the DB or table was closed.
	ErrClosed = base.ErrClosed
	// ErrTableNotFound: no table with that id.
	ErrTableNotFound = base.ErrTableNotFound
	// ErrStreamNotFound: no write stream with that id in the table (or it
	// expired).
	ErrStreamNotFound = base.ErrStreamNotFound
	// ErrStreamFinalized: append to a finalized (or committed) stream.
	ErrStreamFinalized = base.ErrStreamFinalized
	// ErrStreamCommitted: batch commit of a stream that is already committed.
	ErrStreamCommitted = base.ErrStreamCommitted
	// ErrOffsetExists: append offset below the stream's next offset.
	ErrOffsetExists = base.ErrOffsetExists
	// ErrOffsetOutOfRange: append offset above the stream's next offset, or
	// flush past the end of the stream.
	ErrOffsetOutOfRange = base.ErrOffsetOutOfRange
	// ErrInvalidStreamType: the operation does not apply to this stream
	// type (flush of a non-BUFFERED stream, commit of a non-PENDING one,
	// finalize or offsets on _default).
	ErrInvalidStreamType = base.ErrInvalidStreamType
	// ErrInvalidStreamState: batch commit of a stream that is not
	// finalized.
	ErrInvalidStreamState = base.ErrInvalidStreamState
	// ErrSnapshotTooOld: a snapshot time before the time-travel window.
	ErrSnapshotTooOld = base.ErrSnapshotTooOld
	// ErrSnapshotInFuture: a snapshot time after now.
	ErrSnapshotInFuture = base.ErrSnapshotInFuture
	// ErrSchemaMismatch: a batch whose schema does not match the table's
	// schema version it names, or a schema change that is not additive.
	ErrSchemaMismatch = base.ErrSchemaMismatch
	// ErrInvalidArgument: any other malformed call (empty batch list,
	// negative offset, ...).
	ErrInvalidArgument = base.ErrInvalidArgument
	// ErrCorruption marks every error caused by bad bytes on disk (mid-log
	// CRC mismatch, bad segment footer). Typed corruption errors wrap it.
	ErrCorruption = base.ErrCorruption
	// ErrFailStop: an earlier write or fsync failed; the table acknowledges
	// nothing more until it is reopened.
	ErrFailStop = base.ErrFailStop
	// ErrQuarantined: the table's files failed recovery at Open; the
	// table is kept aside (its files as recovery found them, but for a
	// torn tail it cut) and every call on it fails with a
	// *QuarantineError, while the other tables serve.
	ErrQuarantined = base.ErrQuarantined
	// ErrTableNotEmpty: BatchCommitIfEmpty found rows in the table.
	// Only internal/jobs uses it (a WRITE_EMPTY destination); no wire
	// method reaches it.
	ErrTableNotEmpty = errors.New("storage: table not empty")
)

// StreamError is one stream's reason for refusing a batch commit.
type StreamError struct {
	// Stream is the stream id as given to BatchCommit.
	Stream string
	// Err is one of ErrStreamNotFound, ErrInvalidStreamState,
	// ErrInvalidStreamType, ErrStreamCommitted.
	Err error
}

// QuarantineError is the error of every call on a table whose files
// failed recovery at Open. It wraps ErrQuarantined, the cause, and
// ErrFailStop when the cause is not corruption (an I/O error: a restart
// may cure it).
type QuarantineError struct {
	Table string // the table id
	Dir   string // the table's directory
	Err   error  // why recovery failed
}

func (e *QuarantineError) Error() string {
	return fmt.Sprintf("storage: table %q (%s) is quarantined: its files failed recovery: %v", e.Table, e.Dir, e.Err)
}

func (e *QuarantineError) Unwrap() []error {
	if errors.Is(e.Err, ErrCorruption) {
		return []error{ErrQuarantined, e.Err}
	}
	return []error{ErrQuarantined, ErrFailStop, e.Err}
}

// Public says what failed, naming the file (relative to the tables
// directory) and offset, for clients (internal/apierr appends it).
func (e *QuarantineError) Public() string {
	var ce *wal.CorruptionError
	if errors.As(e.Err, &ce) {
		return fmt.Sprintf("the table's data failed recovery and the table is quarantined: %s at offset %d: %s",
			path.Join(path.Base(path.Dir(ce.File)), path.Base(ce.File)), ce.Offset, ce.Reason)
	}
	return "the table's data failed recovery and the table is quarantined: " + path.Base(e.Dir) + ": I/O error (see the server log)"
}
