package sql

import (
	"bytes"
	"hash/maphash"
	"math"
)

// keyTable numbers byte-encoded keys (appendKey's encoding) densely, 0,
// 1, 2, ... in order of first insertion: the groups of a GROUP BY, the
// partitions of a window, the values of a DISTINCT aggregate. The keys
// are packed back to back in one arena and found through an
// open-addressing table (linear probing) of 8-byte slots, each the key's
// hash tag and its index: about len(key) + 4 + 8/load bytes per key,
// where a Go map[string]int held a string header, a separate allocation
// and the map's own bucket overhead (70-100 bytes for an 8-byte key).
//
// Invariants: len(ends) is the number of keys; key i is
// arena[ends[i-1]:ends[i]] (ends[-1] = 0); every key has exactly one
// slot; a slot is 0 (empty) or tag<<32 | (index+1), tag the high 32 bits
// of the key's hash; len(slots) is 0 or a power of two, at most 3/4
// full.
//
// It is not safe for concurrent use.
type keyTable struct {
	seed  maphash.Seed
	arena []byte
	ends  []uint32
	slots []uint64
}

// errKeyTableFull is a key table past its 32-bit offsets (4 GiB of keys,
// 4 billion keys): far beyond any memory budget, reported as one.
var errKeyTableFull = &ResourcesError{Limit: math.MaxUint32, Used: math.MaxUint32, What: "a hash table of more than 4 GiB of keys"}

// len is the number of keys.
func (t *keyTable) len() int { return len(t.ends) }

// key returns key i (owned by the table: valid until the next insert).
func (t *keyTable) key(i int) []byte {
	start := uint32(0)
	if i > 0 {
		start = t.ends[i-1]
	}
	return t.arena[start:t.ends[i]]
}

// bytes is the memory the table holds (capacities, not lengths: what
// was allocated).
func (t *keyTable) bytes() int64 {
	return int64(cap(t.arena)) + 4*int64(cap(t.ends)) + 8*int64(len(t.slots))
}

// insert returns k's index, adding k (copied) if it is new; added
// reports whether it was.
func (t *keyTable) insert(k []byte) (idx int, added bool, err error) {
	if t.slots == nil {
		t.seed = maphash.MakeSeed()
		t.slots = make([]uint64, 64)
	}
	h := maphash.Bytes(t.seed, k)
	tag := h >> 32
	mask := uint64(len(t.slots) - 1)
	for p := h & mask; ; p = (p + 1) & mask {
		s := t.slots[p]
		if s == 0 {
			break
		}
		if s>>32 == tag {
			if i := int(uint32(s)) - 1; bytes.Equal(t.key(i), k) {
				return i, false, nil
			}
		}
	}
	if uint64(len(t.arena))+uint64(len(k)) > math.MaxUint32 || len(t.ends) >= math.MaxUint32-1 {
		return 0, false, errKeyTableFull
	}
	idx = len(t.ends)
	t.arena = append(t.arena, k...)
	t.ends = append(t.ends, uint32(len(t.arena)))
	if 4*(len(t.ends)) > 3*len(t.slots) {
		t.rehash(2 * len(t.slots)) // places the new key too
	} else {
		t.place(h, idx)
	}
	return idx, true, nil
}

// place puts key idx, of hash h, in the first free slot from its home.
func (t *keyTable) place(h uint64, idx int) {
	mask := uint64(len(t.slots) - 1)
	p := h & mask
	for t.slots[p] != 0 {
		p = (p + 1) & mask
	}
	t.slots[p] = (h>>32)<<32 | uint64(idx+1)
}

// rehash rebuilds the slots with n of them, hashing the keys again from
// the arena (the slots keep only a tag of each hash).
func (t *keyTable) rehash(n int) {
	t.slots = make([]uint64, n)
	for i := range t.ends {
		t.place(maphash.Bytes(t.seed, t.key(i)), i)
	}
}
