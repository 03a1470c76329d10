package hll

import (
	"encoding/binary"
	"errors"
	"sort"
)

// The BYTES form of a sketch (HLL_COUNT.INIT's result), bqstore's own:
// not interchangeable with BigQuery's sketches (docs/compatibility.md).
//
//	+-----+-----+---------+-----------+----------+------------------------+
//	| 'H' | 'L' | version | type code | precision| sparse (0) or dense (1)|
//	+-----+-----+---------+-----------+----------+------------------------+
//	sparse: uvarint n, then n entries (uvarint index delta, rank byte),
//	        indexes (at SparsePrecision bits) strictly increasing;
//	        n <= 2^(precision-1)
//	dense:  2^precision register bytes, each <= 65-precision
//
// The type code names the type of the values hashed (TypeInt64, ...):
// sketches of different types do not merge.

const version = 1

// Type codes of the values a sketch counts.
const (
	TypeInt64 byte = iota + 1
	TypeNumeric
	TypeBigNumeric
	TypeString
	TypeBytes
)

// ErrInvalid is the error of bytes that are not a sketch.
var ErrInvalid = errors.New("hll: invalid sketch")

// Encode returns the BYTES form of h, whose values are of type code typ.
func (h *Sketch) Encode(typ byte) []byte {
	p := h.Precision()
	b := []byte{'H', 'L', version, typ, byte(p)}
	if h.dense != nil {
		b = append(b, 1)
		return append(b, h.dense...)
	}
	idx := make([]uint32, 0, len(h.sparse))
	for i := range h.sparse {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(i, j int) bool { return idx[i] < idx[j] })
	b = append(b, 0)
	b = binary.AppendUvarint(b, uint64(len(idx)))
	prev := uint32(0)
	for _, i := range idx {
		b = binary.AppendUvarint(b, uint64(i-prev))
		b = append(b, h.sparse[i])
		prev = i
	}
	return b
}

// Decode reads the BYTES form of a sketch: the sketch and its type code.
func Decode(b []byte) (*Sketch, byte, error) {
	if len(b) < 6 || b[0] != 'H' || b[1] != 'L' || b[2] != version || b[3] < TypeInt64 || b[3] > TypeBytes {
		return nil, 0, ErrInvalid
	}
	typ, p := b[3], int(b[4])
	if p < MinPrecision || p > MaxPrecision {
		return nil, 0, ErrInvalid
	}
	h := New(p)
	body := b[6:]
	switch b[5] {
	case 1:
		if len(body) != 1<<p {
			return nil, 0, ErrInvalid
		}
		for _, r := range body {
			if int(r) > 65-p {
				return nil, 0, ErrInvalid
			}
		}
		h.dense = append([]uint8(nil), body...)
		return h, typ, nil
	case 0:
		n, k := binary.Uvarint(body)
		if k <= 0 || n > uint64(h.sparseMax()) {
			return nil, 0, ErrInvalid
		}
		body = body[k:]
		h.sparse = make(map[uint32]uint8, n)
		idx := uint64(0)
		for i := uint64(0); i < n; i++ {
			d, k := binary.Uvarint(body)
			if k <= 0 || len(body) < k+1 || (i > 0 && d == 0) {
				return nil, 0, ErrInvalid
			}
			idx += d
			r := body[k]
			if idx >= 1<<SparsePrecision || r == 0 || int(r) > 65-SparsePrecision {
				return nil, 0, ErrInvalid
			}
			h.sparse[uint32(idx)] = r
			body = body[k+1:]
		}
		if len(body) != 0 {
			return nil, 0, ErrInvalid
		}
		return h, typ, nil
	}
	return nil, 0, ErrInvalid
}
