package ingest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// ErrSourceChanged means a partition's source is not the one its state
// was written for: a file rotated (renamed away and recreated) or replaced
// (rewritten, truncated and refilled). Reading on at the stored offset
// would skip or repeat records, so the partition fails closed.
var ErrSourceChanged = errors.New("ingest: the source is not the one the state was written for")

// identifier is implemented by partitions whose identity can be checked
// against a stored state: a file's device, inode and the hash of the
// bytes around the consumed prefix's ends.
type identifier interface {
	// identity describes the source as read up to offset off ("" when it
	// has none to check, as standard input).
	identity(off int64) (string, error)
}

// identityWindow is how many bytes at the start of the file and before
// the offset the identity hashes: hashing the whole consumed prefix at
// every state write would cost a full read per batch; these two windows
// catch a rotated file (new inode), a rewritten head, and a rewritten or
// truncated-and-refilled tail of the consumed part.
const identityWindow = 4 << 10

// identity implements identifier: absolute path, device:inode and a hash
// of the first identityWindow bytes and the identityWindow bytes before
// off, as abs|dev:ino|hash.
func (p filePartition) identity(off int64) (string, error) {
	if p.s.Path == "-" {
		return "", nil // standard input: nothing stable to check
	}
	abs, err := filepath.Abs(p.s.Path)
	if err != nil {
		return "", fmt.Errorf("ingest: %w", err)
	}
	f, err := os.Open(p.s.Path)
	if err != nil {
		return "", fmt.Errorf("ingest: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("ingest: %w", err)
	}
	id := ""
	if dev, ino, ok := fileID(fi); ok {
		id = fmt.Sprintf("%x:%x", dev, ino)
	}
	if off > fi.Size() {
		return fmt.Sprintf("%s|%s|short:%d", abs, id, fi.Size()), nil
	}
	h := sha256.New()
	head := min(off, identityWindow)
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, head)); err != nil {
		return "", fmt.Errorf("ingest: %w", err)
	}
	tail := max(head, off-identityWindow)
	if _, err := io.Copy(h, io.NewSectionReader(f, tail, off-tail)); err != nil {
		return "", fmt.Errorf("ingest: %w", err)
	}
	return fmt.Sprintf("%s|%s|%s", abs, id, hex.EncodeToString(h.Sum(nil)[:8])), nil
}
