//go:build !linux

package vfs

import (
	"io"
	"os"
)

// Lock on other systems only creates the file: no advisory locking.
func (diskFS) Lock(name string) (io.Closer, error) {
	return os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
}
