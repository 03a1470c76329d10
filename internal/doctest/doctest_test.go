package doctest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The rules:
//
//   - A command block is a fenced block whose info string is sh, bash or
//     shell. Every one runs, unless the line just before its fence is
//     <!-- doctest: skip REASON --> (a long soak, a benchmark, a command
//     that serves in the foreground), or <!-- doctest: needs CMD --> and
//     CMD is not on PATH (a tool such as Google's bq).
//   - An indented block that starts with a command (go, bqstore, curl) is
//     an error: fence it, so that it is run or marked.
//   - The blocks of one file run in order, in one scratch directory
//     (the state a block leaves is the next one's), each with bash -e: the
//     first failing command fails the block.
//   - `bqstore` is on PATH, and `go run ./cmd/bqstore`, `go run
//     ./examples/quickstart` and `go build -o X ./cmd/bqstore` are served by
//     binaries built once (a `go` on PATH runs them as a child process, as
//     go run does). Any other go command fails the block: mark it.
//   - The default ports (9060, 9050, 9070) are replaced in the text by free
//     loopback ports, also given as BQSTORE_GRPC_ADDR, BQSTORE_HTTP_ADDR,
//     BQSTORE_ADMIN_ADDR, BQSTORE_API and BQSTORE_ENDPOINT, so the test
//     can run next to a real server.
//   - A file whose blocks start no `bqstore serve` gets a fresh server
//     before its first block. Whatever a block leaves running in the
//     background (a server started with &) lives until the file's last
//     block, then its process group is killed.

var (
	fenceRE = regexp.MustCompile("^```([a-z]*)\\s*$")
	skipRE  = regexp.MustCompile(`^<!-- doctest: skip (.+) -->$`)
	needsRE = regexp.MustCompile(`^<!-- doctest: needs (\S+) -->$`)
	cmdRE   = regexp.MustCompile(`^    (go|bqstore|curl) `)
)

type block struct {
	file   string
	line   int // of the opening fence
	text   string
	skip   string // reason; "" runs it
	serves bool   // starts a bqstore server
}

// blocks returns the command blocks of a Markdown file, and errors for
// indented command blocks.
func blocks(t *testing.T, path, name string) []block {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		out          []block
		prev         string
		in           bool
		lang         string
		cur          block
		body         strings.Builder
		indentedSeen bool
		lastBlank    = true
	)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if m := fenceRE.FindStringSubmatch(line); m != nil {
			if !in {
				in, lang = true, m[1]
				cur = block{file: name, line: n}
				if s := skipRE.FindStringSubmatch(strings.TrimSpace(prev)); s != nil {
					cur.skip = s[1]
				}
				if s := needsRE.FindStringSubmatch(strings.TrimSpace(prev)); s != nil {
					if _, err := exec.LookPath(s[1]); err != nil {
						cur.skip = s[1] + " is not installed"
					}
				}
				body.Reset()
			} else {
				in = false
				if lang == "sh" || lang == "bash" || lang == "shell" {
					cur.text = body.String()
					cur.serves = strings.Contains(cur.text, "bqstore serve")
					out = append(out, cur)
				}
			}
			prev = line
			continue
		}
		if in {
			body.WriteString(line + "\n")
		} else if cmdRE.MatchString(line) && lastBlank && !indentedSeen {
			t.Errorf("%s:%d: an indented command block: fence it as ```sh (and mark it <!-- doctest: skip REASON --> if it must not run)", name, n)
			indentedSeen = true
		}
		lastBlank = strings.TrimSpace(line) == ""
		if !lastBlank {
			prev = line
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("repository root: %v", err)
	}
	return dir
}

// goShim serves the go commands docs use from prebuilt binaries, as child
// processes (so $! after `go run ... &` names the shim, as with go run).
const goShim = `#!/bin/sh
case "$1 $2" in
"run ./cmd/bqstore") shift 2; "$DOCTEST_BIN/bqstore" "$@"; exit $?;;
"run ./examples/quickstart") shift 2; "$DOCTEST_BIN/quickstart" "$@"; exit $?;;
"run ./examples/postmortem") shift 2; "$DOCTEST_BIN/postmortem" "$@"; exit $?;;
esac
if [ "$1 $2" = "build -o" ] && [ "$4" = ./cmd/bqstore ] && [ $# -eq 4 ]; then
  mkdir -p "$(dirname "$3")" && cp "$DOCTEST_BIN/bqstore" "$3"; exit $?
fi
echo "doctest: 'go $*' cannot run in a doc block: mark the block <!-- doctest: skip REASON -->" >&2
exit 127
`

func build(t *testing.T, root, bin string) {
	t.Helper()
	for name, pkg := range map[string]string{"bqstore": "./cmd/bqstore", "quickstart": "./examples/quickstart", "postmortem": "./examples/postmortem"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(bin, name), pkg)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(goShim), 0o755); err != nil {
		t.Fatal(err)
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// session is one file's run: its directory, ports and the process groups
// to kill at the end.
type session struct {
	t                 *testing.T
	dir, bin          string
	grpc, http, admin string
	groups            []int
}

func (s *session) env() []string {
	return append(os.Environ(),
		"PATH="+s.bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"DOCTEST_BIN="+s.bin,
		"BQSTORE_GRPC_ADDR="+s.grpc, "BQSTORE_HTTP_ADDR="+s.http, "BQSTORE_ADMIN_ADDR="+s.admin,
		"BQSTORE_API=http://"+s.http, "BQSTORE_ENDPOINT="+s.grpc,
	)
}

func (s *session) ports(text string) string {
	return strings.NewReplacer("127.0.0.1:9060", s.grpc, "127.0.0.1:9050", s.http, "127.0.0.1:9070", s.admin).Replace(text)
}

// start runs a command in its own process group with its output in a
// file (a pipe would keep Wait waiting for background children).
func (s *session) start(ctx context.Context, name string, args ...string) (*exec.Cmd, string) {
	s.t.Helper()
	logName := filepath.Join(s.dir, fmt.Sprintf(".doctest-%d.log", len(s.groups)))
	out, err := os.Create(logName)
	if err != nil {
		s.t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = s.dir, s.env(), out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.groups = append(s.groups, cmd.Process.Pid)
	return cmd, logName
}

// stop ends every process group the session started: SIGTERM, then
// SIGKILL for what is left after a grace period.
func (s *session) stop() {
	for _, g := range s.groups {
		_ = syscall.Kill(-g, syscall.SIGTERM)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, g := range s.groups {
		for syscall.Kill(-g, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		_ = syscall.Kill(-g, syscall.SIGKILL)
	}
}

// serve starts a fresh server for a file whose blocks start none.
func (s *session) serve() {
	s.t.Helper()
	cmd, logName := s.start(context.Background(), filepath.Join(s.bin, "bqstore"), "serve", "--data-dir", filepath.Join(s.dir, ".doctest-data"))
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + s.http + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case err := <-exited:
			b, _ := os.ReadFile(logName)
			s.t.Fatalf("the server exited: %v\n%s", err, b)
		default:
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logName)
			s.t.Fatalf("the server did not answer /healthz within 30 s\n%s", b)
		}
		time.Sleep(50 * time.Millisecond) // a readiness poll, not a timing assumption
	}
}

// run runs one block and reports its failure.
func (s *session) run(b block) {
	s.t.Helper()
	script := filepath.Join(s.dir, fmt.Sprintf(".doctest-%d.sh", b.line))
	if err := os.WriteFile(script, []byte(s.ports(b.text)), 0o644); err != nil {
		s.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd, logName := s.start(ctx, "bash", "-e", script)
	err := cmd.Wait()
	if err != nil {
		out, _ := os.ReadFile(logName)
		if ctx.Err() != nil {
			err = errors.Join(err, ctx.Err())
		}
		s.t.Errorf("%s:%d: the block failed (%v):\n%s\n--- output:\n%s", b.file, b.line, err, b.text, out)
	}
}

// TestDocBlocks runs every command block of README.md and docs/*.md.
func TestDocBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds bqstore and runs the docs' commands")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	root := repoRoot(t)
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := append([]string{filepath.Join(root, "README.md")}, docs...)
	bin := t.TempDir()
	build(t, root, bin)
	for _, path := range files {
		name, _ := filepath.Rel(root, path)
		bs := blocks(t, path, name)
		var run []block
		serves := false
		for _, b := range bs {
			if b.skip == "" {
				run = append(run, b)
				serves = serves || b.serves
			}
		}
		if len(run) == 0 {
			continue
		}
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
			s := &session{t: t, dir: t.TempDir(), bin: bin, grpc: freePort(t), http: freePort(t), admin: freePort(t)}
			defer s.stop()
			if !serves {
				s.serve()
			}
			for _, b := range run {
				s.run(b)
				if t.Failed() {
					return // later blocks build on this one
				}
			}
		})
	}
}
