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
// The catalog is a checkpoint, the file CATALOG (the whole catalog as one
// JSON document, as of some change), and a log, CATALOG.log, of the
// changes made since, one record per change holding only what it changed
// (log.go). A change is made durable before the call that made it
// returns: its record is appended to the log and fsynced (the directory
// too when the log file is new). When the log outgrows the checkpoint
// (and 1 MiB), the change also writes a checkpoint:
//
//  1. the new document is written to CATALOG.tmp and fsynced;
//  2. CATALOG.tmp is renamed over CATALOG;
//  3. the directory is fsynced;
//  4. CATALOG.log is removed.
//
// Every table deleted leaves a tombstone, its internal id (document
// member droppedTables; a log record's dropTables), kept through
// checkpoints until Options.StorageGone says the engine's drop is
// durable: at start-up the server finishes the engine's drop of a
// tombstoned id, and keeps and quarantines (never drops) an engine table
// the catalog neither names nor tombstoned, which the catalog lost.
//
// The first change of a new catalog writes CATALOG this way instead of a
// record. Open reads CATALOG, removes a leftover CATALOG.tmp, and replays
// the records after the checkpoint's sequence number; a torn last record
// (a change the crash cut, never acknowledged) is cut off, and any other
// damage fails Open with ErrCorrupt.
//
// # File format
//
// CATALOG is one line of JSON (docs/format/catalog.md):
//
//	{"format":2,"crc32c":<uint32>,"catalog":<document>}\n
//
// crc32c is the CRC-32C (Castagnoli) of the exact bytes of <document> as
// they appear in the file. <document> is
//
//	{"seq":<last change held>,
//	 "projects":[{"id":"p","creationTime":"<RFC 3339>"}, ...],
//	 "datasets":[<Dataset>, ...],
//	 "tables":[<Table>, ...],
//	 "droppedTables":["<internal id>", ...]}
//
// with the fields of the Dataset and Table types (their JSON tags). Every
// table carries all its schema versions in order: {"version":1,
// "time":"<RFC 3339>","schema":{"fields":[...]}}. A change of column
// descriptions only edits the current version in place; any other schema
// change adds a version. Format 1 files (no seq, written before the log)
// are still read; the first change replaces one with format 2 (durable.v1
// says why). A document with an unknown format number or a CRC
// mismatch makes Open fail with ErrCorrupt: the catalog is never silently
// reset. CATALOG.log's frames and records are described in log.go.
//
// # Concurrency
//
// A Catalog is safe for concurrent use. Mutations are serialized by
// writeMu, which is held across the file writes and the observer calls
// (so the observer sees changes in commit order) and guards the state of
// the files (Catalog.dur); readers take mu only to read
// the current state, which is replaced as a whole after each durable
// change, so reads never wait for an fsync. Lock order: writeMu, then mu.
// Values returned to callers are copies.
//
// # Observer
//
// Options.Observer is told, synchronously and in commit order, after a
// change is durable: TableCreated, TableSchemaChanged, TableDropped (a
// move, MoveTable, keeps the table's id and storage: the observer hears
// only of the table it replaced, dropped). The
// server uses it to create, alter and drop the storage engine's tables; on
// start-up it reconciles the engine with Tables() and Dropped(), so a
// crash between the catalog change and the observer call is repaired. If TableCreated fails
// the creation is rolled back; other observer errors are returned to the
// caller with the catalog change kept. Observer methods must not call
// mutating Catalog methods (they would deadlock on writeMu).
package catalog
