package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"reflect"
	"testing"
	"time"

	"cloud.google.com/go/bigquery/storage/managedwriter"

	"github.com/bqstore/bqstore/internal/testkit"
)

// TestNodeJobs runs Google's official Node.js BigQuery client
// (test/node/jobs.js) through queries and jobs past TestNodeQuery:
// parameters of every type the client infers or is told, result values of
// each type, getQueryResults page by page with pageToken, dryRun,
// job.cancel, job.getMetadata, getJobs, a repeated job id, errors'
// codes and reasons, and a view redefined with setMetadata. Each named
// result of the script is compared with the value BigQuery gives.
//
// Like TestNodeQuery it needs node and test/node/node_modules and skips
// without them unless BQSTORE_REQUIRE_NODE=1 (CI sets it).
func TestNodeJobs(t *testing.T) {
	node, dir := requireNode(t, "bigquery")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	e := dial(t, ctx, testkit.Start(t))
	tp := e.table("t_node_j", simpleSchema)
	dp, md := descriptor(t, simpleSchema)
	ms, err := e.mw.NewManagedStream(e.ctx, managedwriter.WithDestinationTable(tp), managedwriter.WithSchemaDescriptor(dp))
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	e.appendSimple(tp, md, ms, 1, 15) // ids 1..15, name "row", score id/2

	cmd := exec.CommandContext(e.ctx, node, "jobs.js")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BQSTORE_HTTP_ADDR="+e.srv.HTTPAddr(), "BQSTORE_PROJECT="+project, "BQSTORE_TABLE=d.t_node_j")
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("node jobs.js: %v\n%s\n%s", err, out, stderr)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node output %q: %v", out, err)
	}
	want := map[string]string{
		// @s.n, @s.arr[OFFSET(1)], @s.d, SUM over the ARRAY of STRUCT,
		// NUMERIC 1.25 * 2, 2^53 + 1 + 1 exactly, the GEOGRAPHY.
		"inferred": `["a", "20", "2024-02-29", "7", "2.5", "9007199254740994", "POINT(1 2)"]`,
		// 2024-01-02T03:04:05.123456Z is 1704164645123456 µs; BIGNUMERIC
		// keeps 38 digits of scale.
		"typed": `["616263", 1704164645123456, "2024-01-01T10:11:12", "10:11:12.500000",
			"1.12345678901234567890123456789012345678", "x", 0, true]`,
		"values": `[{"a": 1, "b": ["x", "y"]}, [{"x": 1}, {"x": 2}], "6162", "1.5", "2024-01-01T00:00:00.250Z",
			"2024-01-01", "2024-01-01T01:02:03", "01:02:03", "{\"a\":1}", null, true]`,
		// ids 6..15 in pages of 4.
		"pages":     `[[6, 7, 8, 9], [10, 11, 12, 13], [14, 15]]`,
		"totalRows": `"10"`,
		"metadata":  `["node-jobs-1", "US", "DONE", {"team": "data"}, false, "SELECT", ["t_node_j"]]`,
		"duplicate": `[409, "duplicate"]`,
		"listed":    `true`,
		// 15 ids and 15 scores, 8 bytes each.
		"dryRun":           `["DONE", "240", "SELECT", ["id", "score"]]`,
		"cancelled":        `["DONE", "stopped"]`,
		"cancelledResults": `[400, "stopped"]`,
		"badQuery":         `[400, "invalidQuery"]`,
		"legacy":           `[400, "invalid"]`,
		// ids 13..15 through the redefined view, its two columns.
		"view": `[["id", "name"], 3]`,
	}
	for name, w := range want {
		var wv any
		if err := json.Unmarshal([]byte(w), &wv); err != nil {
			t.Fatalf("want %s: %v", name, err)
		}
		if gv, ok := got[name]; !ok || !reflect.DeepEqual(gv, wv) {
			gj, _ := json.Marshal(gv)
			t.Errorf("%s: got %s, want %s", name, gj, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("the script gave %d results, the test checks %d", len(got), len(want))
	}
}
