package sql

import (
	"container/heap"
	"sort"
)

// topK keeps the first k rows of ORDER BY ... LIMIT (k is LIMIT plus
// OFFSET) as the rows arrive, instead of every row: a heap of at most k
// rows with the one that sorts last on top. A new row replaces it only
// when it sorts strictly before it, so among ties the earlier row stays,
// as the stable sort of every row keeps it: the result is the same.
type topK struct {
	k    int64
	keys []orderKey
	rows []topRow
	seq  int64
}

type topRow struct {
	row   []any
	seq   int64 // arrival order: breaks ties
	bytes int64 // charged to the budget
}

func newTopK(k int64, keys []orderKey) *topK { return &topK{k: k, keys: keys} }

// before reports whether a sorts before b: by the keys, then arrival.
func (h *topK) before(a, b *topRow) bool {
	if c := compareRows(a.row, b.row, h.keys); c != 0 {
		return c < 0
	}
	return a.seq < b.seq
}

func (h *topK) Len() int           { return len(h.rows) }
func (h *topK) Less(i, j int) bool { return h.before(&h.rows[j], &h.rows[i]) } // the last on top
func (h *topK) Swap(i, j int)      { h.rows[i], h.rows[j] = h.rows[j], h.rows[i] }
func (h *topK) Push(x any)         { h.rows = append(h.rows, x.(topRow)) }
func (h *topK) Pop() any {
	x := h.rows[len(h.rows)-1]
	h.rows = h.rows[:len(h.rows)-1]
	return x
}

// offer considers a row charged bytes to the budget and returns the
// bytes no longer held: the row's own when it is not kept, else those of
// the row it pushed out (0 if none).
func (h *topK) offer(row []any, bytes int64) int64 {
	r := topRow{row: row, seq: h.seq, bytes: bytes}
	h.seq++
	if int64(len(h.rows)) < h.k {
		heap.Push(h, r)
		return 0
	}
	if len(h.rows) == 0 || !h.before(&r, &h.rows[0]) {
		return bytes
	}
	out := h.rows[0].bytes
	h.rows[0] = r
	heap.Fix(h, 0)
	return out
}

// sorted returns the kept rows in order.
func (h *topK) sorted() [][]any {
	sort.Slice(h.rows, func(i, j int) bool { return h.before(&h.rows[i], &h.rows[j]) })
	out := make([][]any, len(h.rows))
	for i := range h.rows {
		out[i] = h.rows[i].row
	}
	return out
}
