// Package apierr is the one place where errors become wire errors: engine
// sentinels (internal/storage), decoder errors and API-layer validation
// errors map here to a gRPC code plus, where the real service sends one, a
// google.cloud.bigquery.storage.v1.StorageError detail.
//
// Rules, each with its source:
//   - Never answer a permanent failure with a code the official clients
//     retry: managedwriter's retryPredicate (storage/managedwriter/retry.go)
//     retries ABORTED, CANCELED, DEADLINE_EXCEEDED, FAILED_PRECONDITION,
//     INTERNAL, UNAVAILABLE, and RESOURCE_EXHAUSTED whose message starts
//     with "Exceeds 'AppendRows throughput' quota".
//   - Offsets: ALREADY_EXISTS + OFFSET_ALREADY_EXISTS and OUT_OF_RANGE +
//     OFFSET_OUT_OF_RANGE (storage.proto, AppendRowsRequest.offset and
//     StorageError comments).
//   - Missing table/stream: NOT_FOUND + TABLE_NOT_FOUND / STREAM_NOT_FOUND.
//   - Wrong stream type or state, finalized stream, extra schema fields:
//     INVALID_ARGUMENT + the StorageError code, as Google's service answers.
//   - A runtime row_restriction error (division by zero, overflow, a
//     failed CAST: a *filter.Error from evaluation) is the caller's fault
//     and permanent: INVALID_ARGUMENT with the filter's message, as the
//     session-time parse and type errors are. INTERNAL would make the read
//     client retry a read that can never succeed.
//   - Internal causes are logged by the caller, never put in messages.
package apierr

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/storage"
)

// Error is an error that already knows its wire form. API packages create
// them with New for validation failures; Status passes them through.
type Error struct {
	Code        codes.Code
	StorageCode storagepb.StorageError_StorageErrorCode // 0: no StorageError detail
	Entity      string                                  // the stream or table the error is about
	Msg         string
}

func (e *Error) Error() string { return e.Msg }

// New returns an *Error with a formatted message.
// Messages and entities are made valid UTF-8: they may quote a client's
// bytes (a field name from a forged writer schema), and a status or
// StorageError with invalid UTF-8 does not marshal (grpc-go then answers
// INTERNAL and ends the connection).
func New(code codes.Code, sc storagepb.StorageError_StorageErrorCode, entity, format string, args ...any) *Error {
	return &Error{Code: code, StorageCode: sc, Entity: validUTF8(entity), Msg: validUTF8(fmt.Sprintf(format, args...))}
}

func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// InvalidArgument is New(codes.InvalidArgument, 0, "", ...): a malformed
// request. The message must name the field or position.
func InvalidArgument(format string, args ...any) *Error {
	return New(codes.InvalidArgument, 0, "", format, args...)
}

// mapping is one row of the engine-error table.
type mapping struct {
	err  error
	code codes.Code
	sc   storagepb.StorageError_StorageErrorCode
	msg  string // %s is the entity
}

// table maps engine sentinels to the wire. Order matters only where one
// error wraps several sentinels: the first match wins.
var table = []mapping{
	{storage.ErrTableNotFound, codes.NotFound, storagepb.StorageError_TABLE_NOT_FOUND, "Table is not found: %s"},
	{storage.ErrStreamNotFound, codes.NotFound, storagepb.StorageError_STREAM_NOT_FOUND, "Stream is not found: %s"},
	{storage.ErrOffsetExists, codes.AlreadyExists, storagepb.StorageError_OFFSET_ALREADY_EXISTS, "The offset is within stream %s"},
	{storage.ErrOffsetOutOfRange, codes.OutOfRange, storagepb.StorageError_OFFSET_OUT_OF_RANGE, "The offset is beyond the end of stream %s"},
	{storage.ErrStreamFinalized, codes.InvalidArgument, storagepb.StorageError_STREAM_FINALIZED, "Stream is already finalized: %s"},
	{storage.ErrStreamCommitted, codes.InvalidArgument, storagepb.StorageError_STREAM_ALREADY_COMMITTED, "Stream is already committed: %s"},
	{storage.ErrInvalidStreamType, codes.InvalidArgument, storagepb.StorageError_INVALID_STREAM_TYPE, "Invalid stream type for this operation: %s"},
	{storage.ErrInvalidStreamState, codes.InvalidArgument, storagepb.StorageError_INVALID_STREAM_STATE, "Stream is not in a valid state for this operation: %s"},
	{storage.ErrSchemaMismatch, codes.InvalidArgument, 0, "Schema mismatch: %s"},
	{storage.ErrSnapshotTooOld, codes.InvalidArgument, 0, "Snapshot time is before the time travel window: %s"},
	{storage.ErrSnapshotInFuture, codes.InvalidArgument, 0, "Snapshot time is in the future: %s"},
	{storage.ErrInvalidArgument, codes.InvalidArgument, 0, "Invalid argument: %s"},
	// The server is shutting down or a table stopped after an I/O error:
	// a retry against a restarted server is the right client reaction.
	{storage.ErrClosed, codes.Unavailable, 0, "The service is shutting down: %s"},
	{storage.ErrFailStop, codes.Unavailable, 0, "The table stopped after a storage error; restart the server: %s"},
	{storage.ErrCorruption, codes.DataLoss, 0, "Stored data is corrupt: %s"},
}

// Status converts err into a gRPC status. entity names what the request was
// about (a stream or table name) and is used in messages and StorageError.
func Status(err error, entity string) *status.Status {
	if err == nil {
		return status.New(codes.OK, "")
	}
	var ae *Error
	if errors.As(err, &ae) {
		return build(ae.Code, ae.StorageCode, firstNonEmpty(ae.Entity, entity), ae.Msg)
	}
	if s, ok := status.FromError(err); ok && s.Code() != codes.Unknown {
		return s
	}
	// Before the engine table: the message is the filter's own (it names
	// the operation and its position in the caller's text), never an
	// internal cause.
	if fe, ok := errors.AsType[*filter.Error](err); ok {
		return build(codes.InvalidArgument, 0, entity, "read_session.read_options.row_restriction: "+fe.Error())
	}
	for _, m := range table {
		if errors.Is(err, m.err) {
			return build(m.code, m.sc, entity, detailMessage(m, err, entity))
		}
	}
	switch {
	case errors.Is(err, context.Canceled):
		return status.New(codes.Canceled, "request canceled")
	case errors.Is(err, context.DeadlineExceeded):
		return status.New(codes.DeadlineExceeded, "deadline exceeded")
	}
	return status.New(codes.Internal, "internal error")
}

// Err is Status(err, entity).Err().
func Err(err error, entity string) error {
	if err == nil {
		return nil
	}
	return Status(err, entity).Err()
}

// StorageCode returns the StorageError code Status would attach to err.
func StorageCode(err error) storagepb.StorageError_StorageErrorCode {
	var ae *Error
	if errors.As(err, &ae) {
		return ae.StorageCode
	}
	for _, m := range table {
		if errors.Is(err, m.err) {
			return m.sc
		}
	}
	return storagepb.StorageError_STORAGE_ERROR_CODE_UNSPECIFIED
}

// StreamError converts a batch-commit refusal into the StorageError the
// response's stream_errors carries.
func StreamError(name string, err error) *storagepb.StorageError {
	sc := StorageCode(err)
	msg := Status(err, name).Message()
	return &storagepb.StorageError{Code: sc, Entity: name, ErrorMessage: msg}
}

// detailMessage builds the message of a mapped sentinel. Engine errors
// may wrap a short public reason after the sentinel ("storage: offset
// already exists: expected 10"); the mapped text plus the entity is used,
// never the wrapped internal chain.
func detailMessage(m mapping, err error, entity string) string {
	msg := fmt.Sprintf(m.msg, entity)
	if pe, ok := errors.AsType[PublicError](err); ok {
		msg += "; " + pe.Public()
	}
	return msg
}

// PublicError is implemented by engine errors that carry a message safe to
// show to clients (for example the expected offset).
type PublicError interface {
	error
	Public() string
}

func build(code codes.Code, sc storagepb.StorageError_StorageErrorCode, entity, msg string) *status.Status {
	entity, msg = validUTF8(entity), validUTF8(msg)
	s := status.New(code, msg)
	if sc == storagepb.StorageError_STORAGE_ERROR_CODE_UNSPECIFIED {
		return s
	}
	ws, err := s.WithDetails(&storagepb.StorageError{Code: sc, Entity: entity, ErrorMessage: msg})
	if err != nil {
		return s
	}
	return ws
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
