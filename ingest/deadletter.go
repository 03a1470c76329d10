package ingest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
)

// DeadLetters is the sink for records that do not fit the table. The file
// sink is exactly-once together with the table: each batch's dead letters
// are fsynced before its seal, the seal records the file size, and recovery
// truncates the file to the size of the last durable state, so a replayed
// range rewrites exactly the dead letters it had lost. (For a
// single-partition source: the lines of several partitions interleave, so
// a Kafka run never truncates, and a crash can repeat a batch's dead
// letters.)
//
// Truncating is only safe if no one else writes the file, so the sink is
// bound to one state: OpenDeadLetters locks the file for the run, and Run
// records the state's identity (the state directory, or the Kafka group
// and topic) in PATH.owner on first use and refuses a file bound to
// another.
type DeadLetters struct {
	path string
	mu   struct {
		sync.Mutex
		f    *os.File
		size int64
	}
}

// ErrDeadLettersInUse means the dead-letter file is locked by another run
// or bound to another state.
var ErrDeadLettersInUse = errors.New("ingest: dead-letter file belongs to another ingestion")

// deadLetter is one line of the dead-letter file.
type deadLetter struct {
	Partition string          `json:"partition"`
	Offset    int64           `json:"offset"`         // byte/record offset of the record's start
	Line      int64           `json:"line,omitempty"` // files: the record's 1-based line number
	Reason    string          `json:"reason"`
	Record    json.RawMessage `json:"record,omitempty"`
	Raw       string          `json:"raw,omitempty"` // the record when it is not valid JSON
}

// OpenDeadLetters opens (creating) the dead-letter file at path and locks
// it until Close: a second run writing the same file fails here.
func OpenDeadLetters(path string) (*DeadLetters, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("ingest: dead-letter file: %w", err)
	}
	if err := tryLock(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %s is locked by another run (%v); give each run its own --dead-letter file", ErrDeadLettersInUse, path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("ingest: dead-letter file: %w", err)
	}
	d := &DeadLetters{path: path}
	d.mu.f, d.mu.size = f, st.Size()
	return d, nil
}

// bind ties the file to the state identified by owner: the first binding
// is recorded in PATH.owner; a file bound to another owner is refused (its
// recovery would truncate lines this one wrote, or the reverse).
func (d *DeadLetters) bind(owner string) error {
	side := d.path + ".owner"
	b, err := os.ReadFile(side)
	if errors.Is(err, os.ErrNotExist) {
		if err := writeFileAtomic(side, []byte(owner+"\n")); err != nil {
			return fmt.Errorf("ingest: dead-letter file owner: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("ingest: dead-letter file owner: %w", err)
	}
	if got := strings.TrimSpace(string(b)); got != owner {
		return fmt.Errorf("%w: %s holds the dead letters of %s, not of %s; give each source its own --dead-letter file (delete %s only if that ingestion is gone)",
			ErrDeadLettersInUse, d.path, got, owner, side)
	}
	return nil
}

// Write appends one dead letter (not yet durable: see Sync); line is the
// record's line number in a file (0: none).
func (d *DeadLetters) Write(partition string, offset, line int64, rec []byte, reason string) error {
	dl := deadLetter{Partition: partition, Offset: offset, Line: line, Reason: reason}
	if json.Valid(rec) {
		dl.Record = json.RawMessage(rec)
	} else {
		dl.Raw = string(rec)
	}
	b, err := json.Marshal(dl)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, err := d.mu.f.WriteAt(b, d.mu.size); err != nil {
		return fmt.Errorf("ingest: dead-letter file: %w", err)
	}
	d.mu.size += int64(len(b))
	return nil
}

// Sync makes every written dead letter durable and returns the file size.
func (d *DeadLetters) Sync() (int64, error) {
	d.mu.Lock()
	f, size := d.mu.f, d.mu.size
	d.mu.Unlock()
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("ingest: dead-letter file: %w", err)
	}
	return size, nil
}

// Truncate cuts the file back to size (recovery of a range to replay).
// A size of -1 or at least the current size changes nothing.
func (d *DeadLetters) Truncate(size int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if size < 0 || size >= d.mu.size {
		return nil
	}
	if err := d.mu.f.Truncate(size); err != nil {
		return fmt.Errorf("ingest: dead-letter file: %w", err)
	}
	d.mu.size = size
	return d.mu.f.Sync()
}

// Close closes the file.
func (d *DeadLetters) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.mu.f.Close()
}
