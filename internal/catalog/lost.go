package catalog

import (
	"context"
	"fmt"
	"maps"

	"github.com/bqstore/bqstore/internal/schema"
)

// Tombstones and lost tables. Every table deleted leaves its internal id
// in state.dropped (a tombstone), so that start-up can tell an engine
// table whose drop a crash cut (tombstoned: finish the drop) from one the
// catalog lost (neither named nor tombstoned: keep it, quarantined), and
// AdoptTable names a lost table again.

func (s *state) isDropped(id string) bool {
	_, ok := s.dropped[id]
	return ok
}

// dropTable removes t from s and leaves its tombstone.
func (s *state) dropTable(t *Table) {
	delete(s.tables, tKey{t.ProjectID, t.DatasetID, t.TableID})
	delete(s.byID, t.ID)
	s.dropped[t.ID] = struct{}{}
}

// Dropped reports whether id is the internal id of a deleted table (its
// tombstone is kept until the engine's drop is known to be durable: see
// Options.StorageGone).
func (c *Catalog) Dropped(id string) bool {
	return c.current().isDropped(id)
}

// AdoptTable names a table whose storage the engine holds under internal
// id id but the catalog lost (an unknown table, quarantined at start-up):
// it creates table spec (in an existing dataset) with that id and
// versions schema versions, each spec.Schema (the engine keeps only its
// current schema, so versions, the engine's current version number, keeps
// the two in step; older versions are not recovered). The observer is not
// told: the storage exists. An id the catalog names or deleted is refused
// (ErrExists, ErrInvalid).
func (c *Catalog) AdoptTable(ctx context.Context, spec TableSpec, id string, versions int) (*Table, error) {
	if err := validateTableRef(spec.ProjectID, spec.DatasetID, spec.TableID); err != nil {
		return nil, err
	}
	if !validInternalID(id) || versions < 1 {
		return nil, invalidf("Invalid table id %q or schema version %d", id, versions)
	}
	sch, err := schema.Normalize(spec.Schema)
	if err != nil {
		return nil, schemaError(err)
	}
	if err := validateMeta(spec.Description, spec.FriendlyName, spec.Labels); err != nil {
		return nil, err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	next := c.current().copy()
	if t, ok := next.byID[id]; ok {
		return nil, &Error{Kind: ErrExists, Msg: fmt.Sprintf("Already Exists: table id %s is %s", id, t.FullID())}
	}
	if next.isDropped(id) {
		return nil, invalidf("Table id %s was deleted: its storage is dropped at the next start", id)
	}
	ds, ok := next.datasets[dsKey{spec.ProjectID, spec.DatasetID}]
	if !ok {
		return nil, notFoundDataset(spec.ProjectID, spec.DatasetID)
	}
	k := tKey{spec.ProjectID, spec.DatasetID, spec.TableID}
	if _, ok := next.tables[k]; ok {
		return nil, &Error{Kind: ErrExists, Msg: fmt.Sprintf("Already Exists: Table %s:%s.%s", spec.ProjectID, spec.DatasetID, spec.TableID)}
	}
	etag, err := c.newETag()
	if err != nil {
		return nil, err
	}
	now := c.now()
	t := &Table{
		ID: id, ProjectID: spec.ProjectID, DatasetID: spec.DatasetID, TableID: spec.TableID,
		Location: ds.Location, Description: spec.Description, FriendlyName: spec.FriendlyName,
		Labels: maps.Clone(spec.Labels), ETag: etag, Created: now, Modified: now,
	}
	for v := 1; v <= versions; v++ {
		t.Schemas = append(t.Schemas, SchemaVersion{Version: v, Time: now, Schema: sch})
	}
	next.tables[k] = t
	next.byID[id] = t
	if err := c.commitLocked(next); err != nil {
		return nil, err
	}
	return t.clone(), nil
}
