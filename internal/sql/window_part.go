package sql

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
)

// A window's partitions and sort keys, kept compactly: the input rows
// stay in their Arrow record (windowRelation); a partition is a run of
// row indices (int32) in one array, the partitions numbered by a
// keyTable of their byte-encoded keys (NULL, NaN and ±0 keys one
// partition each, as GROUP BY) in order of first row; the ORDER BY keys
// are typed columns (INT64, FLOAT64, STRING) or, for other types, the
// values as filter.Scalar.Values returns them. The partition keys are
// evaluated a chunk of rows at a time and not kept. A row costs 8 bytes
// of indices plus its sort keys' (8 bytes and a bit for a number),
// where it held an []any of boxed keys per window and an []int per
// partition.

// winChunk is how many rows a window's partition keys are evaluated at a
// time.
const winChunk = 8192

// chunked evaluates xs over rows [0, n) of rec, a chunk at a time,
// passing each chunk's values (vals[k] for xs[k]) and its first row.
func chunked(ctx context.Context, xs []*filter.Scalar, rec arrow.RecordBatch, n int, fn func(vals [][]any, from, m int) error) error {
	vals := make([][]any, len(xs))
	for from := 0; from < n; from += winChunk {
		m := min(winChunk, n-from)
		sub := rec
		if rec != nil && m != n {
			sub = rec.NewSlice(int64(from), int64(from+m))
		}
		err := func() error {
			for k, x := range xs {
				v, err := x.Values(ctx, sub, m)
				if err != nil {
					return err
				}
				vals[k] = v
			}
			return fn(vals, from, m)
		}()
		if sub != rec {
			sub.Release()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// partitions returns the rows [0, n) of rec grouped by the window's
// PARTITION BY keys: partition p is rows[start[p]:start[p+1]], its rows
// in input order, the partitions in order of first row; the bytes the
// returned slices hold, and those the work held besides (the key table
// and each row's partition number, garbage once it returns).
func (w *window) partitions(ctx context.Context, rec arrow.RecordBatch, n int) (rows, start []int32, held, work int64, err error) {
	if len(w.partition) == 0 {
		rows = make([]int32, n)
		for i := range rows {
			rows[i] = int32(i)
		}
		return rows, []int32{0, int32(n)}, 4 * int64(n+2), 0, nil
	}
	var kt keyTable
	pid := make([]int32, n)
	var kb []byte
	err = chunked(ctx, w.partition, rec, n, func(vals [][]any, from, m int) error {
		for i := 0; i < m; i++ {
			kb = kb[:0]
			for k := range vals {
				kb = appendKey(kb, vals[k][i])
			}
			p, _, err := kt.insert(kb)
			if err != nil {
				return err
			}
			pid[from+i] = int32(p)
		}
		return nil
	})
	if err != nil {
		return nil, nil, 0, 0, err
	}
	work = kt.bytes() + 4*int64(n) + int64(cap(kb))
	// A counting sort by partition: stable, so each partition's rows
	// stay in input order.
	start = make([]int32, kt.len()+1)
	for _, p := range pid {
		start[p+1]++
	}
	for p := 1; p < len(start); p++ {
		start[p] += start[p-1]
	}
	next := append([]int32(nil), start[:len(start)-1]...)
	rows = make([]int32, n)
	for i, p := range pid {
		rows[next[p]] = int32(i)
		next[p]++
	}
	held = 4*int64(n) + 4*int64(len(start))
	work += 4 * int64(len(next))
	return rows, start, held, work, nil
}

// sortCol is one ORDER BY key of a window for every row.
type sortCol struct {
	null   bitset
	ints   []int64
	floats []float64
	strs   []string
	vals   []any // other types
	kind   byte  // 'i', 'f', 's' or 'v'
	held   int64 // bytes the strings hold
}

// sortCols evaluates the window's ORDER BY keys over rec's n rows.
func (w *window) sortCols(ctx context.Context, rec arrow.RecordBatch, n int) ([]*sortCol, int64, error) {
	cols := make([]*sortCol, len(w.order))
	for k, x := range w.order {
		c := &sortCol{kind: 'v', null: make(bitset, (n+63)/64)}
		switch x.Type() {
		case "INT64":
			c.kind, c.ints = 'i', make([]int64, n)
		case "FLOAT64":
			c.kind, c.floats = 'f', make([]float64, n)
		case "STRING":
			c.kind, c.strs = 's', make([]string, n)
		default:
			c.vals = make([]any, n)
		}
		cols[k] = c
	}
	err := chunked(ctx, w.order, rec, n, func(vals [][]any, from, m int) error {
		for k, c := range cols {
			for i, v := range vals[k][:m] {
				r := from + i
				if v == nil {
					c.null.set(r)
					continue
				}
				var ok bool
				switch c.kind {
				case 'i':
					c.ints[r], ok = v.(int64)
				case 'f':
					c.floats[r], ok = v.(float64)
				case 's':
					c.strs[r], ok = v.(string)
					c.held += int64(len(c.strs[r]))
				default:
					c.vals[r], ok = v, true
					c.held += cellBytes(v)
				}
				if !ok {
					return fmt.Errorf("sql: internal: window ORDER BY key of type %s got %T", w.order[k].Type(), v)
				}
			}
		}
		return nil
	})
	var held int64
	for _, c := range cols {
		held += c.held + 8*int64(len(c.null)) + 8*int64(len(c.ints)+len(c.floats)) + 16*int64(len(c.strs)+len(c.vals))
	}
	return cols, held, err
}

// compare orders rows a and b, neither NULL, as compareValues orders
// their values (NaN first, -0 equal to +0).
func (c *sortCol) compare(a, b int) int {
	switch c.kind {
	case 'i':
		x, y := c.ints[a], c.ints[b]
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	case 'f':
		x, y := c.floats[a], c.floats[b]
		xn, yn := math.IsNaN(x), math.IsNaN(y)
		switch {
		case xn && yn:
			return 0
		case xn:
			return -1
		case yn:
			return 1
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	case 's':
		return strings.Compare(c.strs[a], c.strs[b])
	}
	return compareValues(c.vals[a], c.vals[b])
}

// value is row r's key as filter.Scalar.Values gives it.
func (c *sortCol) value(r int) any {
	if c.null.has(r) {
		return nil
	}
	switch c.kind {
	case 'i':
		return c.ints[r]
	case 'f':
		return c.floats[r]
	case 's':
		return c.strs[r]
	}
	return c.vals[r]
}

// winOut is a window function's value for every row: typed for the
// numbering functions, else values.
type winOut struct {
	ints   []int64   // ROW_NUMBER, RANK, DENSE_RANK, NTILE
	floats []float64 // PERCENT_RANK, CUME_DIST
	vals   []any
}

func newWinOut(name string, n int) *winOut {
	switch name {
	case "ROW_NUMBER", "RANK", "DENSE_RANK", "NTILE":
		return &winOut{ints: make([]int64, n)}
	case "PERCENT_RANK", "CUME_DIST":
		return &winOut{floats: make([]float64, n)}
	}
	return &winOut{vals: make([]any, n)}
}

func (o *winOut) bytes() int64 {
	return 8*int64(len(o.ints)+len(o.floats)) + 16*int64(len(o.vals))
}

// array returns the values as a column of field f's Arrow type.
func (o *winOut) array(f *schema.Field) (arrow.Array, error) {
	switch {
	case o.ints != nil:
		b := array.NewInt64Builder(memory.DefaultAllocator)
		defer b.Release()
		b.AppendValues(o.ints, nil)
		return b.NewArray(), nil
	case o.floats != nil:
		b := array.NewFloat64Builder(memory.DefaultAllocator)
		defer b.Release()
		b.AppendValues(o.floats, nil)
		return b.NewArray(), nil
	}
	rec, err := buildRecord(&schema.Schema{Fields: []*schema.Field{f}}, len(o.vals), func(_, row int) any { return o.vals[row] })
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	a := rec.Column(0)
	a.Retain()
	return a, nil
}

// testHookWindowHeld, when set, is called when a window has its
// partitions and sort keys, with what the query has charged then.
var testHookWindowHeld func(charged int64)
