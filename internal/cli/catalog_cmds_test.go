package cli

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/rest"
)

// seededReader is a deterministic byte source, so that etags in golden
// output are stable.
type seededReader struct{ r *rand.ChaCha8 }

func (s seededReader) Read(p []byte) (int, error) { return s.r.Read(p) }

// TestCatalogVerbsGolden runs the catalog verbs against an in-process REST
// server over a temp-dir catalog, with a fixed clock and seeded ids.
// Regenerate with: go test ./internal/cli -run TestCatalogVerbsGolden -rewrite
//
// Directives:
//
//	file name=NAME         writes the input to $TMP/NAME
//	bqstore [terminal]     runs the input as one command line ($TMP is
//	                       replaced); with terminal, stdin is a terminal
//	                       and answer=... is typed at the prompt
func TestCatalogVerbsGolden(t *testing.T) {
	datadriven.Walk(t, "testdata/catalog", func(t *testing.T, path string) {
		dir := t.TempDir()
		fixed := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
		cat, err := catalog.Open(filepath.Join(dir, "catalog"), catalog.Options{
			Now:  func() time.Time { return fixed },
			Rand: seededReader{rand.NewChaCha8([32]byte{1})},
		})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(rest.New(cat, rest.Options{Stats: func(string) (int64, int64, bool) { return 3, 300, true }}))
		defer srv.Close()
		host := strings.TrimPrefix(srv.URL, "http://")

		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "file":
				var name string
				d.ScanArgs(t, "name", &name)
				if err := os.WriteFile(filepath.Join(dir, name), []byte(d.Input), 0o644); err != nil {
					t.Fatal(err)
				}
				return ""
			case "bqstore":
				args := strings.Fields(strings.ReplaceAll(d.Input, "$TMP", dir))
				var stdin string
				if d.HasArg("terminal") {
					d.ScanArgs(t, "answer", &stdin)
					old := stdinIsTerminal
					stdinIsTerminal = func(io.Reader) bool { return true }
					defer func() { stdinIsTerminal = old }()
				}
				var out, errb bytes.Buffer
				env := &Env{Stdin: strings.NewReader(stdin + "\n"), Stdout: &out, Stderr: &errb, LookupEnv: func(k string) (string, bool) {
					switch k {
					case "BQSTORE_API":
						return srv.URL, true
					case "BQSTORE_PROJECT":
						return "p", true
					}
					return "", false
				}}
				code := MainEnv(context.Background(), args, env)
				res := out.String()
				if errb.Len() > 0 {
					res += "stderr: " + errb.String()
				}
				if code != 0 {
					res += "exit " + string(rune('0'+code)) + "\n"
				}
				return strings.ReplaceAll(strings.ReplaceAll(res, host, "HOST"), dir, "$TMP")
			}
			t.Fatalf("unknown directive %s", d.Cmd)
			return ""
		})
	})
}

func TestParseRef(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"d", "p:d", ""},
		{"d.t", "p:d.t", ""},
		{"q:d", "q:d", ""},
		{"q:d.t", "q:d.t", ""},
		{"example.com:q:d.t", "example.com:q:d.t", ""},
		{":d", "", "empty project"},
		{"q:", "", "empty dataset"},
		{"q:d.", "", "empty table"},
		{"", "", "empty dataset"},
	} {
		r, err := parseRef(tc.in, "p")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseRef(%q) = %v, %v; want error %q", tc.in, r, err, tc.err)
			}
			continue
		}
		if err != nil || r.String() != tc.want {
			t.Errorf("parseRef(%q) = %v, %v; want %s", tc.in, r, err, tc.want)
		}
	}
}

// FuzzParseSchemaArg: no panics; what parses is a schema whose every field
// has a name and a type, and the inline form round-trips.
func FuzzParseSchemaArg(f *testing.F) {
	f.Add("a:INT64,b:STRING,c")
	f.Add(`[{"name":"a","type":"RECORD","fields":[{"name":"b","type":"DATE"}]}]`)
	f.Add(`{"fields":[{"name":"a","type":"STRING","mode":"REPEATED"}]}`)
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 1<<16 {
			return
		}
		sch, err := parseSchemaArg(s)
		if err != nil {
			return
		}
		t0 := strings.TrimSpace(s)
		if strings.HasPrefix(t0, "[") || strings.HasPrefix(t0, "{") {
			return // JSON: validated by the server
		}
		var parts []string
		for _, f := range sch.Fields {
			if f.Name == "" || f.Type == "" {
				t.Fatalf("%q parsed to a field without name or type: %+v", s, f)
			}
			parts = append(parts, f.Name+":"+string(f.Type))
		}
		again, err := parseSchemaArg(strings.Join(parts, ","))
		if err != nil || len(again.Fields) != len(sch.Fields) {
			t.Fatalf("round trip of %q: %v", s, err)
		}
		for i := range again.Fields {
			if again.Fields[i].Name != sch.Fields[i].Name || again.Fields[i].Type != sch.Fields[i].Type {
				t.Fatalf("round trip of %q changed field %d", s, i)
			}
		}
	})
}
