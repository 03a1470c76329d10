package storage

import (
	"math/bits"
	"sync"
)

// frameBufs recycles the frame buffers of ROWS records. A buffer belongs
// to its op from Append until the log writer acknowledged it (finish);
// nothing else ever references it, so it is safe to reuse then. Reusing
// ~1 MB buffers keeps the append path from feeding the garbage collector
// a megabyte per request (which, measured, cost more than the memcpy).
//
// Classes are powers of two from 64 KiB to 64 MiB (a buffer may be up to
// twice its request); smaller and larger requests are not pooled.
var frameBufs bufPool

const (
	minPoolClass = 16 // 64 KiB
	maxPoolClass = 26 // 64 MiB
)

type bufPool struct {
	classes [maxPoolClass + 1]sync.Pool
}

// get returns a buffer of length n and capacity >= capacity.
func (p *bufPool) get(n, capacity int) []byte {
	c := bits.Len(uint(capacity - 1))
	if c < minPoolClass || c > maxPoolClass {
		// Small buffers are cheap to allocate and would waste a whole
		// class if pooled; huge ones are rare.
		return make([]byte, n, capacity)
	}
	if v, ok := p.classes[c].Get().(*[]byte); ok {
		return (*v)[:n]
	}
	return make([]byte, n, 1<<c)
}

// put recycles b, which nothing may reference afterwards.
func (p *bufPool) put(b []byte) {
	c := bits.Len(uint(cap(b) - 1))
	if cap(b) != 1<<c || c < minPoolClass || c > maxPoolClass {
		return
	}
	b = b[:0]
	p.classes[c].Put(&b)
}

// readBufs backs the buffers ReadChunk reads frames into. Unlike
// frameBufs, a read buffer's lifetime is decided by Arrow reference
// counting: the decoded arrays are zero-copy slices of it (retaining it),
// and readAllocator.Free returns it only when the last of them is
// released. A record never released is simply garbage-collected.
var readBufs bufPool

// readAllocator is the memory.Allocator of read buffers.
type readAllocator struct{}

func (readAllocator) Allocate(size int) []byte { return readBufs.get(size, size) }

func (readAllocator) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		return b[:size]
	}
	nb := readBufs.get(size, size)
	copy(nb, b)
	readBufs.put(b)
	return nb
}

func (readAllocator) Free(b []byte) { readBufs.put(b) }
