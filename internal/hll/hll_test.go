package hll

import (
	"bytes"
	"fmt"
	"math"
	"testing"
)

// mix is splitmix64: distinct inputs give well-spread, distinct hashes.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

func build(p int, from, to uint64) *Sketch {
	h := New(p)
	for i := from; i < to; i++ {
		h.Add(mix(i))
	}
	return h
}

// within reports whether got is within 3 standard errors of want at
// precision p.
func within(got, want int64, p int) bool {
	se := 1.04 / math.Sqrt(float64(uint64(1)<<p))
	return math.Abs(float64(got-want)) <= 3*se*float64(want)
}

func TestEstimate(t *testing.T) {
	for _, p := range []int{MinPrecision, DefaultPrecision, 15} {
		for _, n := range []uint64{0, 1, 100, 400, 10000, 200000} {
			h := build(p, 0, n)
			got := h.Estimate()
			if n <= 400 && got != int64(n) || !within(got, int64(n), p) {
				t.Errorf("p=%d n=%d: estimate %d", p, n, got)
			}
		}
	}
	var zero Sketch
	if zero.Precision() != DefaultPrecision || zero.Estimate() != 0 {
		t.Errorf("zero sketch: precision %d estimate %d", zero.Precision(), zero.Estimate())
	}
}

// TestMerge: a merge of sketches over overlapping ranges estimates the
// union, sparse or dense on either side, at the lower precision.
func TestMerge(t *testing.T) {
	for _, c := range []struct {
		p1, p2     int
		n1, n2, at uint64 // ranges [0, n1) and [at, at+n2)
	}{
		{15, 15, 100, 100, 50},
		{15, 15, 100000, 100, 50},
		{15, 15, 100, 100000, 50},
		{15, 15, 100000, 100000, 50000},
		{12, 15, 100000, 100000, 50000},
		{15, 12, 300, 100000, 0},
		{15, 10, 100000, 300, 0},
		{14, 12, 1000, 1000, 500},
	} {
		h, o := build(c.p1, 0, c.n1), build(c.p2, c.at, c.at+c.n2)
		h.Merge(o)
		want := int64(max(c.n1, c.at+c.n2))
		p := min(c.p1, c.p2)
		if h.Precision() != p {
			t.Errorf("%+v: precision %d, want %d", c, h.Precision(), p)
		}
		if got := h.Estimate(); !within(got, want, p) {
			t.Errorf("%+v: estimate %d, want %d", c, got, want)
		}
		// The same values added to one sketch of precision p give the
		// same registers (for a dense result).
		if h.dense != nil {
			ref := build(p, 0, c.n1)
			ref.Merge(build(p, c.at, c.at+c.n2))
			ref.toDenseIfSparse()
			if !bytes.Equal(h.dense, ref.dense) {
				t.Errorf("%+v: registers differ from a sketch built at precision %d", c, p)
			}
		}
	}
}

func (h *Sketch) toDenseIfSparse() {
	if h.dense == nil {
		h.toDense()
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	for _, n := range []uint64{0, 1, 1000, 100000} {
		h := build(12, 0, n)
		b := h.Encode(TypeString)
		g, typ, err := Decode(b)
		if err != nil || typ != TypeString {
			t.Fatalf("n=%d: Decode: %v, type %d", n, err, typ)
		}
		if g.Precision() != 12 || g.Estimate() != h.Estimate() || !bytes.Equal(g.Encode(TypeString), b) {
			t.Errorf("n=%d: round trip changed the sketch", n)
		}
	}
}

func TestDecodeInvalid(t *testing.T) {
	good := build(10, 0, 3).Encode(TypeInt64)
	dense := build(10, 0, 100000).Encode(TypeInt64)
	for i, b := range [][]byte{
		nil, []byte("HL"), []byte("hello world"),
		append([]byte{'H', 'L', 2}, good[3:]...),           // version
		append([]byte{'H', 'L', 1, 9}, good[4:]...),        // type
		append([]byte{'H', 'L', 1, 1, 9}, good[5:]...),     // precision
		append([]byte{'H', 'L', 1, 1, 10, 7}, good[6:]...), // encoding
		good[:len(good)-1], append(append([]byte(nil), good...), 0),
		dense[:len(dense)-1],
		{'H', 'L', 1, 1, 10, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}, // too many entries
		{'H', 'L', 1, 1, 10, 0, 2, 5, 1, 0, 1},                // indexes not increasing
		{'H', 'L', 1, 1, 10, 0, 1, 5, 0},                      // rank 0
	} {
		if _, _, err := Decode(b); err == nil {
			t.Errorf("case %d (%s): decoded", i, fmt.Sprintf("%x", b))
		}
	}
}
