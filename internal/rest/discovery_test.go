package rest_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
)

// discoveryDoc is the part of a discovery document the tests read.
type discoveryDoc struct {
	Kind        string `json:"kind"`
	ID          string `json:"id"`
	RootURL     string `json:"rootUrl"`
	ServicePath string `json:"servicePath"`
	BasePath    string `json:"basePath"`
	BaseURL     string `json:"baseUrl"`
	Resources   map[string]struct {
		Methods map[string]discoveryMethod `json:"methods"`
	} `json:"resources"`
	Schemas map[string]json.RawMessage `json:"schemas"`
}

type discoveryMethod struct {
	ID             string   `json:"id"`
	Description    string   `json:"description"`
	HTTPMethod     string   `json:"httpMethod"`
	Path           string   `json:"path"`
	ParameterOrder []string `json:"parameterOrder"`
	Parameters     map[string]struct {
		Type     string `json:"type"`
		Location string `json:"location"`
		Required bool   `json:"required"`
	} `json:"parameters"`
	Request *struct {
		Ref string `json:"$ref"`
	} `json:"request"`
	Response *struct {
		Ref string `json:"$ref"`
	} `json:"response"`
}

func getDiscovery(t *testing.T, base, path string) discoveryDoc {
	t.Helper()
	code, b := do(t, base, "GET", path, "")
	if code != 200 {
		t.Fatalf("GET %s: %d %s", path, code, b)
	}
	var doc discoveryDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, b)
	}
	return doc
}

// TestDiscovery: the document is served where bq and the libraries ask
// for it, names this server as its root, and lists exactly the methods
// served (here without a storage engine, so no tabledata methods), each
// of which answers at the path the document gives.
func TestDiscovery(t *testing.T) {
	e := newEnv(t)
	base := e.srv.URL
	doc := getDiscovery(t, base, "/$discovery/rest?version=v2")
	_, b1 := do(t, base, "GET", "/$discovery/rest?version=v2", "")
	if _, b2 := do(t, base, "GET", "/discovery/v1/apis/bigquery/v2/rest", ""); string(b1) != string(b2) {
		t.Errorf("the two discovery paths serve different documents")
	}
	if doc.Kind != "discovery#restDescription" || doc.ID != "bigquery:v2" {
		t.Errorf("kind %q id %q", doc.Kind, doc.ID)
	}
	if doc.RootURL != base+"/" || doc.ServicePath != "bigquery/v2/" || doc.BasePath != "/bigquery/v2/" || doc.BaseURL != base+"/bigquery/v2/" {
		t.Errorf("rootUrl %q servicePath %q basePath %q baseUrl %q; want the server's own address %s", doc.RootURL, doc.ServicePath, doc.BasePath, doc.BaseURL, base)
	}
	var ids []string
	for res, r := range doc.Resources {
		for name, m := range r.Methods {
			ids = append(ids, m.ID)
			if m.ID != "bigquery."+res+"."+name {
				t.Errorf("method %s.%s has id %q", res, name, m.ID)
			}
			// Every path parameter is declared, required, and in order.
			var inPath []string
			for _, seg := range strings.Split(m.Path, "/") {
				if strings.HasPrefix(seg, "{") {
					inPath = append(inPath, strings.Trim(seg, "{}"))
				}
			}
			if fmt.Sprint(inPath) != fmt.Sprint(m.ParameterOrder) {
				t.Errorf("%s: parameterOrder %v, path has %v", m.ID, m.ParameterOrder, inPath)
			}
			for _, p := range inPath {
				if pp, ok := m.Parameters[p]; !ok || pp.Location != "path" || !pp.Required {
					t.Errorf("%s: path parameter %s not declared as a required path parameter", m.ID, p)
				}
			}
			for _, ref := range []*struct {
				Ref string `json:"$ref"`
			}{m.Request, m.Response} {
				if ref != nil {
					if _, ok := doc.Schemas[ref.Ref]; !ok {
						t.Errorf("%s: schema %q is not in the document", m.ID, ref.Ref)
					}
				}
			}
			// The method is served at its path: neither 404 (no
			// route) nor 501 (a method bqstore does not serve) nor
			// 405.
			path := strings.NewReplacer("{projectId}", "p", "{datasetId}", "nods", "{tableId}", "t", "{jobId}", "j").Replace(m.Path)
			code, b := do(t, base, m.HTTPMethod, doc.BasePath+path, "{}")
			if strings.HasPrefix(m.Description, "Not implemented by bqstore") {
				// A stub (notimpl.go): described so that bq reaches
				// the server and reports its 501.
				if code != 501 || !strings.Contains(string(b), "bqstore does not implement "+strings.TrimPrefix(m.ID, "bigquery.")+" yet") {
					t.Errorf("stub %s %s (%s): %d %s, want its 501", m.HTTPMethod, path, m.ID, code, b)
				}
				continue
			}
			if (code == 404 && !strings.Contains(string(b), "Not found: Dataset") && !strings.Contains(string(b), "Not found: Job")) || code == 501 || code == 405 {
				t.Errorf("%s %s (%s): %d %s", m.HTTPMethod, path, m.ID, code, b)
			}
		}
	}
	sort.Strings(ids)
	want := []string{
		"bigquery.datasets.delete", "bigquery.datasets.get", "bigquery.datasets.insert", "bigquery.datasets.list", "bigquery.datasets.patch", "bigquery.datasets.update",
		"bigquery.jobs.cancel", "bigquery.jobs.delete", "bigquery.jobs.get", "bigquery.jobs.getQueryResults", "bigquery.jobs.insert", "bigquery.jobs.list", "bigquery.jobs.query",
		"bigquery.projects.list",
		"bigquery.tables.delete", "bigquery.tables.get", "bigquery.tables.insert", "bigquery.tables.list", "bigquery.tables.patch", "bigquery.tables.update",
	}
	if fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Errorf("methods\n got %v\nwant %v", ids, want)
	}

	if code, b := do(t, base, "GET", "/$discovery/rest?version=v1", ""); code != 404 {
		t.Errorf("version v1: %d %s, want 404", code, b)
	}
	if code, b := do(t, base, "POST", "/$discovery/rest?version=v2", ""); code == 200 {
		t.Errorf("POST of the discovery document: %d %s", code, b)
	}
}

// TestDiscoverySchemas: every member the served methods return is
// described in the document's schemas (the schemas are derived from the
// types the handlers encode, so they cannot drift).
func TestDiscoverySchemas(t *testing.T) {
	e := newEnv(t)
	base := e.srv.URL
	doc := getDiscovery(t, base, "/$discovery/rest")
	schemas := map[string]map[string]any{}
	for name, raw := range doc.Schemas {
		var s map[string]any
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		schemas[name] = s
	}
	for _, c := range []struct{ method, path, body, schema string }{
		{"POST", "/projects/p/datasets", `{"datasetReference":{"datasetId":"d"},"description":"x","labels":{"a":"b"},"defaultTableExpirationMs":"3600000","friendlyName":"f"}`, "Dataset"},
		{"POST", "/projects/p/datasets/d/tables", `{"tableReference":{"tableId":"t"},"description":"x","labels":{"a":"b"},"expirationTime":"4102444800000","friendlyName":"f","schema":{"fields":[{"name":"r","type":"RECORD","mode":"REPEATED","description":"d","fields":[{"name":"n","type":"NUMERIC","precision":"10","scale":"2"},{"name":"s","type":"STRING","maxLength":"5","defaultValueExpression":"'x'"},{"name":"g","type":"RANGE","rangeElementType":{"type":"DATE"}}]}]},"timePartitioning":{"type":"DAY","expirationMs":"1000","requirePartitionFilter":true},"rangePartitioning":{"field":"x","range":{"start":"0","end":"9","interval":"1"}},"clustering":{"fields":["r"]}}`, "Table"},
		{"GET", "/projects/p/datasets/d", "", "Dataset"},
		{"GET", "/projects/p/datasets", "", "DatasetList"},
		{"GET", "/projects/p/datasets/d/tables/t", "", "Table"},
		{"GET", "/projects/p/datasets/d/tables", "", "TableList"},
		{"GET", "/projects", "", "ProjectList"},
	} {
		code, b := do(t, base, c.method, c.path, c.body)
		if code != 200 {
			t.Fatalf("%s %s: %d %s", c.method, c.path, code, b)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		checkAgainstSchema(t, c.method+" "+c.path, v, map[string]any{"$ref": c.schema}, schemas)
	}
}

// checkAgainstSchema reports members of v that schema s does not describe,
// and JSON types that differ from the schema's.
func checkAgainstSchema(t *testing.T, at string, v any, s map[string]any, schemas map[string]map[string]any) {
	t.Helper()
	if ref, ok := s["$ref"].(string); ok {
		rs, ok := schemas[ref]
		if !ok {
			t.Errorf("%s: schema %s missing", at, ref)
			return
		}
		s = rs
	}
	typ, _ := s["type"].(string)
	switch v := v.(type) {
	case map[string]any:
		if typ != "object" {
			t.Errorf("%s: an object where the schema says %q", at, typ)
			return
		}
		if ap, ok := s["additionalProperties"].(map[string]any); ok {
			for k, el := range v {
				checkAgainstSchema(t, at+"."+k, el, ap, schemas)
			}
			return
		}
		props, _ := s["properties"].(map[string]any)
		for k, el := range v {
			ps, ok := props[k].(map[string]any)
			if !ok {
				t.Errorf("%s: member %q is not in the schema", at, k)
				continue
			}
			checkAgainstSchema(t, at+"."+k, el, ps, schemas)
		}
	case []any:
		if typ != "array" {
			t.Errorf("%s: an array where the schema says %q", at, typ)
			return
		}
		items, _ := s["items"].(map[string]any)
		for i, el := range v {
			checkAgainstSchema(t, fmt.Sprintf("%s[%d]", at, i), el, items, schemas)
		}
	case string:
		if typ != "string" && typ != "any" {
			t.Errorf("%s: a string where the schema says %q", at, typ)
		}
	case float64:
		if typ != "integer" && typ != "number" && typ != "any" {
			t.Errorf("%s: a number where the schema says %q", at, typ)
		}
	case bool:
		if typ != "boolean" && typ != "any" {
			t.Errorf("%s: a boolean where the schema says %q", at, typ)
		}
	}
}

// TestProjectsList: projects.list lists the projects datasets were created
// in, paged like the other lists.
func TestProjectsList(t *testing.T) {
	e := newEnv(t)
	base := e.srv.URL
	for _, p := range []string{"p2", "p1", "p3"} {
		if code, b := do(t, base, "POST", "/projects/"+p+"/datasets", `{"datasetReference":{"datasetId":"d"}}`); code != 200 {
			t.Fatalf("create %s.d: %d %s", p, code, b)
		}
	}
	type list struct {
		Kind     string `json:"kind"`
		Projects []struct {
			Kind             string `json:"kind"`
			ID               string `json:"id"`
			ProjectReference struct {
				ProjectID string `json:"projectId"`
			} `json:"projectReference"`
		} `json:"projects"`
		NextPageToken string `json:"nextPageToken"`
		TotalItems    int    `json:"totalItems"`
	}
	var got []string
	tok := ""
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatal("too many pages")
		}
		code, b := do(t, base, "GET", "/bigquery/v2/projects?maxResults=2&pageToken="+tok, "")
		if code != http.StatusOK {
			t.Fatalf("projects.list: %d %s", code, b)
		}
		var l list
		if err := json.Unmarshal(b, &l); err != nil {
			t.Fatal(err)
		}
		if l.Kind != "bigquery#projectList" || l.TotalItems != 3 {
			t.Fatalf("projects.list: %s", b)
		}
		for _, p := range l.Projects {
			if p.Kind != "bigquery#project" || p.ProjectReference.ProjectID != p.ID {
				t.Errorf("project %+v", p)
			}
			got = append(got, p.ID)
		}
		if tok = l.NextPageToken; tok == "" {
			break
		}
	}
	if fmt.Sprint(got) != "[p1 p2 p3]" {
		t.Errorf("projects %v, want [p1 p2 p3]", got)
	}
}
