package doctest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/bqstore/bqstore/internal/cli"
)

// TestReadmeServeFlags: the README's configuration table names every flag
// of bqstore serve, and for each row exactly the environment variables
// those flags read (as their -h says).
func TestReadmeServeFlags(t *testing.T) {
	var out, errb bytes.Buffer
	env := &cli.Env{Stdout: &out, Stderr: &errb, LookupEnv: func(string) (string, bool) { return "", false }}
	cli.MainEnv(context.Background(), []string{"serve", "-h"}, env)
	help := errb.String() + out.String()

	// "  -name type\n    \tusage ... (env BQSTORE_X)"
	flagEnv := map[string]string{}
	var name string
	flagRE := regexp.MustCompile(`^  -([a-z0-9-]+)`)
	envRE := regexp.MustCompile(`env (BQSTORE_[A-Z_]+)`)
	for _, line := range strings.Split(help, "\n") {
		if m := flagRE.FindStringSubmatch(line); m != nil {
			name = m[1]
			flagEnv[name] = ""
		}
		if m := envRE.FindStringSubmatch(line); m != nil && name != "" {
			flagEnv[name] = m[1]
		}
	}
	if len(flagEnv) < 10 {
		t.Fatalf("serve -h lists %d flags:\n%s", len(flagEnv), help)
	}

	readme, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	inTable := map[string]bool{}
	rowFlagRE := regexp.MustCompile("`--([a-z0-9-]+)`")
	rowEnvRE := regexp.MustCompile("`(BQSTORE_[A-Z_]+)`")
	for _, line := range strings.Split(string(readme), "\n") {
		if !strings.HasPrefix(line, "| `--") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			continue
		}
		var flags, want []string
		for _, m := range rowFlagRE.FindAllStringSubmatch(cells[1], -1) {
			flags = append(flags, m[1])
			inTable[m[1]] = true
			if e := flagEnv[m[1]]; e != "" && !slices.Contains(want, e) {
				want = append(want, e)
			}
		}
		var got []string
		for _, m := range rowEnvRE.FindAllStringSubmatch(cells[2], -1) {
			got = append(got, m[1])
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("README row %v: environment %v, but the flags read %v", flags, got, want)
		}
	}
	for f := range flagEnv {
		if !inTable[f] {
			t.Errorf("serve flag --%s is not in the README's configuration table", f)
		}
	}
}
