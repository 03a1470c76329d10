package vfs

import (
	"errors"
	"io"
)

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// Op names a filesystem operation for error injection.
type Op string

// The operations WithErrors and MemFS report to an injector.
const (
	OpCreate    Op = "create"
	OpOpen      Op = "open"
	OpWrite     Op = "write"
	OpSync      Op = "sync"
	OpTruncate  Op = "truncate"
	OpRemove    Op = "remove"
	OpRename    Op = "rename"
	OpMkdir     Op = "mkdir"
	OpSyncDir   Op = "syncdir"
	OpRead      Op = "read"
	OpList      Op = "list"
	OpRemoveAll Op = "removeall"
)

// Injector decides, before each operation, whether it fails. A nil
// return lets the operation proceed.
type Injector func(op Op, name string) error

// WithErrors wraps fs so that every operation first asks inject.
func WithErrors(fs FS, inject Injector) FS { return &errFS{fs: fs, inject: inject} }

type errFS struct {
	fs     FS
	inject Injector
}

type errFile struct {
	File
	name   string
	inject Injector
}

func (e *errFS) wrap(f File, name string, err error) (File, error) {
	if err != nil {
		return nil, err
	}
	return &errFile{File: f, name: name, inject: e.inject}, nil
}

func (e *errFS) Create(name string) (File, error) {
	if err := e.inject(OpCreate, name); err != nil {
		return nil, err
	}
	f, err := e.fs.Create(name)
	return e.wrap(f, name, err)
}

func (e *errFS) Open(name string) (File, error) {
	if err := e.inject(OpOpen, name); err != nil {
		return nil, err
	}
	f, err := e.fs.Open(name)
	return e.wrap(f, name, err)
}

func (e *errFS) OpenAppend(name string) (File, error) {
	if err := e.inject(OpOpen, name); err != nil {
		return nil, err
	}
	f, err := e.fs.OpenAppend(name)
	return e.wrap(f, name, err)
}

func (e *errFS) Remove(name string) error {
	if err := e.inject(OpRemove, name); err != nil {
		return err
	}
	return e.fs.Remove(name)
}

func (e *errFS) RemoveAll(name string) error {
	if err := e.inject(OpRemoveAll, name); err != nil {
		return err
	}
	return e.fs.RemoveAll(name)
}

func (e *errFS) Rename(o, n string) error {
	if err := e.inject(OpRename, n); err != nil {
		return err
	}
	return e.fs.Rename(o, n)
}

func (e *errFS) MkdirAll(dir string) error {
	if err := e.inject(OpMkdir, dir); err != nil {
		return err
	}
	return e.fs.MkdirAll(dir)
}

func (e *errFS) List(dir string) ([]string, error) {
	if err := e.inject(OpList, dir); err != nil {
		return nil, err
	}
	return e.fs.List(dir)
}

func (e *errFS) SyncDir(dir string) error {
	if err := e.inject(OpSyncDir, dir); err != nil {
		return err
	}
	return e.fs.SyncDir(dir)
}

func (e *errFS) Exists(name string) bool { return e.fs.Exists(name) }

func (e *errFS) Lock(name string) (io.Closer, error) {
	if err := e.inject(OpOpen, name); err != nil {
		return nil, err
	}
	return e.fs.Lock(name)
}

func (f *errFile) Write(p []byte) (int, error) {
	if err := f.inject(OpWrite, f.name); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

func (f *errFile) Sync() error {
	if err := f.inject(OpSync, f.name); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *errFile) Truncate(size int64) error {
	if err := f.inject(OpTruncate, f.name); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

func (f *errFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.inject(OpRead, f.name); err != nil {
		return 0, err
	}
	return f.File.ReadAt(p, off)
}
