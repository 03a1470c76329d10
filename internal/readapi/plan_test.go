package readapi

import (
	"math/rand/v2"
	"testing"
)

func TestCutRangesCoversExactlyOnce(t *testing.T) {
	for _, total := range []int64{0, 1, 2, 7, 100, 1001} {
		for _, n := range []int{1, 2, 3, 7, 1000} {
			rs := cutRanges(total, n)
			var pos int64
			for i, r := range rs {
				if r.start != pos || r.end < r.start {
					t.Fatalf("total=%d n=%d: range %d = %+v, want start %d", total, n, i, r, pos)
				}
				if d := r.len() - total/int64(n); d < 0 || d > 1 {
					t.Fatalf("total=%d n=%d: range %d has %d rows, not within one of %d", total, n, i, r.len(), total/int64(n))
				}
				pos = r.end
			}
			if pos != total {
				t.Fatalf("total=%d n=%d: ranges end at %d", total, n, pos)
			}
		}
	}
}

func TestSplitRange(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 10000; i++ {
		start := r.Int64N(1000)
		orig := rowRange{start, start + r.Int64N(50)}
		f := r.Float64()
		p, q, ok := splitRange(orig, f)
		if orig.len() < 2 {
			if ok {
				t.Fatalf("split of %+v at %v succeeded", orig, f)
			}
			continue
		}
		if !ok {
			t.Fatalf("split of %+v at %v failed", orig, f)
		}
		if p.start != orig.start || p.end != q.start || q.end != orig.end || p.len() == 0 || q.len() == 0 {
			t.Fatalf("split of %+v at %v = %+v, %+v", orig, f, p, q)
		}
	}
	for _, f := range []float64{0, 1, -0.5, 1.5} {
		if _, _, ok := splitRange(rowRange{0, 100}, f); ok {
			t.Fatalf("split at %v succeeded", f)
		}
	}
}

func TestStreamCount(t *testing.T) {
	const mb = 1 << 20
	tests := []struct {
		max, prefMin     int
		rows, bytes, min int64
		want             int
	}{
		{0, 0, 0, 0, mb, 0},                // empty table: no streams
		{4, 0, 10, 1000, mb, 1},            // small table: fewer than asked
		{4, 0, 1e6, 100 * mb, mb, 4},       // capped by the request
		{0, 0, 1e6, 10 * mb, mb, 10},       // server chooses by size
		{0, 0, 1e9, 1e6 * mb, mb, 1000},    // system maximum
		{10, 3, 100, 1000, mb, 3},          // preferred minimum honoured
		{2, 3, 100, 1000, mb, 2},           // but never above the maximum
		{0, 5, 3, 1000, mb, 3},             // never more streams than rows
		{2000, 0, 1e9, 1e6 * mb, mb, 1000}, // a request above the maximum is capped
	}
	for _, tt := range tests {
		if got := streamCount(tt.max, tt.prefMin, tt.rows, tt.bytes, tt.min); got != tt.want {
			t.Errorf("streamCount(max=%d, prefMin=%d, rows=%d, bytes=%d) = %d, want %d", tt.max, tt.prefMin, tt.rows, tt.bytes, got, tt.want)
		}
	}
}
