package server_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"

	"github.com/bqstore/bqstore/internal/server"
	"github.com/bqstore/bqstore/internal/testkit"
)

// createTables creates dataset d and the named tables on a server in dir,
// then stops it.
func createTables(t *testing.T, dir string, names ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := testkit.StartDir(t, dir)
	bq, err := bigquery.NewClient(ctx, "local", testkit.RESTOptions(srv.HTTPAddr())...)
	if err != nil {
		t.Fatal(err)
	}
	defer bq.Close()
	if err := bq.Dataset("d").Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := bq.Dataset("d").Table(n).Create(ctx, &bigquery.TableMetadata{Schema: bigquery.Schema{{Name: "id", Type: bigquery.IntegerFieldType}}}); err != nil {
			t.Fatal(err)
		}
	}
	srv.Stop(t)
}

func tableDirs(t *testing.T, dir string) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(dir, "tables", "tables", "t-*"))
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// TestMissingCatalogRefusesToStart: without its CATALOG a data dir's
// tables would all read as deleted; the server must refuse to start and
// say why, and keep every table's data (issue 11, finding 7).
func TestMissingCatalogRefusesToStart(t *testing.T) {
	dir := t.TempDir()
	createTables(t, dir, "a", "b")
	before := tableDirs(t, dir)
	if len(before) != 2 {
		t.Fatalf("%d table dirs", len(before))
	}
	if err := os.Remove(filepath.Join(dir, "CATALOG")); err != nil {
		t.Fatal(err)
	}
	s, err := server.Start(server.Config{DataDir: dir, GRPCAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", Project: "local"})
	if err == nil {
		_ = s.Close(context.Background())
		t.Fatal("server started without its CATALOG")
	}
	if !strings.Contains(err.Error(), "CATALOG") || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("error %q does not name the missing catalog", err)
	}
	// The tables' creations are in CATALOG.log, which is still there:
	// the message says that it holds only the changes since the lost
	// checkpoint, so that restoring CATALOG is enough.
	if !strings.Contains(err.Error(), "CATALOG.log, which holds only the changes since") {
		t.Fatalf("error %q does not say what CATALOG.log holds", err)
	}
	if after := tableDirs(t, dir); len(after) != 2 {
		t.Fatalf("table data after the refused start: %v", after)
	}
	// Both files missing: restoring CATALOG alone would lose the
	// changes in the log (every table created since the checkpoint,
	// whose data start-up would then drop): the message says so.
	if err := os.Remove(filepath.Join(dir, "CATALOG.log")); err != nil {
		t.Fatal(err)
	}
	s, err = server.Start(server.Config{DataDir: dir, GRPCAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", Project: "local"})
	if err == nil {
		_ = s.Close(context.Background())
		t.Fatal("server started without its CATALOG")
	}
	if !strings.Contains(err.Error(), "restore CATALOG and CATALOG.log together") {
		t.Fatalf("error %q does not say to restore CATALOG.log with CATALOG", err)
	}
	if after := tableDirs(t, dir); len(after) != 2 {
		t.Fatalf("table data after the refused start: %v", after)
	}
}

// TestQuarantinedTableServerStarts: a table whose files fail recovery
// does not keep the server from starting; the other tables serve (issue
// 11, finding 10).
func TestQuarantinedTableServerStarts(t *testing.T) {
	dir := t.TempDir()
	createTables(t, dir, "a", "b")
	first := tableDirs(t, dir)[0]
	// Damage the checkpoint of table a's only file: mid-file corruption.
	log := filepath.Join(first, "L-000001.log")
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(log, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := testkit.StartDir(t, dir)
	bq, err := bigquery.NewClient(ctx, "local", testkit.RESTOptions(srv.HTTPAddr())...)
	if err != nil {
		t.Fatal(err)
	}
	defer bq.Close()
	for _, n := range []string{"a", "b"} {
		if _, err := bq.Dataset("d").Table(n).Metadata(ctx); err != nil {
			t.Fatalf("table %s: %v", n, err)
		}
	}
	if after, err := os.ReadFile(log); err != nil || string(after) != string(data) {
		t.Fatalf("the quarantined table's file was changed (%v)", err)
	}
}
