package jobs

import (
	"context"
	"errors"

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
