package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// TestNodePendingWriter runs Google's official Node.js Storage Write client
// (test/node/pending.js) against the server: a PENDING stream written with
// explicit offsets, a retried append refused as ALREADY_EXISTS, finalize
// and batch commit; then reads the rows back through the Go read client.
//
// It needs node and test/node/node_modules (`npm ci --prefix test/node`);
// without them it skips, unless BQSTORE_REQUIRE_NODE=1 (CI sets it), in
// which case it fails.
func TestNodePendingWriter(t *testing.T) {
	node, dir := requireNode(t, "bigquery-storage")
	e := newEnv(t)
	tp := e.table("t_node", simpleSchema)
	cmd := exec.CommandContext(e.ctx, node, "pending.js")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"BQSTORE_GRPC_ADDR="+e.srv.GRPCAddr(),
		"BQSTORE_TABLE="+tp,
		"BQSTORE_ROWS=25",
		"BQSTORE_APPENDS=4",
	)
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("node pending.js: %v\n%s\n%s", err, out, stderr)
	}
	var res struct {
		Stream        string  `json:"stream"`
		Offsets       []int64 `json:"offsets"`
		DuplicateCode int     `json:"duplicateCode"`
		RowCount      int64   `json:"rowCount"`
		Committed     bool    `json:"committed"`
		StreamErrors  int     `json:"streamErrors"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("node output %q: %v", out, err)
	}
	if want := []int64{0, 25, 50, 75}; len(res.Offsets) != 4 || res.Offsets[0] != want[0] || res.Offsets[3] != want[3] {
		t.Fatalf("append offsets = %v, want %v", res.Offsets, want)
	}
	if res.DuplicateCode != 6 { // ALREADY_EXISTS
		t.Fatalf("retried append got code %d, want 6 (ALREADY_EXISTS)", res.DuplicateCode)
	}
	if res.RowCount != 100 || !res.Committed || res.StreamErrors != 0 {
		t.Fatalf("finalize/commit = %+v", res)
	}
	seen := map[int64]bool{}
	for _, rec := range e.readAll(tp, 2, nil, nil) {
		for _, id := range rec.Column(0).(*array.Int64).Int64Values() {
			if seen[id] {
				t.Fatalf("id %d read twice", id)
			}
			seen[id] = true
		}
	}
	if len(seen) != 100 {
		t.Fatalf("read %d rows, want 100", len(seen))
	}
}
