package sql

import (
	"math"
	"math/bits"
)

// hll is APPROX_COUNT_DISTINCT's HyperLogLog++ sketch (Heule, Nunkesser
// and Hall, "HyperLogLog in Practice", 2013) at BigQuery's precision 14:
// 2^14 six-bit registers once dense, a standard error of about 0.8%.
//
// Small sets stay in the sparse representation: the register of each
// value at precision 32 (the paper's 25 packs an entry in 32 bits; a map
// entry costs the same either way, and 32 bits make index collisions
// among a few thousand values unlikely), estimated by linear counting
// over 2^32 buckets, which rounds to the exact count: small answers are
// exact as BigQuery's are. Past sparseMax entries the sketch
// folds into the dense registers and never grows again.
//
// Values are hashed with FarmHash Fingerprint64 of their key bytes
// (appendKey), so a query gives the same answer on every run.
//
// Rejected: HLL++'s empirical bias-correction tables (not reproducible
// here) and the original HyperLogLog's switch from linear counting to the
// raw estimate at 2.5*m (biased by 2-3% just above it); the dense
// estimate is Ertl's, unbiased across the range.
type hll struct {
	sparse map[uint32]uint8 // index at hllSparseP bits -> max rank; nil once dense
	dense  []uint8          // 2^hllP registers; nil while sparse
}

const (
	hllP       = 14
	hllSparseP = 32
	// sparseMax is the number of sparse entries past which the sketch
	// becomes dense (about the dense registers' memory, at 2 bytes per
	// register-worth of map entry).
	sparseMax = 1 << (hllP - 1)
	// hllSparseEntryBytes and hllDenseBytes are what the memory budget is
	// charged per sparse entry and once for the dense registers.
	hllSparseEntryBytes = 16
	hllDenseBytes       = 1 << hllP
)

// add adds a value's 64-bit hash; it returns the bytes the sketch grew by.
func (h *hll) add(x uint64) int64 {
	if h.dense == nil {
		if h.sparse == nil {
			h.sparse = map[uint32]uint8{}
		}
		idx := uint32(x >> (64 - hllSparseP))
		r := rank(x, hllSparseP)
		old, had := h.sparse[idx]
		if r > old {
			h.sparse[idx] = r
		}
		if had {
			return 0
		}
		if len(h.sparse) <= sparseMax {
			return hllSparseEntryBytes
		}
		h.toDense()
		return hllDenseBytes
	}
	idx := x >> (64 - hllP)
	if r := rank(x, hllP); r > h.dense[idx] {
		h.dense[idx] = r
	}
	return 0
}

// rank is the position of the first 1 bit of x after its first p bits
// (1-based), at most 64-p+1.
func rank(x uint64, p int) uint8 {
	return uint8(bits.LeadingZeros64(x<<p|1<<(p-1)) + 1)
}

func (h *hll) toDense() {
	h.dense = make([]uint8, 1<<hllP)
	for idx, r := range h.sparse {
		d := idx >> (hllSparseP - hllP)
		// The sparse index's low bits are the dense rank's first bits.
		low := idx & (1<<(hllSparseP-hllP) - 1)
		dr := uint8(hllSparseP - hllP + int(r))
		if low != 0 {
			dr = uint8(bits.LeadingZeros32(low) - (32 - (hllSparseP - hllP)) + 1)
		}
		if dr > h.dense[d] {
			h.dense[d] = dr
		}
	}
	h.sparse = nil
}

// estimate is the sketch's cardinality estimate.
func (h *hll) estimate() int64 {
	if h.dense == nil {
		if len(h.sparse) == 0 {
			return 0
		}
		m := float64(uint64(1) << hllSparseP)
		return int64(math.Round(m * math.Log(m/(m-float64(len(h.sparse))))))
	}
	// Ertl's improved estimator ("New cardinality estimation algorithms
	// for HyperLogLog sketches", 2017): unbiased over the whole range
	// without HLL++'s empirical tables, from the registers' histogram.
	const q = 64 - hllP
	var hist [q + 2]int
	for _, r := range h.dense {
		hist[r]++
	}
	m := float64(uint64(1) << hllP)
	z := m * hllTau((m-float64(hist[q+1]))/m)
	for k := q; k >= 1; k-- {
		z = (z + float64(hist[k])) * 0.5
	}
	z += m * hllSigma(float64(hist[0])/m)
	e := m * m / (2 * math.Ln2) / z
	return int64(math.Round(e))
}

func hllSigma(x float64) float64 {
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

func hllTau(x float64) float64 {
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
