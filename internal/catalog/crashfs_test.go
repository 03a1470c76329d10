package catalog

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand"
	"slices"
	"sync"
)

var errCrashed = errors.New("crashfs: crashed")

// crashFS is an in-memory FS of one directory that crashes at its
// crashAt-th mutating call (1-based; 0: never): that call is cut (a write
// leaves a random prefix of its bytes, possibly followed by zeros; a
// rename, remove, truncate or directory sync does not happen) and every
// later call fails. crash then gives the FS a restarted machine would
// see: file contents as last synced (every write here syncs), and the
// names as of the last SyncDir plus a random prefix of the name changes
// made since (a rename or a new file may or may not have reached the
// disk without the directory sync, in order).
type crashFS struct {
	mu         sync.Mutex
	rng        *rand.Rand
	crashAt    int
	ops        int
	crashed    bool
	names      map[string]*crashFile // current
	durable    map[string]*crashFile // as of the last SyncDir
	pending    []nameOp              // name changes since the last SyncDir
	fileWrites int                   // WriteFileSync calls (checkpoints)
	// anyOrder makes crash keep a random subset of the name changes
	// since the last SyncDir, not a prefix: a file system that writes
	// directory entries out of order.
	anyOrder bool
}

type crashFile struct{ data []byte }

// nameOp is a name change: name now refers to f (nil: removed).
type nameOp struct {
	name string
	f    *crashFile
}

func newCrashFS(seed int64, crashAt int) *crashFS {
	return &crashFS{rng: rand.New(rand.NewSource(seed)), crashAt: crashAt, names: map[string]*crashFile{}, durable: map[string]*crashFile{}}
}

// op counts a mutating call and reports whether it is the one that
// crashes (cut) or comes after the crash (err).
func (c *crashFS) op() (cut bool, err error) {
	if c.crashed {
		return false, errCrashed
	}
	c.ops++
	if c.crashAt > 0 && c.ops == c.crashAt {
		c.crashed = true
		return true, errCrashed
	}
	return false, nil
}

func (c *crashFS) setName(name string, f *crashFile) {
	if f == nil {
		delete(c.names, name)
	} else {
		c.names[name] = f
	}
	c.pending = append(c.pending, nameOp{name, f})
}

// torn is what a cut write of p leaves on disk.
func (c *crashFS) torn(p []byte) []byte {
	n := c.rng.Intn(len(p) + 1)
	out := slices.Clone(p[:n])
	if c.rng.Intn(2) == 0 {
		out = append(out, make([]byte, len(p)-n)...)
	}
	return out
}

func (c *crashFS) MkdirAll(string) error { return nil }

func (c *crashFS) ReadFile(name string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.names[name]
	if !ok {
		return nil, fmt.Errorf("crashfs: %s: %w", name, fs.ErrNotExist)
	}
	return slices.Clone(f.data), nil
}

func (c *crashFS) WriteFileSync(name string, data []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	cut, err := c.op()
	if err != nil && !cut {
		return err
	}
	f, ok := c.names[name]
	if !ok {
		f = &crashFile{}
		c.setName(name, f)
	}
	if cut {
		f.data = c.torn(data)
		return err
	}
	c.fileWrites++
	f.data = slices.Clone(data)
	return nil
}

func (c *crashFS) AppendSync(name string, data []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	cut, err := c.op()
	if err != nil && !cut {
		return err
	}
	f, ok := c.names[name]
	if !ok {
		f = &crashFile{}
		c.setName(name, f)
	}
	if cut {
		f.data = append(f.data, c.torn(data)...)
		return err
	}
	f.data = append(f.data, data...)
	return nil
}

func (c *crashFS) Truncate(name string, size int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.op(); err != nil {
		return err
	}
	f, ok := c.names[name]
	if !ok {
		return fmt.Errorf("crashfs: %s: %w", name, fs.ErrNotExist)
	}
	if size < int64(len(f.data)) {
		f.data = f.data[:size]
	}
	return nil
}

func (c *crashFS) Rename(o, n string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.op(); err != nil {
		return err
	}
	f, ok := c.names[o]
	if !ok {
		return fmt.Errorf("crashfs: %s: %w", o, fs.ErrNotExist)
	}
	c.setName(n, f)
	c.setName(o, nil)
	return nil
}

func (c *crashFS) Remove(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.op(); err != nil {
		return err
	}
	if _, ok := c.names[name]; !ok {
		return fmt.Errorf("crashfs: %s: %w", name, fs.ErrNotExist)
	}
	c.setName(name, nil)
	return nil
}

func (c *crashFS) SyncDir(string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.op(); err != nil {
		return err
	}
	c.durable = maps.Clone(c.names)
	c.pending = nil
	return nil
}

// crash returns the FS after a restart (see crashFS), which never
// crashes.
func (c *crashFS) crash() *crashFS {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := maps.Clone(c.durable)
	pending := c.pending[:c.rng.Intn(len(c.pending)+1)]
	if c.anyOrder {
		pending = nil
		for _, op := range c.pending {
			if c.rng.Intn(2) == 0 {
				pending = append(pending, op)
			}
		}
	}
	for _, op := range pending {
		if op.f == nil {
			delete(names, op.name)
		} else {
			names[op.name] = op.f
		}
	}
	out := newCrashFS(c.rng.Int63(), 0)
	for n, f := range names {
		out.names[n] = &crashFile{data: slices.Clone(f.data)}
	}
	out.durable = maps.Clone(out.names)
	return out
}
