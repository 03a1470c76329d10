package rest_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestQueryREST: jobs.query and getQueryResults as raw REST: legacy SQL is
// a 400 saying how to switch; pages by startIndex and pageToken; a failed
// query is invalidQuery with its location.
func TestQueryREST(t *testing.T) {
	e := newEnv(t)
	base := e.srv.URL
	code, b := do(t, base, "POST", "/projects/p/queries", `{"query":"SELECT 1"}`)
	if code != 400 || !strings.Contains(string(b), "useLegacySql: false") {
		t.Fatalf("legacy SQL: %d %s", code, b)
	}
	code, b = do(t, base, "POST", "/bigquery/v2/projects/p/queries", `{"query":"SELECT 1 AS a, 'x' b","useLegacySql":false,"maxResults":5}`)
	var qr struct {
		JobComplete  bool
		TotalRows    string
		JobReference struct{ JobID string }
		Rows         []struct{ F []struct{ V any } }
		Schema       struct{ Fields []struct{ Name, Type string } }
	}
	if err := json.Unmarshal(b, &qr); code != 200 || err != nil {
		t.Fatalf("query: %d %s", code, b)
	}
	if !qr.JobComplete || qr.TotalRows != "1" || len(qr.Rows) != 1 || qr.Rows[0].F[0].V != "1" || qr.Rows[0].F[1].V != "x" ||
		qr.Schema.Fields[0].Name != "a" || qr.Schema.Fields[0].Type != "INTEGER" || qr.Schema.Fields[1].Name != "b" {
		t.Fatalf("query answer %s", b)
	}
	id := qr.JobReference.JobID
	code, b = do(t, base, "GET", "/projects/p/queries/"+id+"?startIndex=1", "")
	if code != 200 || !strings.Contains(string(b), `"totalRows":"1"`) || strings.Contains(string(b), `"v":"1"`) {
		t.Fatalf("getQueryResults past the end: %d %s", code, b)
	}
	code, b = do(t, base, "GET", "/projects/p/queries/"+id+"?pageToken=bogus", "")
	if code != 400 {
		t.Fatalf("bad page token: %d %s", code, b)
	}
	code, b = do(t, base, "POST", "/projects/p/queries", `{"query":"SELECT\n  nope","useLegacySql":false}`)
	if code != 400 || !strings.Contains(string(b), `Unrecognized name: nope at [2:3]`) || !strings.Contains(string(b), `"reason":"invalidQuery"`) {
		t.Fatalf("bad query: %d %s", code, b)
	}
	code, b = do(t, base, "POST", "/projects/p/jobs", `{"configuration":{"load":{}}}`)
	if code != 400 || !strings.Contains(string(b), "not supported yet by bqstore: load jobs") {
		t.Fatalf("load job: %d %s", code, b)
	}
	code, b = do(t, base, "GET", "/projects/p/jobs?stateFilter=done", "")
	if code != 200 || !strings.Contains(string(b), id) {
		t.Fatalf("jobs.list: %d %s", code, b)
	}
	if code, b = do(t, base, "DELETE", "/projects/p/jobs/"+id+"/delete", ""); code != 204 {
		t.Fatalf("jobs.delete: %d %s", code, b)
	}
	if code, b = do(t, base, "GET", "/projects/p/jobs/"+id, ""); code != 404 {
		t.Fatalf("jobs.get after delete: %d %s", code, b)
	}
}
