package catalog

import (
	"context"
	"fmt"
	"time"
)

// Moving a table to another name, in one durable change, is what makes
// a replace atomic: CREATE OR REPLACE TABLE and a WRITE_TRUNCATE
// destination build the new table under a name nobody reads (internal/jobs
// stages it in a hidden dataset), then move it over the old one. The
// change's one log record drops the old table (its tombstone) and gives
// the staged entry, same internal id and so the same storage, its new
// name: a reader finds the old table or the new one, whole, and a crash
// leaves one or the other (the staged table, if the crash came first, is
// the stager's to drop). ALTER TABLE RENAME TO is the same move without
// a replace.

// MoveSpec says how MoveTable treats the destination name.
type MoveSpec struct {
	// Replace deletes a table that has the destination name in the same
	// change (its tombstone is left, and the observer told after);
	// without it such a table is ErrExists.
	Replace bool
	// Expiration is the moved table's expiration; nil: the destination
	// dataset's default table expiration from now (none without one), as
	// for a new table.
	Expiration *time.Time
	// IfMatch, if not "", is the etag the table replaced must have, in
	// the same change (a replace conditional on the table being the
	// version its replacement was computed from); a missing table or
	// another etag is ErrPrecondition, and nothing changes.
	IfMatch string
	// Hold, if set, is called with the table being replaced (only when
	// there is one), with the catalog's write lock held, after IfMatch
	// is checked and before the change: an error is returned and
	// nothing changes; else release is called once the replaced table's
	// drop is done and told to the observer (internal/jobs fences the
	// engine table here and checks it is still what its query read).
	// The lock order is the catalog's write lock before an engine
	// table's fence (docs/LOCKING.md): Hold may take a fence, and
	// nothing may wait for the write lock while it holds one.
	Hold func(replaced *Table) (release func(), err error)
}

// MoveTable gives table p:d.t the name to (a table of an existing dataset)
// in one durable change, keeping its internal id, storage, schema
// versions and metadata; its location becomes the destination dataset's.
// With spec.Replace a table already named to is deleted in the same
// change (whether each is a table or a view is the caller's to check).
func (c *Catalog) MoveTable(ctx context.Context, p, d, t string, to TableName, spec MoveSpec) (*Table, error) {
	if err := validateTableRef(to.ProjectID, to.DatasetID, to.TableID); err != nil {
		return nil, err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	cur := c.current()
	next := cur.copy()
	src, ok := next.tables[tKey{p, d, t}]
	if !ok {
		if _, ok := next.datasets[dsKey{p, d}]; !ok {
			return nil, notFoundDataset(p, d)
		}
		return nil, notFoundTable(p, d, t)
	}
	ds, ok := next.datasets[dsKey{to.ProjectID, to.DatasetID}]
	if !ok {
		return nil, notFoundDataset(to.ProjectID, to.DatasetID)
	}
	k := tKey{to.ProjectID, to.DatasetID, to.TableID}
	old, exists := next.tables[k]
	if exists && old.ID == src.ID {
		return src.clone(), nil // moved onto itself
	}
	if spec.IfMatch != "" && (!exists || old.ETag != spec.IfMatch) {
		return nil, &Error{Kind: ErrPrecondition, Msg: fmt.Sprintf("Precondition check failed: table %s:%s.%s changed", to.ProjectID, to.DatasetID, to.TableID)}
	}
	if exists && !spec.Replace {
		return nil, &Error{Kind: ErrExists, Msg: fmt.Sprintf("Already Exists: Table %s:%s.%s", to.ProjectID, to.DatasetID, to.TableID)}
	}
	if exists && spec.Hold != nil {
		release, err := spec.Hold(old.clone())
		if err != nil {
			return nil, err
		}
		defer release() // after the observer's drop below
	}
	etag, err := c.newETag()
	if err != nil {
		return nil, err
	}
	now := c.now()
	n := src.clone()
	n.ProjectID, n.DatasetID, n.TableID, n.Location = to.ProjectID, to.DatasetID, to.TableID, ds.Location
	n.ETag, n.Modified = etag, now
	switch {
	case spec.Expiration != nil:
		n.Expiration = time.Time{}
		if !spec.Expiration.IsZero() {
			n.Expiration = spec.Expiration.UTC().Truncate(time.Millisecond)
		}
	case ds.DefaultTableExpirationMs > 0 && ds.DefaultTableExpirationMs <= MaxDefaultTableExpirationMs:
		n.Expiration = now.Add(time.Duration(ds.DefaultTableExpirationMs) * time.Millisecond)
	default:
		n.Expiration = time.Time{}
	}
	if exists {
		next.dropTable(old)
	}
	delete(next.tables, tKey{p, d, t})
	next.tables[k] = n
	next.byID[n.ID] = n
	if err := c.commitLocked(next); err != nil {
		return nil, err
	}
	if o := c.opts.Observer; o != nil && exists {
		if err := o.TableDropped(old.clone()); err != nil {
			// The move is durable; start-up finishes the drop of the
			// tombstoned id.
			return nil, fmt.Errorf("catalog: drop replaced table %s: %w", old.FullID(), err)
		}
	}
	return n.clone(), nil
}

// TableName names a table: project, dataset and table ids.
type TableName struct{ ProjectID, DatasetID, TableID string }
