package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/storage"
)

// backend joins the catalog (names, schemas) and the storage engine (rows):
// it is the catalog's observer, keeping the engine's tables in step with
// the catalog, and it resolves table names for the API services.
//
// Crash consistency: the catalog change is durable before the observer
// runs, so a crash between the two leaves the engine behind the catalog;
// reconcile, run at start-up, repairs that in the catalog's favour.
type backend struct {
	cat *catalog.Catalog // set after catalog.Open (the observer is registered before)
	db  *storage.DB
}

var _ catalog.Observer = (*backend)(nil)

func (b *backend) TableCreated(t *catalog.Table) error {
	ctx := context.Background()
	tbl, err := b.db.CreateTable(ctx, t.ID, schema.ToArrow(t.Schemas[0].Schema))
	if err != nil {
		return err
	}
	return b.syncSchemas(ctx, tbl, t)
}

func (b *backend) TableSchemaChanged(t *catalog.Table) error {
	tbl, err := b.db.Table(t.ID)
	if err != nil {
		return err
	}
	return b.syncSchemas(context.Background(), tbl, t)
}

func (b *backend) TableDropped(t *catalog.Table) error {
	err := b.db.DropTable(context.Background(), t.ID)
	if errors.Is(err, storage.ErrTableNotFound) {
		return nil
	}
	return err
}

// syncSchemas applies the catalog's schema versions the engine lacks.
func (b *backend) syncSchemas(ctx context.Context, tbl *storage.Table, t *catalog.Table) error {
	have, _ := tbl.Schema()
	for _, sv := range t.Schemas {
		if sv.Version <= have {
			continue
		}
		if err := tbl.SetSchema(ctx, sv.Version, schema.ToArrow(sv.Schema)); err != nil {
			return fmt.Errorf("table %s schema version %d: %w", t.FullID(), sv.Version, err)
		}
	}
	return nil
}

// reconcile makes the engine's tables match the catalog after a crash:
// tables the catalog has are created or brought to the latest schema;
// tables it no longer has are dropped (a crash between the catalog's
// delete and the engine's). Quarantined tables are left alone.
func (b *backend) reconcile(ctx context.Context) error {
	want := make(map[string]bool)
	for _, t := range b.cat.Tables() {
		want[t.ID] = true
		tbl, err := b.db.Table(t.ID)
		if errors.Is(err, storage.ErrTableNotFound) {
			if err := b.TableCreated(t); err != nil {
				return fmt.Errorf("reconcile: create %s: %w", t.FullID(), err)
			}
			continue
		}
		if errors.Is(err, storage.ErrQuarantined) {
			// Its files failed recovery: its calls fail naming file
			// and offset; the rest of the server serves.
			continue
		}
		if err != nil {
			return err
		}
		if err := b.syncSchemas(ctx, tbl, t); err != nil {
			return fmt.Errorf("reconcile: %w", err)
		}
	}
	for _, id := range b.db.TableIDs() {
		if !want[id] {
			if err := b.db.DropTable(ctx, id); err != nil && !errors.Is(err, storage.ErrTableNotFound) {
				return fmt.Errorf("reconcile: drop orphan table %s: %w", id, err)
			}
		}
	}
	return nil
}

// notFound turns a catalog miss into the engine's sentinel so that apierr
// maps it to NOT_FOUND + TABLE_NOT_FOUND.
func notFound(err error, p, d, t string) error {
	if errors.Is(err, catalog.ErrNotFound) {
		return fmt.Errorf("%w: projects/%s/datasets/%s/tables/%s", storage.ErrTableNotFound, p, d, t)
	}
	return err
}

// lookup resolves a table by name.
func (b *backend) lookup(p, d, t string) (*catalog.Table, error) {
	tbl, err := b.cat.Table(p, d, t)
	if err != nil {
		return nil, notFound(err, p, d, t)
	}
	return tbl, nil
}
