package catalog

import (
	"context"
	"encoding/json"
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
