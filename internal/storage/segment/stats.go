package segment

import (
	"sort"

	"github.com/bqstore/bqstore/internal/storage/codec"
)

// Stats is the zone maps of one batch's top-level columns, kept in
// proportion to what the batch holds: a column that is all null (null
// count = the batch's rows, no bounds) is not stored, so a one-row append
// to a table of thousands of columns keeps one ColumnStats per non-null
// column, not one per column. EncodeSparse writes the stored columns
// only (ROWS_SPARSE records, version 2 footers); Encode writes every
// column (the dense layout of ROWS records and version 1 footers).
//
// Invariant: a column is stored iff it has a non-null value in the batch
// (columnStats gives a column with a value a null count below rows), so
// the stored columns are exactly the columns a ROWS_SPARSE record holds.
//
// A Stats is immutable once built (Append is for the builder only) and
// cheap to copy: chunks of snapshots share it with the batch index, and
// WithLen views it at another schema width without copying.
type Stats struct {
	n    int        // columns described
	rows int64      // the batch's rows: the null count of implied columns
	d    *statsData // nil: no column stored (every column all null)
}

type statsData struct {
	// cols gives the column of each vals entry, ascending; nil while the
	// stored columns are exactly 0..len(vals)-1 (dense: the usual case
	// for narrow tables, which then pay nothing for the index).
	cols []int32
	vals []ColumnStats
}

// NewStats starts an empty Stats for a batch of rows rows.
func NewStats(rows int64) Stats {
	return Stats{rows: rows}
}

// MakeStats returns the Stats of a batch of rows rows whose columns have
// the zone maps all, in order.
func MakeStats(rows int64, all []ColumnStats) Stats {
	s := NewStats(rows)
	for i := range all {
		s.Append(all[i])
	}
	s.Finish()
	return s
}

// Append adds the zone map of the next column. Only the builder of s may
// call it, before s is shared.
func (s *Stats) Append(cs ColumnStats) {
	j := s.n
	s.n++
	if cs.Kind == KindNone && cs.NullCount == s.rows {
		return // all null: implied
	}
	if s.d == nil {
		s.d = &statsData{}
	}
	d := s.d
	if d.cols == nil && len(d.vals) == j {
		d.vals = append(d.vals, cs)
		return
	}
	if d.cols == nil {
		d.cols = make([]int32, len(d.vals), cap(d.vals))
		for i := range d.cols {
			d.cols[i] = int32(i)
		}
	}
	d.cols = append(d.cols, int32(j))
	d.vals = append(d.vals, cs)
}

// Finish trims what Append over-allocated; the builder calls it last.
func (s *Stats) Finish() {
	d := s.d
	if d == nil || cap(d.vals) == len(d.vals) {
		return
	}
	d.vals = append([]ColumnStats(nil), d.vals...)
	if d.cols != nil {
		d.cols = append([]int32(nil), d.cols...)
	}
}

// Len is the number of columns s describes.
func (s Stats) Len() int { return s.n }

// Stored is the number of zone maps s holds (columns not all null).
func (s Stats) Stored() int {
	if s.d == nil {
		return 0
	}
	return len(s.d.vals)
}

// At returns the zone map of column j (0 <= j < Len()).
func (s Stats) At(j int) ColumnStats {
	if j < 0 || j >= s.n {
		panic("segment: Stats.At out of range")
	}
	d := s.d
	if d == nil {
		return ColumnStats{NullCount: s.rows}
	}
	if d.cols == nil {
		if j < len(d.vals) {
			return d.vals[j]
		}
	} else if i := sort.Search(len(d.cols), func(i int) bool { return int(d.cols[i]) >= j }); i < len(d.cols) && int(d.cols[i]) == j {
		return d.vals[i]
	}
	return ColumnStats{NullCount: s.rows}
}

// StoredCols appends to dst the columns whose zone maps s stores
// (ascending) and returns it.
func (s Stats) StoredCols(dst []int) []int {
	d := s.d
	if d == nil {
		return dst
	}
	for i := range d.vals {
		j := i
		if d.cols != nil {
			j = int(d.cols[i])
		}
		if j >= s.n {
			break
		}
		dst = append(dst, j)
	}
	return dst
}

// WithLen views s as describing n columns: columns beyond Len() are all
// null (the batch predates them), columns from n on are dropped. It
// shares s's storage.
func (s Stats) WithLen(n int) Stats {
	s.n = n
	return s
}

// Encode appends the encoding of every column's zone map: uvarint count,
// then each ColumnStats.
func (s Stats) Encode(e *codec.Encoder) {
	e.Uvarint(uint64(s.n))
	for j := range s.n {
		cs := s.At(j)
		AppendStats(e, &cs)
	}
}

// DecodeStatsList decodes what Encode wrote for a batch of rows rows.
func DecodeStatsList(d *codec.Decoder, rows int64) Stats {
	s := NewStats(rows)
	// Each zone map takes at least 2 bytes, which bounds the count.
	nc := d.Count(d.Len() / 2)
	for j := 0; j < nc && d.Err() == nil; j++ {
		s.Append(DecodeStats(d))
	}
	s.Finish()
	return s
}

// MaxColumns bounds the column count a decoder accepts (BigQuery allows
// 10,000 columns per table).
const MaxColumns = 1 << 20

// EncodeSparse appends the sparse encoding: uvarint column count n,
// uvarint stored count k, then (only if k < n) k × uvarint gap (the
// stored column's index minus the previous stored index plus one; the
// first: its index), then the k stored zone maps. All-null columns cost
// nothing.
func (s Stats) EncodeSparse(e *codec.Encoder) {
	var buf [64]int
	cols := s.StoredCols(buf[:0])
	e.Uvarint(uint64(s.n))
	e.Uvarint(uint64(len(cols)))
	if len(cols) < s.n {
		prev := -1
		for _, j := range cols {
			e.Uvarint(uint64(j - prev - 1))
			prev = j
		}
	}
	for _, j := range cols {
		cs := s.At(j)
		AppendStats(e, &cs)
	}
}

// DecodeSparseStats decodes what EncodeSparse wrote for a batch of rows
// rows. A stored zone map that says its column is all null is
// corruption: the writer never stores one, and a reader relies on
// stored columns being the present ones.
func DecodeSparseStats(d *codec.Decoder, rows int64) Stats {
	n := d.Count(MaxColumns)
	k := d.Count(n)
	if d.Err() != nil {
		return Stats{}
	}
	// Each index takes at least a byte, each zone map two.
	if k > d.Len()/2 {
		d.Fail("stored zone map count")
		return Stats{}
	}
	var cols []int
	if k < n {
		cols = make([]int, k)
		prev := -1
		for i := range cols {
			g := d.Count(n)
			prev += g + 1
			if prev >= n {
				d.Fail("stored column index")
				return Stats{}
			}
			cols[i] = prev
		}
	}
	s := NewStats(rows)
	next := 0 // next stored column index in cols
	for j := 0; j < n && d.Err() == nil; j++ {
		if cols != nil && (next == len(cols) || cols[next] != j) {
			s.n++ // implied: all null
			continue
		}
		next++
		cs := DecodeStats(d)
		if cs.Kind == KindNone && cs.NullCount == rows {
			d.Fail("stored zone map of an all-null column")
			return Stats{}
		}
		s.Append(cs)
	}
	s.Finish()
	return s
}
