package rest

import (
	"net/http"
	"testing"

	"github.com/bqstore/bqstore/internal/jobs"
)

// TestConcurrentUpdateError: a job that failed because a table it
// replaces changed under it (jobs.ConcurrentUpdateError) is BigQuery's
// 400 invalidQuery with its message (as BigQuery answers "Could not
// serialize access to table ... due to concurrent update"), not a 500.
func TestConcurrentUpdateError(t *testing.T) {
	msg := "Could not serialize access to table p:d.t due to concurrent update"
	e := failedJobError(&jobs.ConcurrentUpdateError{Msg: msg})
	if e.Code != http.StatusBadRequest || e.Reason != "invalidQuery" || e.Msg != msg {
		t.Fatalf("%d %s %q", e.Code, e.Reason, e.Msg)
	}
}
