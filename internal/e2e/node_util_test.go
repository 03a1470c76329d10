package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// requireNode finds node and test/node's installed @google-cloud/<module>
// for the Node.js client tests, and returns node's path and test/node's
// directory. Without them the test skips, unless BQSTORE_REQUIRE_NODE=1
// (CI sets it after npm ci), where it fails.
func requireNode(t *testing.T, module string) (node, dir string) {
	t.Helper()
	dir, err := filepath.Abs("../../test/node")
	if err != nil {
		t.Fatal(err)
	}
	node, err = exec.LookPath("node")
	_, modErr := os.Stat(filepath.Join(dir, "node_modules", "@google-cloud", module))
	if err != nil || modErr != nil {
		if os.Getenv("BQSTORE_REQUIRE_NODE") == "1" {
			t.Fatalf("node or test/node/node_modules missing (node: %v, modules: %v); run npm ci --prefix test/node", err, modErr)
		}
		t.Skip("node or test/node/node_modules missing; run npm ci --prefix test/node (CI requires it)")
	}
	return node, dir
}
