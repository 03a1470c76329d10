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

// TestWriteEmptyRaceInsert: an INSERT commits into a WRITE_EMPTY job's
// destination between the job's check (empty) and its commit: the job
// fails (duplicate) and the table holds the INSERT's row only.
func TestWriteEmptyRaceInsert(t *testing.T) {
	s, cat := newEngineStore(t)
	fillTable(t, cat, s.opts.DB, "src", 3)
	fillTable(t, cat, s.opts.DB, "dst", 0)
	dest := TableRef{Project: "p", Dataset: "d", Table: "dst"}
	ran := false
	s.opts.rowsCommit = func(after bool) error {
		if after || ran {
			return nil
		}
		ran = true
		mustRun(t, s, "ins", "INSERT INTO d.dst (x, s) VALUES (7, 'x')")
		return nil
	}
	j := runJob(t, s, "we", Query{SQL: "SELECT x, s FROM d.src", DefaultProject: "p", Destination: &dest, WriteDisposition: WriteEmpty})
	var de *DestinationError
	if !errors.As(j.Err, &de) || de.Reason != "duplicate" {
		t.Fatalf("WRITE_EMPTY job: %v, want a duplicate DestinationError", j.Err)
	}
	if n := tableRows(t, s, cat, "dst"); n != 1 {
		t.Fatalf("dst has %d rows, want 1", n)
	}
}
