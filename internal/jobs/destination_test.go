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

// TableSchemaChanged gives the engine the catalog's new schema versions
// (an added column), as the server's backend does.
func (o engineObserver) TableSchemaChanged(t *catalog.Table) error {
	st, err := o.db.Table(t.ID)
	if err != nil {
		return err
	}
	have, _ := st.Schema()
	for _, sv := range t.Schemas {
		if sv.Version > have {
			if err := st.SetSchema(context.Background(), sv.Version, schema.ToArrow(sv.Schema)); err != nil {
				return err
			}
		}
	}
	return nil
}

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

// TestDestinationWrittenOnce: a query with a destinationTable writes its
// rows once, to the destination (through its stage for a new or
// truncated table), not first to an anonymous table and then again from
// there: the engine appends as many rows as the result has, for every
// disposition (it appended twice as many), and the job leaves no
// anonymous table.
func TestDestinationWrittenOnce(t *testing.T) {
	const n = 5000
	s, cat, db := engineStore(t, Options{})
	fillTable(t, cat, db, "big", n)
	fillTable(t, cat, db, "app", 3)
	fillTable(t, cat, db, "trunc", 3)
	for _, c := range []struct {
		id, table, disp string
		want            int64 // rows of the destination after
	}{
		{"append", "app", WriteAppend, n + 3},
		{"truncate", "trunc", WriteTruncate, n},
		{"create", "fresh", "", n},
		{"empty", "fresh2", WriteEmpty, n},
	} {
		before := db.Metrics().AppendedRows
		dst := &TableRef{Project: "p", Dataset: "d", Table: c.table}
		if _, err := s.Insert("p", c.id, "US", Query{SQL: "SELECT x, s FROM d.big", Destination: dst, WriteDisposition: c.disp}); err != nil {
			t.Fatal(err)
		}
		j := wait(t, s, c.id)
		if j.Err != nil {
			t.Fatalf("%s: %v", c.id, j.Err)
		}
		if got := db.Metrics().AppendedRows - before; got != n {
			t.Errorf("%s: the engine appended %d rows for a result of %d", c.id, got, n)
		}
		if j.Destination != *dst || j.NumRows != n {
			t.Errorf("%s: destination %v, %d rows", c.id, j.Destination, j.NumRows)
		}
		if rows := readAll(t, s, j); int64(len(rows)) != c.want {
			t.Errorf("%s: getQueryResults reads %d rows of the destination, want %d", c.id, len(rows), c.want)
		}
		ref := anonRef("p", "US", c.id)
		if _, err := cat.Table(ref.Project, ref.Dataset, ref.Table); !errors.Is(err, catalog.ErrNotFound) {
			t.Errorf("%s: anonymous table: %v, want not found", c.id, err)
		}
	}
}
