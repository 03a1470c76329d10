package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Ledger stores each partition's State durably. Store is the fence: for
// Kafka it is a member OffsetCommit checked against the group generation,
// so a refusal (ErrFenced) means the partition was lost; for files it is
// an atomic file replacement in the state directory.
type Ledger interface {
	// Load returns the partition's last stored state (Missing, IDLE at
	// offset 0, if none was ever stored).
	Load(ctx context.Context, partition string) (State, error)
	// Store replaces the partition's state. After an error the stored state
	// is unknown (either the old or the new one): callers re-Load and
	// compare, unless the error is ErrStoreFinal.
	Store(ctx context.Context, partition string, s State) error
}

// ErrFenced means this worker may no longer write the partition's state:
// the ledger refused a Store with a fencing reply (ILLEGAL_GENERATION,
// UNKNOWN_MEMBER_ID, ...), or a read-back found a state this worker did
// not write. A Kafka worker that gets a fencing reply still re-reads and
// retries while the group leaves it the partition (a cooperative
// rebalance bumps the generation of partitions a member keeps); it gives
// the partition up only through the revoke or lost callback.
var ErrFenced = errors.New("ingest: partition ownership lost")

// ErrStoreFinal marks a Store failure that neither a read-back nor a retry
// can settle: the ledger refused the state for good (too large, not
// authorized), or the write's durability is unknown (a failed fsync is
// never trusted on read-back). The worker stops; the next run resolves
// whatever was stored.
var ErrStoreFinal = errors.New("ingest: partition state not stored")

// FileLedger keeps one state file per partition in a directory. Each Store
// writes a temporary file, fsyncs it, renames it over the state file and
// fsyncs the directory, so a crash leaves either the old or the new state.
//
// One run owns the directory: OpenFileLedger takes an exclusive lock on
// its LOCK file and holds it until Close. Two runs on one state would each
// replay and commit everything (the state is the only fence a file source
// has), so a second open fails at once, naming the holder.
type FileLedger struct {
	dir  string
	lock *os.File // holds the directory's lock until Close
}

// ErrStateDirLocked means another run holds the state directory.
var ErrStateDirLocked = errors.New("ingest: state directory in use by another run")

// lockFile is the name of the lock file in a state directory. It holds a
// line naming the holder (pid, host, start time) for the error message.
const lockFile = "LOCK"

// OpenFileLedger creates dir if needed, locks it for this run, and removes
// temporary files left by a crash (only once it holds the lock: they may
// belong to a live run otherwise).
func OpenFileLedger(dir string) (*FileLedger, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("ingest: state dir: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("ingest: state dir: %w", err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				lock.Close()
				return nil, fmt.Errorf("ingest: state dir: %w", err)
			}
		}
	}
	return &FileLedger{dir: dir, lock: lock}, nil
}

// lockDir takes the directory's lock without waiting and records this
// process as the holder.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("ingest: state dir lock: %w", err)
	}
	if err := tryLock(f); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		h := strings.TrimSpace(string(holder))
		if h == "" {
			h = "unknown holder"
		}
		return nil, fmt.Errorf("%w: %s is held by %s (%v); stop that run, or give this one its own --state-dir", ErrStateDirLocked, dir, h, err)
	}
	host, _ := os.Hostname()
	info := fmt.Sprintf("pid %d on %s since %s\n", os.Getpid(), host, time.Now().UTC().Format(time.RFC3339))
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(info), 0)
	}
	return f, nil
}

// Identity names the state this ledger holds: its directory's absolute path.
func (l *FileLedger) Identity() string {
	if abs, err := filepath.Abs(l.dir); err == nil {
		return "state-dir:" + abs
	}
	return "state-dir:" + l.dir
}

// Close releases the state directory's lock.
func (l *FileLedger) Close() error {
	if l.lock == nil {
		return nil
	}
	err := l.lock.Close() // closing the descriptor releases the lock
	l.lock = nil
	return err
}

// path names a partition's file by a hash of its key, so any key (a file
// path, "-") maps to a safe file name; the key itself is kept in a sidecar
// line for humans.
func (l *FileLedger) path(partition string) string {
	h := sha256.Sum256([]byte(partition))
	return filepath.Join(l.dir, "partition-"+hex.EncodeToString(h[:8])+".state")
}

// Load implements Ledger.
func (l *FileLedger) Load(_ context.Context, partition string) (State, error) {
	b, err := os.ReadFile(l.path(partition))
	if errors.Is(err, os.ErrNotExist) {
		return State{DeadLetterEnd: -1, Missing: true}, nil
	}
	if err != nil {
		return State{}, fmt.Errorf("ingest: load state of %s: %w", partition, err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	s, err := DecodeState([]byte(line))
	if err != nil {
		return State{}, fmt.Errorf("ingest: state of %s (%s): %w", partition, l.path(partition), err)
	}
	return s, nil
}

// Store implements Ledger.
func (l *FileLedger) Store(_ context.Context, partition string, s State) error {
	b, err := s.Encode()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrStoreFinal, err)
	}
	b = append(b, '\n')
	b = append(b, []byte("# partition "+partition+"\n")...)
	if err := writeFileAtomic(l.path(partition), b); err != nil {
		// A failed write or fsync leaves a state whose durability is
		// unknown: never trust a read-back of it.
		return fmt.Errorf("%w: store state of %s: %w", ErrStoreFinal, partition, err)
	}
	return nil
}

// writeFileAtomic replaces path with data: temp file, fsync, rename, fsync dir.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
