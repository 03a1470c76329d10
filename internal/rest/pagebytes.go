package rest

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// pageRunRows is how many rows a page's rows are formatted at a time.
const pageRunRows = 256

// pageRunEnd is the end k of the next run of rows [i, k) of rec (of n
// rows) to format into a page of rows already size bytes long: at most
// pageRunRows rows, fewer when the bytes of their strings, bytes and
// JSON (what makes rows large) would take the page past limit, and at
// least one. A page then passes limit by at most one row (and JSON's
// escapes), where whole runs of 1 MB rows made pages of 256 MB.
func pageRunEnd(rec arrow.RecordBatch, i, n, size, limit int) int {
	k := min(n, i+pageRunRows)
	for k > i+1 && size+varBytes(rec, i, k) > limit {
		k = i + (k-i)/2
	}
	return k
}

// varBytes is the bytes of rec's top-level variable-length values in
// rows [i, k).
func varBytes(rec arrow.RecordBatch, i, k int) int {
	var n int
	for _, c := range rec.Columns() {
		switch a := c.(type) {
		case *array.String:
			o := a.ValueOffsets()
			n += int(o[k] - o[i])
		case *array.Binary:
			o := a.ValueOffsets()
			n += int(o[k]-o[i]) * 4 / 3 // base64 on the wire
		case *array.LargeString:
			o := a.ValueOffsets()
			n += int(o[k] - o[i])
		}
	}
	return n
}
