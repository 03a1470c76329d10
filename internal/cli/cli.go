// Package cli implements the bqstore command line: the server (serve), the
// bq-like catalog verbs (mk, ls, show, update, rm) and the tools built on the
// public APIs. cmd/bqstore only calls Main.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sort"
	"strings"
)

// Env is what a command runs with: its standard streams and the
// environment lookup (os.LookupEnv outside tests).
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	LookupEnv      func(string) (string, bool)
}

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *Env, args []string) error
}

// commands lists every subcommand. Keep it sorted by name.
var commands = []command{
	{"bench", "load generator: bench write|read against a server, through the official clients", runBench},
	{"extract", "copy a table's rows into a Parquet, Arrow, CSV or NDJSON file through the Read API", runExtract},
	{"fsck", "check a data directory offline (every table's files, the catalog); --repair truncates torn tails", runFsck},
	{"head", "print the first rows of a table", runHead},
	{"ingest", "exactly-once ingestion from files or Kafka into PENDING streams", runIngest},
	{"ls", "list datasets, or the tables of a dataset", runLs},
	{"mk", "create a dataset or a table", runMk},
	{"query", "run a GoogleSQL query (jobs.query) and print its rows; bq's --parameter syntax", runQuery},
	{"rm", "remove a dataset or a table", runRm},
	{"serve", "run the Storage API and REST v2 server", runServe},
	{"show", "show a dataset or a table and its schema", runShow},
	{"update", "change a table's schema or description", runUpdate},
	{"version", "print the version", runVersion},
}

// Version is set at build time with -ldflags "-X ...cli.Version=...".
var Version = "dev"

// usageError marks errors caused by how the command was called (exit 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// Main runs the command line and returns the process exit code: 0 on
// success, 1 when the command failed, 2 when it was called wrongly.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return MainEnv(ctx, args, &Env{Stdin: stdin, Stdout: stdout, Stderr: stderr, LookupEnv: os.LookupEnv})
}

// MainEnv is Main with an explicit environment (tests use it).
func MainEnv(ctx context.Context, args []string, env *Env) int {
	if env.LookupEnv == nil {
		env.LookupEnv = func(string) (string, bool) { return "", false }
	}
	if args0 := firstArg(args); args0 == "--version" || args0 == "-version" || args0 == "-v" {
		return MainEnv(ctx, append([]string{"version"}, args[1:]...), env)
	}
	if len(args) == 2 && args[0] == "help" {
		return MainEnv(ctx, []string{args[1], "-h"}, env)
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "-help" || args[0] == "help" {
		printUsage(env.Stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			err := c.run(ctx, env, args[1:])
			if err == nil || errors.Is(err, flag.ErrHelp) {
				return 0
			}
			var ie *interruptedError
			if errors.As(err, &ie) {
				fmt.Fprintf(env.Stderr, "bqstore %s: %s\n", c.name, ie.msg)
				return ExitInterrupted
			}
			fmt.Fprintf(env.Stderr, "bqstore %s: %s\n", c.name, oneLine(err.Error()))
			var ue *usageError
			if errors.As(err, &ue) {
				return 2
			}
			return 1
		}
	}
	fmt.Fprintf(env.Stderr, "bqstore: unknown command %q (see bqstore help)\n", args[0])
	return 2
}

func firstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: bqstore COMMAND [flags] [args]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	cs := append([]command(nil), commands...)
	sort.Slice(cs, func(i, j int) bool { return cs[i].name < cs[j].name })
	for _, c := range cs {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'bqstore COMMAND -h' for the flags of a command, 'bqstore --version' for the version.")
}

// oneLine folds a message onto one line, for stderr.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// newFlagSet returns a flag set that reports errors instead of exiting and
// prints its usage to the command's stderr.
func newFlagSet(env *Env, name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(env.Stderr, "usage: bqstore %s %s\n", name, usage)
		fs.PrintDefaults()
	}
	return fs
}

// envDefault returns the value of the environment variable key, or def.
func envDefault(env *Env, key, def string) string {
	if v, ok := env.LookupEnv(key); ok && v != "" {
		return v
	}
	return def
}

// parseFlags parses args allowing flags after positional arguments, as bq
// does ("bqstore rm -r p:d" and "bqstore rm p:d -r" both work). It returns
// the positional arguments.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usagef("%v", err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if rest[0] == "--" {
			return append(pos, rest[1:]...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func runVersion(_ context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "version", "")
	if pos, err := parseFlags(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	fmt.Fprintln(env.Stdout, versionLine(readBuildInfo()))
	return nil
}

// readBuildInfo is debug.ReadBuildInfo (tests replace it).
var readBuildInfo = func() (*debug.BuildInfo, bool) { return debug.ReadBuildInfo() }

// versionLine is "bqstore VERSION (commit REV[, modified], TIME, GOVERSION)":
// the -ldflags Version if set, else the main module's version (v1.2.3
// when installed with go install ...@v1.2.3, "(devel)" in a checkout);
// the commit as the go command stamped it from the VCS.
func versionLine(bi *debug.BuildInfo, ok bool) string {
	v := Version
	if !ok {
		return "bqstore " + v
	}
	if v == "dev" && bi.Main.Version != "" {
		v = bi.Main.Version
	}
	var rev, when string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	var parts []string
	if rev != "" {
		c := "commit " + rev
		if modified {
			c += " (modified)"
		}
		parts = append(parts, c)
	} else {
		parts = append(parts, "commit unknown")
	}
	if when != "" {
		parts = append(parts, when)
	}
	if bi.GoVersion != "" {
		parts = append(parts, bi.GoVersion)
	}
	return "bqstore " + v + " (" + strings.Join(parts, ", ") + ")"
}
