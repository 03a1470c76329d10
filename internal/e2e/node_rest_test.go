package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"reflect"
	"testing"
)

// TestNodeREST runs Google's official Node.js BigQuery REST client
// (@google-cloud/bigquery, test/node/rest.js) against the server: datasets
// create (which sends the projectId inside the dataset body), get, list,
// delete; tables create, get, setMetadata, list, delete; table.insert
// (tabledata.insertAll) with good rows, a bad row, insertId
// de-duplication and skipInvalidRows; getRows through every page.
//
// Like TestNodePendingWriter it needs node and test/node/node_modules and
// skips without them unless BQSTORE_REQUIRE_NODE=1 (CI sets it).
func TestNodeREST(t *testing.T) {
	node, dir := requireNode(t, "bigquery")
	e := newEnv(t)
	cmd := exec.CommandContext(e.ctx, node, "rest.js")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BQSTORE_HTTP_ADDR="+e.srv.HTTPAddr(), "BQSTORE_PROJECT="+project)
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("node rest.js: %v\n%s\n%s", err, out, stderr)
	}
	var res struct {
		DatasetID          string   `json:"datasetId"`
		DatasetDescription string   `json:"datasetDescription"`
		Datasets           []string `json:"datasets"`
		TableID            string   `json:"tableId"`
		Schema             []string `json:"schema"`
		TableDescription   string   `json:"tableDescription"`
		Tables             []string `json:"tables"`
		RowsBefore         *int     `json:"rowsBefore"`
		BadInsert          string   `json:"badInsert"`
		BadReasons         []string `json:"badReasons"`
		BadMessage         string   `json:"badMessage"`
		SkipReasons        []string `json:"skipReasons"`
		Rows               []int    `json:"rows"`
		Pages              int      `json:"pages"`
		DatasetsAfter      *int     `json:"datasetsAfter"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("node output %q: %v", out, err)
	}
	if res.DatasetID != "node_ds" || res.DatasetDescription != "two" || res.TableID != "t" ||
		!reflect.DeepEqual(res.Schema, []string{"id:INTEGER", "name:STRING"}) ||
		res.TableDescription != "patched by node" || !reflect.DeepEqual(res.Tables, []string{"t"}) ||
		res.RowsBefore == nil || *res.RowsBefore != 0 || res.DatasetsAfter == nil {
		t.Fatalf("node results: %s", out)
	}
	// table.insert: good rows, a bad row (PartialFailureError, the good
	// row stopped), insertId de-duplication, skipInvalidRows; getRows
	// pages through all of them, 2 rows a page.
	if res.BadInsert != "PartialFailureError" || !reflect.DeepEqual(res.BadReasons, []string{"stopped", "invalid"}) ||
		res.BadMessage != "Cannot convert value to integer (bad value): eleven" ||
		!reflect.DeepEqual(res.SkipReasons, []string{"invalid"}) ||
		!reflect.DeepEqual(res.Rows, []int{1, 2, 3, 4, 5}) || res.Pages != 3 {
		t.Fatalf("node insert results: %s", out)
	}
	if !contains(res.Datasets, "node_ds") || !contains(res.Datasets, "node_ds2") || *res.DatasetsAfter != len(res.Datasets)-2 {
		t.Fatalf("node dataset lists: %s", out)
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
