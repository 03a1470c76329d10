package rest_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestNotImplemented: a BigQuery v2 method bqstore does not serve is a 501
// notImplemented naming the method; a path that is no BigQuery method
// stays a 404.
func TestNotImplemented(t *testing.T) {
	e := newEnv(t)
	base := e.srv.URL
	if code, b := do(t, base, "POST", "/projects/p/datasets", `{"datasetReference":{"datasetId":"d"}}`); code != 200 {
		t.Fatalf("create dataset: %d %s", code, b)
	}
	for _, tc := range []struct {
		method, path string
		code         int
		want         string // the method named, or the 404 message
	}{
		// bq load of a local file: the method and what it is for.
		{"POST", "/upload/bigquery/v2/projects/p/jobs?uploadType=multipart", 501, "load jobs (jobs.insert with a media upload: bq load of a local file)"},
		{"GET", "/projects/p/serviceAccount", 501, "projects.getServiceAccount"},
		{"POST", "/projects/p/datasets/d:undelete", 501, "datasets.undelete"},
		{"POST", "/projects/p/datasets/d/tables/t:getIamPolicy", 501, "tables.getIamPolicy"},
		{"POST", "/projects/p/datasets/d/tables/t:setIamPolicy", 501, "tables.setIamPolicy"},
		{"POST", "/projects/p/datasets/d/tables/t:testIamPermissions", 501, "tables.testIamPermissions"},
		{"GET", "/projects/p/datasets/d/routines", 501, "routines.list"},
		{"POST", "/projects/p/datasets/d/routines", 501, "routines.insert"},
		{"PUT", "/projects/p/datasets/d/routines/r", 501, "routines.update"},
		{"POST", "/projects/p/datasets/d/routines/r:getIamPolicy", 501, "routines.getIamPolicy"},
		{"GET", "/projects/p/datasets/d/models", 501, "models.list"},
		{"PATCH", "/projects/p/datasets/d/models/m", 501, "models.patch"},
		{"GET", "/projects/p/datasets/d/tables/t/rowAccessPolicies", 501, "rowAccessPolicies.list"},
		{"DELETE", "/projects/p/datasets/d/tables/t/rowAccessPolicies/x", 501, "rowAccessPolicies.delete"},
		{"POST", "/projects/p/datasets/d/tables/t/rowAccessPolicies:batchDelete", 501, "rowAccessPolicies.batchDelete"},
		// No BigQuery method at these paths: still 404.
		{"GET", "/projects/p/bogus", 404, "Not found: URL"},
		{"GET", "/bogus", 404, "Not found: URL"},
		{"DELETE", "/projects/p/jobs", 405, "Method DELETE is not allowed"},
		{"GET", "/projects/p/datasets/d/tables/t/insertAll/x", 404, "Not found: URL"},
		{"POST", "/projects/p/datasets/d:bogus", 400, "Invalid dataset ID"},
		// Served methods are unchanged.
		{"GET", "/projects/p/datasets/d/tables/nope", 404, "Not found: Table p:d.nope"},
		{"GET", "/projects/p/jobs/j1", 404, "Not found: Job p:US.j1"},
		{"GET", "/bigquery/v2/projects/p/queries/j1?maxResults=10", 404, "Not found: Job p:US.j1"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			code, b := do(t, base, tc.method, tc.path, "{}")
			if code != tc.code {
				t.Fatalf("code %d, want %d: %s", code, tc.code, b)
			}
			var we wireErr
			if err := json.Unmarshal(b, &we); err != nil {
				t.Fatalf("error body is not JSON: %s", b)
			}
			if code != 501 {
				if !strings.Contains(we.Error.Message, tc.want) {
					t.Fatalf("message %q does not contain %q", we.Error.Message, tc.want)
				}
				return
			}
			want := "bqstore does not implement " + tc.want + " yet"
			if we.Error.Code != 501 || we.Error.Message != want || we.Error.Status != "UNIMPLEMENTED" ||
				len(we.Error.Errors) != 1 || we.Error.Errors[0].Reason != "notImplemented" ||
				we.Error.Errors[0].Domain != "global" || we.Error.Errors[0].Message != want {
				t.Fatalf("got %s, want 501 notImplemented %q", b, want)
			}
		})
	}
}
