package rest_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestParamsInBody sends the request bodies the official clients send,
// which repeat the request's path parameters (projectId, datasetId,
// tableId) at the top of the body or in the resource's reference, and
// bodies whose repeated parameters disagree with the path.
func TestParamsInBody(t *testing.T) {
	e := newEnv(t)
	base := e.srv.URL
	if code, b := do(t, base, "POST", "/projects/p/datasets", `{"datasetReference":{"datasetId":"d"}}`); code != 200 {
		t.Fatalf("create dataset: %d %s", code, b)
	}
	if code, b := do(t, base, "POST", "/projects/p/datasets/d/tables", `{"tableReference":{"tableId":"t"}}`); code != 200 {
		t.Fatalf("create table: %d %s", code, b)
	}
	const disagree = "in content does not agree with"
	for _, tc := range []struct {
		name, method, path, body string
		code                     int
		reason, msg              string
	}{
		// @google-cloud/bigquery: bigquery.dataset('n1').create() and
		// bigquery.createDataset('n2', {location}).
		{"node dataset create", "POST", "/bigquery/v2/projects/p/datasets", `{"projectId":"p","datasetReference":{"datasetId":"n1"}}`, 200, "", ""},
		{"node dataset create location", "POST", "/bigquery/v2/projects/p/datasets", `{"location":"US","projectId":"p","datasetReference":{"datasetId":"n2"}}`, 200, "", ""},
		// @google-cloud/bigquery: dataset.createTable('n3', {schema}).
		{"node table create", "POST", "/bigquery/v2/projects/p/datasets/d/tables", `{"schema":{"fields":[{"name":"a","type":"STRING"}]},"tableReference":{"datasetId":"d","projectId":"p","tableId":"n3"}}`, 200, "", ""},
		// bq mk: ConstructObjectInfo(reference) plus the members.
		{"bq dataset create", "POST", "/bigquery/v2/projects/p/datasets", `{"datasetReference":{"projectId":"p","datasetId":"b1"},"description":"x"}`, 200, "", ""},
		{"bq table create", "POST", "/bigquery/v2/projects/p/datasets/d/tables", `{"tableReference":{"projectId":"p","datasetId":"d","tableId":"b2"},"schema":{"fields":[{"name":"a","type":"INTEGER","mode":"NULLABLE"}]}}`, 200, "", ""},
		// bq's create_table (clients/client_table.py) sends
		// table_constraints under its proto name; Google's frontend
		// accepts proto names as well as JSON names, at every level.
		{"bq table_constraints", "POST", "/bigquery/v2/projects/p/datasets/d/tables", `{"tableReference":{"projectId":"p","datasetId":"d","tableId":"b3"},"table_constraints":{"primary_key":{"columns":["a"]}},"schema":{"fields":[{"name":"a","type":"INTEGER"}]}}`, 200, "", ""},
		{"proto names read", "POST", "/projects/p/datasets/d/tables", `{"table_reference":{"table_id":"b4"},"friendly_name":"fn"}`, 200, "", ""},
		{"proto and json name", "POST", "/projects/p/datasets/d/tables", `{"tableReference":{"tableId":"x7"},"friendly_name":"a","friendlyName":"b"}`, 400, "badRequest", `"friendly_name"`},
		// bq update --description: client_table.update_table always sends
		// "schema": null when no schema is given; it leaves the schema.
		{"bq table update", "PATCH", "/bigquery/v2/projects/p/datasets/d/tables/b2", `{"tableReference":{"projectId":"p","datasetId":"d","tableId":"b2"},"schema":null,"description":"from bq"}`, 200, "", ""},
		// Parameters repeated at the top of the body, equal to the path.
		{"dataset patch params", "PATCH", "/projects/p/datasets/d", `{"projectId":"p","datasetId":"d","description":"y"}`, 200, "", ""},
		{"dataset update params", "PUT", "/projects/p/datasets/d", `{"projectId":"p","datasetId":"d","datasetReference":{"projectId":"p","datasetId":"d"}}`, 200, "", ""},
		{"table insert params", "POST", "/projects/p/datasets/d/tables", `{"projectId":"p","datasetId":"d","tableReference":{"tableId":"n4"}}`, 200, "", ""},
		{"table patch params", "PATCH", "/projects/p/datasets/d/tables/t", `{"projectId":"p","datasetId":"d","tableId":"t","description":"z"}`, 200, "", ""},
		{"table update params", "PUT", "/projects/p/datasets/d/tables/t", `{"projectId":"p","datasetId":"d","tableId":"t","tableReference":{"projectId":"p","datasetId":"d","tableId":"t"}}`, 200, "", ""},
		{"null param", "PATCH", "/projects/p/datasets/d/tables/t", `{"tableId":null}`, 200, "", ""},
		// Parameters that disagree with the path.
		{"dataset insert project", "POST", "/projects/p/datasets", `{"projectId":"q","datasetReference":{"datasetId":"x1"}}`, 400, "invalid", "Value q " + disagree + " value p. This can happen when a value set through a parameter is inconsistent with a value set in the request."},
		{"dataset patch dataset", "PATCH", "/projects/p/datasets/d", `{"datasetId":"e"}`, 400, "invalid", "Value e " + disagree + " value d. This can happen when a value set through a parameter is inconsistent with a value set in the request."},
		{"table insert dataset", "POST", "/projects/p/datasets/d/tables", `{"datasetId":"e","tableReference":{"tableId":"x2"}}`, 400, "invalid", "Value e " + disagree + " value d. This can happen when a value set through a parameter is inconsistent with a value set in the request."},
		{"table patch table", "PATCH", "/projects/p/datasets/d/tables/t", `{"tableId":"u"}`, 400, "invalid", "Value u " + disagree + " value t. This can happen when a value set through a parameter is inconsistent with a value set in the request."},
		{"table update project", "PUT", "/projects/p/datasets/d/tables/t", `{"projectId":"q"}`, 400, "invalid", "Value q " + disagree + " value p. This can happen when a value set through a parameter is inconsistent with a value set in the request."},
		{"param wrong type", "PATCH", "/projects/p/datasets/d/tables/t", `{"tableId":5}`, 400, "badRequest", "Invalid value at 'table_id' (TYPE_STRING)"},
		// References that disagree with the path.
		{"dataset ref project", "POST", "/projects/p/datasets", `{"datasetReference":{"projectId":"q","datasetId":"x3"}}`, 400, "invalid", "does not match"},
		{"dataset ref dataset", "PATCH", "/projects/p/datasets/d", `{"datasetReference":{"datasetId":"e"}}`, 400, "invalid", "does not match"},
		{"table ref dataset", "POST", "/projects/p/datasets/d/tables", `{"tableReference":{"datasetId":"e","tableId":"x4"}}`, 400, "invalid", "does not match"},
		{"table ref table", "PATCH", "/projects/p/datasets/d/tables/t", `{"tableReference":{"tableId":"u"}}`, 400, "invalid", "does not match"},
		// Names that are no parameter of the method stay unknown.
		{"dataset insert datasetId", "POST", "/projects/p/datasets", `{"datasetId":"x5","datasetReference":{"datasetId":"x5"}}`, 400, "badRequest", `Unknown name "datasetId" at 'dataset'`},
		{"table insert tableId", "POST", "/projects/p/datasets/d/tables", `{"tableId":"x6","tableReference":{"tableId":"x6"}}`, 400, "badRequest", `Unknown name "tableId" at 'table'`},
		{"dataset tableId", "PATCH", "/projects/p/datasets/d", `{"tableId":"t"}`, 400, "badRequest", `Unknown name "tableId" at 'dataset'`},
		{"nested projectId", "PATCH", "/projects/p/datasets/d/tables/t", `{"schema":{"projectId":"p","fields":[]}}`, 400, "badRequest", `Unknown name "projectId" at 'table.schema'`},
	} {
		t.Run("case="+tc.name, func(t *testing.T) {
			code, b := do(t, base, tc.method, tc.path, tc.body)
			if code != tc.code {
				t.Fatalf("code %d, want %d: %s", code, tc.code, b)
			}
			if tc.code == 200 {
				return
			}
			var we wireErr
			if err := json.Unmarshal(b, &we); err != nil {
				t.Fatalf("error body is not JSON: %s", b)
			}
			if len(we.Error.Errors) != 1 || we.Error.Errors[0].Reason != tc.reason {
				t.Fatalf("reason: %s, want %s", b, tc.reason)
			}
			if !strings.Contains(we.Error.Message, tc.msg) {
				t.Fatalf("message %q does not contain %q", we.Error.Message, tc.msg)
			}
		})
	}
	for _, d := range []string{"n1", "n2", "b1"} {
		if _, err := e.cat.Dataset("p", d); err != nil {
			t.Errorf("dataset %s: %v", d, err)
		}
	}
	if tb, err := e.cat.Table("p", "d", "b4"); err != nil || tb.FriendlyName != "fn" {
		t.Errorf("table b4 (proto member names): %v %+v", err, tb)
	}
	if tb, err := e.cat.Table("p", "d", "b2"); err != nil || tb.Description != "from bq" || len(tb.Schema().Fields) != 1 {
		t.Errorf("table b2 after bq update: %v %+v", err, tb)
	}
	for _, tn := range []string{"n3", "b2", "n4", "b3"} {
		if _, err := e.cat.Table("p", "d", tn); err != nil {
			t.Errorf("table %s: %v", tn, err)
		}
	}
	if l := e.cat.ListDatasets("p"); len(l) != 4 {
		t.Errorf("%d datasets, want 4", len(l))
	}
}
