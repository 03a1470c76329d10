package catalog

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// failCreate is an observer whose TableCreated fails (the engine could
// not create the table's storage).
type failCreate struct{}

func (failCreate) TableCreated(*Table) error       { return errors.New("engine: no space") }
func (failCreate) TableSchemaChanged(*Table) error { return nil }
func (failCreate) TableDropped(*Table) error       { return nil }

// TestDroppedTablesTombstoned: every way a table leaves the catalog
// (delete, dataset delete with contents, a create rolled back) leaves its
// internal id tombstoned, through the log and through checkpoints, so
// that start-up can tell an interrupted drop (finish it) from a table the
// catalog lost (keep it); Options.StorageGone lets a checkpoint forget
// the tombstones whose drop is durable.
func TestDroppedTablesTombstoned(t *testing.T) {
	ctx := context.Background()
	for _, ckpt := range []int64{1 << 20, 1} { // log only; a checkpoint at every change
		dir := t.TempDir()
		c, err := Open(dir, Options{checkpointBytes: ckpt})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.CreateDataset(ctx, Dataset{ProjectID: "p", DatasetID: "d"}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.CreateDataset(ctx, Dataset{ProjectID: "p", DatasetID: "e"}); err != nil {
			t.Fatal(err)
		}
		mk := func(d, name string) *Table {
			tb, err := c.CreateTable(ctx, TableSpec{ProjectID: "p", DatasetID: d, TableID: name, Schema: cols(2, "")})
			if err != nil {
				t.Fatal(err)
			}
			return tb
		}
		a, b, keep := mk("d", "a"), mk("e", "b"), mk("d", "keep")
		if err := c.DeleteTable(ctx, "p", "d", "a"); err != nil {
			t.Fatal(err)
		}
		if err := c.DeleteDataset(ctx, "p", "e", true); err != nil {
			t.Fatal(err)
		}
		c.opts.Observer = failCreate{}
		if _, err := c.CreateTable(ctx, TableSpec{ProjectID: "p", DatasetID: "d", TableID: "rolled", Schema: cols(1, "")}); err == nil {
			t.Fatal("create with a failing observer succeeded")
		}
		c.opts.Observer = nil
		var rolled string
		for id := range c.current().dropped {
			if id != a.ID && id != b.ID {
				rolled = id
			}
		}
		if rolled == "" {
			t.Fatal("the rolled-back create left no tombstone")
		}
		check := func(c *Catalog, what string) {
			t.Helper()
			for _, id := range []string{a.ID, b.ID, rolled} {
				if !c.Dropped(id) {
					t.Errorf("checkpointBytes=%d, %s: id %s not tombstoned", ckpt, what, id)
				}
			}
			if c.Dropped(keep.ID) {
				t.Errorf("checkpointBytes=%d, %s: live table tombstoned", ckpt, what)
			}
		}
		check(c, "before reopen")
		c, err = Open(dir, Options{checkpointBytes: ckpt})
		if err != nil {
			t.Fatal(err)
		}
		check(c, "after reopen")

		// The engine's drop of a is durable: the next checkpoint
		// forgets its tombstone, and only its.
		c, err = Open(dir, Options{checkpointBytes: 1, StorageGone: func(id string) bool { return id == a.ID }})
		if err != nil {
			t.Fatal(err)
		}
		// Changes until the log outgrows the checkpoint and one is
		// written.
		for i := 0; i < 100 && c.Dropped(a.ID); i++ {
			if err := c.EnsureProject(ctx, fmt.Sprintf("q%d", i)); err != nil {
				t.Fatal(err)
			}
		}
		if c.Dropped(a.ID) {
			t.Errorf("checkpointBytes=%d: tombstone of a kept after a checkpoint whose StorageGone says its storage is gone", ckpt)
		}
		c, err = Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if c.Dropped(a.ID) || !c.Dropped(b.ID) || !c.Dropped(rolled) {
			t.Errorf("checkpointBytes=%d: after the pruning checkpoint: a %v, b %v, rolled %v; want false, true, true", ckpt, c.Dropped(a.ID), c.Dropped(b.ID), c.Dropped(rolled))
		}
	}
}

// TestAdoptTable: a lost table is named again under its internal id with
// the engine's schema version count (durably); an id the catalog names or
// deleted is refused.
func TestAdoptTable(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateDataset(ctx, Dataset{ProjectID: "p", DatasetID: "d"}); err != nil {
		t.Fatal(err)
	}
	live, err := c.CreateTable(ctx, TableSpec{ProjectID: "p", DatasetID: "d", TableID: "live", Schema: cols(1, "")})
	if err != nil {
		t.Fatal(err)
	}
	gone, err := c.CreateTable(ctx, TableSpec{ProjectID: "p", DatasetID: "d", TableID: "gone", Schema: cols(1, "")})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteTable(ctx, "p", "d", "gone"); err != nil {
		t.Fatal(err)
	}
	spec := TableSpec{ProjectID: "p", DatasetID: "d", TableID: "found", Schema: cols(3, "")}
	if _, err := c.AdoptTable(ctx, spec, live.ID, 1); !errors.Is(err, ErrExists) {
		t.Errorf("adopt a live id: %v, want ErrExists", err)
	}
	if _, err := c.AdoptTable(ctx, spec, gone.ID, 1); !errors.Is(err, ErrInvalid) {
		t.Errorf("adopt a deleted id: %v, want ErrInvalid", err)
	}
	const lost = "00112233445566778899aabbccddeeff"
	if _, err := c.AdoptTable(ctx, TableSpec{ProjectID: "p", DatasetID: "nope", TableID: "x", Schema: cols(1, "")}, lost, 1); !errors.Is(err, ErrNotFound) {
		t.Errorf("adopt into a missing dataset: %v, want ErrNotFound", err)
	}
	if _, err := c.AdoptTable(ctx, spec, lost, 3); err != nil {
		t.Fatal(err)
	}
	c, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := c.TableByID(lost)
	if err != nil {
		t.Fatal(err)
	}
	if tb.FullID() != "p:d.found" || len(tb.Schemas) != 3 || len(tb.Schema().Fields) != 3 {
		t.Fatalf("adopted table after reopen: %s, %d versions, %d columns", tb.FullID(), len(tb.Schemas), len(tb.Schema().Fields))
	}
}
