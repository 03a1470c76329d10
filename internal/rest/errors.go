package rest

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/storage"
)

// Error is an error in the wire form of Google's JSON APIs:
//
//	{"error":{"code":404,"message":"Not found: Table p:d.t",
//	  "errors":[{"message":"Not found: Table p:d.t","domain":"global","reason":"notFound"}],
//	  "status":"NOT_FOUND"}}
//
// Code is the HTTP status; Reason is BigQuery's error reason
// (cloud.google.com/bigquery/docs/error-messages).
type Error struct {
	Code   int
	Reason string
	Msg    string
	Status string // the google.rpc.Code name; empty: statusName(Code)
	// Location and LocationType name the request parameter at fault
	// (invalidQuery: "q", "parameter"); empty: none.
	Location, LocationType string
}

func (e *Error) Error() string { return e.Msg }

// statusName is the google.rpc.Code name Google's frontends put next to an
// HTTP status.
func statusName(code int) string {
	switch code {
	case http.StatusBadRequest:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusConflict:
		return "ALREADY_EXISTS"
	case http.StatusPreconditionFailed:
		return "FAILED_PRECONDITION"
	case http.StatusRequestEntityTooLarge:
		return "INVALID_ARGUMENT"
	case http.StatusMethodNotAllowed:
		return "UNIMPLEMENTED"
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	}
	return "INTERNAL"
}

func invalid(format string, args ...any) *Error {
	return &Error{Code: http.StatusBadRequest, Reason: "invalid", Msg: sprintf(format, args...)}
}

// fromErr maps an error to its wire form: the catalog's sentinels map to
// BigQuery's reasons, and so do the engine's "this table cannot serve"
// errors; anything else is an internal error whose text is logged, not
// sent.
//
// Engine errors, as internal/apierr maps them for gRPC:
//   - a table quarantined for corrupt files (gRPC DATA_LOSS) is 400
//     tableUnavailable, FAILED_PRECONDITION: permanent until an operator
//     repairs it, so not a 5xx the clients retry (the Go client retries
//     500, 502, 503 and 504); the message names the file and offset;
//   - a table quarantined for an I/O error, a table that stopped after a
//     failed write, and a closing engine (gRPC UNAVAILABLE) are 503
//     backendError: a retry against a restarted server may succeed.
func fromErr(err error) (*Error, bool) {
	var we *Error
	if errors.As(err, &we) {
		return we, true
	}
	if e := storageErr(err); e != nil {
		return e, true
	}
	var ce *catalog.Error
	if errors.As(err, &ce) {
		switch {
		case errors.Is(err, catalog.ErrNotFound):
			return &Error{Code: http.StatusNotFound, Reason: "notFound", Msg: ce.Msg}, true
		case errors.Is(err, catalog.ErrExists):
			return &Error{Code: http.StatusConflict, Reason: "duplicate", Msg: ce.Msg}, true
		case errors.Is(err, catalog.ErrInvalid):
			return &Error{Code: http.StatusBadRequest, Reason: "invalid", Msg: ce.Msg}, true
		case errors.Is(err, catalog.ErrPrecondition):
			return &Error{Code: http.StatusPreconditionFailed, Reason: "conditionNotMet", Msg: ce.Msg}, true
		case errors.Is(err, catalog.ErrInUse):
			return &Error{Code: http.StatusBadRequest, Reason: "resourceInUse", Msg: ce.Msg}, true
		}
	}
	return &Error{Code: http.StatusInternalServerError, Reason: "internalError", Msg: "An internal error occurred and the request could not be completed."}, false
}

func storageErr(err error) *Error {
	if q, ok := errors.AsType[*storage.QuarantineError](err); ok && !errors.Is(err, storage.ErrFailStop) {
		return &Error{Code: http.StatusBadRequest, Reason: "tableUnavailable", Status: "FAILED_PRECONDITION",
			Msg: "Table is unavailable: " + q.Public()}
	}
	switch {
	case errors.Is(err, storage.ErrQuarantined), errors.Is(err, storage.ErrFailStop):
		msg := "The table stopped after a storage error; restart the server."
		if q, ok := errors.AsType[*storage.QuarantineError](err); ok {
			msg = "Table is unavailable: " + q.Public()
		}
		return &Error{Code: http.StatusServiceUnavailable, Reason: "backendError", Msg: msg}
	case errors.Is(err, storage.ErrClosed):
		return &Error{Code: http.StatusServiceUnavailable, Reason: "backendError", Msg: "The service is shutting down."}
	}
	return nil
}

type wireErrorItem struct {
	Message string `json:"message"`
	Domain  string `json:"domain"`
	Reason  string `json:"reason"`
	// Location and LocationType: see Error.
	Location     string `json:"location,omitempty"`
	LocationType string `json:"locationType,omitempty"`
}

type wireError struct {
	Error struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Errors  []wireErrorItem `json:"errors"`
		Status  string          `json:"status"`
	} `json:"error"`
}

func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e, known := fromErr(err)
	if !known {
		h.log.Error("rest: internal error", slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Any("err", err))
	}
	var body wireError
	body.Error.Code = e.Code
	body.Error.Message = e.Msg
	body.Error.Errors = []wireErrorItem{{Message: e.Msg, Domain: "global", Reason: e.Reason, Location: e.Location, LocationType: e.LocationType}}
	body.Error.Status = e.Status
	if body.Error.Status == "" {
		body.Error.Status = statusName(e.Code)
	}
	writeJSON(w, e.Code, &body)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only our own response types are marshalled; they always encode.
		code = http.StatusInternalServerError
		b = []byte(`{"error":{"code":500,"message":"response encoding failed","status":"INTERNAL"}}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(code)
	_, _ = w.Write(b)
	_, _ = w.Write([]byte("\n"))
}
