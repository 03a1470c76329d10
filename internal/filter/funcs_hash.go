// Hashing and UUID functions: MD5, SHA1, SHA256, SHA512, FARM_FINGERPRINT
// and GENERATE_UUID.

package filter

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"fmt"
	"math/bits"
)

func registerHash() {
	digest := func(f func([]byte) []byte) builtin {
		return func(c *checker, e *Call, args []node) (node, error) {
			if err := c.arity(e, args, 1, 1); err != nil {
				return nil, err
			}
			t, ok := stringOrBytes(args)
			if !ok {
				return nil, c.noSig(e, args)
			}
			return c.sig(e, args, []typ{t}, tBytes, func(a []value) (value, error) { return value{s: string(f([]byte(a[0].s)))}, nil })
		}
	}
	builtins["MD5"] = digest(func(b []byte) []byte { s := md5.Sum(b); return s[:] })
	builtins["SHA1"] = digest(func(b []byte) []byte { s := sha1.Sum(b); return s[:] })
	builtins["SHA256"] = digest(func(b []byte) []byte { s := sha256.Sum256(b); return s[:] })
	builtins["SHA512"] = digest(func(b []byte) []byte { s := sha512.Sum512(b); return s[:] })
	builtins["FARM_FINGERPRINT"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 1, 1); err != nil {
			return nil, err
		}
		t, ok := stringOrBytes(args)
		if !ok {
			return nil, c.noSig(e, args)
		}
		return c.sig(e, args, []typ{t}, tInt, func(a []value) (value, error) {
			return value{i: int64(fingerprint64([]byte(a[0].s)))}, nil
		})
	}
	builtins["GENERATE_UUID"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 0, 0); err != nil {
			return nil, err
		}
		// Not folded: every row gets its own UUID.
		return &callNode{name: e.Name, t: tString, impl: func([]value) (value, error) { return value{s: newUUID()}, nil }, p: e.P}, nil
	}
}

// newUUID is a random (version 4) UUID in its lower-case text form.
func newUUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// fingerprint64 is FarmHash's Fingerprint64 (farmhashna's Hash64), the
// function BigQuery's FARM_FINGERPRINT documents: its values are fixed
// forever, so they are checked against published ones in the tests.
func fingerprint64(s []byte) uint64 {
	n := len(s)
	switch {
	case n <= 16:
		return farmLen0to16(s)
	case n <= 32:
		return farmLen17to32(s)
	case n <= 64:
		return farmLen33to64(s)
	}
	seed := uint64(81)
	x := seed
	y := seed*farmK1 + 113
	z := farmShiftMix(y*farmK2+113) * farmK2
	var v1, v2, w1, w2 uint64
	x = x*farmK2 + fetch64(s, 0)
	end := ((n - 1) / 64) * 64
	last64 := end + ((n - 1) & 63) - 63
	for p := 0; p != end; p += 64 {
		x = bits.RotateLeft64(x+y+v1+fetch64(s, p+8), -37) * farmK1
		y = bits.RotateLeft64(y+v2+fetch64(s, p+48), -42) * farmK1
		x ^= w2
		y += v1 + fetch64(s, p+40)
		z = bits.RotateLeft64(z+w1, -33) * farmK1
		v1, v2 = weakHashLen32WithSeeds(s, p, v2*farmK1, x+w1)
		w1, w2 = weakHashLen32WithSeeds(s, p+32, z+w2, y+fetch64(s, p+16))
		z, x = x, z
	}
	mul := farmK1 + ((z & 0xff) << 1)
	p := last64
	w1 += uint64((n - 1) & 63)
	v1 += w1
	w1 += v1
	x = bits.RotateLeft64(x+y+v1+fetch64(s, p+8), -37) * mul
	y = bits.RotateLeft64(y+v2+fetch64(s, p+48), -42) * mul
	x ^= w2 * 9
	y += v1*9 + fetch64(s, p+40)
	z = bits.RotateLeft64(z+w1, -33) * mul
	v1, v2 = weakHashLen32WithSeeds(s, p, v2*mul, x+w1)
	w1, w2 = weakHashLen32WithSeeds(s, p+32, z+w2, y+fetch64(s, p+16))
	z, x = x, z
	return farmHashLen16(farmHashLen16(v1, w1, mul)+farmShiftMix(y)*farmK0+z, farmHashLen16(v2, w2, mul)+x, mul)
}

const (
	farmK0 uint64 = 0xc3a5c85c97cb3127
	farmK1 uint64 = 0xb492b66fbe98f273
	farmK2 uint64 = 0x9ae16a3b2f90404f
)

func fetch64(s []byte, p int) uint64 { return binary.LittleEndian.Uint64(s[p:]) }
func fetch32(s []byte, p int) uint64 { return uint64(binary.LittleEndian.Uint32(s[p:])) }

func farmShiftMix(v uint64) uint64 { return v ^ (v >> 47) }

func farmHashLen16(u, v, mul uint64) uint64 {
	a := (u ^ v) * mul
	a ^= a >> 47
	b := (v ^ a) * mul
	b ^= b >> 47
	return b * mul
}

func farmLen0to16(s []byte) uint64 {
	n := uint64(len(s))
	switch {
	case n >= 8:
		mul := farmK2 + n*2
		a := fetch64(s, 0) + farmK2
		b := fetch64(s, len(s)-8)
		c := bits.RotateLeft64(b, -37)*mul + a
		d := (bits.RotateLeft64(a, -25) + b) * mul
		return farmHashLen16(c, d, mul)
	case n >= 4:
		mul := farmK2 + n*2
		a := fetch32(s, 0)
		return farmHashLen16(n+(a<<3), fetch32(s, len(s)-4), mul)
	case n > 0:
		a, b, c := uint32(s[0]), uint32(s[n>>1]), uint32(s[n-1])
		y := a + (b << 8)
		z := uint32(n) + (c << 2)
		return farmShiftMix(uint64(y)*farmK2^uint64(z)*farmK0) * farmK2
	}
	return farmK2
}

func farmLen17to32(s []byte) uint64 {
	n := len(s)
	mul := farmK2 + uint64(n)*2
	a := fetch64(s, 0) * farmK1
	b := fetch64(s, 8)
	c := fetch64(s, n-8) * mul
	d := fetch64(s, n-16) * farmK2
	return farmHashLen16(bits.RotateLeft64(a+b, -43)+bits.RotateLeft64(c, -30)+d, a+bits.RotateLeft64(b+farmK2, -18)+c, mul)
}

func farmLen33to64(s []byte) uint64 {
	n := len(s)
	mul := farmK2 + uint64(n)*2
	a := fetch64(s, 0) * farmK2
	b := fetch64(s, 8)
	c := fetch64(s, n-8) * mul
	d := fetch64(s, n-16) * farmK2
	y := bits.RotateLeft64(a+b, -43) + bits.RotateLeft64(c, -30) + d
	z := farmHashLen16(y, a+bits.RotateLeft64(b+farmK2, -18)+c, mul)
	e := fetch64(s, 16) * mul
	f := fetch64(s, 24)
	g := (y + fetch64(s, n-32)) * mul
	h := (z + fetch64(s, n-24)) * mul
	return farmHashLen16(bits.RotateLeft64(e+f, -43)+bits.RotateLeft64(g, -30)+h, e+bits.RotateLeft64(f+a, -18)+g, mul)
}

func weakHashLen32WithSeeds(s []byte, p int, a, b uint64) (uint64, uint64) {
	w, x, y, z := fetch64(s, p), fetch64(s, p+8), fetch64(s, p+16), fetch64(s, p+24)
	a += w
	b = bits.RotateLeft64(b+a+z, -21)
	c := a
	a += x
	a += y
	b += bits.RotateLeft64(a, -44)
	return a + z, b + c
}

// Fingerprint64 is FarmHash's Fingerprint64 of b (FARM_FINGERPRINT's
// kernel): a stable, well-mixed 64-bit hash for sketches.
func Fingerprint64(b []byte) uint64 { return fingerprint64(b) }
