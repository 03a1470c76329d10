package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/bqstore/bqstore/internal/schema"
)

// TestCatalogViewAndConstraintsReopen: a view's query and a table's
// tableConstraints are kept through a patch and a reopen.
func TestCatalogViewAndConstraintsReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c := open(t, dir, &recorder{})
	if _, err := c.CreateDataset(ctx, Dataset{ProjectID: "p", DatasetID: "d"}); err != nil {
		t.Fatal(err)
	}
	a := &schema.Field{Name: "a", Type: schema.Integer}
	pk := json.RawMessage(`{"primaryKey":{"columns":["a"]}}`)
	if _, err := c.CreateTable(ctx, TableSpec{ProjectID: "p", DatasetID: "d", TableID: "t", Schema: sch(t, a), TableConstraints: pk}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTable(ctx, TableSpec{ProjectID: "p", DatasetID: "d", TableID: "v", Schema: sch(t, a), View: &View{Query: "SELECT a FROM d.t"}}); err != nil {
		t.Fatal(err)
	}
	desc := "x"
	if _, err := c.UpdateTable(ctx, "p", "d", "v", TablePatch{Description: &desc}, ""); err != nil {
		t.Fatal(err)
	}
	c2 := open(t, dir, &recorder{})
	tb, err := c2.Table("p", "d", "t")
	if err != nil || string(tb.TableConstraints) != string(pk) || tb.View != nil {
		t.Fatalf("table after reopen: %+v %v", tb, err)
	}
	v, err := c2.Table("p", "d", "v")
	if err != nil || v.View == nil || v.View.Query != "SELECT a FROM d.t" || v.Description != "x" {
		t.Fatalf("view after reopen: %+v %v", v, err)
	}
	empty := json.RawMessage{}
	if tb, err = c2.UpdateTable(ctx, "p", "d", "t", TablePatch{TableConstraints: &empty}, ""); err != nil || tb.TableConstraints != nil {
		t.Fatalf("constraints cleared: %+v %v", tb, err)
	}
}

// TestCatalogViewRedefineReopen: a patch with a new view definition
// replaces the view's query and its schema outright (a column dropped, a
// type changed: no evolution rule applies to a view, which stores no
// rows), in place of the last schema version, without telling the engine;
// it is durable through a reopen. A table does not take a view
// definition.
func TestCatalogViewRedefineReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	rec := &recorder{}
	c := open(t, dir, rec)
	if _, err := c.CreateDataset(ctx, Dataset{ProjectID: "p", DatasetID: "d"}); err != nil {
		t.Fatal(err)
	}
	a := &schema.Field{Name: "a", Type: schema.Integer}
	b := &schema.Field{Name: "b", Type: schema.String}
	if _, err := c.CreateTable(ctx, TableSpec{ProjectID: "p", DatasetID: "d", TableID: "t", Schema: sch(t, a, b)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTable(ctx, TableSpec{ProjectID: "p", DatasetID: "d", TableID: "v", Schema: sch(t, a, b), View: &View{Query: "SELECT a, b FROM d.t"}}); err != nil {
		t.Fatal(err)
	}
	rec.take()
	b2 := &schema.Field{Name: "b", Type: schema.Integer}
	v, err := c.UpdateTable(ctx, "p", "d", "v", TablePatch{View: &View{Query: "SELECT LENGTH(b) AS b FROM d.t"}, Schema: sch(t, b2)}, "")
	if err != nil {
		t.Fatal(err)
	}
	if v.View.Query != "SELECT LENGTH(b) AS b FROM d.t" || len(v.Schemas) != 1 || len(v.Schema().Fields) != 1 || v.Schema().Fields[0].Type != schema.Integer {
		t.Fatalf("view after the patch: %+v", v)
	}
	if ev := rec.take(); ev != "" {
		t.Fatalf("the engine was told %q about a view's new definition", ev)
	}
	if _, err := c.UpdateTable(ctx, "p", "d", "t", TablePatch{View: &View{Query: "SELECT 1 AS a"}, Schema: sch(t, a)}, ""); !errors.Is(err, ErrInvalid) {
		t.Fatalf("view definition on a table: %v, want ErrInvalid", err)
	}
	c2 := open(t, dir, &recorder{})
	v, err = c2.Table("p", "d", "v")
	if err != nil || v.View == nil || v.View.Query != "SELECT LENGTH(b) AS b FROM d.t" || len(v.Schema().Fields) != 1 || v.Schema().Fields[0].Type != schema.Integer {
		t.Fatalf("view after reopen: %+v %v", v, err)
	}
	if tb, err := c2.Table("p", "d", "t"); err != nil || tb.View != nil || len(tb.Schema().Fields) != 2 {
		t.Fatalf("table after reopen: %+v %v", tb, err)
	}
}
