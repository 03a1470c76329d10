// Package catalog is bqstore's catalog of projects, datasets and tables:
// their names, metadata and every version of each table's schema.
//
// # Names
//
// Names are validated as BigQuery validates them (see names.go) and are
// never used as file names: each table has an internal id, 32 random hex
// digits, which is what the storage engine names its directory after.
//
// # Durability
//
// Catalog changes are rare, so the whole catalog is one JSON document in
// the file CATALOG of the catalog directory. A change is made durable before
// the call that made it returns:
//
//  1. the new document is written to CATALOG.tmp and fsynced;
//  2. CATALOG.tmp is renamed over CATALOG;
//  3. the directory is fsynced.
//
// After a crash CATALOG is either the old or the new document; a leftover
// CATALOG.tmp is ignored and removed by Open.
//
// # File format
//
// CATALOG is one line of JSON (docs/format/catalog.md):
//
//	{"format":1,"crc32c":<uint32>,"catalog":<document>}\n
//
// crc32c is the CRC-32C (Castagnoli) of the exact bytes of <document> as
// they appear in the file. <document> is
//
//	{"projects":[{"id":"p","creationTime":"<RFC 3339>"}, ...],
//	 "datasets":[<Dataset>, ...],
//	 "tables":[<Table>, ...]}
//
// with the fields of the Dataset and Table types (their JSON tags). Every
// table carries all its schema versions in order: {"version":1,
// "time":"<RFC 3339>","schema":{"fields":[...]}}. A change of column
// descriptions only edits the current version in place; any other schema
// change adds a version. A document with an
// unknown format number or a CRC mismatch makes Open fail with
// ErrCorrupt: the catalog is never silently reset.
//
// # Concurrency
//
// A Catalog is safe for concurrent use. Mutations are serialized by
// writeMu, which is held across the file write and the observer calls (so
// the observer sees changes in commit order); readers take mu only to read
// the current state, which is replaced as a whole after each durable
// change, so reads never wait for an fsync. Lock order: writeMu, then mu.
// Values returned to callers are copies.
//
// # Observer
//
// Options.Observer is told, synchronously and in commit order, after a
// change is durable: TableCreated, TableSchemaChanged, TableDropped. The
// server uses it to create, alter and drop the storage engine's tables; on
// start-up it reconciles the engine with Tables(), so a crash between the
// catalog change and the observer call is repaired. If TableCreated fails
// the creation is rolled back; other observer errors are returned to the
// caller with the catalog change kept. Observer methods must not call
// mutating Catalog methods (they would deadlock on writeMu).
package catalog
