package ingest

import (
	"errors"
	"fmt"
)

// Point names a step of the protocol (docs/ingest-protocol.md, "The
// steps") where a test can make the pipeline crash. Each maps to a row of the crash table.
type Point string

const (
	// AfterCreate: streams created, nothing appended (crash table row 1).
	AfterCreate Point = "after-create"
	// MidAppend: at least one append acknowledged, batch incomplete (row 2).
	MidAppend Point = "mid-append"
	// AfterFinalize: streams finalized, seal not written (row 3).
	AfterFinalize Point = "after-finalize"
	// AfterSeal: seal durable, its reply "lost", BatchCommit not sent (rows 4, 5).
	AfterSeal Point = "after-seal"
	// AfterCommit: BatchCommit applied, reply lost, DONE not written (rows 6, 8).
	AfterCommit Point = "after-commit"
	// AfterDone: DONE durable, reply lost (row 9). When the next batch was
	// waiting, its seal (or DONE) carries this DONE: the point is then
	// after that state is stored, before the next batch's AfterSeal.
	AfterDone Point = "after-done"
)

// OnRevoke: the partition's cooperative revoke started (Kafka); its batch
// number is 0. Not in Points: a file source never reaches it.
const OnRevoke Point = "on-revoke"

// BetweenCommits: a seal names streams of the data table and of the
// dead-letter table (Config.DeadLetterTable); the data streams are
// committed, the dead-letter ones not yet. Not in Points: it is reached
// only by a batch with dead letters and a dead-letter table.
const BetweenCommits Point = "between-commits"

// Points lists every failure point in protocol order.
var Points = []Point{AfterCreate, MidAppend, AfterFinalize, AfterSeal, AfterCommit, AfterDone}

// Hooks lets tests inject failures. At is called when partition reaches p in
// batch; a non-nil error makes the pipeline stop at once with that error,
// as if the process had died there (nothing after the point runs, no
// cleanup RPCs are sent).
type Hooks interface {
	At(p Point, partition string, batch uint64) error
}

// CrashError is a failure injected by Hooks at a Point.
type CrashError struct {
	Point     Point
	Partition string
	Batch     uint64
	Err       error
}

func (e *CrashError) Error() string {
	return fmt.Sprintf("ingest: injected failure at %s (partition %s, batch %d): %v", e.Point, e.Partition, e.Batch, e.Err)
}

func (e *CrashError) Unwrap() error { return e.Err }

func hook(h Hooks, p Point, partition string, batch uint64) error {
	if h == nil {
		return nil
	}
	if err := h.At(p, partition, batch); err != nil {
		return &CrashError{Point: p, Partition: partition, Batch: batch, Err: err}
	}
	return nil
}

func isHookError(err error) bool {
	var ce *CrashError
	return errors.As(err, &ce)
}
