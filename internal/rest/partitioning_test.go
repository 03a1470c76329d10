package rest_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/rest"
)

// TestPartitioningEcho: timePartitioning, rangePartitioning and clustering
// are stored and echoed as sent (bq show prints them), replaced member by
// member by a patch, cleared by null or by their absence from a PUT, kept
// across a restart, and type-checked like the rest of the body.
func TestPartitioningEcho(t *testing.T) {
	e := newEnv(t)
	base := e.srv.URL
	if code, b := do(t, base, "POST", "/projects/p/datasets", `{"datasetReference":{"datasetId":"d"}}`); code != 200 {
		t.Fatalf("create dataset: %d %s", code, b)
	}
	type part struct {
		TimePartitioning  json.RawMessage `json:"timePartitioning"`
		RangePartitioning json.RawMessage `json:"rangePartitioning"`
		Clustering        json.RawMessage `json:"clustering"`
	}
	check := func(what string, code int, b []byte, tp, rp, cl string) {
		t.Helper()
		if code != 200 {
			t.Fatalf("%s: %d %s", what, code, b)
		}
		var got part
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if string(got.TimePartitioning) != tp || string(got.RangePartitioning) != rp || string(got.Clustering) != cl {
			t.Errorf("%s: timePartitioning %s rangePartitioning %s clustering %s\nwant %s %s %s", what, got.TimePartitioning, got.RangePartitioning, got.Clustering, tp, rp, cl)
		}
	}
	tp := `{"expirationMs":"3600000","field":"ts","type":"DAY"}` // int64 as a string, as BigQuery writes it
	code, b := do(t, base, "POST", "/projects/p/datasets/d/tables", `{"tableReference":{"tableId":"t"},
		"schema":{"fields":[{"name":"ts","type":"TIMESTAMP"},{"name":"s","type":"STRING"}]},
		"timePartitioning": {"type": "DAY", "field": "ts", "expirationMs": 3600000},
		"clustering": {"fields": ["s"]}}`)
	check("insert", code, b, tp, "", `{"fields":["s"]}`)
	code, b = do(t, base, "GET", "/projects/p/datasets/d/tables/t", "")
	check("get", code, b, tp, "", `{"fields":["s"]}`)
	code, b = do(t, base, "GET", "/projects/p/datasets/d/tables", "")
	var list struct{ Tables []json.RawMessage }
	if err := json.Unmarshal(b, &list); err != nil || len(list.Tables) != 1 {
		t.Fatalf("tables.list: %d %s", code, b)
	}
	check("list", code, list.Tables[0], tp, "", `{"fields":["s"]}`)

	code, b = do(t, base, "PATCH", "/projects/p/datasets/d/tables/t", `{"clustering":{"fields":["s","ts"]}}`)
	check("patch clustering", code, b, tp, "", `{"fields":["s","ts"]}`)
	code, b = do(t, base, "PATCH", "/projects/p/datasets/d/tables/t", `{"timePartitioning":null,"description":"x"}`)
	check("patch timePartitioning null", code, b, "", "", `{"fields":["s","ts"]}`)
	code, b = do(t, base, "PATCH", "/projects/p/datasets/d/tables/t", `{"rangePartitioning":{"field":"n","range":{"start":0,"end":"100","interval":10}}}`)
	rp := `{"field":"n","range":{"end":"100","interval":"10","start":"0"}}`
	check("patch rangePartitioning", code, b, "", rp, `{"fields":["s","ts"]}`)

	// Restart: the catalog keeps them.
	cat2, err := catalog.Open(e.dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv2 := httptest.NewServer(rest.New(cat2, rest.Options{}))
	defer srv2.Close()
	code, b = do(t, srv2.URL, "GET", "/projects/p/datasets/d/tables/t", "")
	check("get after reopen", code, b, "", rp, `{"fields":["s","ts"]}`)

	code, b = do(t, base, "PUT", "/projects/p/datasets/d/tables/t", `{"tableReference":{"projectId":"p","datasetId":"d","tableId":"t"}}`)
	check("put without them", code, b, "", "", "")

	if code, b := do(t, base, "PATCH", "/projects/p/datasets/d/tables/t", `{"timePartitioning":{"type":true}}`); code != 400 {
		t.Errorf("timePartitioning.type true: %d %s, want 400", code, b)
	}
	if code, b := do(t, base, "PATCH", "/projects/p/datasets/d/tables/t", `{"timePartitioning":{"expirationMs":"soon"}}`); code != 400 {
		t.Errorf("timePartitioning.expirationMs soon: %d %s, want 400", code, b)
	}
	if code, b := do(t, base, "PATCH", "/projects/p/datasets/d/tables/t", `{"clustering":{"fields":"s"}}`); code != 400 {
		t.Errorf("clustering.fields a string: %d %s, want 400", code, b)
	}
	if code, b := do(t, base, "PATCH", "/projects/p/datasets/d/tables/t", `{"clustering":{"columns":["s"]}}`); code != 400 {
		t.Errorf("clustering.columns: %d %s, want 400", code, b)
	}
}

// TestGetTableSelectedFields: tables.get with selectedFields returns the
// schema of those fields only, as BigQuery does; bq head -c relies on it
// (it pairs tabledata.list's cells with this schema).
func TestGetTableSelectedFields(t *testing.T) {
	e := newEnv(t)
	base := e.srv.URL
	if code, b := do(t, base, "POST", "/projects/p/datasets", `{"datasetReference":{"datasetId":"d"}}`); code != 200 {
		t.Fatalf("create dataset: %d %s", code, b)
	}
	if code, b := do(t, base, "POST", "/projects/p/datasets/d/tables", `{"tableReference":{"tableId":"t"},
		"schema":{"fields":[{"name":"a","type":"INTEGER"},{"name":"r","type":"RECORD","fields":[{"name":"x","type":"STRING"},{"name":"y","type":"STRING"}]},{"name":"c","type":"STRING"}]}}`); code != 200 {
		t.Fatalf("create table: %d %s", code, b)
	}
	for _, tc := range []struct{ sel, want string }{
		{"", "a r(x y) c"},
		{"c,a", "a c"},
		{"r.y", "r(y)"},
		{"C", "c"},
	} {
		code, b := do(t, base, "GET", "/bigquery/v2/projects/p/datasets/d/tables/t?selectedFields="+tc.sel, "")
		if code != 200 {
			t.Fatalf("selectedFields=%s: %d %s", tc.sel, code, b)
		}
		var tb struct {
			Schema struct{ Fields []field }
		}
		if err := json.Unmarshal(b, &tb); err != nil {
			t.Fatal(err)
		}
		if got := fieldNames(tb.Schema.Fields); got != tc.want {
			t.Errorf("selectedFields=%s: schema %s, want %s", tc.sel, got, tc.want)
		}
	}
	if code, b := do(t, base, "GET", "/projects/p/datasets/d/tables/t?selectedFields=nope", ""); code != 400 {
		t.Errorf("selectedFields=nope: %d %s, want 400", code, b)
	}
}

type field struct {
	Name   string
	Fields []field
}

func fieldNames(fs []field) string {
	var out []string
	for _, f := range fs {
		s := f.Name
		if len(f.Fields) > 0 {
			s += "(" + fieldNames(f.Fields) + ")"
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}
