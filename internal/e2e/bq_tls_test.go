package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bqstore/bqstore/internal/server"
	"github.com/bqstore/bqstore/internal/testkit"
	"github.com/bqstore/bqstore/internal/testkit/testcert"
)

// TestBQCLITLSToken follows the README's bq recipe for a server started
// with --tls-cert/--tls-key and --auth-tokens: `--api https://HOST:PORT`,
// the CA through bq's --ca_certificates_file, the token through
// CLOUDSDK_AUTH_ACCESS_TOKEN_FILE. bq reads the discovery document over
// TLS and then makes, fills and reads a table; a wrong token is refused
// (401) and another project denied (403, "Access Denied").
//
// Like TestBQCLI it needs bq (google-cloud-cli) and skips without it
// unless BQSTORE_REQUIRE_BQ=1.
func TestBQCLITLSToken(t *testing.T) {
	bqPath, err := exec.LookPath("bq")
	if err != nil {
		if os.Getenv("BQSTORE_REQUIRE_BQ") == "1" {
			t.Fatalf("bq not found (%v) but BQSTORE_REQUIRE_BQ=1", err)
		}
		t.Skip("bq (Google's BigQuery CLI, package google-cloud-cli) is not installed; skipping the bq CLI test")
	}
	dir := t.TempDir()
	certFile, keyFile, _ := testcert.Write(t, dir)
	for name, content := range map[string]string{
		"tokens":    "bq-secret bq@example.com " + project + "\n",
		"token":     "bq-secret\n",
		"wrong":     "not-a-token\n",
		"rows.json": "{\"id\": 1, \"name\": \"one\"}\n{\"id\": 2, \"name\": \"two\"}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	srv := testkit.Start(t, func(c *server.Config) {
		c.TLSCertFile, c.TLSKeyFile, c.AuthTokensFile = certFile, keyFile, filepath.Join(dir, "tokens")
	})
	api := "https://" + srv.HTTPAddr()

	// run runs one bq process (several commands in `bq shell` when stdin
	// is given) with the token in tokenFile.
	run := func(tokenFile, proj, stdin string, args ...string) (string, int) {
		t.Helper()
		cmd, cancel := bqCommand(bqPath, append([]string{"--api", api, "--ca_certificates_file", certFile, "--project_id", proj}, args...)...)
		defer cancel()
		cmd.Dir = dir
		cmd.Env = append(os.Environ(),
			"HOME="+home,
			"CLOUDSDK_CONFIG="+filepath.Join(dir, "gcloud"),
			"CLOUDSDK_AUTH_ACCESS_TOKEN_FILE="+filepath.Join(dir, tokenFile),
			"CLOUDSDK_CORE_DISABLE_PROMPTS=1",
			"CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK=1",
		)
		cmd.Stdin = strings.NewReader(stdin)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return out.String(), ee.ExitCode()
		} else if err != nil {
			t.Fatalf("bq %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
		return out.String(), 0
	}

	out, code := run("token", project, strings.Join([]string{
		"mk -d tlsds",
		"mk -t tlsds.t id:INTEGER,name:STRING",
		"insert tlsds.t rows.json",
		"head -n 5 tlsds.t",
	}, "\n")+"\n", "shell")
	if code != 0 || strings.Contains(out, "BigQuery error") {
		t.Fatalf("bq over TLS with a token: exit %d\n%s", code, out)
	}
	for _, want := range []string{"Dataset '" + project + ":tlsds' successfully created", "Table '" + project + ":tlsds.t' successfully created", "| one ", "| two "} {
		if !strings.Contains(out, want) {
			t.Errorf("bq output lacks %q:\n%s", want, out)
		}
	}

	// A 401 makes bq's auth library try to refresh the token, which a
	// bare access token cannot: bq reports an "Authorization error", as
	// it does against BigQuery.
	out, code = run("wrong", project, "", "ls", "tlsds")
	if code == 0 || !strings.Contains(out, "Authorization error") {
		t.Errorf("bq with a wrong token: exit %d, want an Authorization error:\n%s", code, out)
	}
	out, code = run("token", "other", "", "ls", "-d")
	if code == 0 || !strings.Contains(out, "Access Denied: Project other") {
		t.Errorf("bq on another project: exit %d, want Access Denied:\n%s", code, out)
	}
}
