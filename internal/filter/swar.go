package filter

import (
	"math/bits"
	"strings"
	"unsafe"
)

const (
	swarLo = 0x0101010101010101
	swarHi = 0x8080808080808080
)

// load64 reads 8 bytes of s at i (little endian; i+8 <= len(s)).
func load64(s string, i int) uint64 {
	return *(*uint64)(unsafe.Add(unsafe.Pointer(unsafe.StringData(s)), i))
}

// containsLit reports whether lit occurs in s. For literals of two bytes
// or more it tests eight positions at a time for the literal's first two
// bytes (SWAR), which on text is far more selective than the first byte
// alone, and verifies the candidates. Verifying every candidate would be
// O(len(s)*len(lit)) on adversarial text ("aaaa..." against "aaa...ab"),
// so, as strings.Index does, once candidates keep failing it hands the
// rest to strings.Contains, which is linear (Rabin-Karp for long
// literals).
func containsLit(s, lit string) bool {
	n := len(lit)
	if n < 2 || len(s) < n+16 {
		return strings.Contains(s, lit)
	}
	fails := 0
	b0 := uint64(lit[0]) * swarLo
	b1 := uint64(lit[1]) * swarLo
	last := len(s) - n // last possible start
	i := 0
	for ; i+9 <= len(s) && i <= last; i += 8 {
		x := (load64(s, i) ^ b0) | (load64(s, i+1) ^ b1)
		// A zero byte of x marks a position where both bytes match.
		z := (x - swarLo) &^ x & swarHi
		for z != 0 {
			p := i + bits.TrailingZeros64(z)/8
			if p <= last && s[p:p+n] == lit {
				return true
			}
			if fails++; fails > 4+i>>4 {
				return strings.Contains(s[p:], lit)
			}
			z &= z - 1
		}
	}
	if i > last {
		return false
	}
	return strings.Contains(s[i:], lit)
}
