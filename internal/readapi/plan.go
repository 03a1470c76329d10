package readapi

// Streams and splits live in "plan row space": the session's snapshot is an
// ordered list of visible (batch, row range) chunks, numbered 0..total-1
// before any row_restriction. A read stream owns a contiguous range
// [start, end) of that space. Because a stream's rows are a pure function
// of its range (the snapshot is immutable and the filter deterministic),
// splitting a range at j gives primary = original[0..j) and remainder =
// original[j..n), and the original stays readable: the guarantee
// SplitReadStream documents.

// rowRange is a half-open range of plan rows. Invariant: start <= end.
type rowRange struct{ start, end int64 }

func (r rowRange) len() int64 { return r.end - r.start }

// cutRanges divides [0,total) into n ranges of nearly equal size (the
// first total%n ranges get one more row). n must be >= 1.
func cutRanges(total int64, n int) []rowRange {
	out := make([]rowRange, n)
	base, extra := total/int64(n), total%int64(n)
	var pos int64
	for i := range out {
		size := base
		if int64(i) < extra {
			size++
		}
		out[i] = rowRange{pos, pos + size}
		pos += size
	}
	return out
}

// splitRange cuts r at fraction f of its rows. ok is false when the range
// cannot be split (fewer than two rows, or the cut would leave a side
// empty).
func splitRange(r rowRange, f float64) (primary, remainder rowRange, ok bool) {
	if !(f > 0 && f < 1) || r.len() < 2 {
		return rowRange{}, rowRange{}, false
	}
	j := r.start + int64(float64(r.len())*f)
	if j <= r.start {
		j = r.start + 1
	}
	if j >= r.end {
		j = r.end - 1
	}
	return rowRange{r.start, j}, rowRange{j, r.end}, true
}

// streamCount decides how many streams a session gets: what the client
// asked for (0: the server chooses from the data size), at least the
// preferred minimum when the data allows, never more than the system
// maximum, and never more streams than rows or than the data justifies
// (one stream per minBytes of data, so that small tables get few streams).
func streamCount(maxStreams, preferredMin int, rows, bytes, minBytes int64) int {
	if rows == 0 {
		return 0
	}
	byData := int64(1)
	if minBytes > 0 {
		byData = max(1, (bytes+minBytes-1)/minBytes)
	}
	n := byData
	if maxStreams == 0 {
		n = min(n, maxSystemStreams)
	}
	if int64(preferredMin) > n {
		n = int64(preferredMin)
	}
	if maxStreams > 0 && n > int64(maxStreams) {
		n = int64(maxStreams)
	}
	n = min(n, rows, maxSystemStreams)
	return int(max(n, 1))
}

// maxSystemStreams is the real service's documented system maximum.
const maxSystemStreams = 1000
