package server_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/api/iterator"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/cli"
	"github.com/bqstore/bqstore/internal/server"
	"github.com/bqstore/bqstore/internal/testkit"
)

// insertRows inserts n rows into table d.name of the server at addr.
func insertRows(t *testing.T, ctx context.Context, addr, name string, n int) {
	t.Helper()
	bq, err := bigquery.NewClient(ctx, "local", testkit.RESTOptions(addr)...)
	if err != nil {
		t.Fatal(err)
	}
	defer bq.Close()
	rows := make([]catRow, n)
	for i := range rows {
		rows[i] = catRow(i)
	}
	if err := bq.Dataset("d").Table(name).Inserter().Put(ctx, rows); err != nil {
		t.Fatal(err)
	}
}

// countRows counts the rows tabledata.list returns for table d.name.
func countRows(t *testing.T, ctx context.Context, addr, name string) int {
	t.Helper()
	bq, err := bigquery.NewClient(ctx, "local", testkit.RESTOptions(addr)...)
	if err != nil {
		t.Fatal(err)
	}
	defer bq.Close()
	it := bq.Dataset("d").Table(name).Read(ctx)
	n := 0
	for {
		var row []bigquery.Value
		err := it.Next(&row)
		if err == iterator.Done {
			return n
		}
		if err != nil {
			t.Fatalf("read %s: %v", name, err)
		}
		n++
	}
}

// syncBuffer is a log destination safe for the server's goroutines.
type syncBuffer struct {
	mu  chan struct{}
	buf bytes.Buffer
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{mu: make(chan struct{}, 1)} }

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu <- struct{}{}
	defer func() { <-b.mu }()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu <- struct{}{}
	defer func() { <-b.mu }()
	return b.buf.String()
}

// TestLostCatalogLogKeepsTables: CATALOG.log lost (a data dir copied
// without it, a disk that lost the file) leaves the catalog without the
// tables created since the last checkpoint. Start-up must not read them
// as deleted and drop their data (issue 12): they are kept and
// quarantined (not served, reported at start naming the table and its
// directory), and restoring the log brings them back with every row.
func TestLostCatalogLogKeepsTables(t *testing.T) {
	t.Run("log=removed", func(t *testing.T) {
		testLostCatalogLog(t, func(name string) error { return os.Remove(name) })
	})
	// Cut inside its first record (a disk that lost the file's end):
	// read as a torn tail, which holds every change.
	t.Run("log=cut", func(t *testing.T) {
		testLostCatalogLog(t, func(name string) error { return os.Truncate(name, 12) })
	})
}

func testLostCatalogLog(t *testing.T, lose func(name string) error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	createTables(t, dir, "a", "b")
	srv := testkit.StartDir(t, dir)
	insertRows(t, ctx, srv.HTTPAddr(), "a", 7)
	insertRows(t, ctx, srv.HTTPAddr(), "b", 3)
	srv.Stop(t)
	logName := filepath.Join(dir, "CATALOG.log")
	saved, err := os.ReadFile(logName)
	if err != nil {
		t.Fatalf("the tables' creations are not in the log: %v", err)
	}
	if err := lose(logName); err != nil {
		t.Fatal(err)
	}

	logs := newSyncBuffer()
	srv = testkit.StartDir(t, dir, func(c *server.Config) {
		c.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	bq, err := bigquery.NewClient(ctx, "local", testkit.RESTOptions(srv.HTTPAddr())...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bq.Dataset("d").Table("a").Metadata(ctx); err == nil {
		t.Fatal("table a is served without its catalog entry")
	}
	if got := gauge(t, srv.Registry(), "bqstore_catalog_unknown_tables"); got != 2 {
		t.Errorf("bqstore_catalog_unknown_tables = %v, want 2", got)
	}
	bq.Close()
	srv.Stop(t)
	if n := len(tableDirs(t, dir)); n != 2 {
		t.Fatalf("%d table dirs after a start without CATALOG.log, want 2 (kept)", n)
	}
	if got := strings.Count(logs.String(), "not in the catalog"); got != 2 {
		t.Fatalf("start-up reported %d unknown tables, want 2; log:\n%s", got, logs.String())
	}

	// The documented recovery: restore the log (with the server
	// stopped).
	if err := os.WriteFile(logName, saved, 0o644); err != nil {
		t.Fatal(err)
	}
	srv = testkit.StartDir(t, dir)
	if got := countRows(t, ctx, srv.HTTPAddr(), "a"); got != 7 {
		t.Fatalf("table a has %d rows after restoring CATALOG.log, want 7", got)
	}
	if got := countRows(t, ctx, srv.HTTPAddr(), "b"); got != 3 {
		t.Fatalf("table b has %d rows after restoring CATALOG.log, want 3", got)
	}
}

// TestInterruptedDropFinishes: a crash between the catalog's delete
// (durable) and the engine's drop leaves the engine holding a table the
// catalog deleted; the catalog's tombstone tells start-up to finish the
// drop rather than quarantine the table. The engine's state before the
// drop is restored under the catalog's state after it: exactly what
// such a crash leaves on disk.
func TestInterruptedDropFinishes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	createTables(t, dir, "a", "b", "c")
	srv := testkit.StartDir(t, dir)
	for _, n := range []string{"a", "b", "c"} {
		insertRows(t, ctx, srv.HTTPAddr(), n, 5)
	}
	srv.Stop(t)
	before := filepath.Join(t.TempDir(), "tables")
	if err := os.CopyFS(before, os.DirFS(filepath.Join(dir, "tables"))); err != nil {
		t.Fatal(err)
	}

	srv = testkit.StartDir(t, dir)
	bq, err := bigquery.NewClient(ctx, "local", testkit.RESTOptions(srv.HTTPAddr())...)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "c"} {
		if err := bq.Dataset("d").Table(n).Delete(ctx); err != nil {
			t.Fatal(err)
		}
	}
	bq.Close()
	srv.Stop(t)
	// The catalog holds the deletes; the engine is as before them.
	if err := os.RemoveAll(filepath.Join(dir, "tables")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(before, filepath.Join(dir, "tables")); err != nil {
		t.Fatal(err)
	}
	if n := len(tableDirs(t, dir)); n != 3 {
		t.Fatalf("%d table dirs, want 3", n)
	}

	logs := newSyncBuffer()
	srv = testkit.StartDir(t, dir, func(c *server.Config) {
		c.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	if n := len(tableDirs(t, dir)); n != 1 {
		t.Fatalf("%d table dirs after start, want 1 (the interrupted drops finished)", n)
	}
	if strings.Contains(logs.String(), "not in the catalog") {
		t.Fatalf("start-up reported a dropped table as unknown:\n%s", logs.String())
	}
	if got := countRows(t, ctx, srv.HTTPAddr(), "b"); got != 5 {
		t.Fatalf("table b has %d rows, want 5", got)
	}
}

// TestAdoptLostTable: with CATALOG.log lost for good (no copy to
// restore), `bqstore fsck --adopt ID=P:D.T` names the quarantined table
// again with the engine's schema, and the server serves its rows.
func TestAdoptLostTable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	createTables(t, dir, "a")
	srv := testkit.StartDir(t, dir)
	insertRows(t, ctx, srv.HTTPAddr(), "a", 7)
	srv.Stop(t)
	cat, err := catalog.Open(dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := cat.Table("local", "d", "a")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "CATALOG.log")); err != nil {
		t.Fatal(err)
	}

	fsck := func(args ...string) (string, int) {
		var out bytes.Buffer
		code := cli.MainEnv(ctx, append([]string{"fsck"}, args...), &cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out})
		return out.String(), code
	}
	out, code := fsck(dir)
	if code == 0 || !strings.Contains(out, "engine table "+tb.ID) || !strings.Contains(out, "--adopt "+tb.ID+"=") {
		t.Fatalf("fsck of the dir without CATALOG.log: exit %d, want the table reported with --adopt:\n%s", code, out)
	}
	// Not while a server holds the data dir.
	srv = testkit.StartDir(t, dir)
	if out, code := fsck("--adopt", tb.ID+"=local:found.a", dir); code == 0 || !strings.Contains(out, "stop the server") {
		t.Fatalf("fsck --adopt next to a running server: exit %d:\n%s", code, out)
	}
	srv.Stop(t)
	out, code = fsck("--adopt", tb.ID+"=local:found.a", dir)
	if code != 0 || !strings.Contains(out, "7 rows") {
		t.Fatalf("fsck --adopt: exit %d:\n%s", code, out)
	}
	if out, code := fsck(dir); code != 0 {
		t.Fatalf("fsck after --adopt: exit %d:\n%s", code, out)
	}
	srv = testkit.StartDir(t, dir)
	bq, err := bigquery.NewClient(ctx, "local", testkit.RESTOptions(srv.HTTPAddr())...)
	if err != nil {
		t.Fatal(err)
	}
	defer bq.Close()
	it := bq.Dataset("found").Table("a").Read(ctx)
	n := 0
	for {
		var row []bigquery.Value
		err := it.Next(&row)
		if err == iterator.Done {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 7 {
		t.Fatalf("adopted table has %d rows, want 7", n)
	}
	// It takes rows again.
	rows := []catRow{100}
	if err := bq.Dataset("found").Table("a").Inserter().Put(ctx, rows); err != nil {
		t.Fatalf("insert into the adopted table: %v", err)
	}
}

// gauge reads the value of an unlabelled gauge from reg.
func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}
