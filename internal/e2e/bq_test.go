package e2e

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var bqRewrite = flag.Bool("bq.rewrite", false, "TestBQCLI: rewrite testdata/bq.golden from this run")

// TestBQCLI runs Google's bq CLI (a child process per command) against
// the server, with nothing but credentials and --api: bq fetches the
// server's discovery document first. The transcript, with times
// normalized, must equal testdata/bq.golden (-bq.rewrite to regenerate it;
// review the diff like code).
//
// It needs bq (the google-cloud-cli package) and skips without it, unless
// BQSTORE_REQUIRE_BQ=1, which .ci/run sets whenever bq is installed.
func TestBQCLI(t *testing.T) {
	bqPath, err := exec.LookPath("bq")
	if err != nil {
		if os.Getenv("BQSTORE_REQUIRE_BQ") == "1" {
			t.Fatalf("bq not found (%v) but BQSTORE_REQUIRE_BQ=1", err)
		}
		t.Skip("bq (Google's BigQuery CLI, package google-cloud-cli) is not installed; skipping the bq CLI test")
	}
	e := newEnv(t)
	dir := t.TempDir()
	for name, content := range map[string]string{
		"token":       "bqstore-test-token\n",
		"schema.json": `[{"name":"id","type":"INTEGER","mode":"REQUIRED"},{"name":"name","type":"STRING"},{"name":"score","type":"FLOAT"}]`,
		"rows.json":   "{\"id\": 1, \"name\": \"one\"}\n{\"id\": \"2\", \"extra\": 2.5}\n",
		"bad.json":    "{\"id\": 3}\n{\"id\": \"three\"}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(),
		"HOME="+home, // no ~/.bigqueryrc of the user's
		"CLOUDSDK_CONFIG="+filepath.Join(dir, "gcloud"),
		"CLOUDSDK_AUTH_ACCESS_TOKEN_FILE="+filepath.Join(dir, "token"),
		"CLOUDSDK_CORE_DISABLE_PROMPTS=1",
		"CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK=1",
		"PYTHONUNBUFFERED=1", // stdout and stderr in the order written
	)
	api := "http://" + e.srv.HTTPAddr()

	var transcript bytes.Buffer
	run := func(stdin string, args ...string) (string, int) {
		t.Helper()
		cmd, cancel := bqCommand(bqPath, append([]string{"--api", api, "--project_id", project}, args...)...)
		defer cancel()
		cmd.Dir, cmd.Env = dir, env
		cmd.Stdin = strings.NewReader(stdin)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		err := cmd.Run()
		t.Logf("bq %s: %v", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
		if ee, ok := err.(*exec.ExitError); ok {
			return out.String(), ee.ExitCode()
		} else if err != nil {
			t.Fatalf("bq %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
		return out.String(), 0
	}
	// bq runs one command per process, with its exit status.
	bq := func(args ...string) {
		t.Helper()
		out, code := run("", args...)
		fmt.Fprintf(&transcript, "$ bq %s\n%s", quoteArgs(args), normalizeBQ(out, api))
		if code != 0 {
			fmt.Fprintf(&transcript, "[exit %d]\n", code)
		}
	}
	// shell runs commands in one bq shell: bq's Python start-up costs about
	// a second of CPU per process, and the machine running the tests is
	// shared. Its output is split at the prompts.
	// numBytes is t2's size once rows are in it, which depends on the
	// storage encoding: the transcript shows it as B.
	numBytes := int64(-1)
	shell := func(cmds ...string) {
		t.Helper()
		// The shell's exit status is its last command's.
		out, code := run(strings.Join(cmds, "\n")+"\n", "shell")
		prompt := project + "> "
		parts := strings.Split(out, prompt)
		if len(parts) != len(cmds)+2 {
			t.Fatalf("bq shell: %d prompts for %d commands:\n%s", len(parts)-1, len(cmds), out)
		}
		for i, c := range cmds {
			part := normalizeBQ(parts[i+1], api)
			if numBytes >= 0 {
				part = replaceColumnValue(part, strconv.FormatInt(numBytes, 10), "B")
			}
			fmt.Fprintf(&transcript, "$ bq %s\n%s", c, part)
		}
		if code != 0 {
			fmt.Fprintf(&transcript, "[exit %d]\n", code)
		}
	}

	bq("mk", "-d", "--description", "made by bq", "--label", "env:ci", "bqds")
	shell(
		`mk -t --description "inline schema" --label k:v bqds.t1 id:INTEGER,name:STRING`,
		`mk -t --expiration 3600 --label k:v --time_partitioning_type DAY --time_partitioning_expiration 86400 --clustering_fields name bqds.t2 schema.json`,
		`ls`,
		`ls -p`,
		`ls bqds`,
		`show bqds`,
		`show bqds.nope`,
		`update bqds.t1 id:INTEGER,name:STRING,extra:FLOAT`,
		`show --schema bqds.t1`,
		`query --use_legacy_sql=false "SELECT 1"`,
	)
	bq("update", "bqds.t1", "id:STRING")

	// Rows for show and head, through the Storage Write API (bq insert
	// writes t1 through tabledata.insertAll).
	ms, md := committedWriter(t, e, fmt.Sprintf("projects/%s/datasets/bqds/tables/t2", project))
	appendAt(t, e, ms, md, 1, 3, 0)
	md2, err := e.bq.Dataset("bqds").Table("t2").Metadata(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	numBytes = md2.NumBytes
	shell(
		`insert bqds.t1 rows.json`,
		`insert bqds.t1 bad.json`,
		`head -n 5 bqds.t1`,
		`head -n 1 -s 1 -c extra,id bqds.t1`,
		`show bqds.t2`,
		`show --schema bqds.t2`,
		`head -n 2 bqds.t2`,
		`query --use_legacy_sql=false "SELECT id, name FROM bqds.t1 WHERE id > 0 ORDER BY name DESC"`,
		`query --use_legacy_sql=false "SELECT COUNT(*) AS n, COUNT(name) FROM bqds.t1 WHERE nope > 1"`,
		`query "SELECT 1"`,
		`rm -f -t bqds.t1`,
		`ls bqds`,
		`rm -r -f -d bqds`,
		`ls`,
	)

	golden := filepath.Join("testdata", "bq.golden")
	if *bqRewrite {
		if err := os.WriteFile(golden, transcript.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -bq.rewrite to create it)", err)
	}
	if got := transcript.String(); got != string(want) {
		t.Errorf("bq transcript differs from %s (-bq.rewrite regenerates it):\n%s", golden, lineDiff(string(want), got))
	}
}

// quoteArgs joins args for the transcript, quoting those with spaces.
func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = a
		if strings.Contains(a, " ") {
			q[i] = `"` + a + `"`
		}
	}
	return strings.Join(q, " ")
}

// replaceColumnValue replaces value, where it stands alone in a column of
// bq's tables, by repl padded to the same width, so the columns stay
// aligned whatever the value's length.
func replaceColumnValue(s, value, repl string) string {
	re := regexp.MustCompile(`(^|\s)` + regexp.QuoteMeta(value) + `( +|$)`)
	return re.ReplaceAllStringFunc(s, func(m string) string {
		lead := ""
		if m[0] == ' ' || m[0] == '\n' || m[0] == '\t' {
			lead, m = m[:1], m[1:]
		}
		return lead + repl + strings.Repeat(" ", max(0, len(m)-len(repl)))
	})
}

// bqTime matches the times bq prints ("01 Dec 18:29:58").
var bqTime = regexp.MustCompile(`\b\d\d [A-Z][a-z][a-z] \d\d:\d\d:\d\d\b`)

// bqJobID matches the job ids bq generates
// ("bqjob_r80eb4d4f51f5f8b_000001a233308158_1": fixed width, so the
// lines bq wraps around them wrap the same way every run).
var bqJobID = regexp.MustCompile(`\bbqjob_r[0-9a-f]+_[0-9a-f]+_\d+\b`)

// bqWaiting matches the progress lines bq prints while it polls a job
// that was not DONE when inserted ("\rWaiting on bqjob_... (0s) Current
// status: RUNNING", then a line of spaces or a newline): how many there
// are depends on timing.
var bqWaiting = regexp.MustCompile(`(?:\rWaiting on [^\r\n]*)+(?:\r *)?\n?`)

// normalizeBQ replaces what changes from run to run: times, job ids, the
// server's address, and drops bq's progress lines.
func normalizeBQ(s, api string) string {
	s = bqWaiting.ReplaceAllString(s, "")
	s = bqTime.ReplaceAllString(s, "DD Mon hh:mm:ss")
	s = bqJobID.ReplaceAllString(s, "bqjob_ID")
	return strings.ReplaceAll(s, api, "http://SERVER")
}

// lineDiff shows the first lines where want and got differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 20; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  want %q\n  got  %q\n", i+1, wl, gl)
			shown++
		}
	}
	return b.String()
}
