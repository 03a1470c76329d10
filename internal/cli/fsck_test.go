package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/storage"
)

// fsckDataDir writes a data dir whose catalog names table p:d.t and whose
// engine holds it.
func fsckDataDir(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	cat, err := catalog.Open(dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cat.CreateDataset(ctx, catalog.Dataset{ProjectID: "p", DatasetID: "d"}); err != nil {
		t.Fatal(err)
	}
	sch := &schema.Schema{Fields: []*schema.Field{{Name: "id", Type: schema.Integer}}}
	ct, err := cat.CreateTable(ctx, catalog.TableSpec{ProjectID: "p", DatasetID: "d", TableID: "t", Schema: sch})
	if err != nil {
		t.Fatal(err)
	}
	db, err := storage.Open(filepath.Join(dir, "tables"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTable(ctx, ct.ID, schema.ToArrow(sch)); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func runFsckCmd(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := MainEnv(context.Background(), append([]string{"fsck"}, args...), &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut})
	return out.String() + errOut.String(), code
}

func TestFsck(t *testing.T) {
	dir := fsckDataDir(t)
	out, code := runFsckCmd(t, dir)
	if code != 0 || !strings.Contains(out, ": ok: 1 files") || !strings.Contains(out, "1 tables, 0 problems") {
		t.Fatalf("healthy dir: exit %d\n%s", code, out)
	}
	// A torn tail: listed, repaired with --repair.
	logs, _ := filepath.Glob(filepath.Join(dir, "tables", "tables", "t-*", "L-000001.log"))
	f, err := os.OpenFile(logs[0], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{9, 9, 9})
	f.Close()
	out, code = runFsckCmd(t, dir)
	if code != 0 || !strings.Contains(out, "would: truncate") {
		t.Fatalf("torn tail: exit %d\n%s", code, out)
	}
	out, code = runFsckCmd(t, "--repair", dir)
	if code != 0 || !strings.Contains(out, "did: truncate") {
		t.Fatalf("repair: exit %d\n%s", code, out)
	}
	out, code = runFsckCmd(t, dir)
	if code != 0 || strings.Contains(out, "truncate") {
		t.Fatalf("after repair: exit %d\n%s", code, out)
	}
	// The engine ahead of the catalog's schema: a problem.
	db, err := storage.Open(filepath.Join(dir, "tables"), nil)
	if err != nil {
		t.Fatal(err)
	}
	id := db.TableIDs()[0]
	tb, _ := db.Table(id)
	wider := &schema.Schema{Fields: []*schema.Field{{Name: "id", Type: schema.Integer}, {Name: "x", Type: schema.String}}}
	if err := tb.SetSchema(context.Background(), 2, schema.ToArrow(wider)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	out, code = runFsckCmd(t, dir)
	if code != 1 || !strings.Contains(out, "schema version 2 in the engine, past the catalog's 1") {
		t.Fatalf("schema ahead: exit %d\n%s", code, out)
	}
	// No CATALOG: a problem, named.
	if err := os.Remove(filepath.Join(dir, "CATALOG")); err != nil {
		t.Fatal(err)
	}
	out, code = runFsckCmd(t, dir)
	if code != 1 || !strings.Contains(out, "CATALOG is missing") || !strings.Contains(out, "CATALOG.log, which holds only the changes since") {
		t.Fatalf("no catalog: exit %d\n%s", code, out)
	}
	// CATALOG.log without CATALOG and no table data: the server refuses
	// to open the catalog, so fsck must not call the dir empty.
	empty := t.TempDir()
	edb, err := storage.Open(filepath.Join(empty, "tables"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := edb.Close(); err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(filepath.Join(dir, catalog.LogFileName))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(empty, catalog.LogFileName), log, 0o644); err != nil {
		t.Fatal(err)
	}
	out, code = runFsckCmd(t, empty)
	if code != 1 || !strings.Contains(out, "CATALOG.log") {
		t.Fatalf("log without its checkpoint: exit %d\n%s", code, out)
	}
}

// TestFsckUnknownAndDroppedTables: an engine table the catalog deleted
// is an interrupted drop the server finishes (not a problem); one the
// catalog neither names nor deleted (CATALOG.log lost) is reported as
// quarantined, with its directory and the ways to recover or delete it.
func TestFsckUnknownAndDroppedTables(t *testing.T) {
	ctx := context.Background()
	dir := fsckDataDir(t)
	cat, err := catalog.Open(dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := cat.Table("p", "d", "t")
	if err != nil {
		t.Fatal(err)
	}
	// The catalog's delete, without the engine's drop (no observer).
	if err := cat.DeleteTable(ctx, "p", "d", "t"); err != nil {
		t.Fatal(err)
	}
	db, err := storage.Open(filepath.Join(dir, "tables"), nil)
	if err != nil {
		t.Fatal(err)
	}
	const lost = "0123456789abcdef0123456789abcdef"
	if _, err := db.CreateTable(ctx, lost, schema.ToArrow(&schema.Schema{})); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	out, code := runFsckCmd(t, dir)
	if code == 0 || !strings.Contains(out, "1 problems") {
		t.Fatalf("exit %d, want 1 problem\n%s", code, out)
	}
	if !strings.Contains(out, "engine table "+tb.ID+" was deleted from the catalog: the server finishes its drop") {
		t.Errorf("the interrupted drop is not reported as such\n%s", out)
	}
	if !strings.Contains(out, "engine table "+lost) || !strings.Contains(out, "keeps it quarantined") || !strings.Contains(out, filepath.Join(dir, "tables", "tables", "t-")) {
		t.Errorf("the unknown table is not reported as quarantined with its directory\n%s", out)
	}
}

// TestFsckAdoptWithoutCatalog: with both catalog files lost, --adopt
// writes a new catalog naming the engine's table, after which fsck finds
// nothing wrong.
func TestFsckAdoptWithoutCatalog(t *testing.T) {
	dir := fsckDataDir(t)
	cat, err := catalog.Open(dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := cat.Table("p", "d", "t")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{catalog.FileName, catalog.LogFileName} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	if out, code := runFsckCmd(t, dir); code == 0 || !strings.Contains(out, "--adopt") {
		t.Fatalf("fsck without the catalog: exit %d, want the --adopt hint:\n%s", code, out)
	}
	if out, code := runFsckCmd(t, "--adopt", tb.ID+"=p:d.t", dir); code != 0 || !strings.Contains(out, "adopted engine table "+tb.ID+" as p:d.t") {
		t.Fatalf("fsck --adopt: exit %d:\n%s", code, out)
	}
	if out, code := runFsckCmd(t, dir); code != 0 {
		t.Fatalf("fsck after --adopt: exit %d:\n%s", code, out)
	}
	if out, code := runFsckCmd(t, "--adopt", "nope", dir); code == 0 {
		t.Fatalf("fsck --adopt nope: exit 0:\n%s", out)
	}
}
