package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/bqstore/bqstore/internal/server"
	"github.com/bqstore/bqstore/internal/testkit"
	"github.com/bqstore/bqstore/internal/testkit/testcert"
)

// TestNodeTLSToken follows the README's Node.js recipe for a server
// started with --tls-cert/--tls-key and --auth-tokens (test/node/tls.js):
// the CA comes from GRPC_DEFAULT_SSL_ROOTS_FILE_PATH and
// NODE_EXTRA_CA_CERTS, the token is an OAuth access token; REST and the
// Storage Write API both work, and a wrong token or another project is
// refused with BigQuery's codes.
//
// Like TestNodePendingWriter it needs node and test/node/node_modules and
// skips without them unless BQSTORE_REQUIRE_NODE=1 (CI sets it).
func TestNodeTLSToken(t *testing.T) {
	node, dir := requireNode(t, "bigquery-storage")
	tmp := t.TempDir()
	certFile, keyFile, _ := testcert.Write(t, tmp)
	tokens := filepath.Join(tmp, "tokens")
	if err := os.WriteFile(tokens, []byte("node-secret node@example.com "+project+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := testkit.Start(t, func(c *server.Config) {
		c.TLSCertFile, c.TLSKeyFile, c.AuthTokensFile = certFile, keyFile, tokens
	})
	cmd := exec.Command(node, "tls.js")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GRPC_DEFAULT_SSL_ROOTS_FILE_PATH="+certFile,
		"NODE_EXTRA_CA_CERTS="+certFile,
		"BQSTORE_GRPC_ADDR="+srv.GRPCAddr(),
		"BQSTORE_HTTP_ADDR="+srv.HTTPAddr(),
		"BQSTORE_PROJECT="+project,
		"BQSTORE_TOKEN=node-secret",
	)
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("node tls.js: %v\n%s\n%s", err, out, stderr)
	}
	var res struct {
		Rows             []string `json:"rows"`
		RESTWrongToken   int      `json:"restWrongToken"`
		RESTOtherProject int      `json:"restOtherProject"`
		GRPCWrongToken   int      `json:"grpcWrongToken"`
		GRPCOtherProject int      `json:"grpcOtherProject"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("node output %q: %v", out, err)
	}
	if want := []string{"1:rest", "2:rest", "3:grpc", "4:grpc", "5:grpc"}; !reflect.DeepEqual(res.Rows, want) {
		t.Errorf("rows = %v, want %v", res.Rows, want)
	}
	if res.RESTWrongToken != 401 || res.RESTOtherProject != 403 {
		t.Errorf("REST: wrong token %d, other project %d; want 401, 403", res.RESTWrongToken, res.RESTOtherProject)
	}
	if res.GRPCWrongToken != 16 || res.GRPCOtherProject != 7 { // UNAUTHENTICATED, PERMISSION_DENIED
		t.Errorf("gRPC: wrong token code %d, other project code %d; want 16, 7", res.GRPCWrongToken, res.GRPCOtherProject)
	}
}
