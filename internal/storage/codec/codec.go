// Package codec is the little binary encoding of the engine's metadata
// payloads (records other than row data, checkpoints, segment footers):
// unsigned varints, zig-zag signed varints, length-prefixed byte strings.
// The Decoder never panics on bad input and never allocates more than the
// input's length: every error is sticky and reported by Err.
package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// ErrShort is a truncated or malformed metadata payload.
var ErrShort = errors.New("codec: truncated or malformed payload")

// Encoder appends to Buf.
type Encoder struct{ Buf []byte }

func (e *Encoder) Uvarint(v uint64) { e.Buf = binary.AppendUvarint(e.Buf, v) }
func (e *Encoder) Varint(v int64)   { e.Buf = binary.AppendVarint(e.Buf, v) }
func (e *Encoder) Bytes(b []byte)   { e.Uvarint(uint64(len(b))); e.Buf = append(e.Buf, b...) }
func (e *Encoder) String(s string)  { e.Uvarint(uint64(len(s))); e.Buf = append(e.Buf, s...) }
func (e *Encoder) Float(f float64) {
	e.Buf = binary.LittleEndian.AppendUint64(e.Buf, math.Float64bits(f))
}
func (e *Encoder) Bool(b bool) {
	if b {
		e.Buf = append(e.Buf, 1)
	} else {
		e.Buf = append(e.Buf, 0)
	}
}

// Decoder reads what an Encoder wrote.
type Decoder struct {
	b   []byte
	err error
}

// NewDecoder decodes b.
func NewDecoder(b []byte) *Decoder { return &Decoder{b: b} }

// Fail records a decoding error (the first one sticks).
func (d *Decoder) Fail(what string) { d.fail(what) }

func (d *Decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrShort, what)
	}
}

// Err is the first decoding error.
func (d *Decoder) Err() error { return d.err }

// Len is the number of bytes left.
func (d *Decoder) Len() int { return len(d.b) }

func (d *Decoder) Uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *Decoder) Varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// Int decodes a varint that must fit an int in [0, max].
func (d *Decoder) Count(max int) int {
	v := d.Uvarint()
	if v > uint64(max) {
		d.fail(fmt.Sprintf("count %d exceeds %d", v, max))
		return 0
	}
	return int(v)
}

func (d *Decoder) Bytes() []byte {
	v := d.Uvarint()
	if d.err != nil {
		return nil
	}
	if v > uint64(len(d.b)) {
		d.fail(fmt.Sprintf("byte string of %d bytes, %d left", v, len(d.b)))
		return nil
	}
	n := int(v)
	b := d.b[:n:n]
	d.b = d.b[n:]
	return b
}

func (d *Decoder) String() string { return string(d.Bytes()) }

func (d *Decoder) Float() float64 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 8 {
		d.fail("float")
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(d.b))
	d.b = d.b[8:]
	return v
}

func (d *Decoder) Bool() bool {
	if d.err != nil {
		return false
	}
	if len(d.b) < 1 || d.b[0] > 1 {
		d.fail("bool")
		return false
	}
	v := d.b[0] == 1
	d.b = d.b[1:]
	return v
}

// Done fails unless every byte was consumed.
func (d *Decoder) Done() error {
	if d.err == nil && len(d.b) != 0 {
		d.fail(fmt.Sprintf("%d trailing bytes", len(d.b)))
	}
	return d.err
}
