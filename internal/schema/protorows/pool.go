package protorows

import (
	"math/bits"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The column buffers of decoded records come from a pool of power-of-two
// byte slices and go back to it when the record's last reference is
// released (memory.Buffer calls Free). A record that is never released is
// simply collected by the GC. This spares the decoder the zeroing and GC
// work of ~1 MB of fresh memory per request, about a third of its time.

const (
	minPoolShift = 6  // 64 B: a one-row column of a wide table takes no more
	maxPoolShift = 26 // 64 MiB
)

var pools [maxPoolShift + 1]sync.Pool

// bufPool is the memory.Allocator the decoded buffers report to.
type bufPool struct{}

var pool memory.Allocator = bufPool{}

func poolShift(size int) int {
	if size <= 1<<minPoolShift {
		return minPoolShift
	}
	return bits.Len(uint(size - 1))
}

// getBytes returns an empty slice with capacity for at least size bytes
// (nil for none): a one-row column of a wide table takes 64 bytes, not a
// 4 KiB page.
func getBytes(size int) []byte {
	if size <= 0 {
		return nil
	}
	s := poolShift(size)
	if s > maxPoolShift {
		return make([]byte, 0, size)
	}
	if p, ok := pools[s].Get().(*[]byte); ok {
		return (*p)[:0]
	}
	return make([]byte, 0, 1<<s)
}

func (bufPool) Allocate(size int) []byte { return getBytes(size)[:size] }

func (bufPool) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		return b[:size]
	}
	n := getBytes(size)[:size]
	copy(n, b)
	bufPool{}.Free(b)
	return n
}

// Free returns b to its pool when its capacity is a pool size.
func (bufPool) Free(b []byte) {
	c := cap(b)
	if c < 1<<minPoolShift || c&(c-1) != 0 {
		return
	}
	s := bits.Len(uint(c)) - 1
	if s > maxPoolShift {
		return
	}
	b = b[:0]
	pools[s].Put(&b)
}

// pooledSlice returns an empty []T with capacity for at least n values,
// backed by pooled bytes.
func pooledSlice[T any](n int) []T {
	var z T
	size := int(unsafe.Sizeof(z))
	b := getBytes(n * size)
	if cap(b) < size {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b[:1]))), cap(b)/size)[:0]
}

// bufferOf wraps s (and its spare capacity) as an Arrow buffer that returns
// its memory to the pool when released.
func bufferOf[T any](s []T) *memory.Buffer {
	var z T
	size := int(unsafe.Sizeof(z))
	if cap(s) == 0 {
		return memory.NewBufferBytes(nil)
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s[:1]))), cap(s)*size)[:len(s)*size]
	return memory.NewBufferWithAllocator(b, pool)
}
