//go:build linux

package vfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

func (diskFS) Lock(name string) (io.Closer, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("vfs: lock %s: %w", name, ErrLocked)
		}
		return nil, fmt.Errorf("vfs: lock %s: %w", name, err)
	}
	return f, nil // closing the file releases the lock
}
