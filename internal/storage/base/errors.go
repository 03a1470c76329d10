// Package base holds the engine's sentinel errors, shared by the storage
// facade and its pure subpackages (stream, segment) so that a condition
// detected deep inside the engine is errors.Is-comparable at the facade.
// Package storage re-exports every one of them; callers outside the engine
// use the storage names.
package base

import "errors"

// The sentinels; see internal/storage/errors.go for their meaning.
var (
	ErrClosed             = errors.New("storage: closed")
	ErrTableNotFound      = errors.New("storage: table not found")
	ErrStreamNotFound     = errors.New("storage: stream not found")
	ErrStreamFinalized    = errors.New("storage: stream finalized")
	ErrStreamCommitted    = errors.New("storage: stream already committed")
	ErrOffsetExists       = errors.New("storage: offset already exists")
	ErrOffsetOutOfRange   = errors.New("storage: offset out of range")
	ErrInvalidStreamType  = errors.New("storage: invalid stream type")
	ErrInvalidStreamState = errors.New("storage: invalid stream state")
	ErrSnapshotTooOld     = errors.New("storage: snapshot time before the time-travel window")
	ErrSnapshotInFuture   = errors.New("storage: snapshot time in the future")
	ErrSchemaMismatch     = errors.New("storage: schema mismatch")
	ErrInvalidArgument    = errors.New("storage: invalid argument")
	ErrCorruption         = errors.New("storage: corruption")
	ErrFailStop           = errors.New("storage: table is fail-stopped after an I/O error")
	ErrQuarantined        = errors.New("storage: table quarantined")
)
