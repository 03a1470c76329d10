// Package hll is the HyperLogLog++ sketch (Heule, Nunkesser and Hall,
// "HyperLogLog in Practice", 2013) behind APPROX_COUNT_DISTINCT and the
// HLL_COUNT functions.
//
// A sketch of precision p has 2^p six-bit registers once dense, a
// standard error of about 1.04/sqrt(2^p) (0.8% at APPROX_COUNT_DISTINCT's
// 14). Small sets stay in the sparse representation: the register of each
// value at precision 32 (the paper's 25 packs an entry in 32 bits; a map
// entry costs the same either way, and 32 bits make index collisions
// among a few thousand values unlikely), estimated by linear counting
// over 2^32 buckets, which rounds to the exact count: small answers are
// exact as BigQuery's are. Past 2^(p-1) sparse entries the sketch folds
// into the dense registers and never grows again.
//
// Callers hash values to 64 bits (FarmHash Fingerprint64 of the value's
// key bytes in internal/sql), so a query gives the same answer on every
// run.
//
// Rejected: HLL++'s empirical bias-correction tables (not reproducible
// here) and the original HyperLogLog's switch from linear counting to the
// raw estimate at 2.5*m (biased by 2-3% just above it); the dense
// estimate is Ertl's, unbiased across the range.
package hll

import (
	"math"
	"math/bits"
)

// Sketch is a HyperLogLog++ sketch. The zero value is an empty sketch of
// precision DefaultPrecision. A Sketch is not safe for concurrent use.
type Sketch struct {
	p      uint8            // 0: DefaultPrecision
	sparse map[uint32]uint8 // index at SparsePrecision bits -> max rank; nil once dense
	dense  []uint8          // 2^p registers; nil while sparse
}

const (
	// DefaultPrecision is APPROX_COUNT_DISTINCT's (BigQuery's) precision.
	DefaultPrecision = 14
	// MinPrecision and MaxPrecision bound HLL_COUNT.INIT's precision.
	MinPrecision = 10
	MaxPrecision = 24
	// SparsePrecision is the index width of sparse entries.
	SparsePrecision = 32
	// SparseEntryBytes is what a caller's memory budget is charged per
	// sparse entry; a dense sketch costs 2^p bytes.
	SparseEntryBytes = 16
)

// New returns an empty sketch of precision p (MinPrecision..MaxPrecision).
func New(p int) *Sketch { return &Sketch{p: uint8(p)} }

// Precision is the sketch's precision.
func (h *Sketch) Precision() int {
	if h.p == 0 {
		return DefaultPrecision
	}
	return int(h.p)
}

func (h *Sketch) sparseMax() int { return 1 << (h.Precision() - 1) }

// Add adds a value's 64-bit hash; it returns the bytes the sketch grew by.
func (h *Sketch) Add(x uint64) int64 {
	if h.dense == nil {
		return h.addSparse(uint32(x>>(64-SparsePrecision)), rank(x, SparsePrecision))
	}
	p := h.Precision()
	idx := x >> (64 - p)
	if r := rank(x, p); r > h.dense[idx] {
		h.dense[idx] = r
	}
	return 0
}

// addSparse records a sparse entry (the sketch is sparse); it returns
// the bytes the sketch grew by.
func (h *Sketch) addSparse(idx uint32, r uint8) int64 {
	if h.sparse == nil {
		h.sparse = map[uint32]uint8{}
	}
	old, had := h.sparse[idx]
	if r > old {
		h.sparse[idx] = r
	}
	if had {
		return 0
	}
	if len(h.sparse) <= h.sparseMax() {
		return SparseEntryBytes
	}
	h.toDense()
	return 1 << h.Precision()
}

// rank is the position of the first 1 bit of x after its first p bits
// (1-based), at most 64-p+1.
func rank(x uint64, p int) uint8 {
	return uint8(bits.LeadingZeros64(x<<p|1<<(p-1)) + 1)
}

// fold maps a register (index idx, rank r) of precision from to the
// register of precision to <= from that the same hash falls in: the
// index's low from-to bits are the first bits of the coarser rank.
func fold(idx uint64, r uint8, from, to int) (uint64, uint8) {
	shift := from - to
	if shift == 0 {
		return idx, r
	}
	low := idx & (1<<shift - 1)
	if low == 0 {
		return idx >> shift, uint8(shift) + r
	}
	return idx >> shift, uint8(bits.LeadingZeros64(low)-(64-shift)) + 1
}

func (h *Sketch) toDense() {
	p := h.Precision()
	h.dense = make([]uint8, 1<<p)
	for idx, r := range h.sparse {
		d, dr := fold(uint64(idx), r, SparsePrecision, p)
		if dr > h.dense[d] {
			h.dense[d] = dr
		}
	}
	h.sparse = nil
}

// downgrade lowers a sketch's precision to p (a merge with a coarser
// sketch keeps the coarser precision).
func (h *Sketch) downgrade(p int) {
	from := h.Precision()
	if p >= from {
		return
	}
	h.p = uint8(p)
	if h.dense == nil {
		if len(h.sparse) > h.sparseMax() {
			h.toDense()
		}
		return
	}
	old := h.dense
	h.dense = make([]uint8, 1<<p)
	for idx, r := range old {
		if r == 0 {
			continue
		}
		d, dr := fold(uint64(idx), r, from, p)
		if dr > h.dense[d] {
			h.dense[d] = dr
		}
	}
}

// Merge adds o's values to h, at the lower of the two precisions; it
// returns the bytes h grew by (negative when a downgrade shrank it).
func (h *Sketch) Merge(o *Sketch) int64 {
	before := h.Bytes()
	p := min(h.Precision(), o.Precision())
	h.downgrade(p)
	if o.dense == nil && h.dense == nil {
		for idx, r := range o.sparse {
			h.addSparse(idx, r)
		}
		return h.Bytes() - before
	}
	if h.dense == nil {
		h.toDense()
	}
	if o.dense == nil {
		for idx, r := range o.sparse {
			d, dr := fold(uint64(idx), r, SparsePrecision, p)
			if dr > h.dense[d] {
				h.dense[d] = dr
			}
		}
		return h.Bytes() - before
	}
	from := o.Precision()
	for idx, r := range o.dense {
		if r == 0 {
			continue
		}
		d, dr := fold(uint64(idx), r, from, p)
		if dr > h.dense[d] {
			h.dense[d] = dr
		}
	}
	return h.Bytes() - before
}

// Bytes is the memory the sketch is charged for.
func (h *Sketch) Bytes() int64 {
	if h.dense != nil {
		return int64(len(h.dense))
	}
	return int64(len(h.sparse)) * SparseEntryBytes
}

// Estimate is the sketch's cardinality estimate.
func (h *Sketch) Estimate() int64 {
	if h.dense == nil {
		if len(h.sparse) == 0 {
			return 0
		}
		m := float64(uint64(1) << SparsePrecision)
		return int64(math.Round(m * math.Log(m/(m-float64(len(h.sparse))))))
	}
	// Ertl's improved estimator ("New cardinality estimation algorithms
	// for HyperLogLog sketches", 2017): unbiased over the whole range
	// without HLL++'s empirical tables, from the registers' histogram.
	p := h.Precision()
	q := 64 - p
	hist := make([]int, q+2)
	for _, r := range h.dense {
		hist[r]++
	}
	m := float64(uint64(1) << p)
	z := m * tau((m-float64(hist[q+1]))/m)
	for k := q; k >= 1; k-- {
		z = (z + float64(hist[k])) * 0.5
	}
	z += m * sigma(float64(hist[0])/m)
	e := m * m / (2 * math.Ln2) / z
	return int64(math.Round(e))
}

func sigma(x float64) float64 {
	if x == 1 {
		return math.Inf(1)
	}
	y, z := 1.0, x
	for {
		x *= x
		prev := z
		z += x * y
		y += y
		if z == prev {
			return z
		}
	}
}

func tau(x float64) float64 {
	if x == 0 || x == 1 {
		return 0
	}
	y, z := 1.0, 1-x
	for {
		x = math.Sqrt(x)
		prev := z
		y *= 0.5
		z -= (1 - x) * (1 - x) * y
		if z == prev {
			return z / 3
		}
	}
}
