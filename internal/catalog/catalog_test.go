package catalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bqstore/bqstore/internal/schema"
)

// fakeClock is a clock that moves one second per reading.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

func newClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

// recorder is an Observer that records calls and can fail on demand.
type recorder struct {
	mu     sync.Mutex
	events []string
	fail   error
}

func (r *recorder) add(ev string, t *Table) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, fmt.Sprintf("%s %s v%d", ev, t.FullID(), len(t.Schemas)))
	return r.fail
}

func (r *recorder) TableCreated(t *Table) error       { return r.add("created", t) }
func (r *recorder) TableSchemaChanged(t *Table) error { return r.add("altered", t) }
func (r *recorder) TableDropped(t *Table) error       { return r.add("dropped", t) }

func (r *recorder) take() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := strings.Join(r.events, "; ")
	r.events = nil
	return s
}

func sch(t testing.TB, fields ...*schema.Field) *schema.Schema {
	t.Helper()
	return &schema.Schema{Fields: fields}
}

func open(t testing.TB, dir string, o Observer) *Catalog {
	t.Helper()
	c, err := Open(dir, Options{Now: newClock().Now, Observer: o})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func wantKind(t *testing.T, err, kind error, msg string) {
	t.Helper()
	var ce *Error
	if !errors.Is(err, kind) || !errors.As(err, &ce) {
		t.Fatalf("got %v, want %v", err, kind)
	}
	if msg != "" && !strings.Contains(ce.Msg, msg) {
		t.Fatalf("message %q does not contain %q", ce.Msg, msg)
	}
}

func TestCatalogLifecycleAndReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	rec := &recorder{}
	c := open(t, dir, rec)

	ds, err := c.CreateDataset(ctx, Dataset{ProjectID: "p", DatasetID: "d", Description: "x", Labels: map[string]string{"env": "dev"}})
	if err != nil {
		t.Fatal(err)
	}
	if ds.Location != "US" || ds.ETag == "" || ds.Created.IsZero() || ds.FullID() != "p:d" {
		t.Fatalf("dataset %+v", ds)
	}
	_, err = c.CreateDataset(ctx, Dataset{ProjectID: "p", DatasetID: "d"})
	wantKind(t, err, ErrExists, "Already Exists: Dataset p:d")

	tb, err := c.CreateTable(ctx, TableSpec{ProjectID: "p", DatasetID: "d", TableID: "t 1", Schema: sch(t, &schema.Field{Name: "a", Type: "INT64"})})
	if err != nil {
		t.Fatal(err)
	}
	if len(tb.ID) != 32 || tb.Schema().Fields[0].Type != schema.Integer || tb.Schema().Fields[0].Mode != schema.Nullable || tb.Location != "US" {
		t.Fatalf("table %+v", tb)
	}
	if got := rec.take(); got != "created p:d.t 1 v1" {
		t.Fatalf("observer: %s", got)
	}
	_, err = c.CreateTable(ctx, TableSpec{ProjectID: "p", DatasetID: "d", TableID: "t 1"})
	wantKind(t, err, ErrExists, "Already Exists: Table p:d.t 1")
	_, err = c.CreateTable(ctx, TableSpec{ProjectID: "p", DatasetID: "nope", TableID: "t"})
	wantKind(t, err, ErrNotFound, "Not found: Dataset p:nope")

	// Evolve: add a column; stale etag; illegal change.
	_, err = c.UpdateTable(ctx, "p", "d", "t 1", TablePatch{Schema: sch(t, &schema.Field{Name: "a", Type: "INTEGER"}, &schema.Field{Name: "b", Type: "STRING"})}, "stale")
	wantKind(t, err, ErrPrecondition, "Precondition")
	up, err := c.UpdateTable(ctx, "p", "d", "t 1", TablePatch{Schema: sch(t, &schema.Field{Name: "a", Type: "INTEGER"}, &schema.Field{Name: "b", Type: "STRING"})}, tb.ETag)
	if err != nil {
		t.Fatal(err)
	}
	if up.ETag == tb.ETag || !up.Modified.After(tb.Modified) || len(up.Schemas) != 2 || up.Schemas[1].Version != 2 {
		t.Fatalf("update %+v", up)
	}
	if got := rec.take(); got != "altered p:d.t 1 v2" {
		t.Fatalf("observer: %s", got)
	}
	_, err = c.UpdateTable(ctx, "p", "d", "t 1", TablePatch{Schema: sch(t, &schema.Field{Name: "a", Type: "STRING"})}, "")
	wantKind(t, err, ErrInvalid, "Provided Schema does not match Table p:d.t 1. Field a has changed type")
	// A metadata-only update does not add a schema version.
	desc := "described"
	up2, err := c.UpdateTable(ctx, "p", "d", "t 1", TablePatch{Description: &desc, Schema: up.Schema()}, "")
	if err != nil || len(up2.Schemas) != 2 || up2.Description != desc || up2.ETag == up.ETag {
		t.Fatalf("update2 %+v %v", up2, err)
	}
	if got := rec.take(); got != "" {
		t.Fatalf("observer called for a metadata change: %s", got)
	}
	if v := up2.SchemaAt(up.Schemas[1].Time.Add(-time.Millisecond)); v.Version != 1 {
		t.Fatalf("SchemaAt before the change = v%d", v.Version)
	}
	if v := up2.SchemaAt(up.Schemas[1].Time); v.Version != 2 {
		t.Fatalf("SchemaAt the change = v%d", v.Version)
	}

	// Reopen: everything is there, including the schema history.
	c2 := open(t, dir, nil)
	got, err := c2.Table("p", "d", "t 1")
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != tb.ID || got.ETag != up2.ETag || len(got.Schemas) != 2 || got.Description != desc ||
		!got.Created.Equal(tb.Created) || !got.Schemas[1].Time.Equal(up.Schemas[1].Time) || got.Schema().Fields[1].Name != "b" {
		t.Fatalf("after reopen %+v", got)
	}
	if byID, err := c2.TableByID(tb.ID); err != nil || byID.TableID != "t 1" {
		t.Fatalf("TableByID %v %v", byID, err)
	}
	if ds2, err := c2.Dataset("p", "d"); err != nil || ds2.Labels["env"] != "dev" || ds2.ETag != ds.ETag {
		t.Fatalf("dataset after reopen %+v %v", ds2, err)
	}
	if ps := c2.Projects(); len(ps) != 1 || ps[0].ID != "p" {
		t.Fatalf("projects %v", ps)
	}

	// Delete: dataset in use, then with contents.
	err = c.DeleteDataset(ctx, "p", "d", false)
	wantKind(t, err, ErrInUse, "Dataset p:d is still in use")
	if err := c.DeleteDataset(ctx, "p", "d", true); err != nil {
		t.Fatal(err)
	}
	if got := rec.take(); got != "dropped p:d.t 1 v2" {
		t.Fatalf("observer: %s", got)
	}
	_, err = c.Table("p", "d", "t 1")
	wantKind(t, err, ErrNotFound, "Not found: Dataset p:d")
	c3 := open(t, dir, nil)
	if n := len(c3.Tables()); n != 0 {
		t.Fatalf("%d tables after delete and reopen", n)
	}
	if _, err := c3.Dataset("p", "d"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("dataset after delete: %v", err)
	}
}

func TestCatalogNames(t *testing.T) {
	ctx := context.Background()
	c := open(t, t.TempDir(), nil)
	for _, p := range []string{"", "UPPER", "1abc", "a_b", "ends-", "../x", "a\x00", strings.Repeat("a", 31), "exa mple.com:p", ":p"} {
		_, err := c.CreateDataset(ctx, Dataset{ProjectID: p, DatasetID: "d"})
		wantKind(t, err, ErrInvalid, "Invalid project ID")
	}
	for _, p := range []string{"p", "local", "my-project-123", "example.com:my-project"} {
		if err := c.EnsureProject(ctx, p); err != nil {
			t.Errorf("project %q: %v", p, err)
		}
	}
	for _, d := range []string{"", "a-b", "../x", "a.b", "d\x00", "ä", strings.Repeat("a", 1025)} {
		_, err := c.CreateDataset(ctx, Dataset{ProjectID: "p", DatasetID: d})
		wantKind(t, err, ErrInvalid, "Invalid dataset ID")
	}
	if _, err := c.CreateDataset(ctx, Dataset{ProjectID: "p", DatasetID: strings.Repeat("A", 1024)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateDataset(ctx, Dataset{ProjectID: "p", DatasetID: "d"}); err != nil {
		t.Fatal(err)
	}
	for _, tn := range []string{"", "../x", "a/b", "a.b", "t\x00", "t$20240101", "t*", strings.Repeat("é", 513)} {
		_, err := c.CreateTable(ctx, TableSpec{ProjectID: "p", DatasetID: "d", TableID: tn})
		wantKind(t, err, ErrInvalid, "Invalid table ID")
	}
	for _, tn := range []string{"t", "with space", "dash-ed", "ünïcödé_表", strings.Repeat("é", 512)} {
		if _, err := c.CreateTable(ctx, TableSpec{ProjectID: "p", DatasetID: "d", TableID: tn}); err != nil {
			t.Errorf("table %q: %v", tn, err)
		}
	}
	// Bad labels and schemas.
	_, err := c.CreateDataset(ctx, Dataset{ProjectID: "p", DatasetID: "l", Labels: map[string]string{"Bad": "x"}})
	wantKind(t, err, ErrInvalid, "Invalid label key")
	_, err = c.CreateTable(ctx, TableSpec{ProjectID: "p", DatasetID: "d", TableID: "s", Schema: sch(t, &schema.Field{Name: "a", Type: "NOPE"})})
	wantKind(t, err, ErrInvalid, `invalid type "NOPE"`)
	_, err = c.CreateTable(ctx, TableSpec{ProjectID: "p", DatasetID: "d", TableID: "long", Description: strings.Repeat("é", MaxDescriptionLen+1)})
	wantKind(t, err, ErrInvalid, "description is longer")
	long := strings.Repeat("x", MaxDescriptionLen+1)
	_, err = c.PatchDataset(ctx, "p", "d", DatasetPatch{FriendlyName: &long}, "")
	wantKind(t, err, ErrInvalid, "friendly name is longer")
	// An error message does not echo a huge name in full.
	_, err = c.CreateDataset(ctx, Dataset{ProjectID: "p", DatasetID: strings.Repeat("\x00", 1<<20)})
	if err == nil || len(err.Error()) > 1024 {
		t.Fatalf("error for a huge name: %d bytes", len(err.Error()))
	}
}

func TestCatalogPatch(t *testing.T) {
	ctx := context.Background()
	c := open(t, t.TempDir(), nil)
	if _, err := c.CreateDataset(ctx, Dataset{ProjectID: "p", DatasetID: "d", Location: "EU"}); err != nil {
		t.Fatal(err)
	}
	exp := time.Date(2030, 1, 1, 0, 0, 0, 123456789, time.UTC)
	tb, err := c.CreateTable(ctx, TableSpec{ProjectID: "p", DatasetID: "d", TableID: "t", Labels: map[string]string{"a": "1", "b": "2"}, Expiration: exp})
	if err != nil {
		t.Fatal(err)
	}
	if tb.Location != "EU" || !tb.Expiration.Equal(exp.Truncate(time.Millisecond)) {
		t.Fatalf("table %+v", tb)
	}
	three := "3"
	var zero time.Time
	up, err := c.UpdateTable(ctx, "p", "d", "t", TablePatch{Labels: map[string]*string{"a": nil, "c": &three}, Expiration: &zero}, "")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(up.Labels) != "map[b:2 c:3]" || !up.Expiration.IsZero() {
		t.Fatalf("patched %+v", up)
	}
	up, err = c.UpdateTable(ctx, "p", "d", "t", TablePatch{Labels: map[string]*string{"z": &three}, ReplaceLabels: true}, up.ETag)
	if err != nil || fmt.Sprint(up.Labels) != "map[z:3]" {
		t.Fatalf("replaced %+v %v", up, err)
	}
	us := "US"
	_, err = c.PatchDataset(ctx, "p", "d", DatasetPatch{Location: &us}, "")
	wantKind(t, err, ErrInvalid, "Cannot change location")
	ds, _ := c.Dataset("p", "d")
	_, err = c.PatchDataset(ctx, "p", "d", DatasetPatch{Description: &three}, "stale")
	wantKind(t, err, ErrPrecondition, "")
	ds2, err := c.PatchDataset(ctx, "p", "d", DatasetPatch{Description: &three}, ds.ETag)
	if err != nil || ds2.Description != "3" || ds2.ETag == ds.ETag {
		t.Fatalf("patched dataset %+v %v", ds2, err)
	}
	day := int64(24 * time.Hour / time.Millisecond)
	if _, err := c.PatchDataset(ctx, "p", "d", DatasetPatch{DefaultTableExpirationMs: &day}, ""); err != nil {
		t.Fatal(err)
	}
	dt, err := c.CreateTable(ctx, TableSpec{ProjectID: "p", DatasetID: "d", TableID: "defaulted"})
	if err != nil || !dt.Expiration.Equal(dt.Created.Add(24*time.Hour)) {
		t.Fatalf("default expiration: %+v %v", dt, err)
	}
	_, err = c.UpdateTable(ctx, "p", "d", "nope", TablePatch{}, "")
	wantKind(t, err, ErrNotFound, "Not found: Table p:d.nope")
	err = c.DeleteTable(ctx, "p", "d", "nope")
	wantKind(t, err, ErrNotFound, "Not found: Table p:d.nope")
	if err := c.DeleteTable(ctx, "p", "d", "t"); err != nil {
		t.Fatal(err)
	}
	if l, err := c.ListTables("p", "d"); err != nil || len(l) != 1 {
		t.Fatalf("list %v %v", l, err)
	}
}

// failFS fails every write once armed.
type failFS struct {
	osFS
	armed bool
}

func (f *failFS) WriteFileSync(name string, data []byte) error {
	if f.armed {
		return errors.New("injected write failure")
	}
	return f.osFS.WriteFileSync(name, data)
}

func (f *failFS) AppendSync(name string, data []byte) error {
	if f.armed {
		return errors.New("injected write failure")
	}
	return f.osFS.AppendSync(name, data)
}

func TestCatalogWriteFailureChangesNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	fsys := &failFS{}
	rec := &recorder{}
	c, err := Open(dir, Options{FS: fsys, Observer: rec})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateDataset(ctx, Dataset{ProjectID: "p", DatasetID: "d"}); err != nil {
		t.Fatal(err)
	}
	fsys.armed = true
	if _, err := c.CreateTable(ctx, TableSpec{ProjectID: "p", DatasetID: "d", TableID: "t"}); err == nil {
		t.Fatal("create succeeded with a failing disk")
	}
	if _, err := c.Table("p", "d", "t"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("table visible after a failed write: %v", err)
	}
	if got := rec.take(); got != "" {
		t.Fatalf("observer told about an undurable change: %s", got)
	}
}

func TestCatalogObserverFailureRollsBackCreate(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	rec := &recorder{}
	c := open(t, dir, rec)
	if _, err := c.CreateDataset(ctx, Dataset{ProjectID: "p", DatasetID: "d"}); err != nil {
		t.Fatal(err)
	}
	rec.fail = errors.New("engine says no")
	if _, err := c.CreateTable(ctx, TableSpec{ProjectID: "p", DatasetID: "d", TableID: "t"}); err == nil || !strings.Contains(err.Error(), "engine says no") {
		t.Fatalf("got %v", err)
	}
	if _, err := open(t, dir, nil).Table("p", "d", "t"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("rolled-back table present after reopen: %v", err)
	}
}

func TestCatalogCorruption(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c := open(t, dir, nil)
	if _, err := c.CreateDataset(ctx, Dataset{ProjectID: "p", DatasetID: "d", Description: "<&>"}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, fileName)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// A leftover temp file is ignored.
	if err := os.WriteFile(filepath.Join(dir, tmpFileName), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{}); err != nil {
		t.Fatalf("open with a leftover temp file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, tmpFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temp file not removed: %v", err)
	}
	for name, mutate := range map[string]func([]byte) []byte{
		"flipped byte": func(b []byte) []byte { return bytes.Replace(b, []byte(`"d"`), []byte(`"e"`), 1) },
		"truncated":    func(b []byte) []byte { return b[:len(b)/2] },
		"format":       func(b []byte) []byte { return bytes.Replace(b, []byte(`"format":2`), []byte(`"format":9`), 1) },
		"empty":        func([]byte) []byte { return nil },
	} {
		if err := os.WriteFile(path, mutate(bytes.Clone(b)), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(dir, Options{}); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: got %v, want ErrCorrupt", name, err)
		}
	}
}

func TestCatalogConcurrent(t *testing.T) {
	ctx := context.Background()
	c := open(t, t.TempDir(), nil)
	if _, err := c.CreateDataset(ctx, Dataset{ProjectID: "p", DatasetID: "d"}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("t%d", i)
			if _, err := c.CreateTable(ctx, TableSpec{ProjectID: "p", DatasetID: "d", TableID: name}); err != nil {
				t.Error(err)
				return
			}
			c.ListTables("p", "d")
			if _, err := c.Table("p", "d", name); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if l, _ := c.ListTables("p", "d"); len(l) != 8 {
		t.Fatalf("%d tables", len(l))
	}
}
