package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"net/http"
	"net/http/httptest"
	"runtime/debug"
	"strings"
	"testing"
)

// TestHelpOnEveryCommand runs -h and --help on every command and bench
// workload: each prints its usage and exits 0 (bench -h was "unknown
// workload").
func TestHelpOnEveryCommand(t *testing.T) {
	var lines [][]string
	for _, c := range commands {
		lines = append(lines, []string{c.name, "-h"}, []string{c.name, "--help"}, []string{"help", c.name})
	}
	for _, w := range []string{"write", "read", "ingest"} {
		lines = append(lines, []string{"bench", w, "-h"}, []string{"bench", w, "--help"})
	}
	for _, args := range lines {
		var out, errb bytes.Buffer
		code := MainEnv(context.Background(), args, &Env{Stdout: &out, Stderr: &errb, Stdin: strings.NewReader("")})
		if code != 0 || !strings.Contains(out.String()+errb.String(), "usage: bqstore") {
			t.Errorf("bqstore %s: exit %d, output:\n%s%s", strings.Join(args, " "), code, out.String(), errb.String())
		}
	}
}

func TestValidateEndpoint(t *testing.T) {
	for _, tc := range []struct {
		in       string
		loopback bool
		err      string
	}{
		{in: "127.0.0.1:9060", loopback: true},
		{in: "localhost:9060", loopback: true},
		{in: "[::1]:9060", loopback: true},
		{in: ":9060", loopback: true},
		{in: "bigquerystorage.googleapis.com:443"},
		{in: "10.0.0.1:9060"},
		{in: "http://127.0.0.1:9060", err: `is a URL; want HOST:PORT without a scheme, such as 127.0.0.1:9060`},
		{in: "grpc://h:1", err: `is a URL`},
		{in: "127.0.0.1", err: `want HOST:PORT`},
		{in: "127.0.0.1:http", err: `is not a number`},
		{in: "127.0.0.1:0", err: `is not a number from 1 to 65535`},
		{in: "", err: `--endpoint is empty`},
	} {
		host, err := validateEndpoint(tc.in)
		var ue *usageError
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !errors.As(err, &ue)):
			t.Errorf("%q: err = %v, want a usage error containing %q", tc.in, err, tc.err)
		case tc.err == "" && isLoopbackHost(host) != tc.loopback:
			t.Errorf("%q: loopback = %v, want %v", tc.in, !tc.loopback, tc.loopback)
		}
	}
}

// TestInsecureDefault: on for loopback, off otherwise, and the flag wins.
func TestInsecureDefault(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, true},
		{[]string{"--endpoint", "localhost:1"}, true},
		{[]string{"--endpoint", "bigquerystorage.googleapis.com:443"}, false},
		{[]string{"--endpoint", "bigquerystorage.googleapis.com:443", "--insecure"}, true},
		{[]string{"--endpoint", "127.0.0.1:9060", "--insecure=false"}, false},
	} {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		g := addGRPCFlags(&Env{LookupEnv: func(string) (string, bool) { return "", false }}, fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if got, err := g.resolve(); err != nil || got != tc.want {
			t.Errorf("%q: plaintext = %v, %v; want %v", tc.args, got, err, tc.want)
		}
	}
}

func TestVersion(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/bqstore/bqstore", Version: "v0.3.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.time", Value: "2026-11-30T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	if got, want := versionLine(bi, true), "bqstore v0.3.0 (commit 0123abcd (modified), 2026-11-30T10:00:00Z, go1.26.0)"; got != want {
		t.Errorf("versionLine = %q, want %q", got, want)
	}
	if got, want := versionLine(&debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}}, true), "bqstore (devel) (commit unknown, go1.26.0)"; got != want {
		t.Errorf("versionLine = %q, want %q", got, want)
	}
	for _, args := range [][]string{{"--version"}, {"version"}, {"-version"}} {
		var out bytes.Buffer
		if code := MainEnv(context.Background(), args, &Env{Stdout: &out, Stderr: &out}); code != 0 || !strings.HasPrefix(out.String(), "bqstore ") || !strings.Contains(out.String(), "commit ") {
			t.Errorf("bqstore %s: exit %d, %q", args[0], code, out.String())
		}
	}
}

func TestCredentialsHint(t *testing.T) {
	err := errors.New("read client: credentials: could not find default credentials. See https://cloud.google.com/docs/authentication/external/set-up-adc for more information")
	if got := credentialsHint(err, "127.0.0.1:9060").Error(); !strings.Contains(got, "use --insecure") {
		t.Errorf("loopback: %q has no --insecure hint", got)
	}
	if got := credentialsHint(err, "bigquerystorage.googleapis.com:443").Error(); strings.Contains(got, "--insecure") {
		t.Errorf("remote: %q suggests --insecure", got)
	}
}

// TestCheckEndpointTLS: a TLS port dialled in plaintext says so, and an
// untrusted certificate is an error at once (ingest does not retry it).
func TestCheckEndpointTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	err := checkEndpoint(context.Background(), addr, true)
	var ue *usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "speaks TLS: use --insecure=false") {
		t.Errorf("plaintext to a TLS port: %v", err)
	}
	err = checkEndpoint(context.Background(), addr, false)
	var unreachable *unreachableError
	if err == nil || errors.As(err, &unreachable) || !strings.Contains(err.Error(), "x509") {
		t.Errorf("an untrusted certificate: %v", err)
	}
}
