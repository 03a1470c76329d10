//go:build linux

package vfs

import (
	"errors"
	"os"
	"syscall"
)

// fdatasync flushes file data (and the metadata needed to read it back,
// such as the size) without forcing a journal commit of unrelated
// metadata.
func fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
		}
		return nil
	}
}
