package sql

import (
	"context"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
)

// A table a correlated subquery reads is read by each of its runs. As
// BigQuery runs such a subquery as a join, it bills the table's columns
// once per query: runs after the first that read the same columns add
// nothing to the bytes billed (nor to the pruned batches). From the
// second run on, the batches read are kept (within half the memory
// budget, charged to it) and later runs read them from memory instead of
// the table.

// corrScan is what the runs of the subqueries read of one table
// reference (a FROM item of the subquery's text, read by every run).
type corrScan struct {
	scans map[string]int // columns read (colsKey) -> scans so far
	key   string         // the columns of batches, if kept
	kept  []keptBatch
	held  int64 // bytes charged for kept (and index)
	// index is the kept rows by their value of column indexCol (of the
	// columns key), for corrKey; built on first use.
	index    map[string][]indexHit
	indexCol int
}

type keptBatch struct {
	rec arrow.RecordBatch // nil: a batch of no columns
	n   int
}

func colsKey(cols []string) string { return strings.ToLower(strings.Join(cols, "\x00")) }

// corrTableRelation is tableRelation for a table reference read inside a
// subquery that runs in a correlation frame (r.corr not empty).
func (r *runner) corrTableRelation(f *TableRef, t Table, qual string) *relation {
	if r.corrScans == nil {
		r.corrScans = map[*TableRef]*corrScan{}
	}
	cs := r.corrScans[f]
	if cs == nil {
		cs = &corrScan{scans: map[string]int{}}
		r.corrScans[f] = cs
	}
	rel := r.tableRelation(t, qual)
	scan, pruning := rel.scan, rel.pruning
	// read runs one scan of the table (or serves the kept batches),
	// billing it only the first time.
	read := func(ctx context.Context, cols []string, fn func(arrow.RecordBatch, int) error, do func(fn func(arrow.RecordBatch, int) error) error) error {
		key := colsKey(cols)
		if cs.kept != nil && cs.key == key {
			if kb := r.keyBinds[f]; kb != nil {
				if ok, err := cs.keyedRows(ctx, r, rel, kb, cols, fn); ok {
					return err
				}
			}
			for _, b := range cs.kept {
				if err := fn(b.rec, b.n); err != nil {
					return err
				}
			}
			return nil
		}
		bytes, pruned := r.bytes, r.pruned
		keep := cs.scans[key] > 0 && cs.kept == nil
		var kept []keptBatch
		var held int64
		drop := func() {
			for _, b := range kept {
				if b.rec != nil {
					b.rec.Release()
				}
			}
			kept, keep = nil, false
		}
		err := do(func(rec arrow.RecordBatch, n int) error {
			if keep {
				var b int64
				if rec != nil {
					b = arrowBytes(rec.Columns())
				}
				if r.opts.MaxMemory > 0 && r.mem+held+b > r.opts.MaxMemory/2 {
					drop()
				} else {
					if rec != nil {
						rec.Retain()
					}
					kept, held = append(kept, keptBatch{rec, n}), held+b
				}
			}
			return fn(rec, n)
		})
		if cs.scans[key] > 0 {
			r.bytes, r.pruned = bytes, pruned // billed by the first run
		}
		cs.scans[key]++
		if err != nil || !keep {
			drop()
			return err
		}
		if err := r.charge(held, "correlated subqueries"); err != nil {
			r.release(held)
			drop()
			return nil // the scan itself went through: only the keeping is given up
		}
		cs.key, cs.kept, cs.held = key, kept, held
		if cs.kept == nil {
			cs.kept = []keptBatch{} // an empty table, kept
		}
		return nil
	}
	rel.scan = func(ctx context.Context, cols []string, fn func(arrow.RecordBatch, int) error) error {
		return read(ctx, cols, fn, func(fn func(arrow.RecordBatch, int) error) error { return scan(ctx, cols, fn) })
	}
	if pruning != nil {
		rel.pruning = func(ctx context.Context, may func(filter.ColumnStatsFunc) bool, cols []string, fn func(arrow.RecordBatch, int) error) error {
			if cs.kept != nil && cs.key == colsKey(cols) {
				return rel.scan(ctx, cols, fn) // the kept batches (WHERE drops the rows pruning would)
			}
			bytes, pruned, first := r.bytes, r.pruned, cs.scans[colsKey(cols)] == 0
			err := pruning(ctx, may, cols, fn)
			if !first {
				r.bytes, r.pruned = bytes, pruned
			}
			cs.scans[colsKey(cols)]++
			return err
		}
	}
	return rel
}

// releaseCorrScans frees the batches kept for correlated subqueries.
func (r *runner) releaseCorrScans() {
	for _, cs := range r.corrScans {
		for _, b := range cs.kept {
			if b.rec != nil {
				b.rec.Release()
			}
		}
		r.release(cs.held)
		cs.kept, cs.held = nil, 0
	}
}

// An equality between a column of the subquery's table and a column of
// the enclosing row, a conjunct of the subquery's WHERE (`WHERE u.k =
// t.id AND ...`), lets a run read only the kept rows whose column holds
// the row's value: an index of the kept batches by that column, built
// once, gives them. The WHERE still runs on them, so the index need only
// never leave out a row the equality keeps: it is used for INT64 and
// STRING columns of the same type on both sides, whose equal values have
// equal keys (appendKey); a NULL value reads no row.

// corrKey is such an equality of a subquery: its table reference, the
// path naming the table's column, and the enclosing row's column.
type corrKey struct {
	ref        *TableRef
	inner      []string
	outerParts []string // naming outer, if the table has no such column
	outer      int      // column of the frame's relation
}

// keyBind is a corrKey while one run of its subquery goes on.
type keyBind struct {
	inner, outer []string
	typ          string // the outer column's type
	value        any
}

// corrKeyOf finds a corrKey of sub, whose enclosing row is a row of in;
// nil if none.
func (r *runner) corrKeyOf(sub *Query, in *relation) *corrKey {
	sel, ok := sub.Body.(*Select)
	if !ok || sel.Where == nil || len(sub.With) > 0 {
		return nil
	}
	f, ok := sel.From.(*TableRef)
	if !ok || strings.HasSuffix(f.Name.Table, "*") {
		return nil
	}
	for _, conj := range conjuncts(sel.Where.toks) {
		eq := -1
		for i, t := range conj {
			if t.Op && t.Text == "=" {
				eq = i
				break
			}
		}
		if eq <= 0 || eq == len(conj)-1 {
			continue
		}
		a, okA := Span{toks: conj[:eq]}.path()
		b, okB := Span{toks: conj[eq+1:]}.path()
		if !okA || !okB {
			continue
		}
		for _, side := range [][2][]string{{a, b}, {b, a}} {
			i, used, err := in.resolve(r.src, side[1], 0)
			if err == nil && used == len(side[1]) {
				return &corrKey{ref: f, inner: side[0], outerParts: side[1], outer: i}
			}
		}
	}
	return nil
}

// bindKey records, for the run of sub with the enclosing row's values
// bind, the value its table's rows must match; the returned func undoes
// it.
func (r *runner) bindKey(sub *Query, in *relation, bind map[int]any) func() {
	if r.corrKeys == nil {
		r.corrKeys = map[*Query]*corrKey{}
	}
	k, ok := r.corrKeys[sub]
	if !ok {
		k = r.corrKeyOf(sub, in)
		r.corrKeys[sub] = k
	}
	if k == nil {
		return func() {}
	}
	if r.keyBinds == nil {
		r.keyBinds = map[*TableRef]*keyBind{}
	}
	prev := r.keyBinds[k.ref]
	r.keyBinds[k.ref] = &keyBind{inner: k.inner, outer: k.outerParts, typ: filter.FieldTypeName(in.field(k.outer)), value: bind[k.outer]}
	return func() { r.keyBinds[k.ref] = prev }
}

// keyedRows serves the kept batches' rows whose column (kb.inner, in
// rel) holds kb.value, if the index applies; ok is false if it does not.
func (cs *corrScan) keyedRows(ctx context.Context, r *runner, rel *relation, kb *keyBind, cols []string, fn func(arrow.RecordBatch, int) error) (bool, error) {
	i, used, err := rel.resolve(r.src, kb.inner, 0)
	if err != nil || used != len(kb.inner) {
		return false, nil
	}
	if _, _, err := rel.resolve(r.src, kb.outer, 0); err == nil {
		return false, nil // the "outer" name is the table's own column
	}
	t := filter.FieldTypeName(rel.field(i))
	if t != kb.typ || t != "INT64" && t != "STRING" {
		return false, nil
	}
	col := -1
	for c, name := range cols {
		if strings.EqualFold(name, rel.cols[i].internal) {
			col = c
		}
	}
	if col < 0 {
		return false, nil
	}
	if cs.index == nil || cs.indexCol != col {
		idx, err := cs.buildIndex(ctx, r, rel.schema, col)
		if err != nil || idx == nil {
			return false, err
		}
		cs.index, cs.indexCol = idx, col
	}
	if kb.value == nil {
		return true, nil // x = NULL keeps no row
	}
	for _, hit := range cs.index[string(appendKey(nil, kb.value))] {
		b := cs.kept[hit.batch]
		ia := indices(hit.rows)
		arrs := make([]arrow.Array, b.rec.NumCols())
		for c := range arrs {
			a, err := takeArray(ctx, b.rec.Column(c), ia)
			if err != nil {
				ia.Release()
				for _, x := range arrs[:c] {
					x.Release()
				}
				return true, err
			}
			arrs[c] = a
		}
		ia.Release()
		rec := array.NewRecordBatch(b.rec.Schema(), arrs, int64(len(hit.rows)))
		for _, a := range arrs {
			a.Release()
		}
		err := fn(rec, len(hit.rows))
		rec.Release()
		if err != nil {
			return true, err
		}
	}
	return true, nil
}

// indexHit is the rows of one kept batch with one key.
type indexHit struct {
	batch int
	rows  []int32
}

// buildIndex indexes the kept batches by column col (charged to the
// memory budget; nil, no error, if it does not fit).
func (cs *corrScan) buildIndex(ctx context.Context, r *runner, s *schema.Schema, col int) (map[string][]indexHit, error) {
	idx := map[string][]indexHit{}
	var held int64
	var x *filter.Scalar
	for k, b := range cs.kept {
		if b.rec == nil {
			return nil, nil
		}
		if x == nil {
			var err error
			if x, err = r.compileText(colText(b.rec.Schema().Field(col).Name), s, nil); err != nil {
				return nil, nil
			}
		}
		vals, err := x.Values(ctx, b.rec, b.n)
		if err != nil {
			return nil, err
		}
		for row, v := range vals {
			if v == nil {
				continue
			}
			key := string(appendKey(nil, v))
			hits := idx[key]
			if n := len(hits); n > 0 && hits[n-1].batch == k {
				hits[n-1].rows = append(hits[n-1].rows, int32(row))
			} else {
				idx[key] = append(hits, indexHit{batch: k, rows: []int32{int32(row)}})
				held += int64(len(key)) + 64
			}
			held += 4
		}
	}
	if r.opts.MaxMemory > 0 && r.mem+held > r.opts.MaxMemory/2 {
		return nil, nil
	}
	if err := r.charge(held, "correlated subqueries"); err != nil {
		r.release(held)
		return nil, nil
	}
	cs.held += held
	return idx, nil
}
