package jobs

import (
	"context"
	"errors"
	"testing"
)

// TestPanicFailsJob: a panic while a job runs (a bug in a statement's
// execution; here the BeforeRun hook) ends that job DONE with a
// BackendError instead of ending the server's process, and the next job
// runs.
func TestPanicFailsJob(t *testing.T) {
	s := New(newCatalog(t), Options{BeforeRun: func(ctx context.Context, project, id string) {
		if id == "a" {
			panic("boom")
		}
	}})
	defer s.Close()
	if _, err := s.Insert("p", "a", "US", Query{SQL: "SELECT 1"}); err != nil {
		t.Fatal(err)
	}
	j := wait(t, s, "a")
	var be *BackendError
	if !errors.As(j.Err, &be) {
		t.Fatalf("job that panicked: error %v, want a BackendError", j.Err)
	}
	if _, err := s.Insert("p", "b", "US", Query{SQL: "SELECT 1"}); err != nil {
		t.Fatal(err)
	}
	if j := wait(t, s, "b"); j.Err != nil {
		t.Fatalf("next job: %v", j.Err)
	}
}
