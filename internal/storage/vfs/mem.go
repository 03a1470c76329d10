package vfs

import (
	"fmt"
	"io"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"sync"
)

// MemFS is an in-memory filesystem that tracks what is durable, so that a
// test can simulate a power loss (CrashClone) after any number of
// mutating operations (SetCrashAfter).
//
// Each file keeps its current bytes and the bytes as of its last Sync;
// the namespace keeps its current entries and the entries as of the last
// SyncDir of each directory. After the crash point every mutating
// operation fails with ErrInjected and has no effect, as if the machine
// had stopped.
type MemFS struct {
	mu struct {
		sync.Mutex
		files   map[string]*memNode // current namespace
		durable map[string]*memNode // namespace as of the last SyncDir
		dirs    map[string]bool
		// durableDirs: directories as of the last SyncDir of their parent
		// (MkdirAll'd directories are durable at once).
		durableDirs map[string]bool
		ops         int // mutating operations so far
		crashAt     int // fail every mutating op after this many; <0: never
		inject      Injector
		locks       map[string]bool
		// ns is the namespace model of PowerLoss: see nsState.
		ns nsState
	}
}

type memNode struct {
	mu     sync.Mutex
	data   []byte
	synced []byte
	// minLen is the smallest length the file had since its last Sync (a
	// Truncate below the synced length that may or may not be durable).
	minLen int
}

// NewMem returns an empty MemFS.
func NewMem() *MemFS {
	m := &MemFS{}
	m.mu.files = map[string]*memNode{}
	m.mu.durable = map[string]*memNode{}
	m.mu.dirs = map[string]bool{".": true, "/": true}
	m.mu.durableDirs = map[string]bool{".": true, "/": true}
	m.mu.crashAt = -1
	m.mu.locks = map[string]bool{}
	m.mu.ns = newNSState()
	return m
}

type memLock struct {
	m    *MemFS
	name string
	once sync.Once
}

func (l *memLock) Close() error {
	l.once.Do(func() {
		l.m.mu.Lock()
		delete(l.m.mu.locks, l.name)
		l.m.mu.Unlock()
	})
	return nil
}

// Lock takes an in-process lock on name (a crash clone starts unlocked).
func (m *MemFS) Lock(name string) (io.Closer, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.locks[name] {
		return nil, fmt.Errorf("vfs: lock %s: %w", name, ErrLocked)
	}
	m.mu.locks[name] = true
	return &memLock{m: m, name: name}, nil
}

// SetCrashAfter makes every mutating operation after the next k fail with
// ErrInjected (k < 0 disables the crash point). It returns the number of
// mutating operations done so far.
func (m *MemFS) SetCrashAfter(k int) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if k < 0 {
		m.mu.crashAt = -1
	} else {
		m.mu.crashAt = m.mu.ops + k
	}
	return m.mu.ops
}

// Ops is the number of mutating operations done so far (Create, Write,
// Sync, Truncate, Remove, RemoveAll, Rename, SyncDir).
func (m *MemFS) Ops() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.ops
}

// SetInjector installs a hook asked before every operation.
func (m *MemFS) SetInjector(inj Injector) {
	m.mu.Lock()
	m.mu.inject = inj
	m.mu.Unlock()
}

// mutate counts a mutating operation and reports whether it may proceed.
// REQUIRES: m.mu held.
func (m *MemFS) mutateLocked(op Op, name string) error {
	if m.mu.inject != nil {
		if err := m.mu.inject(op, name); err != nil {
			return err
		}
	}
	if m.mu.crashAt >= 0 && m.mu.ops >= m.mu.crashAt {
		return fmt.Errorf("%s %s: %w (crashed)", op, name, ErrInjected)
	}
	m.mu.ops++
	return nil
}

// CrashClone returns a new MemFS holding what would survive a power loss
// now: the durable namespace with each file's synced bytes. If rng is
// non-nil, each file also keeps a random prefix of its unsynced bytes (a
// torn write), as a disk may persist part of what was in flight.
func (m *MemFS) CrashClone(rng *rand.Rand) *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := NewMem()
	for d := range m.mu.durableDirs {
		c.mu.dirs[d] = true
		c.mu.durableDirs[d] = true
	}
	// Sorted, so that a seeded rng tears the same files the same way.
	names := make([]string, 0, len(m.mu.durable))
	for name := range m.mu.durable {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		n := m.mu.durable[name]
		n.mu.Lock()
		data := slices.Clone(n.synced)
		if rng != nil && len(n.data) > len(n.synced) && slices.Equal(n.data[:len(n.synced)], n.synced) {
			extra := rng.IntN(len(n.data) - len(n.synced) + 1)
			data = append(data, n.data[len(n.synced):len(n.synced)+extra]...)
		}
		n.mu.Unlock()
		c.addDurableLocked(name, data)
	}
	return c
}

// addDurableLocked installs a file that survived a crash in a fresh
// clone: durable data, durable name, durable parent directories.
// REQUIRES: c.mu held (or c not yet shared).
func (c *MemFS) addDurableLocked(name string, data []byte) {
	nn := &memNode{data: data, synced: slices.Clone(data), minLen: len(data)}
	c.mu.files[name] = nn
	c.mu.durable[name] = nn
	c.mu.ns.base[name] = nn
	for d := path.Dir(name); !c.mu.dirs[d]; d = path.Dir(d) {
		c.mu.dirs[d] = true
		c.mu.durableDirs[d] = true
		c.mu.ns.dirs[d] = true
	}
}

type memFile struct {
	fs       *MemFS
	name     string
	n        *memNode
	readOnly bool
	closed   bool
}

func (m *MemFS) Create(name string) (File, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.mutateLocked(OpCreate, name); err != nil {
		return nil, err
	}
	if !m.mu.dirs[path.Dir(name)] {
		return nil, fmt.Errorf("vfs: create %s: parent directory: %w", name, ErrNotExist)
	}
	n := &memNode{}
	m.mu.files[name] = n
	m.mu.ns.log(nsOp{kind: nsCreate, name: name, node: n})
	return &memFile{fs: m, name: name, n: n}, nil
}

func (m *MemFS) open(name string, readOnly bool) (File, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.inject != nil {
		if err := m.mu.inject(OpOpen, name); err != nil {
			return nil, err
		}
	}
	n, ok := m.mu.files[name]
	if !ok {
		return nil, fmt.Errorf("vfs: open %s: %w", name, ErrNotExist)
	}
	return &memFile{fs: m, name: name, n: n, readOnly: readOnly}, nil
}

func (m *MemFS) Open(name string) (File, error)       { return m.open(name, true) }
func (m *MemFS) OpenAppend(name string) (File, error) { return m.open(name, false) }

func (m *MemFS) Remove(name string) error {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.mutateLocked(OpRemove, name); err != nil {
		return err
	}
	if n, ok := m.mu.files[name]; ok {
		delete(m.mu.files, name)
		m.mu.ns.log(nsOp{kind: nsRemove, name: name, node: n})
		return nil
	}
	if m.mu.dirs[name] {
		for k := range m.mu.files {
			if strings.HasPrefix(k, name+"/") {
				return fmt.Errorf("vfs: remove %s: directory not empty", name)
			}
		}
		delete(m.mu.dirs, name)
		m.mu.ns.log(nsOp{kind: nsRemoveAll, name: name})
		return nil
	}
	return fmt.Errorf("vfs: remove %s: %w", name, ErrNotExist)
}

func (m *MemFS) RemoveAll(name string) error {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.mutateLocked(OpRemoveAll, name); err != nil {
		return err
	}
	for k := range m.mu.files {
		if k == name || strings.HasPrefix(k, name+"/") {
			delete(m.mu.files, k)
		}
	}
	for k := range m.mu.dirs {
		if k == name || strings.HasPrefix(k, name+"/") {
			delete(m.mu.dirs, k)
		}
	}
	m.mu.ns.log(nsOp{kind: nsRemoveAll, name: name})
	return nil
}

func (m *MemFS) Rename(oldname, newname string) error {
	oldname, newname = clean(oldname), clean(newname)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.mutateLocked(OpRename, newname); err != nil {
		return err
	}
	if n, ok := m.mu.files[oldname]; ok {
		delete(m.mu.files, oldname)
		m.mu.files[newname] = n
		m.mu.ns.log(nsOp{kind: nsRename, name: oldname, to: newname, node: n})
		return nil
	}
	if !m.mu.dirs[oldname] {
		return fmt.Errorf("vfs: rename %s: %w", oldname, ErrNotExist)
	}
	// Directory rename: move every entry below it.
	for k, n := range m.mu.files {
		if strings.HasPrefix(k, oldname+"/") {
			delete(m.mu.files, k)
			m.mu.files[newname+k[len(oldname):]] = n
		}
	}
	for k := range m.mu.dirs {
		if k == oldname || strings.HasPrefix(k, oldname+"/") {
			delete(m.mu.dirs, k)
			m.mu.dirs[newname+k[len(oldname):]] = true
		}
	}
	m.mu.ns.log(nsOp{kind: nsRenameDir, name: oldname, to: newname})
	return nil
}

func (m *MemFS) MkdirAll(dir string) error {
	dir = clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.inject != nil {
		if err := m.mu.inject(OpMkdir, dir); err != nil {
			return err
		}
	}
	for d := dir; ; d = path.Dir(d) {
		m.mu.dirs[d] = true
		m.mu.durableDirs[d] = true
		m.mu.ns.dirs[d] = true
		if d == "." || d == "/" {
			break
		}
	}
	return nil
}

func (m *MemFS) List(dir string) ([]string, error) {
	dir = clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.mu.dirs[dir] {
		return nil, fmt.Errorf("vfs: list %s: %w", dir, ErrNotExist)
	}
	var names []string
	for k := range m.mu.files {
		if path.Dir(k) == dir {
			names = append(names, path.Base(k))
		}
	}
	for k := range m.mu.dirs {
		if k != dir && path.Dir(k) == dir {
			names = append(names, path.Base(k))
		}
	}
	slices.Sort(names)
	return names, nil
}

// SyncDir makes the entries below dir (recursively: a simplification)
// durable.
func (m *MemFS) SyncDir(dir string) error {
	dir = clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.mutateLocked(OpSyncDir, dir); err != nil {
		return err
	}
	under := func(k string) bool { return dir == "." || strings.HasPrefix(k, dir+"/") }
	for k := range m.mu.durable {
		if under(k) {
			if _, ok := m.mu.files[k]; !ok {
				delete(m.mu.durable, k)
			}
		}
	}
	for k, n := range m.mu.files {
		if under(k) {
			m.mu.durable[k] = n
		}
	}
	for k := range m.mu.durableDirs {
		if under(k) && !m.mu.dirs[k] {
			delete(m.mu.durableDirs, k)
		}
	}
	for k := range m.mu.dirs {
		if under(k) {
			m.mu.durableDirs[k] = true
		}
	}
	m.mu.ns.syncDir(dir)
	return nil
}

func (m *MemFS) Exists(name string) bool {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.mu.files[name]
	return ok || m.mu.dirs[name]
}

func (f *memFile) Write(p []byte) (int, error) {
	if f.readOnly {
		return 0, fmt.Errorf("vfs: write %s: read-only", f.name)
	}
	f.fs.mu.Lock()
	err := f.fs.mutateLocked(OpWrite, f.name)
	f.fs.mu.Unlock()
	if err != nil {
		return 0, err
	}
	f.n.mu.Lock()
	f.n.data = append(f.n.data, p...)
	f.n.mu.Unlock()
	return len(p), nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	inj := f.fs.mu.inject
	f.fs.mu.Unlock()
	if inj != nil {
		if err := inj(OpRead, f.name); err != nil {
			return 0, err
		}
	}
	f.n.mu.Lock()
	defer f.n.mu.Unlock()
	if off < 0 {
		return 0, fmt.Errorf("vfs: read %s: negative offset", f.name)
	}
	if off >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.n.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Sync() error {
	f.fs.mu.Lock()
	err := f.fs.mutateLocked(OpSync, f.name)
	f.fs.mu.Unlock()
	if err != nil {
		return err
	}
	f.n.mu.Lock()
	// data only ever grows by append or shrinks to a new capacity, so the
	// synced view can share its backing array.
	f.n.synced = f.n.data[:len(f.n.data):len(f.n.data)]
	f.n.minLen = len(f.n.data)
	f.n.mu.Unlock()
	return nil
}

func (f *memFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	err := f.fs.mutateLocked(OpTruncate, f.name)
	f.fs.mu.Unlock()
	if err != nil {
		return err
	}
	f.n.mu.Lock()
	defer f.n.mu.Unlock()
	if size <= int64(len(f.n.data)) {
		f.n.data = f.n.data[:size:size]
		f.n.minLen = min(f.n.minLen, int(size))
	} else {
		f.n.data = append(f.n.data, make([]byte, size-int64(len(f.n.data)))...)
	}
	return nil
}

func (f *memFile) Size() (int64, error) {
	f.n.mu.Lock()
	defer f.n.mu.Unlock()
	return int64(len(f.n.data)), nil
}

func (f *memFile) Close() error {
	f.closed = true
	return nil
}
