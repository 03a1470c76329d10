package rest_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestValidateAtRESTTime: values that would make every later append fail,
// a 500 on every read, or an overflow are refused with 400 when the
// dataset or table is created or patched (issue 12, finding 13 and Low).
func TestValidateAtRESTTime(t *testing.T) {
	e := newEnv(t)
	base := e.srv.URL
	if code, b := do(t, base, "POST", "/projects/p/datasets", `{"datasetReference":{"datasetId":"d"}}`); code != 200 {
		t.Fatalf("create dataset: %d %s", code, b)
	}
	if code, b := do(t, base, "POST", "/projects/p/datasets/d/tables", `{"tableReference":{"tableId":"ok"},"schema":{"fields":[{"name":"a","type":"STRING"}]}}`); code != 200 {
		t.Fatalf("create table: %d %s", code, b)
	}
	for _, tc := range []struct {
		name, method, path, body, msg string
	}{
		{"default does not parse", "POST", "/projects/p/datasets/d/tables", `{"tableReference":{"tableId":"x"},"schema":{"fields":[{"name":"a","type":"TIMESTAMP","defaultValueExpression":"CURRENT_TIMESTAMP("}]}}`, "defaultValueExpression"},
		{"default wrong type", "POST", "/projects/p/datasets/d/tables", `{"tableReference":{"tableId":"x"},"schema":{"fields":[{"name":"a","type":"INTEGER","defaultValueExpression":"'abc'"}]}}`, "defaultValueExpression"},
		{"nested default", "POST", "/projects/p/datasets/d/tables", `{"tableReference":{"tableId":"x"},"schema":{"fields":[{"name":"r","type":"RECORD","fields":[{"name":"a","type":"INTEGER","defaultValueExpression":"1 +"}]}]}}`, "fields[0].fields[0].defaultValueExpression"},
		{"patch default", "PATCH", "/projects/p/datasets/d/tables/ok", `{"schema":{"fields":[{"name":"a","type":"STRING"},{"name":"b","type":"DATE","defaultValueExpression":"NOT_A_FUNCTION()"}]}}`, "defaultValueExpression"},
		{"expiration past 9999", "POST", "/projects/p/datasets/d/tables", `{"tableReference":{"tableId":"x"},"expirationTime":"253402300800000"}`, "expirationTime"},
		{"expiration max int64", "PATCH", "/projects/p/datasets/d/tables/ok", `{"expirationTime":"9223372036854775807"}`, "expirationTime"},
		{"huge default expiration", "POST", "/projects/p/datasets", `{"datasetReference":{"datasetId":"z"},"defaultTableExpirationMs":"9223372036854775807"}`, "defaultTableExpirationMs"},
		{"huge default expiration patch", "PATCH", "/projects/p/datasets/d", `{"defaultTableExpirationMs":"9300000000000"}`, "defaultTableExpirationMs"},
	} {
		t.Run("case="+strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			code, b := do(t, base, tc.method, tc.path, tc.body)
			if code != 400 {
				t.Fatalf("code %d, want 400: %s", code, b)
			}
			var we wireErr
			if err := json.Unmarshal(b, &we); err != nil || len(we.Error.Errors) != 1 || we.Error.Errors[0].Reason != "invalid" {
				t.Fatalf("error shape: %s", b)
			}
			if !strings.Contains(we.Error.Message, tc.msg) {
				t.Fatalf("message %q does not contain %q", we.Error.Message, tc.msg)
			}
		})
	}
	// Valid defaults and the latest expiration still pass.
	if code, b := do(t, base, "POST", "/projects/p/datasets/d/tables", `{"tableReference":{"tableId":"good"},"expirationTime":"253402300799999","schema":{"fields":[{"name":"a","type":"TIMESTAMP","defaultValueExpression":"CURRENT_TIMESTAMP()"},{"name":"b","type":"INTEGER","defaultValueExpression":"7"}]}}`); code != 200 {
		t.Fatalf("valid defaults: %d %s", code, b)
	}
	if code, b := do(t, base, "GET", "/projects/p/datasets/d/tables/good", ``); code != 200 {
		t.Fatalf("get table expiring in 9999: %d %s", code, b)
	}
	// The dataset default applies without overflow.
	if code, b := do(t, base, "PATCH", "/projects/p/datasets/d", `{"defaultTableExpirationMs":"3600000"}`); code != 200 {
		t.Fatalf("patch dataset: %d %s", code, b)
	}
}

// TestIfMatchStrict: If-Match compares strongly: a weak etag and an empty
// one match nothing (412), they are not "no condition" (issue 12, Low).
func TestIfMatchStrict(t *testing.T) {
	e := newEnv(t)
	base := e.srv.URL
	if code, b := do(t, base, "POST", "/projects/p/datasets", `{"datasetReference":{"datasetId":"d"}}`); code != 200 {
		t.Fatalf("create dataset: %d %s", code, b)
	}
	code, b := do(t, base, "POST", "/projects/p/datasets/d/tables", `{"tableReference":{"tableId":"t"}}`)
	if code != 200 {
		t.Fatalf("create table: %d %s", code, b)
	}
	var tb struct{ Etag string }
	if err := json.Unmarshal(b, &tb); err != nil || tb.Etag == "" {
		t.Fatalf("no etag: %s", b)
	}
	for _, im := range []string{`""`, `W/"` + tb.Etag + `"`, ` `} {
		code, b := do(t, base, "PATCH", "/projects/p/datasets/d/tables/t", `{"description":"x"}`, "If-Match", im)
		if code != 412 {
			t.Errorf("If-Match %q: %d %s, want 412", im, code, b)
		}
		code, b = do(t, base, "PATCH", "/projects/p/datasets/d", `{"description":"x"}`, "If-Match", im)
		if code != 412 {
			t.Errorf("dataset If-Match %q: %d %s, want 412", im, code, b)
		}
	}
	for _, quote := range []string{"", `"`} {
		im := quote + tb.Etag + quote
		code, b := do(t, base, "PATCH", "/projects/p/datasets/d/tables/t", `{"friendlyName":"f"}`, "If-Match", im)
		if code != 200 {
			t.Fatalf("If-Match %q: %d %s, want 200", im, code, b)
		}
		if err := json.Unmarshal(b, &tb); err != nil {
			t.Fatal(err)
		}
	}
	if code, b := do(t, base, "PATCH", "/projects/p/datasets/d/tables/t", `{"friendlyName":"g"}`, "If-Match", "*"); code != 200 {
		t.Fatalf("If-Match *: %d %s", code, b)
	}
}
