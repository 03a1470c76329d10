package catalog

import (
	"context"
	"testing"
	"time"
)

// TestMoveTable: a staged table moved over an existing one takes its
// name in one change (the old one tombstoned, the observer told of its
// drop only: the moved table keeps its id and storage), the move is in
// the log and survives a reopen, and a move without Replace onto a taken
// name, or into a missing dataset, is refused.
func TestMoveTable(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	rec := &recorder{}
	c := open(t, dir, rec)
	for _, ds := range []Dataset{{ProjectID: "p", DatasetID: "d", Location: "EU"}, {ProjectID: "p", DatasetID: "_stage", Location: "US", DefaultTableExpirationMs: 1000}} {
		if _, err := c.CreateDataset(ctx, ds); err != nil {
			t.Fatal(err)
		}
	}
	old, err := c.CreateTable(ctx, TableSpec{ProjectID: "p", DatasetID: "d", TableID: "t", Schema: cols(1, "")})
	if err != nil {
		t.Fatal(err)
	}
	staged, err := c.CreateTable(ctx, TableSpec{ProjectID: "p", DatasetID: "_stage", TableID: "s", Schema: cols(3, ""), Description: "new"})
	if err != nil {
		t.Fatal(err)
	}
	if staged.Expiration.IsZero() {
		t.Fatal("staged table has no expiration (the staging dataset's default)")
	}
	rec.take()
	_, err = c.MoveTable(ctx, "p", "_stage", "s", TableName{"p", "d", "t"}, MoveSpec{})
	wantKind(t, err, ErrExists, "Already Exists: Table p:d.t")
	// A replace conditional on another etag, or on a missing table,
	// changes nothing.
	_, err = c.MoveTable(ctx, "p", "_stage", "s", TableName{"p", "d", "t"}, MoveSpec{Replace: true, IfMatch: old.ETag + "x"})
	wantKind(t, err, ErrPrecondition, "Precondition check failed: table p:d.t changed")
	_, err = c.MoveTable(ctx, "p", "_stage", "s", TableName{"p", "d", "nope"}, MoveSpec{Replace: true, IfMatch: old.ETag})
	wantKind(t, err, ErrPrecondition, "Precondition check failed: table p:d.nope changed")
	if ev := rec.take(); ev != "" {
		t.Fatalf("observer after refused moves: %q", ev)
	}
	moved, err := c.MoveTable(ctx, "p", "_stage", "s", TableName{"p", "d", "t"}, MoveSpec{Replace: true, IfMatch: old.ETag})
	if err != nil {
		t.Fatal(err)
	}
	if ev := rec.take(); ev != "dropped p:d.t v1" {
		t.Fatalf("observer: %q, want the old table's drop only", ev)
	}
	if moved.ID != staged.ID || moved.Location != "EU" || moved.Description != "new" || !moved.Expiration.IsZero() || len(moved.Schema().Fields) != 3 {
		t.Fatalf("moved table %+v", moved)
	}
	check := func(c *Catalog) {
		t.Helper()
		got, err := c.Table("p", "d", "t")
		if err != nil || got.ID != staged.ID {
			t.Fatalf("p:d.t after the move: %+v %v, want id %s", got, err, staged.ID)
		}
		if _, err := c.Table("p", "_stage", "s"); err == nil {
			t.Fatal("the staged name still names a table")
		}
		if !c.Dropped(old.ID) {
			t.Fatal("the replaced table has no tombstone")
		}
	}
	check(c)
	check(open(t, dir, nil)) // replayed from the log

	// A rename (no replace) keeps the expiration given.
	exp := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := c.MoveTable(ctx, "p", "d", "t", TableName{"p", "d", "u"}, MoveSpec{Expiration: &exp}); err != nil {
		t.Fatal(err)
	}
	if u, err := c.Table("p", "d", "u"); err != nil || !u.Expiration.Equal(exp) || u.ID != staged.ID {
		t.Fatalf("renamed: %+v %v", u, err)
	}
	if _, err := c.Table("p", "d", "t"); err == nil {
		t.Fatal("old name still resolves after the rename")
	}
	if _, err := c.CreateTable(ctx, TableSpec{ProjectID: "p", DatasetID: "_stage", TableID: "v", View: &View{Query: "SELECT 1"}, Schema: cols(1, "")}); err != nil {
		t.Fatal(err)
	}
	_, err = c.MoveTable(ctx, "p", "_stage", "v", TableName{"p", "nope", "u"}, MoveSpec{Replace: true})
	wantKind(t, err, ErrNotFound, "Not found: Dataset p:nope")
	if got, want := doc(t, open(t, dir, nil)), doc(t, c); got != want {
		t.Fatalf("reopened\n%s\nwant\n%s", got, want)
	}
}
