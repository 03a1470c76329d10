package rest_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/rest"
)

type wireErr struct {
	Error struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Errors  []struct {
			Reason, Message, Domain string
		} `json:"errors"`
		Status string `json:"status"`
	} `json:"error"`
}

func do(t *testing.T, base, method, path, body string, hdr ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func TestBadInput(t *testing.T) {
	e := newEnv(t)
	base := e.srv.URL
	if code, b := do(t, base, "POST", "/bigquery/v2/projects/p/datasets", `{"datasetReference":{"datasetId":"d"}}`); code != 200 {
		t.Fatalf("create dataset via /bigquery/v2: %d %s", code, b)
	}
	if code, b := do(t, base, "POST", "/projects/p/datasets/d/tables", `{"tableReference":{"tableId":"ok"},"requirePartitionFilter":false}`); code != 200 {
		t.Fatalf("create table: %d %s", code, b)
	}
	for _, tc := range []struct {
		name, method, path, body string
		code                     int
		reason, msg              string
	}{
		{"malformed", "POST", "/projects/p/datasets/d/tables", `{"tableReference":`, 400, "badRequest", "Invalid JSON payload"},
		{"trailing", "POST", "/projects/p/datasets/d/tables", `{} {}`, 400, "badRequest", "Unexpected data"},
		{"empty", "POST", "/projects/p/datasets/d/tables", ``, 400, "badRequest", "body is empty"},
		{"array", "POST", "/projects/p/datasets/d/tables", `[1]`, 400, "badRequest", "Expected a table object"},
		{"wrong type", "POST", "/projects/p/datasets/d/tables", `{"tableReference":{"tableId":5}}`, 400, "badRequest", "Invalid value at 'table.table_reference.table_id' (TYPE_STRING)"},
		{"wrong type schema", "POST", "/projects/p/datasets/d/tables", `{"tableReference":{"tableId":"x"},"schema":{"fields":"a"}}`, 400, "badRequest", "'table.schema.fields' (repeated TYPE_MESSAGE)"},
		{"bad int64", "POST", "/projects/p/datasets/d/tables", `{"tableReference":{"tableId":"x"},"expirationTime":"soon"}`, 400, "badRequest", "table.expiration_time"},
		{"unknown top", "POST", "/projects/p/datasets/d/tables", `{"tableReference":{"tableId":"x"},"colour":"red"}`, 400, "badRequest", `Unknown name "colour" at 'table'`},
		{"unknown nested", "POST", "/projects/p/datasets/d/tables", `{"tableReference":{"tableId":"x"},"schema":{"fields":[{"name":"a","type":"STRING","bogus":1}]}}`, 400, "badRequest", `Unknown name "bogus" at 'table.schema.fields[0]'`},
		{"unknown dataset member", "POST", "/projects/p/datasets", `{"datasetReference":{"datasetId":"z","x":1}}`, 400, "badRequest", `Unknown name "x" at 'dataset.dataset_reference'`},
		{"view", "POST", "/projects/p/datasets/d/tables", `{"tableReference":{"tableId":"v"},"view":{"query":"SELECT 1"}}`, 400, "invalid", "table.view"},
		{"no table id", "POST", "/projects/p/datasets/d/tables", `{"schema":{"fields":[]}}`, 400, "invalid", "tableReference.tableId"},
		{"ref mismatch", "POST", "/projects/p/datasets/d/tables", `{"tableReference":{"projectId":"q","datasetId":"d","tableId":"x"}}`, 400, "invalid", "does not match"},
		{"bad type", "POST", "/projects/p/datasets/d/tables", `{"tableReference":{"tableId":"x"},"schema":{"fields":[{"name":"a","type":"TEXT"}]}}`, 400, "invalid", `invalid type "TEXT"`},
		{"bad column", "POST", "/projects/p/datasets/d/tables", `{"tableReference":{"tableId":"x"},"schema":{"fields":[{"name":"a b","type":"STRING"}]}}`, 400, "invalid", `Invalid field name "a b"`},
		{"bad table id", "POST", "/projects/p/datasets/d/tables", `{"tableReference":{"tableId":"../x"}}`, 400, "invalid", "Invalid table ID"},
		{"nul table id", "POST", "/projects/p/datasets/d/tables", `{"tableReference":{"tableId":"a\u0000b"}}`, 400, "invalid", "Invalid table ID"},
		{"bad dataset id", "POST", "/projects/p/datasets", `{"datasetReference":{"datasetId":"../x"}}`, 400, "invalid", "Invalid dataset ID"},
		{"bad project", "GET", "/projects/UPPER/datasets", ``, 400, "invalid", "Invalid project ID"},
		{"stale etag", "PATCH", "/projects/p/datasets/d/tables/ok", `{"description":"x"}`, 412, "conditionNotMet", "Precondition"},
		{"bad maxResults", "GET", "/projects/p/datasets/d/tables?maxResults=-1", ``, 400, "invalid", "maxResults"},
		{"bad pageToken", "GET", "/projects/p/datasets/d/tables?pageToken=***", ``, 400, "invalid", "page token"},
		{"bad deleteContents", "DELETE", "/projects/p/datasets/d?deleteContents=maybe", ``, 400, "invalid", "deleteContents"},
		{"bad filter", "GET", "/projects/p/datasets?filter=name:x", ``, 400, "invalid", "Invalid filter"},
		{"bad table in path", "GET", "/projects/p/datasets/d/tables/a.b", ``, 400, "invalid", "Invalid table ID"},
		{"nul table in path", "DELETE", "/projects/p/datasets/d/tables/a%00b", ``, 400, "invalid", "Invalid table ID"},
		{"bad dataset in path", "GET", "/projects/p/datasets/a-b/tables", ``, 400, "invalid", "Invalid dataset ID"},
		{"long table in path", "GET", "/projects/p/datasets/d/tables/" + strings.Repeat("x", 2000), ``, 400, "invalid", "Invalid table ID"},
		{"unknown route", "GET", "/projects/p/bogus", ``, 404, "notFound", "Not found"},
		{"method", "POST", "/projects/p/datasets/d", `{}`, 405, "methodNotAllowed", "not allowed"},
		{"missing table v2", "GET", "/bigquery/v2/projects/p/datasets/d/tables/nope", ``, 404, "notFound", "Not found: Table p:d.nope"},
	} {
		t.Run("case="+tc.name, func(t *testing.T) {
			var hdr []string
			if tc.code == 412 {
				hdr = []string{"If-Match", "stale"}
			}
			code, b := do(t, base, tc.method, tc.path, tc.body, hdr...)
			if code != tc.code {
				t.Fatalf("code %d, want %d: %s", code, tc.code, b)
			}
			var we wireErr
			if err := json.Unmarshal(b, &we); err != nil {
				t.Fatalf("error body is not JSON: %s", b)
			}
			if we.Error.Code != tc.code || len(we.Error.Errors) != 1 || we.Error.Errors[0].Reason != tc.reason ||
				we.Error.Errors[0].Domain != "global" || we.Error.Status == "" || we.Error.Errors[0].Message != we.Error.Message {
				t.Fatalf("error shape: %s", b)
			}
			if !strings.Contains(we.Error.Message, tc.msg) {
				t.Fatalf("message %q does not contain %q", we.Error.Message, tc.msg)
			}
		})
	}
	// Nothing above created a table or a dataset.
	if l, _ := e.cat.ListTables("p", "d"); len(l) != 1 {
		t.Fatalf("%d tables after bad requests, want 1", len(l))
	}
	if l := e.cat.ListDatasets("p"); len(l) != 1 {
		t.Fatalf("%d datasets after bad requests, want 1", len(l))
	}
}

func TestHugeBody(t *testing.T) {
	e := newEnv(t)
	if code, b := do(t, e.srv.URL, "POST", "/projects/p/datasets", `{"datasetReference":{"datasetId":"d"}}`); code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	// 50 MB: a valid-looking table with an enormous description.
	var buf bytes.Buffer
	buf.WriteString(`{"tableReference":{"tableId":"big"},"description":"`)
	buf.Write(bytes.Repeat([]byte("x"), 50<<20))
	buf.WriteString(`"}`)
	resp, err := http.Post(e.srv.URL+"/projects/p/datasets/d/tables", "application/json", &buf)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "exceeds the limit") {
		t.Fatalf("got %d %s", resp.StatusCode, b)
	}
	if _, err := e.cat.Table("p", "d", "big"); err == nil {
		t.Fatal("a table was created from a rejected body")
	}
	// The server still works.
	if code, b := do(t, e.srv.URL, "GET", "/projects/p/datasets/d", ""); code != 200 {
		t.Fatalf("after the huge body: %d %s", code, b)
	}
}

func TestResponseShape(t *testing.T) {
	e := newEnv(t)
	do(t, e.srv.URL, "POST", "/projects/p/datasets", `{"datasetReference":{"datasetId":"d"}}`)
	code, b := do(t, e.srv.URL, "POST", "/projects/p/datasets/d/tables", `{"tableReference":{"tableId":"t x"},"schema":{"fields":[{"name":"a","type":"INT64"}]}}`)
	if code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{
		"kind": "bigquery#table", "id": "p:d.t x", "type": "TABLE", "location": "US", "numRows": "1", "numBytes": "100",
		"selfLink": e.srv.URL[len("http://"):],
	} {
		got, _ := m[k].(string)
		if k == "selfLink" {
			if !strings.Contains(got, want.(string)+"/bigquery/v2/projects/p/datasets/d/tables/t%20x") {
				t.Errorf("selfLink %q", got)
			}
			continue
		}
		if got != want {
			t.Errorf("%s = %v, want %v", k, m[k], want)
		}
	}
	for _, k := range []string{"etag", "creationTime", "lastModifiedTime"} {
		if s, _ := m[k].(string); s == "" {
			t.Errorf("%s missing in %s", k, b)
		}
	}
	if !strings.Contains(string(b), `"fields":[{"name":"a","type":"INTEGER","mode":"NULLABLE"}]`) {
		t.Errorf("schema not normalized: %s", b)
	}
	code, b = do(t, e.srv.URL, "GET", "/projects/p/datasets/d/tables?maxResults=1", "")
	if code != 200 || !strings.Contains(string(b), `"totalItems":1`) || !strings.Contains(string(b), `"kind":"bigquery#tableList"`) {
		t.Fatalf("list: %d %s", code, b)
	}
}

// FuzzTableInsert sends arbitrary bodies to tables.insert and
// tables.patch: never a 5xx, always a JSON answer, and a created table
// reads back.
func FuzzTableInsert(f *testing.F) {
	f.Add([]byte(`{"tableReference":{"tableId":"t"},"schema":{"fields":[{"name":"a","type":"INT64","mode":"REPEATED"}]}}`))
	f.Add([]byte(`{"tableReference":{"tableId":"t"},"labels":{"a":null},"expirationTime":"1"}`))
	dir := f.TempDir()
	cat, err := catalog.Open(dir, catalog.Options{})
	if err != nil {
		f.Fatal(err)
	}
	h := rest.New(cat, rest.Options{})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/projects/p/datasets", strings.NewReader(`{"datasetReference":{"datasetId":"d"}}`)))
	if rec.Code != 200 {
		f.Fatalf("setup: %d %s", rec.Code, rec.Body)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) > 1<<16 {
			return
		}
		for _, m := range []string{"POST /projects/p/datasets/d/tables", "PATCH /projects/p/datasets/d/tables/t", "PUT /projects/p/datasets/d/tables/t"} {
			method, path, _ := strings.Cut(m, " ")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(method, path, bytes.NewReader(body)))
			if rec.Code >= 500 {
				t.Fatalf("%s: %d %s", m, rec.Code, rec.Body)
			}
			if !json.Valid(rec.Body.Bytes()) {
				t.Fatalf("%s: answer is not JSON: %s", m, rec.Body)
			}
		}
		var created struct {
			TableReference struct{ TableID string } `json:"tableReference"`
		}
		json.Unmarshal(body, &created)
		if created.TableReference.TableID != "" {
			if _, err := cat.Table("p", "d", created.TableReference.TableID); err == nil {
				if err := cat.DeleteTable(t.Context(), "p", "d", created.TableReference.TableID); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}

// TestPutReplaces checks tables.update and datasets.update (PUT): members
// absent from the body are cleared, unlike PATCH; the schema stays.
func TestPutReplaces(t *testing.T) {
	e := newEnv(t)
	base := e.srv.URL
	if code, b := do(t, base, "POST", "/projects/p/datasets", `{"datasetReference":{"datasetId":"d"},"description":"x","labels":{"a":"1"}}`); code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	if code, b := do(t, base, "POST", "/projects/p/datasets/d/tables", `{"tableReference":{"tableId":"t"},"description":"x","friendlyName":"f","labels":{"a":"1","b":"2"},"schema":{"fields":[{"name":"a","type":"STRING"}]}}`); code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	code, b := do(t, base, "PATCH", "/projects/p/datasets/d/tables/t", `{"labels":{"a":null,"c":"3"}}`)
	if code != 200 || !strings.Contains(string(b), `"labels":{"b":"2","c":"3"}`) || !strings.Contains(string(b), `"description":"x"`) {
		t.Fatalf("PATCH: %d %s", code, b)
	}
	code, b = do(t, base, "PUT", "/projects/p/datasets/d/tables/t", `{"labels":{"z":"9"}}`)
	if code != 200 || !strings.Contains(string(b), `"labels":{"z":"9"}`) || strings.Contains(string(b), `"description"`) ||
		strings.Contains(string(b), `"friendlyName"`) || !strings.Contains(string(b), `"fields":[{"name":"a"`) {
		t.Fatalf("PUT: %d %s", code, b)
	}
	code, b = do(t, base, "PUT", "/projects/p/datasets/d", `{"friendlyName":"g"}`)
	if code != 200 || strings.Contains(string(b), `"labels"`) || strings.Contains(string(b), `"description"`) || !strings.Contains(string(b), `"friendlyName":"g"`) {
		t.Fatalf("PUT dataset: %d %s", code, b)
	}
}
