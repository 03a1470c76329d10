//go:build unix

package ingest

import (
	"os"
	"syscall"
)

// tryLock takes an exclusive advisory lock on f without waiting. The lock
// belongs to the open file description: it ends when f is closed or the
// process dies, so a crashed run never leaves the directory locked.
func tryLock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// fileID returns the device and inode of fi.
func fileID(fi os.FileInfo) (dev, ino uint64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return uint64(st.Dev), uint64(st.Ino), true //nolint:unconvert // Dev is not uint64 on every Unix
}
