package sql

import (
	"context"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/bqstore/bqstore/internal/filter"
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
	held  int64 // bytes charged for kept
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
