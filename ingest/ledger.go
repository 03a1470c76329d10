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
)

// Ledger stores each partition's State durably. Store is the fence: for
// Kafka it is a member OffsetCommit checked against the group generation,
// so a refusal (ErrFenced) means the partition was lost; for files it is
// an atomic file replacement in the state directory.
type Ledger interface {
	// Load returns the partition's last stored state (the initial IDLE
	// state at offset 0 if none was ever stored).
	Load(ctx context.Context, partition string) (State, error)
	// Store replaces the partition's state. After an error the stored state
	// is unknown (either the old or the new one): callers re-Load.
	Store(ctx context.Context, partition string, s State) error
}

// ErrFenced means the ledger refused a Store because this worker no longer
// owns the partition (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, ...).
var ErrFenced = errors.New("ingest: partition ownership lost")

// FileLedger keeps one state file per partition in a directory. Each Store
// writes a temporary file, fsyncs it, renames it over the state file and
// fsyncs the directory, so a crash leaves either the old or the new state.
type FileLedger struct {
	dir string
}

// OpenFileLedger creates dir if needed and removes temporary files left by
// a crash.
func OpenFileLedger(dir string) (*FileLedger, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("ingest: state dir: %w", err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("ingest: state dir: %w", err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return nil, fmt.Errorf("ingest: state dir: %w", err)
			}
		}
	}
	return &FileLedger{dir: dir}, nil
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
		return DecodeState(nil)
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
		return err
	}
	b = append(b, '\n')
	b = append(b, []byte("# partition "+partition+"\n")...)
	if err := writeFileAtomic(l.path(partition), b); err != nil {
		return fmt.Errorf("ingest: store state of %s: %w", partition, err)
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
