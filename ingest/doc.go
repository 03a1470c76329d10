// Package ingest is an exactly-once pipeline from newline-delimited JSON
// files and Kafka topics into BigQuery tables (one, or one per topic:
// Config.Routes), through the public Storage Write API only (PENDING
// streams), so it runs unchanged against BigQuery and against bqstore
// serve.
//
// # The protocol: fence the decision, not the commit
//
// BigQuery has no fencing tokens: anyone holding a stream name can commit
// it. So the pipeline never tries to stop a second party from committing.
// Instead (docs/ingest-protocol.md; docs/ingest.md for the guarantee):
//
//  1. A stream is committed only after it is sealed: its id, row count and
//     the source range [X, Y) it holds are written to the partition's
//     durable State (Kafka: the group's committed-offset metadata, written
//     with a member OffsetCommit fenced by the group generation; files: a
//     state file replaced atomically).
//  2. Only the partition's current owner can write its State, and seals
//     form one chain per partition: seal k+1 is written after k is
//     committed (after DONE k, or carrying it when k+1 was waiting).
//  3. Once sealed, anyone may commit the stream any number of times:
//     BigQuery commits a stream at most once (STREAM_ALREADY_COMMITTED,
//     confirmed with GetWriteStream's commit_time).
//  4. An unsealed stream is never committed; its range is replayed.
//
// # Outline
//
// Run starts one committer per table and asks the Source for partitions.
// Each partition runs a worker (batches: read and map records, append to
// its own PENDING stream with explicit offsets, pipelined; finalize and
// check row_count) and a closer (seal, hand the stream to the committer,
// write DONE, or leave it to the next seal when the next batch is already
// waiting: one state write per batch), so batch k+1 appends while batch k
// commits. The committer
// issues one BatchCommitWriteStreams per window over every sealed stream
// ready; it only ever sees sealed streams, so it never waits for a worker.
// Every batch has a lease: a worker that stalls (hung connection, slow
// RPC) abandons its batch, which is then replayed into a new stream.
//
// Recovery runs at start-up and on every Kafka assignment: a SEALED state
// is resolved (streams without commit_time are finalized and committed, a
// missing stream fails closed), then DONE is written and reading resumes
// at Y.
//
// # Fencing
//
// Every state a run writes carries its owner token. A Store that fails
// (a lost reply, a coordinator moving, ILLEGAL_GENERATION while a
// cooperative rebalance bumps the generation) is settled by reading the
// state back: exactly what was written (streams, range, token) goes on;
// exactly the previous state is written again with the group's current
// generation for as long as the partition is owned; anything else is
// another owner's, even with the same batch number and offset, and the
// worker is fenced: it commits nothing more and gives the partition up
// only through the revoke or lost callback. A member the group dropped
// that joins again as a new member (franz-go calls neither callback) loses
// every partition of its old membership, and states are stored only under
// the membership a partition was assigned to; a partition handed back
// starts over from its stored state. A cooperative revoke lets the
// worker finish a batch it already sealed (commit, DONE) and drops the
// others; a lost partition stops at once.
//
// Records that do not fit the table go to the dead-letter sink with the
// reason (rows.RecordError), never dropped silently. The file sink is made
// durable before the state that covers it and, for a single-partition
// source, truncated back on recovery, so it is exactly-once too (Kafka:
// at least once). A dead-letter table (Config.DeadLetterTable) is exactly
// once for every source: a batch's dead letters go to a PENDING stream of
// that table, finalized before the seal, which names it next to the data
// stream; recovery commits both, one BatchCommit per table, idempotently.
//
// # What a state guards besides the range
//
// A partition without a stored state starts only where Config.Start says
// (ErrNoStart otherwise: a lost state is never a silent replay). A state
// names its destination table (ErrConfigChanged) and, for files, the
// file's identity (ErrSourceChanged: rotated or replaced). A file state
// directory and a dead-letter file belong to one run (locked) and one
// state (the dead-letter file is bound to the ledger's identity). Kafka is
// read committed. Rows the server refuses (row_errors) are replayed as
// dead letters; a batch abandoned Config.MaxReplays times in a row without
// progress fails its partition.
//
// A failed partition of a Kafka source is paused, not the run (Health):
// it stays assigned, stops fetching and is reported on /healthz, while
// the other partitions go on; stopping the member would hand the
// partition to the next member, which would fail and stop in turn.
// Configuration errors (ErrNoStart, ErrConfigChanged) and a file source's
// errors stop the run.
//
// # Rejected alternatives
//
// Committing finalized-but-unsealed streams on recovery (unsafe: a
// half-written stream, or a range also replayed, gives loss or
// duplicates). kgo's commit helpers (they overwrite the metadata with the
// member id). The _default stream (at-least-once). Waiting in the
// committer for all of a window's streams (the postmortem's deadlock).
package ingest
