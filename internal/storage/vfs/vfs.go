// Package vfs is the filesystem the engine writes through: the real disk
// (Default), an in-memory filesystem that can simulate a crash (MemFS), and
// an error-injecting wrapper (WithErrors). Engine code never calls os.*
// directly, so every durability rule can be tested by dropping unsynced
// data or failing the k-th write.
//
// Durability contract (what the engine may rely on, and what MemFS
// enforces when it crashes):
//
//   - File data is durable once File.Sync returned nil.
//   - The existence of a created, renamed or removed name is durable once
//     SyncDir of its parent directory returned nil.
//   - Directories created by MkdirAll are durable at once (a
//     simplification: the engine creates directories before files and
//     always syncs the parent directory of what it publishes).
//
// MemFS has two crash models. CrashClone keeps the durable state plus a
// random prefix of each file's unsynced tail. PowerLoss is the harsher
// one the crash simulator uses: each unsynced page persists whole, in
// part or not at all, independently (out-of-order writeback), an
// unsynced truncation may or may not persist, and of the namespace
// operations no SyncDir covered a random prefix survives.
package vfs

import (
	"errors"
	"io"
	"path"
	"strings"
)

// File is an open file. Writes always append at the end of the file
// (O_APPEND semantics), also after Truncate.
type File interface {
	io.Writer
	io.ReaderAt
	io.Closer
	// Sync makes the file's data durable (fdatasync on Linux).
	Sync() error
	// Truncate shrinks or grows the file to size bytes.
	Truncate(size int64) error
	// Size is the current length of the file in bytes.
	Size() (int64, error)
}

// FS is a filesystem. Names use forward slashes.
type FS interface {
	// Create creates or truncates name and opens it for appending and
	// reading.
	Create(name string) (File, error)
	// Open opens an existing file for reading.
	Open(name string) (File, error)
	// OpenAppend opens an existing file for appending and reading.
	OpenAppend(name string) (File, error)
	// Remove removes a file or an empty directory.
	Remove(name string) error
	// RemoveAll removes name and everything below it; a missing name is
	// not an error.
	RemoveAll(name string) error
	// Rename renames oldname to newname, replacing a file at newname.
	Rename(oldname, newname string) error
	// MkdirAll creates a directory and its parents.
	MkdirAll(dir string) error
	// List returns the names (not paths) of the entries of dir, sorted.
	List(dir string) ([]string, error)
	// SyncDir makes the entries of dir durable.
	SyncDir(dir string) error
	// Exists reports whether name exists.
	Exists(name string) bool
	// Lock takes an exclusive lock on the file name (created if
	// missing), failing at once with ErrLocked if another holder (another
	// process, for the disk) has it. Closing the returned value releases
	// it; so does the process's death.
	Lock(name string) (io.Closer, error)
}

// ErrLocked reports a lock held by someone else.
var ErrLocked = errors.New("vfs: locked by another holder")

// ErrNotExist is returned (wrapped) for a missing name. Disk errors also
// satisfy errors.Is(err, fs.ErrNotExist).
var ErrNotExist = errors.New("vfs: file does not exist")

// ErrInjected is the error WithErrors and MemFS's crash point return.
var ErrInjected = errors.New("vfs: injected error")

func clean(name string) string {
	name = path.Clean(strings.ReplaceAll(name, "\\", "/"))
	return name
}
