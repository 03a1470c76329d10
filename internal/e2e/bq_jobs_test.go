package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/bigquery/storage/managedwriter"

	"github.com/bqstore/bqstore/internal/testkit"
)

// bqCLI runs Google's bq CLI against e's server, one process per call,
// with a scratch gcloud config and token in a temporary directory (also
// the working directory, where files for bq go). It skips the test when bq
// is not installed, unless BQSTORE_REQUIRE_BQ=1.
type bqCLI struct {
	t        *testing.T
	ctx      context.Context
	path     string
	dir, api string
	env      []string
}

func newBQCLI(t *testing.T, e *env) *bqCLI {
	t.Helper()
	bqPath, err := exec.LookPath("bq")
	if err != nil {
		if os.Getenv("BQSTORE_REQUIRE_BQ") == "1" {
			t.Fatalf("bq not found (%v) but BQSTORE_REQUIRE_BQ=1", err)
		}
		t.Skip("bq (Google's BigQuery CLI, package google-cloud-cli) is not installed; skipping")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("bqstore-test-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	return &bqCLI{t: t, ctx: e.ctx, path: bqPath, dir: dir, api: "http://" + e.srv.HTTPAddr(), env: append(os.Environ(),
		"HOME="+home,
		"CLOUDSDK_CONFIG="+filepath.Join(dir, "gcloud"),
		"CLOUDSDK_AUTH_ACCESS_TOKEN_FILE="+filepath.Join(dir, "token"),
		"CLOUDSDK_CORE_DISABLE_PROMPTS=1",
		"CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK=1",
	)}
}

// bqProcessTimeout bounds one bq process, so a hung bq fails its test
// instead of the package. It bounds each process rather than a whole test:
// bq is a Python program that needs seconds of CPU to start, and on a loaded
// machine a test of many bq commands took longer than a whole-test bound
// while every command worked (TestBQQuery was killed after 5 minutes, in
// its 13th command, whose output was right).
const bqProcessTimeout = 3 * time.Minute

// bqCommand is exec.Command for one bq process under bqProcessTimeout; the
// caller calls the returned cancel when the process is done.
func bqCommand(path string, args ...string) (*exec.Cmd, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), bqProcessTimeout)
	return exec.CommandContext(ctx, path, args...), cancel
}

// run runs bq with args and returns its stdout, its stderr and its exit
// status.
func (b *bqCLI) run(args ...string) (string, string, int) {
	b.t.Helper()
	cmd, cancel := bqCommand(b.path, append([]string{"--api", b.api, "--project_id", project}, args...)...)
	defer cancel()
	cmd.Dir, cmd.Env = b.dir, b.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), errb.String(), ee.ExitCode()
	} else if err != nil {
		b.t.Fatalf("bq %v: %v", args, err)
	}
	return out.String(), errb.String(), 0
}

// ok runs bq and fails the test unless it exits 0; it returns stdout.
func (b *bqCLI) ok(args ...string) string {
	b.t.Helper()
	out, errs, code := b.run(args...)
	if code != 0 {
		b.t.Fatalf("bq %v: exit %d\n%s%s", args, code, out, errs)
	}
	return out
}

// fails runs bq and fails the test unless it exits non-zero with every
// one of want in its output (bq wraps lines: spaces are folded).
func (b *bqCLI) fails(args []string, want ...string) {
	b.t.Helper()
	out, errs, code := b.run(args...)
	folded := strings.Join(strings.Fields(out+errs), " ")
	if code == 0 {
		b.t.Fatalf("bq %v: exit 0, want a failure\n%s%s", args, out, errs)
	}
	for _, w := range want {
		if !strings.Contains(folded, w) {
			b.t.Fatalf("bq %v: exit %d, output lacks %q:\n%s%s", args, code, w, out, errs)
		}
	}
}

// shell runs cmds in one bq shell (bq's start-up costs about a second of
// CPU per process) and returns its output, spaces folded; the exit status
// of a shell is its last command's, so the caller checks the output.
func (b *bqCLI) shell(cmds ...string) string {
	b.t.Helper()
	cmd, cancel := bqCommand(b.path, "--api", b.api, "--project_id", project, "shell")
	defer cancel()
	cmd.Dir, cmd.Env = b.dir, b.env
	cmd.Stdin = strings.NewReader(strings.Join(cmds, "\n") + "\n")
	out, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		b.t.Fatalf("bq shell: %v", err)
	}
	if n := strings.Count(string(out), project+"> "); n != len(cmds)+1 {
		b.t.Fatalf("bq shell: %d prompts for %d commands:\n%s", n, len(cmds), out)
	}
	return strings.Join(strings.Fields(string(out)), " ")
}

// bqStarted is what bq query --nosync prints.
var bqStarted = regexp.MustCompile(`Successfully started query ` + project + `:(\S+)`)

// TestBQJobs walks the bq query and job verbs of a user's first hour past
// plain queries (TestBQQuery): --destination_table with the default
// WRITE_EMPTY, --append_table and --replace (rows and schema checked with
// the Go client); --nosync then bq wait, bq show -j and bq ls -j (the
// job's state, priority with --batch, labels); --format=csv and a STRUCT
// parameter; a view made with bq mk --view (refused, clearly, without
// --use_legacy_sql=false, bq's default being legacy SQL) and redefined
// with bq update --view; and cp, extract and load, which bqstore does not
// run yet: each must fail at once with a message saying so, not hang or
// crash bq.
func TestBQJobs(t *testing.T) {
	// bq processes are slow to start on a loaded machine: each has its
	// own bound (bqProcessTimeout), so the test's client calls get none
	// beyond the test binary's -timeout.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e := dial(t, ctx, testkit.Start(t))
	b := newBQCLI(t, e)
	tp := e.table("t_bqj", simpleSchema)
	dp, md := descriptor(t, simpleSchema)
	ms, err := e.mw.NewManagedStream(e.ctx, managedwriter.WithDestinationTable(tp), managedwriter.WithSchemaDescriptor(dp))
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	e.appendSimple(tp, md, ms, 1, 20) // ids 1..20, name "row", score id/2
	tableOf := func(name string) *bigquery.TableMetadata {
		t.Helper()
		md, err := e.bq.Dataset("d").Table(name).Metadata(e.ctx)
		if err != nil {
			t.Fatalf("tables.get d.%s: %v", name, err)
		}
		return md
	}
	q := func(args ...string) []string {
		return append([]string{"query", "--use_legacy_sql=false"}, args...)
	}

	// --destination_table: created, then WRITE_EMPTY refuses a second
	// write, --append_table adds, --replace replaces rows and schema.
	const sel = `"SELECT id FROM d.t_bqj WHERE id <= 3"`
	out := b.shell(
		"query --use_legacy_sql=false --destination_table d.dst "+sel,
		"query --use_legacy_sql=false --destination_table d.dst "+sel,
		"query --use_legacy_sql=false --destination_table d.dst --append_table "+sel)
	if !strings.Contains(out, "Already Exists: Table local:d.dst") {
		t.Fatalf("a second write to the --destination_table (WRITE_EMPTY) did not fail:\n%s", out)
	}
	if md := tableOf("dst"); md.NumRows != 6 || len(md.Schema) != 1 {
		t.Fatalf("--destination_table, then --append_table: %d rows, %d columns; want 6, 1", md.NumRows, len(md.Schema))
	}
	b.ok(q("--destination_table", "d.dst", "--replace", "SELECT id, name FROM d.t_bqj WHERE id = 20")...)
	if md := tableOf("dst"); md.NumRows != 1 || len(md.Schema) != 2 || md.Schema[1].Name != "name" {
		t.Fatalf("--replace: %d rows, %d columns; want 1 row of (id, name)", md.NumRows, len(md.Schema))
	}

	// --nosync, then bq wait and cancel (no error on a job that is
	// done); views: bq mk --view sends no useLegacySql (legacy, BigQuery's
	// default) unless told; copy, extract and load jobs: a clear "not ...
	// yet" at once.
	out = b.ok(q("--nosync", "--batch", "--label", "team:data", "SELECT COUNT(*) AS n FROM d.t_bqj")...)
	m := bqStarted.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("bq query --nosync printed no job id:\n%s", out)
	}
	jobID := m[1]
	if err := os.WriteFile(filepath.Join(b.dir, "in.csv"), []byte("id,name,score\n5,five,1.5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out = b.shell(
		"wait "+jobID,
		"cancel "+jobID,
		`mk --view "SELECT id FROM d.t_bqj" d.v`,
		`mk --use_legacy_sql=false --view "SELECT id FROM d.t_bqj WHERE id > 18" d.v`,
		`update --view "SELECT id, name FROM d.t_bqj WHERE id > 17" d.v`,
		"cp d.t_bqj d.t_bqj_copy",
		"extract d.t_bqj gs://bucket/t.csv",
		"load --source_format=CSV d.t_bqj gs://bucket/t.csv",
		"load --source_format=CSV --skip_leading_rows=1 d.t_bqj in.csv")
	for _, want := range []string{
		"Job completed before it could be cancelled",
		"bq mk --view --use_legacy_sql=false",
		"View 'local:d.v' successfully created",
		"View 'local:d.v' successfully updated",
		"not supported yet by bqstore: copy jobs",
		"not supported yet by bqstore: extract jobs",
		"not supported yet by bqstore: load jobs",
		"bqstore does not implement load jobs",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("bq shell output lacks %q:\n%s", want, out)
		}
	}
	if md := tableOf("v"); md.Type != bigquery.ViewTable || len(md.Schema) != 2 || md.ViewQuery != "SELECT id, name FROM d.t_bqj WHERE id > 17" {
		t.Fatalf("view after bq update --view: %v %d columns %q", md.Type, len(md.Schema), md.ViewQuery)
	}
	var rows []map[string]any
	out = b.ok(q("--format=json", "SELECT COUNT(*) AS n FROM d.v")...)
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 1 || rows[0]["n"] != "3" {
		t.Fatalf("query of the updated view: %v %s", err, out)
	}

	// bq show -j and ls -j: the job's state; --batch and --label are
	// echoed in its configuration.
	var job struct {
		Configuration struct {
			Labels map[string]string
			Query  struct{ Priority string }
		}
		JobReference struct{ JobID string }
		Status       struct{ State string }
		Statistics   struct {
			Query struct{ StatementType string }
		}
	}
	if err := json.Unmarshal([]byte(b.ok("--format=json", "show", "-j", jobID)), &job); err != nil {
		t.Fatalf("bq show -j: %v", err)
	}
	if job.JobReference.JobID != jobID || job.Status.State != "DONE" || job.Statistics.Query.StatementType != "SELECT" ||
		job.Configuration.Query.Priority != "BATCH" || job.Configuration.Labels["team"] != "data" {
		t.Fatalf("bq show -j: %+v; want job %s DONE, SELECT, BATCH, label team:data", job, jobID)
	}
	var list []struct {
		JobReference struct{ JobID string }
		Status       struct{ State string }
	}
	if err := json.Unmarshal([]byte(b.ok("--format=json", "ls", "-j", "-n", "100")), &list); err != nil {
		t.Fatalf("bq ls -j: %v", err)
	}
	found := false
	for _, j := range list {
		found = found || (j.JobReference.JobID == jobID && j.Status.State == "DONE")
	}
	if len(list) < 6 || !found {
		t.Fatalf("bq ls -j: %d jobs (want the 6 run at least), job %s DONE among them: %v", len(list), jobID, found)
	}

	// --format=csv; a STRUCT parameter.
	if out := b.ok(q("--format=csv", "SELECT id, name FROM d.t_bqj WHERE id IN (1, 2) ORDER BY id")...); out != "id,name\n1,row\n2,row\n" {
		t.Fatalf("--format=csv: %q", out)
	}
	out = b.ok(q("--format=json", `--parameter=s:STRUCT<lo INT64, name STRING>:{"lo": 19, "name": "row"}`,
		"SELECT id FROM d.t_bqj WHERE id >= @s.lo AND name = @s.name ORDER BY id")...)
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 2 || rows[0]["id"] != "19" || rows[1]["id"] != "20" {
		t.Fatalf("STRUCT parameter: %v %s", err, out)
	}
	if md := tableOf("t_bqj"); md.NumRows != 20 {
		t.Fatalf("t_bqj after the refused jobs: %d rows, want 20", md.NumRows)
	}
}
