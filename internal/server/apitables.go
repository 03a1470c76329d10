package server

import (
	"context"
	"fmt"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/readapi"
	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/storage"
	"github.com/bqstore/bqstore/internal/writeapi"
)

var (
	_ writeapi.Tables = (*backend)(nil)
	_ readapi.Tables  = readTables{}
)

func (b *backend) LookupTable(ctx context.Context, p, d, t string) (writeapi.TableInfo, error) {
	tbl, err := b.lookupTable(p, d, t)
	if err != nil {
		return writeapi.TableInfo{}, err
	}
	last := tbl.Schemas[len(tbl.Schemas)-1]
	return writeapi.TableInfo{ID: tbl.ID, Schema: last.Schema, SchemaVersion: last.Version, Location: tbl.Location}, nil
}

// lookupTable is lookup for the Storage APIs, which read and write
// tables, not views.
func (b *backend) lookupTable(p, d, t string) (*catalog.Table, error) {
	tbl, err := b.lookup(p, d, t)
	if err == nil && tbl.View != nil {
		return nil, fmt.Errorf("%w: %s is a view; the Storage Read and Write APIs serve tables only (query the view instead)", storage.ErrInvalidArgument, tbl.FullID())
	}
	return tbl, err
}

// readTables adapts the backend to readapi.Tables (its LookupTable returns
// a different struct).
type readTables struct{ *backend }

func (r readTables) LookupTable(ctx context.Context, p, d, t string) (readapi.TableInfo, error) {
	tbl, err := r.lookupTable(p, d, t)
	if err != nil {
		return readapi.TableInfo{}, err
	}
	return readapi.TableInfo{ID: tbl.ID, Location: tbl.Location}, nil
}

func (b *backend) SchemaVersion(ctx context.Context, id string, version int) (*schema.Schema, error) {
	tbl, err := b.cat.TableByID(id)
	if err != nil {
		return nil, notFound(err, "", "", id)
	}
	for _, sv := range tbl.Schemas {
		if sv.Version == version {
			return sv.Schema, nil
		}
	}
	return nil, fmt.Errorf("%w: table %s has no schema version %d", storage.ErrSchemaMismatch, tbl.FullID(), version)
}
