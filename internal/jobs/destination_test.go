package jobs

import (
	"context"
	"errors"
	"testing"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/storage"
)

// engineObserver creates and drops the catalog's tables in db, as the
// server's backend does (first schema version only).
type engineObserver struct{ db *storage.DB }

func (o engineObserver) TableCreated(t *catalog.Table) error {
	_, err := o.db.CreateTable(context.Background(), t.ID, schema.ToArrow(t.Schemas[0].Schema))
	return err
}

func (o engineObserver) TableSchemaChanged(*catalog.Table) error { return nil }

func (o engineObserver) TableDropped(t *catalog.Table) error {
	err := o.db.DropTable(context.Background(), t.ID)
	if errors.Is(err, storage.ErrTableNotFound) {
		return nil
	}
	return err
}

// TestTruncateNotStoppedAfterDrop: a WRITE_TRUNCATE job cancelled right
// after it dropped its destination still writes the new rows (it ends
// DONE with the table holding them); before, the cancel stopped it after
// the drop and the table was gone, old rows and new.
func TestTruncateNotStoppedAfterDrop(t *testing.T) {
	ctx := context.Background()
	db, err := storage.Open(t.TempDir(), &storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cat, err := catalog.Open(t.TempDir(), catalog.Options{Observer: engineObserver{db}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cat.CreateDataset(ctx, catalog.Dataset{ProjectID: "p", DatasetID: "d", Location: "US"}); err != nil {
		t.Fatal(err)
	}
	var s *Store
	s = New(cat, Options{DB: db, afterTruncateDrop: func() {
		if _, err := s.Cancel("p", "trunc"); err != nil {
			t.Error(err)
		}
	}})
	defer s.Close()
	dest := &TableRef{Project: "p", Dataset: "d", Table: "t"}
	if _, err := s.Insert("p", "first", "US", Query{SQL: "SELECT 1 AS x", Destination: dest, WriteDisposition: WriteAppend}); err != nil {
		t.Fatal(err)
	}
	if j := wait(t, s, "first"); j.Err != nil {
		t.Fatal(j.Err)
	}
	if _, err := s.Insert("p", "trunc", "US", Query{SQL: "SELECT 2 AS x UNION ALL SELECT 3", Destination: dest, WriteDisposition: WriteTruncate}); err != nil {
		t.Fatal(err)
	}
	if j := wait(t, s, "trunc"); j.Err != nil {
		t.Fatalf("truncate cancelled after the drop: %v, want it to finish", j.Err)
	}
	ct, err := cat.Table("p", "d", "t")
	if err != nil {
		t.Fatalf("destination after the truncate: %v", err)
	}
	if n, err := s.numRows(ct); err != nil || n != 2 {
		t.Fatalf("destination rows: %d %v, want 2", n, err)
	}
}
