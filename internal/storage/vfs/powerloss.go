package vfs

import (
	"math/rand/v2"
	"path"
	"slices"
	"strings"
)

// PageSize is the unit in which PowerLoss persists unsynced file data:
// each page of a file that differs from its durable content is persisted
// whole, in part (a prefix of its sectors) or not at all, independently
// of the other pages, as a kernel writing back dirty pages in any order
// may leave it.
const PageSize = 4096

// sectorSize is the unit of a partly persisted page: a disk writes a
// sector atomically.
const sectorSize = 512

// PowerLoss returns a new MemFS holding one state the disk could be in
// after a power loss now, chosen by rng (nil: the least that must
// survive, every unsynced change lost).
//
// File data: what the last Sync made durable survives. Every page (see
// PageSize) whose current bytes differ from the durable ones is then
// persisted whole, partly (a prefix of its 512-byte sectors) or not at
// all, each page independently: a later page of an unsynced append can
// reach the disk while an earlier one does not, and the gap reads as
// zeros (the file's length covers the last persisted byte). A Truncate
// since the last Sync persisted or not.
//
// Namespace: creates, renames and removes are journaled in order. An
// operation is durable once SyncDir of a directory it changed returned
// (the directory of the name; both directories of a rename). Of the
// others, a random prefix (in operation order) survives. Directories
// made by MkdirAll are durable at once (the simplification of the
// package contract).
//
// The clone shares nothing with m and has no crash point.
func (m *MemFS) PowerLoss(rng *rand.Rand) *MemFS { return m.powerLoss(rng, false) }

// PowerLossInOrder is PowerLoss with writeback in file order: the pages
// of a file that reach the disk are a prefix of those that differ (the
// last one possibly in part), so no hole precedes persisted data. It is
// the milder model of a disk that writes back in order.
func (m *MemFS) PowerLossInOrder(rng *rand.Rand) *MemFS { return m.powerLoss(rng, true) }

func (m *MemFS) powerLoss(rng *rand.Rand, inOrder bool) *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	files, dirs := m.mu.ns.survivors(rng)
	c := NewMem()
	for d := range dirs {
		c.mu.dirs[d] = true
		c.mu.durableDirs[d] = true
		c.mu.ns.dirs[d] = true
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	done := map[*memNode][]byte{} // a node under two names (hard links do not exist, but be safe)
	for _, name := range names {
		n := files[name]
		data, ok := done[n]
		if !ok {
			data = n.afterPowerLoss(rng, inOrder)
			done[n] = data
		}
		c.addDurableLocked(name, slices.Clone(data))
	}
	return c
}

// afterPowerLoss is the node's content after a power loss (see
// PowerLoss).
func (n *memNode) afterPowerLoss(rng *rand.Rand, inOrder bool) []byte {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := slices.Clone(n.synced)
	if rng == nil {
		return out
	}
	if n.minLen < len(out) && rng.IntN(2) == 0 {
		out = out[:n.minLen] // the truncation reached the disk
	}
	cur := n.data
	end := max(len(out), len(cur))
	stopped := false // inOrder: a page was not (wholly) persisted
	for lo := 0; lo < end; lo += PageSize {
		hi := min(lo+PageSize, end)
		if pageEqual(out, cur, lo, hi) {
			continue
		}
		// Bytes of the page the current content has.
		newHi := min(hi, len(cur))
		if newHi <= lo {
			continue // only a (not persisted) truncation differs
		}
		if stopped {
			continue
		}
		var upto int
		switch rng.IntN(3) {
		case 0: // not at all
			stopped = inOrder
			continue
		case 1: // whole
			upto = newHi
		default: // a prefix of its sectors
			sectors := (hi - lo + sectorSize - 1) / sectorSize
			if sectors < 2 {
				upto = newHi
			} else {
				upto = min(newHi, lo+sectorSize*(1+rng.IntN(sectors-1)))
				stopped = inOrder
			}
		}
		if upto > len(out) {
			out = append(out, make([]byte, upto-len(out))...)
		}
		copy(out[lo:upto], cur[lo:upto])
	}
	return out
}

// pageEqual reports whether a and b hold the same bytes in [lo, hi),
// a missing byte differing from any present one.
func pageEqual(a, b []byte, lo, hi int) bool {
	if min(len(a), hi) != min(len(b), hi) {
		return false
	}
	ha := min(len(a), hi)
	if ha <= lo {
		return true
	}
	return string(a[lo:ha]) == string(b[lo:ha])
}

// nsState is PowerLoss's namespace model: base, the names as of the
// first operation that is not durable, and the journal of operations
// since, each marked durable once a SyncDir covered it.
type nsState struct {
	base    map[string]*memNode
	dirs    map[string]bool // directories of base (and MkdirAll'd ones)
	journal []nsOp
}

type nsKind int

const (
	nsCreate nsKind = iota
	nsRemove
	nsRemoveAll
	nsRename
	nsRenameDir
)

type nsOp struct {
	kind    nsKind
	name    string // the (old) name
	to      string // rename: the new name
	node    *memNode
	durable bool
}

func newNSState() nsState {
	return nsState{base: map[string]*memNode{}, dirs: map[string]bool{".": true, "/": true}}
}

func (s *nsState) log(op nsOp) { s.journal = append(s.journal, op) }

// syncDir marks durable every journaled operation that changed dir, then
// folds the durable prefix of the journal into base.
func (s *nsState) syncDir(dir string) {
	for i := range s.journal {
		op := &s.journal[i]
		if path.Dir(op.name) == dir || (op.to != "" && path.Dir(op.to) == dir) {
			op.durable = true
		}
	}
	n := 0
	for n < len(s.journal) && s.journal[n].durable {
		s.journal[n].apply(s.base, s.dirs)
		n++
	}
	s.journal = slices.Delete(s.journal, 0, n)
}

// survivors is the namespace after a power loss: base, the durable
// operations, and a random prefix of the others.
func (s *nsState) survivors(rng *rand.Rand) (map[string]*memNode, map[string]bool) {
	files := make(map[string]*memNode, len(s.base))
	for k, v := range s.base {
		files[k] = v
	}
	dirs := make(map[string]bool, len(s.dirs))
	for k := range s.dirs {
		dirs[k] = true
	}
	undurable := 0
	for _, op := range s.journal {
		if !op.durable {
			undurable++
		}
	}
	keep := 0
	if rng != nil {
		keep = rng.IntN(undurable + 1)
	}
	for _, op := range s.journal {
		if !op.durable {
			if keep == 0 {
				continue
			}
			keep--
		}
		op.apply(files, dirs)
	}
	return files, dirs
}

// apply replays op on a namespace. Operations name their node, so a
// rename whose source's create was lost still moves the right file.
func (op nsOp) apply(files map[string]*memNode, dirs map[string]bool) {
	under := func(k, d string) bool { return k == d || strings.HasPrefix(k, d+"/") }
	switch op.kind {
	case nsCreate:
		files[op.name] = op.node
	case nsRemove:
		if files[op.name] == op.node {
			delete(files, op.name)
		}
	case nsRemoveAll:
		for k := range files {
			if under(k, op.name) {
				delete(files, k)
			}
		}
		for k := range dirs {
			if under(k, op.name) {
				delete(dirs, k)
			}
		}
	case nsRename:
		if files[op.name] == op.node {
			delete(files, op.name)
		}
		files[op.to] = op.node
	case nsRenameDir:
		moved := map[string]*memNode{}
		for k, n := range files {
			if under(k, op.name) {
				delete(files, k)
				moved[op.to+k[len(op.name):]] = n
			}
		}
		for k, n := range moved {
			files[k] = n
		}
		var movedDirs []string
		for k := range dirs {
			if under(k, op.name) {
				delete(dirs, k)
				movedDirs = append(movedDirs, op.to+k[len(op.name):])
			}
		}
		for _, k := range movedDirs {
			dirs[k] = true
		}
	}
	for k := range files {
		for d := path.Dir(k); !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
		}
	}
}
