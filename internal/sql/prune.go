package sql

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/bqstore/bqstore/internal/filter"
)

// PruningTable is a Table whose scan can skip the batches a query's WHERE
// rules out by their zone maps (filter.Scalar.MayMatch).
type PruningTable interface {
	Table
	// ScanPruned is Scan, except that a batch for which may (called with
	// the batch's zone maps) is false is not passed to fn: skipped gets
	// the logical bytes (LogicalBytes) of its columns cols instead, as
	// BigQuery bills the columns of the whole table whatever a filter
	// keeps (pruning saves the work, not the bill).
	ScanPruned(ctx context.Context, cols []string, may func(filter.ColumnStatsFunc) bool,
		fn func(arrow.RecordBatch) error, skipped func(bytes int64)) error
}

// scanWhere reads the relation for a block whose WHERE is where: a base
// table that can prune skips the batches where rules out, counting them
// in r.pruned. Other relations read every batch.
func (r *relation) scanWhere(ctx context.Context, where *filter.Scalar, cols []string, fn func(rec arrow.RecordBatch, n int) error) error {
	return r.scanPast(ctx, where, nil, cols, fn)
}

// scanPast is scanWhere also skipping every batch once past (if set)
// reports true: a streamed LIMIT reached, after which the scan only
// bills the columns' bytes (as BigQuery does), from the zone maps where
// they tell them rather than reading.
func (r *relation) scanPast(ctx context.Context, where *filter.Scalar, past func() bool, cols []string, fn func(rec arrow.RecordBatch, n int) error) error {
	if where == nil && past == nil || r.pruning == nil {
		return r.scan(ctx, cols, fn)
	}
	may := func(stats filter.ColumnStatsFunc) bool {
		if past != nil && past() {
			return false
		}
		return where == nil || where.MayMatch(stats)
	}
	return r.pruning(ctx, may, cols, fn)
}

// pruningScan is tableRelation's scan with a WHERE to prune by.
func (r *runner) pruningScan(t PruningTable, whole func(ctx context.Context, cols []string, fn func(arrow.RecordBatch, int) error) error) func(ctx context.Context, may func(filter.ColumnStatsFunc) bool, cols []string, fn func(arrow.RecordBatch, int) error) error {
	return func(ctx context.Context, may func(filter.ColumnStatsFunc) bool, cols []string, fn func(arrow.RecordBatch, int) error) error {
		if len(cols) == 0 {
			return whole(ctx, cols, fn)
		}
		return t.ScanPruned(ctx, cols, may, func(rec arrow.RecordBatch) error {
			r.bytes += logicalBytes(rec)
			return fn(rec, int(rec.NumRows()))
		}, func(bytes int64) {
			r.bytes += bytes
			r.pruned++
		})
	}
}
