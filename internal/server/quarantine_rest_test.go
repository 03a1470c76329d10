package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bqstore/bqstore/internal/testkit"
)

// TestQuarantinedTableREST: tabledata.list of a quarantined table answers
// a BigQuery-shaped error that says the table is unavailable and names the
// damaged file, not 500 "internal error"; tables.get does not claim the
// table holds 0 rows (issue 11, finding 10).
func TestQuarantinedTableREST(t *testing.T) {
	dir := t.TempDir()
	createTables(t, dir, "q")
	dirs := tableDirs(t, dir)
	if len(dirs) != 1 {
		t.Fatalf("%d table dirs", len(dirs))
	}
	log := filepath.Join(dirs[0], "L-000001.log")
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(log, data, 0o644); err != nil {
		t.Fatal(err)
	}
	srv := testkit.StartDir(t, dir)
	base := "http://" + srv.HTTPAddr() + "/bigquery/v2/projects/local/datasets/d/tables/q"

	get := func(url string) (int, map[string]any) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v: %s", url, err, b)
		}
		return resp.StatusCode, m
	}

	code, body := get(base + "/data")
	e, _ := body["error"].(map[string]any)
	if e == nil {
		t.Fatalf("tabledata.list: %d %v, want an error", code, body)
	}
	msg, _ := e["message"].(string)
	var reason string
	if errs, _ := e["errors"].([]any); len(errs) == 1 {
		reason, _ = errs[0].(map[string]any)["reason"].(string)
	}
	if code != http.StatusBadRequest || reason != "tableUnavailable" || e["status"] != "FAILED_PRECONDITION" {
		t.Errorf("tabledata.list: %d %q %v, want 400 tableUnavailable FAILED_PRECONDITION", code, reason, e["status"])
	}
	if !strings.Contains(msg, "quarantined") || !strings.Contains(msg, "L-000001.log") {
		t.Errorf("tabledata.list message %q does not say the table is quarantined and name the file", msg)
	}

	code, body = get(base)
	if code != http.StatusOK {
		t.Fatalf("tables.get: %d %v", code, body)
	}
	if n, ok := body["numRows"]; ok {
		t.Errorf("tables.get of a quarantined table: numRows %v, want it absent (unknown)", n)
	}
	if n, ok := body["numBytes"]; ok {
		t.Errorf("tables.get of a quarantined table: numBytes %v, want it absent (unknown)", n)
	}
}
