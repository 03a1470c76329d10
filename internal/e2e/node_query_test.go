package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"reflect"
	"testing"

	"cloud.google.com/go/bigquery/storage/managedwriter"
)

// TestNodeQuery runs Google's official Node.js BigQuery client
// (test/node/query.js) against rows written through the Storage Write
// API: bigquery.query() with named, positional (an ARRAY among them) and
// typed parameters, createQueryJob() + job.getQueryResults() (all rows,
// then one page), DDL and INSERT statistics as jobs.get gives them
// (statementType, ddlOperationPerformed, ddlTargetTable,
// numDmlAffectedRows), and an undeclared parameter's error.
//
// Like TestNodeREST it needs node and test/node/node_modules and skips
// without them unless BQSTORE_REQUIRE_NODE=1 (CI sets it).
func TestNodeQuery(t *testing.T) {
	node, dir := requireNode(t, "bigquery")
	e := newEnv(t)
	tp := e.table("t_node_q", simpleSchema)
	dp, md := descriptor(t, simpleSchema)
	ms, err := e.mw.NewManagedStream(e.ctx, managedwriter.WithDestinationTable(tp), managedwriter.WithSchemaDescriptor(dp))
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	e.appendSimple(tp, md, ms, 1, 15) // ids 1..15, name "row", score id/2

	cmd := exec.CommandContext(e.ctx, node, "query.js")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BQSTORE_HTTP_ADDR="+e.srv.HTTPAddr(), "BQSTORE_PROJECT="+project, "BQSTORE_TABLE=d.t_node_q")
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("node query.js: %v\n%s\n%s", err, out, stderr)
	}
	var res struct {
		Named            [][]any    `json:"named"`
		Positional       []any      `json:"positional"`
		Typed            []any      `json:"typed"`
		JobID            string     `json:"jobId"`
		JobRows          []int      `json:"jobRows"`
		FirstPage        []int      `json:"firstPage"`
		HasNext          bool       `json:"hasNext"`
		DDL              [][]string `json:"ddl"`
		Undeclared       string     `json:"undeclared"`
		UndeclaredReason string     `json:"undeclaredReason"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("node output %q: %v", out, err)
	}
	// id >= 8 AND score > 3.5: ids 8..15 (score 4..7.5).
	if len(res.Named) != 8 || !reflect.DeepEqual(res.Named[0], []any{8.0, "row", 4.0}) || !reflect.DeepEqual(res.Named[7], []any{15.0, "row", 7.5}) {
		t.Errorf("named parameters: %v", res.Named)
	}
	if !reflect.DeepEqual(res.Positional, []any{3.0, 10.0}) {
		t.Errorf("positional parameters: COUNT, SUM = %v, want [3 10]", res.Positional)
	}
	// 2024-01-02T03:04:05Z is 1704164645 s.
	if !reflect.DeepEqual(res.Typed, []any{1704164645.0, "2024-02-29", "2.5", true}) {
		t.Errorf("typed parameters: %v", res.Typed)
	}
	if res.JobID == "" || !reflect.DeepEqual(res.JobRows, []int{11, 12, 13, 14, 15}) {
		t.Errorf("createQueryJob + getQueryResults: job %q rows %v, want 11..15", res.JobID, res.JobRows)
	}
	if !reflect.DeepEqual(res.FirstPage, []int{11, 12, 13}) || !res.HasNext {
		t.Errorf("getQueryResults maxResults 3: %v (next %v), want [11 12 13] and a next page", res.FirstPage, res.HasNext)
	}
	wantDDL := [][]string{
		{"CREATE_TABLE", "CREATE", "t_node_ddl", ""},
		{"INSERT", "", "", "2"},
		{"CREATE_TABLE_AS_SELECT", "REPLACE", "t_node_ddl", ""},
		{"DROP_TABLE", "DROP", "t_node_ddl", ""},
	}
	if !reflect.DeepEqual(res.DDL, wantDDL) {
		t.Errorf("DDL statistics (statementType, ddlOperationPerformed, ddlTargetTable, numDmlAffectedRows): %q, want %q", res.DDL, wantDDL)
	}
	if res.Undeclared != "Query parameter 'nope' not found at [1:8]" || res.UndeclaredReason != "invalidQuery" {
		t.Errorf("undeclared parameter: %q (%q)", res.Undeclared, res.UndeclaredReason)
	}
}
