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
