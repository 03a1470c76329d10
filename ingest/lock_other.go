//go:build !unix

package ingest

import "os"

// tryLock is a no-op where flock is not available: on these platforms the
// state directory and the dead-letter file are not protected against a
// second run (docs/compatibility.md).
func tryLock(*os.File) error { return nil }

// fileID is not available here: the file identity holds only the hash of
// the consumed prefix.
func fileID(os.FileInfo) (dev, ino uint64, ok bool) { return 0, 0, false }
