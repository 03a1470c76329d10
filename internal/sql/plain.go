package sql

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/bqstore/bqstore/internal/filter"
)

// runPlain runs a query without aggregation: the select list and ORDER BY
// keys evaluated over the rows WHERE keeps. With stream, the rows go to
// the sink batch by batch, past OFFSET and up to LIMIT, and out has none.
func (q *selectQuery) runPlain(ctx context.Context, items []Item, where *filter.Scalar, stream bool) (*output, error) {
	var exprs []*filter.Scalar
	out := &output{}
	for _, it := range items {
		x, err := q.compileItem(it)
		if err != nil {
			return nil, err
		}
		exprs = append(exprs, x)
		out.types = append(out.types, x.Type())
	}
	// aliased are the ORDER BY expressions naming select-list aliases
	// (orderalias.go), which read the columns aliasCols.
	aliased := map[int]bool{}
	aliasCols := map[string]bool{}
	for _, o := range q.order {
		col, err := q.resolveOrder(o, items)
		if err != nil {
			return nil, err
		}
		if col < 0 {
			var x *filter.Scalar
			var used map[string]bool
			var err error
			if q.sel.Distinct {
				x, used, err = q.compileDistinctOrder(o.Expr, items, out.types)
			} else {
				x, used, err = q.compileOrder(o.Expr, items, out.types)
			}
			if err != nil {
				return nil, err
			}
			col = len(exprs)
			exprs = append(exprs, x)
			if len(used) > 0 {
				aliased[col] = true
				for c := range used {
					aliasCols[c] = true
				}
			}
		}
		t := exprs[col].Type()
		if err := checkOrderable(q.runner, o.Expr, t); err != nil {
			return nil, err
		}
		out.order = append(out.order, orderKey{col: col, typ: t, desc: o.Desc, nullsLast: o.NullsLast})
	}
	if stream && q.probing {
		return out, nil // the types are what the probe wants
	}
	if stream && !q.stream.began {
		names := make([]string, len(items))
		for i, it := range items {
			names[i] = it.Alias
		}
		if err := q.begin(ctx, names, out.types); err != nil {
			return nil, err
		}
	}
	st := q.stream
	done := stream && st.left == 0
	if stream {
		q.past = func() bool { return done }
		defer func() { q.past = nil }()
	}
	if q.whereDone {
		where = nil // a correlated column applies it (correlated.go)
	}
	var tk *topK
	if !stream && len(out.order) > 0 && q.topK >= 0 {
		tk = newTopK(q.topK, out.order)
	}
	all := append([]*filter.Scalar{where}, exprs...)
	read := referenced(all)
	if len(aliasCols) > 0 {
		read = slices.DeleteFunc(read, func(c string) bool { return aliasCols[c] })
	}
	err := q.in.scanPast(ctx, where, q.past, read, sliced(func(rec arrow.RecordBatch, n int) error {
		if done {
			// Past LIMIT: the scan goes on only to count the bytes of
			// the columns read, which BigQuery bills whole.
			return nil
		}
		rec, n, release, err := whereRows(ctx, where, rec, n)
		if err != nil {
			return err
		}
		defer release()
		cols := make([][]any, len(exprs))
		var arec arrow.RecordBatch // rec with the items' values, for aliased
		for j, x := range exprs {
			in := rec
			if aliased[j] {
				if arec == nil {
					var release func()
					if arec, release, err = withAliases(rec, n, out.types, cols[:len(items)]); err != nil {
						return err
					}
					defer release()
				}
				in = arec
			}
			vals, err := x.Values(ctx, in, n)
			if err != nil {
				return err
			}
			cols[j] = vals
		}
		if q.hold {
			// A derived table's rows: into Arrow batches (derived.go).
			if out.held == nil {
				out.held = newHeldRows(q.runner, out.types)
			}
			return out.held.add(cols, n, nil)
		}
		var batch [][]any
		var charged int64
		for i := 0; i < n; i++ {
			if stream {
				if st.skip > 0 {
					st.skip--
					continue
				}
				if st.left == 0 {
					break
				}
				if st.left > 0 {
					st.left--
				}
			}
			row := make([]any, len(exprs))
			for j := range exprs {
				row[j] = cols[j][i]
			}
			if stream && q.unionTypes != nil {
				for j, t := range q.unionTypes {
					row[j] = coerce(row[j], out.types[j], t)
				}
			}
			b := rowBytes(row)
			if err := q.charge(b, "rows of the SELECT"); err != nil {
				return err
			}
			charged += b
			switch {
			case stream:
				batch = append(batch, row)
			case tk != nil:
				q.release(tk.offer(row, b))
			default:
				out.rows = append(out.rows, row)
				out.charged += b
			}
		}
		if stream {
			err := q.emit(ctx, batch, charged)
			if errors.Is(err, errLimitReached) {
				done = true
				return nil
			}
			return err
		}
		return nil
	}))
	if err != nil {
		return nil, err
	}
	if tk != nil {
		for _, row := range tk.rows {
			out.charged += row.bytes
		}
		out.rows = tk.sorted()
	}
	return out, nil
}

// plainChunk is the most rows of a batch runPlain evaluates at once.
const plainChunk = 8192

// sliced calls fn with rec cut into slices of at most plainChunk rows: a
// relation that hands on all its rows in one batch (a window's) is not
// evaluated into a boxed value per row and column for all of them at
// once.
func sliced(fn func(rec arrow.RecordBatch, n int) error) func(rec arrow.RecordBatch, n int) error {
	return func(rec arrow.RecordBatch, n int) error {
		if rec == nil || n <= plainChunk {
			return fn(rec, n)
		}
		for lo := 0; lo < n; lo += plainChunk {
			hi := min(n, lo+plainChunk)
			sub := rec.NewSlice(int64(lo), int64(hi))
			err := fn(sub, hi-lo)
			sub.Release()
			if err != nil {
				return err
			}
		}
		return nil
	}
}

// whereRows is the batch of rec's rows that where keeps (rec itself when
// it keeps all), and the count of them; release frees what it made. The
// select list, GROUP BY keys and aggregate arguments are evaluated on
// these rows only: as in BigQuery, `SELECT 1/x FROM t WHERE x != 0`
// never divides by zero (evaluating them over the whole batch and
// dropping rows afterwards failed such queries).
func whereRows(ctx context.Context, where *filter.Scalar, rec arrow.RecordBatch, n int) (arrow.RecordBatch, int, func(), error) {
	noop := func() {}
	if where == nil {
		return rec, n, noop, nil
	}
	keep, err := selection(ctx, where, rec, n)
	if err != nil {
		return nil, 0, noop, err
	}
	idx := make([]int32, 0, n)
	for i, k := range keep {
		if k {
			idx = append(idx, int32(i))
		}
	}
	if len(idx) == n || rec == nil { // nil: the block reads no column, only counts rows
		return rec, len(idx), noop, nil
	}
	ia := indices(idx)
	defer ia.Release()
	cols := make([]arrow.Array, rec.NumCols())
	release := func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}
	for c := range cols {
		if cols[c], err = takeArray(ctx, rec.Column(c), ia); err != nil {
			release()
			return nil, 0, noop, err
		}
	}
	out := array.NewRecordBatch(rec.Schema(), cols, int64(len(idx)))
	release()
	return out, len(idx), out.Release, nil
}

// selection evaluates a WHERE condition (nil: every row).
func selection(ctx context.Context, where *filter.Scalar, rec arrow.RecordBatch, n int) ([]bool, error) {
	keep := make([]bool, n)
	if where == nil {
		for i := range keep {
			keep[i] = true
		}
		return keep, nil
	}
	vals, err := where.Values(ctx, rec, n)
	if err != nil {
		return nil, err
	}
	for i, v := range vals {
		keep[i] = v == true
	}
	return keep, nil
}

// scan reads the input with the columns the expressions reference;
// exprs[0] is the block's WHERE (nil: none), by which a base table's
// batches are pruned.
func (q *selectQuery) scan(ctx context.Context, exprs []*filter.Scalar, fn func(rec arrow.RecordBatch, n int) error) error {
	return q.in.scanPast(ctx, exprs[0], q.past, referenced(exprs), fn)
}

// referenced lists the columns the expressions read, each once.
func referenced(exprs []*filter.Scalar) []string {
	var cols []string
	seen := map[string]bool{}
	for _, x := range exprs {
		if x == nil {
			continue
		}
		for _, c := range x.Columns() {
			if k := strings.ToLower(c); !seen[k] {
				seen[k] = true
				cols = append(cols, c)
			}
		}
	}
	return cols
}
