package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bqstore/bqstore/internal/server"
)

func TestServeFaultAndQuotaFlags(t *testing.T) {
	var cfg server.Config
	if err := serveFaultsAndQuotas(&cfg, "append.reset:when=after,every=3", "delay", "10MB", "1GiB"); err != nil {
		t.Fatal(err)
	}
	if got := cfg.Faults.String(); got != "append.reset:every=3,when=after" {
		t.Fatalf("faults %q", got)
	}
	if !cfg.Quota.CreateStreamDelay || cfg.Quota.ConnBytesPerSec != 10e6 || cfg.Quota.ProjectBytesPerSec != 1<<30 {
		t.Fatalf("quota %+v", cfg.Quota)
	}

	file := filepath.Join(t.TempDir(), "faults.json")
	if err := os.WriteFile(file, []byte(`{"faults":[{"kind":"commit.drop_reply","times":1}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg = server.Config{}
	if err := serveFaultsAndQuotas(&cfg, "@"+file, "reject", "", ""); err != nil {
		t.Fatal(err)
	}
	if got := cfg.Faults.String(); got != "commit.drop_reply:times=1" || cfg.Quota.Enabled() {
		t.Fatalf("from file: %q %+v", got, cfg.Quota)
	}

	// What docs/faults.md shows and GET /admin/faults returns reads back
	// from a file, seed included.
	for _, doc := range []string{
		`{"seed":7,"faults":[{"kind":"quota","rpc":"AppendRows","for":"10s"}]}`,
		`{"seed":7,"faults":[{"kind":"quota","rpc":"AppendRows","for":"10s"}],"installed":"2026-12-01T18:00:00Z","stats":[{"calls":3,"injected":1}]}`,
	} {
		if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg = server.Config{}
		if err := serveFaultsAndQuotas(&cfg, "@"+file, "reject", "", ""); err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		if len(cfg.Faults.Faults) != 1 || cfg.FaultSeed != 7 {
			t.Errorf("%s: faults %q seed %d", doc, cfg.Faults.String(), cfg.FaultSeed)
		}
	}

	for _, tc := range []struct {
		spec, mode, conn, want string
	}{
		{"append.nope", "reject", "", "--faults: faults: fault 1 (append.nope): unknown kind"},
		{"@" + filepath.Join(t.TempDir(), "missing"), "reject", "", "--faults:"},
		{"", "sometimes", "", "--quota-create-stream-mode"},
		{"", "reject", "lots", "--quota-conn-throughput"},
	} {
		err := serveFaultsAndQuotas(&server.Config{}, tc.spec, tc.mode, tc.conn, "")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error containing %q", tc, err, tc.want)
		}
	}
}
