package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

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
	// unknown are the ids of the engine tables reconcile found neither
	// in the catalog nor deleted by it (kept, quarantined). Set once at
	// start-up, read-only after.
	unknown []string
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
// tables it deleted (their ids are tombstoned) are dropped, finishing a
// drop a crash cut between the catalog's delete and the engine's. An
// engine table the catalog neither names nor deleted is unknown: the
// catalog lost it (CATALOG.log lost or cut, a data dir copied without
// it), so it is kept and quarantined, never dropped: the catalog names no
// table with its id, so no API serves it; it is reported here, and by
// `bqstore fsck`, with the ways to recover or delete it
// (docs/format/catalog.md). Tables whose files failed recovery (the
// engine's quarantine) are left alone unless their id is tombstoned.
func (b *backend) reconcile(ctx context.Context, log *slog.Logger) error {
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
	ids := b.db.TableIDs()
	for _, q := range b.db.Quarantined() {
		ids = append(ids, q.Table)
	}
	for _, id := range ids {
		switch {
		case want[id]:
		case b.cat.Dropped(id):
			if err := b.db.DropTable(ctx, id); err != nil && !errors.Is(err, storage.ErrTableNotFound) {
				return fmt.Errorf("reconcile: finish the drop of deleted table %s: %w", id, err)
			}
			log.Info("catalog: finished the drop of a deleted table (a crash came between the catalog's delete and the engine's drop)", "table", id)
		default:
			b.unknown = append(b.unknown, id)
			log.Error("catalog: engine table is not in the catalog, which did not delete it: kept and quarantined (not served); was CATALOG.log lost or cut? With the server stopped: restore CATALOG and CATALOG.log together to serve it again, or name it with `bqstore fsck --adopt ID=PROJECT:DATASET.TABLE DATA_DIR`, or delete the directory `bqstore fsck DATA_DIR` names (docs/format/catalog.md)",
				"table", id)
		}
	}
	return nil
}

// storageGone reports whether the engine holds nothing of table id (not
// even quarantined files): its drop is durable, so the catalog may forget
// its tombstone (catalog.Options.StorageGone).
func (b *backend) storageGone(id string) bool {
	_, err := b.db.Table(id)
	return errors.Is(err, storage.ErrTableNotFound)
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
