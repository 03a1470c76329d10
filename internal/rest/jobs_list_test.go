package rest_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestJobsListProjection: jobs.list's projection: "full" (the default;
// the Go client sends it) includes each job's configuration, "minimal"
// does not ("Does not include the job configuration", JobsList's
// reference); another value is 400 invalid. Before, the projection was
// ignored.
func TestJobsListProjection(t *testing.T) {
	e := newEnv(t)
	base := e.srv.URL
	code, b := do(t, base, "POST", "/projects/p/queries", `{"query":"SELECT 1 AS a","useLegacySql":false}`)
	if code != 200 {
		t.Fatalf("jobs.query: %d %s", code, b)
	}
	for _, c := range []struct {
		q    string
		conf bool
	}{{"", true}, {"?projection=full", true}, {"?projection=FULL", true}, {"?projection=minimal", false}} {
		code, b := do(t, base, "GET", "/projects/p/jobs"+c.q, "")
		var l struct {
			Jobs []struct {
				Configuration json.RawMessage `json:"configuration"`
			} `json:"jobs"`
		}
		if code != 200 || json.Unmarshal(b, &l) != nil || len(l.Jobs) != 1 || (l.Jobs[0].Configuration != nil) != c.conf {
			t.Errorf("jobs.list%s: %d %s; want one job, configuration %v", c.q, code, b, c.conf)
		}
	}
	if code, b := do(t, base, "GET", "/projects/p/jobs?projection=some", ""); code != 400 || !strings.Contains(string(b), "projection") {
		t.Errorf("jobs.list?projection=some: %d %s, want 400", code, b)
	}
}
