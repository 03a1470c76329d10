package rest_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/jobs"
	"github.com/bqstore/bqstore/internal/rest"
)

// TestQueryResourcesExceededREST: a query that needs more than the jobs
// store's MaxMemory fails as BigQuery's does, HTTP 400 resourcesExceeded
// "Resources exceeded during query execution: ...", in jobs.query's answer,
// in getQueryResults and in the job's status; the next query runs.
func TestQueryResourcesExceededREST(t *testing.T) {
	cat, err := catalog.Open(t.TempDir(), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	js := jobs.New(cat, jobs.Options{MaxMemory: 256 << 10})
	t.Cleanup(func() { js.Close() })
	srv := httptest.NewServer(rest.New(cat, rest.Options{Jobs: js}))
	t.Cleanup(srv.Close)
	// from is 100,000 rows: a cross join of five UNNESTs of 10 digits.
	const d = "UNNEST([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])"
	const from = " FROM " + d + " a, " + d + " b, " + d + " c, " + d + " d, " + d + " e"
	const k = "a * 10000 + b * 1000 + c * 100 + d * 10 + e"
	for _, q := range []string{
		"SELECT " + k + " AS k, COUNT(*)" + from + " GROUP BY k",
		"SELECT " + k + " AS k" + from + " ORDER BY k DESC",
	} {
		body, _ := json.Marshal(map[string]any{"query": q, "useLegacySql": false})
		code, b := do(t, srv.URL, "POST", "/projects/p/queries", string(body))
		if code != 400 || !strings.Contains(string(b), `"reason":"resourcesExceeded"`) ||
			!strings.Contains(string(b), `"message":"Resources exceeded during query execution: The query could not be executed in the allotted memory.`) {
			t.Fatalf("%s: %d %s", q, code, b)
		}
	}
	code, b := do(t, srv.URL, "POST", "/projects/p/queries", `{"query":"SELECT COUNT(*)`+from+`","useLegacySql":false}`)
	if code != 200 || !strings.Contains(string(b), `"v":"100000"`) {
		t.Fatalf("the next query: %d %s", code, b)
	}
}
