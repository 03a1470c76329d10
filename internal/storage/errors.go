package storage

import "errors"

// Sentinel errors callers branch on (errors.Is). internal/apierr maps each
// to its gRPC code and StorageError code; nothing else does.
var (
	// ErrClosed: the DB or table was closed.
	ErrClosed = errors.New("storage: closed")
	// ErrTableNotFound: no table with that id.
	ErrTableNotFound = errors.New("storage: table not found")
	// ErrStreamNotFound: no write stream with that id in the table (or it
	// expired).
	ErrStreamNotFound = errors.New("storage: stream not found")
	// ErrStreamFinalized: append to a finalized (or committed) stream.
	ErrStreamFinalized = errors.New("storage: stream finalized")
	// ErrStreamCommitted: batch commit of a stream that is already committed.
	ErrStreamCommitted = errors.New("storage: stream already committed")
	// ErrOffsetExists: append offset below the stream's next offset.
	ErrOffsetExists = errors.New("storage: offset already exists")
	// ErrOffsetOutOfRange: append offset above the stream's next offset, or
	// flush past the end of the stream.
	ErrOffsetOutOfRange = errors.New("storage: offset out of range")
	// ErrInvalidStreamType: the operation does not apply to this stream
	// type (flush of a non-BUFFERED stream, commit of a non-PENDING one,
	// finalize or offsets on _default).
	ErrInvalidStreamType = errors.New("storage: invalid stream type")
	// ErrInvalidStreamState: batch commit of a stream that is not
	// finalized.
	ErrInvalidStreamState = errors.New("storage: invalid stream state")
	// ErrSnapshotTooOld: a snapshot time before the time-travel window.
	ErrSnapshotTooOld = errors.New("storage: snapshot time before the time-travel window")
	// ErrSnapshotInFuture: a snapshot time after now.
	ErrSnapshotInFuture = errors.New("storage: snapshot time in the future")
	// ErrSchemaMismatch: a batch whose schema does not match the table's
	// schema version it names, or a schema change that is not additive.
	ErrSchemaMismatch = errors.New("storage: schema mismatch")
	// ErrInvalidArgument: any other malformed call (empty batch list,
	// negative offset, ...).
	ErrInvalidArgument = errors.New("storage: invalid argument")
	// ErrCorruption marks every error caused by bad bytes on disk (mid-log
	// CRC mismatch, bad segment footer). Typed corruption errors wrap it.
	ErrCorruption = errors.New("storage: corruption")
	// ErrFailStop: an earlier write or fsync failed; the table acknowledges
	// nothing more until it is reopened.
	ErrFailStop = errors.New("storage: table is fail-stopped after an I/O error")
)

// StreamError is one stream's reason for refusing a batch commit.
type StreamError struct {
	// Stream is the stream id as given to BatchCommit.
	Stream string
	// Err is one of ErrStreamNotFound, ErrInvalidStreamState,
	// ErrInvalidStreamType, ErrStreamCommitted.
	Err error
}
