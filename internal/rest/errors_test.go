package rest

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"testing"

	"github.com/bqstore/bqstore/internal/storage"
)

// TestStorageErrors: the engine's "this table cannot serve" errors reach
// the wire as BigQuery errors, not as 500 internalError.
func TestStorageErrors(t *testing.T) {
	ioQuarantine := &storage.QuarantineError{Table: "t1", Dir: "tables/t-1", Err: fmt.Errorf("open: %w", fs.ErrPermission)}
	for _, tc := range []struct {
		err    error
		code   int
		reason string
		status string
		msg    string
	}{
		{ioQuarantine, http.StatusServiceUnavailable, "backendError", "UNAVAILABLE", "quarantined"},
		{fmt.Errorf("storage: append: %w", storage.ErrFailStop), http.StatusServiceUnavailable, "backendError", "UNAVAILABLE", "restart"},
		{storage.ErrClosed, http.StatusServiceUnavailable, "backendError", "UNAVAILABLE", "shutting down"},
	} {
		e, known := fromErr(tc.err)
		status := e.Status
		if status == "" {
			status = statusName(e.Code)
		}
		if !known || e.Code != tc.code || e.Reason != tc.reason || status != tc.status || !strings.Contains(e.Msg, tc.msg) {
			t.Errorf("%v: %v %d %s %s %q, want %d %s %s and a message with %q", tc.err, known, e.Code, e.Reason, status, e.Msg, tc.code, tc.reason, tc.status, tc.msg)
		}
	}
	if e, known := fromErr(errors.New("boom")); known || e.Code != http.StatusInternalServerError {
		t.Errorf("an unknown error: %v %d", known, e.Code)
	}
}
