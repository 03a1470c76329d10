package catalog

import (
	"context"
	"fmt"
	"testing"

	"github.com/bqstore/bqstore/internal/schema"
)

// TestDescriptionOnlyChangeKeepsVersion: changing column descriptions does
// not copy the schema into a new version (issue 12, finding 12: 60 such
// PATCHes of a 3,000-column table grew the catalog to 195 MB); the current
// version is edited in place, the engine is not told of a schema change,
// and a real change still adds a version.
func TestDescriptionOnlyChangeKeepsVersion(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	rec := &recorder{}
	c := open(t, dir, rec)
	if _, err := c.CreateDataset(ctx, Dataset{ProjectID: "p", DatasetID: "d"}); err != nil {
		t.Fatal(err)
	}
	cols := func(desc string, extra int) *schema.Schema {
		s := &schema.Schema{}
		for i := range 100 {
			s.Fields = append(s.Fields, &schema.Field{Name: fmt.Sprintf("c%d", i), Type: "STRING", Description: desc})
		}
		s.Fields = append(s.Fields, &schema.Field{Name: "r", Type: "RECORD", Fields: []*schema.Field{{Name: "x", Type: "INTEGER", Description: desc}}})
		for i := range extra {
			s.Fields = append(s.Fields, &schema.Field{Name: fmt.Sprintf("e%d", i), Type: "STRING"})
		}
		return s
	}
	if _, err := c.CreateTable(ctx, TableSpec{ProjectID: "p", DatasetID: "d", TableID: "t", Schema: cols("", 0)}); err != nil {
		t.Fatal(err)
	}
	rec.take()
	for i := range 20 {
		tb, err := c.UpdateTable(ctx, "p", "d", "t", TablePatch{Schema: cols(fmt.Sprintf("description %d", i), 0)}, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(tb.Schemas) != 1 {
			t.Fatalf("after %d description changes: %d schema versions, want 1", i+1, len(tb.Schemas))
		}
		if got := tb.Schema().Fields[0].Description; got != fmt.Sprintf("description %d", i) {
			t.Fatalf("description %q", got)
		}
		if got := tb.Schema().Fields[100].Fields[0].Description; got != fmt.Sprintf("description %d", i) {
			t.Fatalf("nested description %q", got)
		}
	}
	if got := rec.take(); got != "" {
		t.Fatalf("observer told of a schema change for descriptions: %s", got)
	}
	// A new column is a new version.
	tb, err := c.UpdateTable(ctx, "p", "d", "t", TablePatch{Schema: cols("description 19", 1)}, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(tb.Schemas) != 2 {
		t.Fatalf("add a column: %d versions, want 2", len(tb.Schemas))
	}
	// And the in-place edit survives a reopen.
	c2 := open(t, dir, nil)
	tb2, err := c2.Table("p", "d", "t")
	if err != nil || len(tb2.Schemas) != 2 || tb2.Schemas[0].Schema.Fields[0].Description != "description 19" {
		t.Fatalf("after reopen: %+v %v", tb2, err)
	}
}
