package rest_test

import (
	"strings"
	"testing"
)

// TestJobLocationMismatch: BigQuery names a job by project, location and
// id: jobs.get, getQueryResults, jobs.cancel and jobs.delete naming a
// location other than the job's answer 404 notFound "Not found: Job
// p:LOC.id" with the location asked for (the API reference: "location:
// The geographic location of the job"; a job is looked up where it
// ran). Without a location the job is found (as BigQuery finds US and
// EU jobs); a location differing only in case is the job's.
func TestJobLocationMismatch(t *testing.T) {
	e := newEnv(t)
	base := e.srv.URL
	code, b := do(t, base, "POST", "/projects/p/jobs", `{"jobReference":{"jobId":"j1","location":"EU"},"configuration":{"query":{"query":"SELECT 1 AS a","useLegacySql":false}}}`)
	if code != 200 {
		t.Fatalf("jobs.insert: %d %s", code, b)
	}
	for _, c := range []struct{ method, path string }{
		{"GET", "/projects/p/jobs/j1?location=US"},
		{"GET", "/projects/p/queries/j1?location=US"},
		{"POST", "/projects/p/jobs/j1/cancel?location=US"},
		{"DELETE", "/projects/p/jobs/j1/delete?location=US"},
	} {
		code, b := do(t, base, c.method, c.path, "")
		if code != 404 || !strings.Contains(string(b), `"reason":"notFound"`) || !strings.Contains(string(b), "Not found: Job p:US.j1") {
			t.Errorf("%s %s: %d %s, want 404 notFound 'Not found: Job p:US.j1'", c.method, c.path, code, b)
		}
	}
	for _, path := range []string{"/projects/p/jobs/j1", "/projects/p/jobs/j1?location=EU", "/projects/p/jobs/j1?location=eu", "/projects/p/queries/j1?location=EU"} {
		if code, b := do(t, base, "GET", path, ""); code != 200 {
			t.Errorf("GET %s: %d %s, want 200", path, code, b)
		}
	}
}
