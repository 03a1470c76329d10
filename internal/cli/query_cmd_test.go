package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/bqstore/bqstore/internal/cli"
)

// TestQueryGolden runs bqstore query against a server holding 12 rows of
// local:d.t. Each line of a case's input is one argument (the SQL is one
// line); $HTTP is the server's address. Regenerate with: go test ./internal/cli -run TestQueryGolden -rewrite
func TestQueryGolden(t *testing.T) {
	srv := readServer(t, 12)
	datadriven.RunTest(t, "testdata/query", func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd != "bqstore" {
			t.Fatalf("unknown directive %s", d.Cmd)
		}
		out, errs, code := runCLI(t, srv, strings.Split(strings.TrimSpace(d.Input), "\n")...)
		if errs != "" {
			out += "stderr: " + errs
		}
		if code != 0 {
			out += "exit " + strconv.Itoa(code) + "\n"
		}
		return strings.ReplaceAll(out, srv.HTTPAddr(), "$HTTP")
	})
}

// TestQueryDryRunAndRequest checks, against a fake REST server, what
// query sends (dryRun, the parameters in the JSON bq sends for the same
// --parameter flags) and how it prints a dry run's answer.
func TestQueryDryRunAndRequest(t *testing.T) {
	var got map[string]any
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/bigquery/v2/projects/local/queries" {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
			return
		}
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
			t.Error(err)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"bigquery#queryResponse","jobComplete":true,"totalBytesProcessed":"1234",`+
			`"schema":{"fields":[{"name":"a","type":"INTEGER"}]},"jobReference":{"projectId":"local","location":"US"}}`)
	}))
	defer fake.Close()
	var out, errb bytes.Buffer
	env := &cli.Env{Stdout: &out, Stderr: &errb, Stdin: strings.NewReader(""), LookupEnv: func(string) (string, bool) { return "", false }}
	code := cli.MainEnv(context.Background(), []string{"query", "--api", fake.URL, "--dry_run",
		"--parameter=a:ARRAY<INT64>:[1,9007199254740993]", "--parameter=s:STRUCT<x INT64, y STRING>:{\"x\": 1, \"y\": null}",
		"--parameter=n::NULL", "SELECT", "@n"}, env)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if want := "Query successfully validated. Assuming the tables are not modified, running this query will process 1234 bytes of data.\n"; out.String() != want {
		t.Fatalf("output %q, want %q", out.String(), want)
	}
	b, _ := json.Marshal(got["queryParameters"])
	const wantParams = `[{"name":"a","parameterType":{"arrayType":{"type":"INT64"},"type":"ARRAY"},"parameterValue":{"arrayValues":[{"value":"1"},{"value":"9007199254740993"}]}},` +
		`{"name":"s","parameterType":{"structTypes":[{"name":"x","type":{"type":"INT64"}},{"name":"y","type":{"type":"STRING"}}],"type":"STRUCT"},"parameterValue":{"structValues":{"x":{"value":"1"},"y":{"value":null}}}},` +
		`{"name":"n","parameterType":{"type":"STRING"},"parameterValue":{"value":null}}]`
	if string(b) != wantParams {
		t.Fatalf("queryParameters\n%s\nwant\n%s", b, wantParams)
	}
	if got["dryRun"] != true || got["useLegacySql"] != false || got["query"] != "SELECT @n" {
		t.Fatalf("request %v", got)
	}
}

// TestQueryTimeoutMessage: --timeout ending the wait for a job that is
// not done says so and names the job; it said "cannot reach bqstore ...
// (is bqstore serve running?)", sending the user after a server that was
// up and running the job.
func TestQueryTimeoutMessage(t *testing.T) {
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"kind":"bigquery#queryResponse","jobComplete":false,"jobReference":{"projectId":"local","jobId":"job_slow","location":"US"}}`)
			return
		}
		<-r.Context().Done() // getQueryResults: the job never ends
	}))
	defer fake.Close()
	var out, errb bytes.Buffer
	env := &cli.Env{Stdout: &out, Stderr: &errb, Stdin: strings.NewReader(""), LookupEnv: func(string) (string, bool) { return "", false }}
	code := cli.MainEnv(context.Background(), []string{"query", "--api", fake.URL, "--timeout", "50ms", "SELECT 1"}, env)
	if code == 0 || !strings.Contains(errb.String(), "job_slow") || !strings.Contains(errb.String(), "--timeout") || strings.Contains(errb.String(), "cannot reach") {
		t.Fatalf("exit %d, stderr %q: want a failure naming the job and --timeout", code, errb.String())
	}
}
