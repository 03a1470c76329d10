package vfs

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// Default is the operating system's filesystem.
var Default FS = diskFS{}

type diskFS struct{}

type diskFile struct {
	*os.File
}

func (f diskFile) Sync() error { return fdatasync(f.File) }

func (f diskFile) Size() (int64, error) {
	st, err := f.File.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

func (diskFS) Create(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return diskFile{f}, nil
}

func (diskFS) Open(name string) (File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return diskFile{f}, nil
}

func (diskFS) OpenAppend(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return nil, err
	}
	return diskFile{f}, nil
}

func (diskFS) Remove(name string) error             { return os.Remove(name) }
func (diskFS) RemoveAll(name string) error          { return os.RemoveAll(name) }
func (diskFS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }
func (diskFS) MkdirAll(dir string) error            { return os.MkdirAll(dir, 0o755) }

func (diskFS) List(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	slices.Sort(names)
	return names, nil
}

func (diskFS) SyncDir(dir string) error {
	d, err := os.Open(filepath.Clean(dir))
	if err != nil {
		return err
	}
	serr := d.Sync()
	cerr := d.Close()
	if serr != nil {
		return fmt.Errorf("vfs: sync dir %s: %w", dir, serr)
	}
	return cerr
}

func (diskFS) Exists(name string) bool {
	_, err := os.Stat(name)
	return err == nil || !isNotExist(err)
}

func isNotExist(err error) bool { return err != nil && errorsIs(err, fs.ErrNotExist) }
