package jobs

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/sql"
	"github.com/bqstore/bqstore/internal/storage"
	"github.com/bqstore/bqstore/internal/zonemap"
)

// ScanPruned is Scan skipping the chunks whose zone maps rule out the
// query's WHERE (sql.PruningTable). A skipped chunk is still billed: the
// logical bytes of its columns come from the zone maps where they tell
// them (a fixed-width column with no NULL in its batch: rows times the
// width), else from reading those columns of the chunk (NULLs, strings'
// lengths), which still saves the evaluation.
func (t *table) ScanPruned(ctx context.Context, cols []string, may func(filter.ColumnStatsFunc) bool,
	fn func(arrow.RecordBatch) error, skipped func(bytes int64)) error {
	idx, err := t.columnIndexes(cols)
	if err != nil {
		return err
	}
	as := t.snap.Schema()
	for _, c := range t.snap.Chunks() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if c.NumRows == 0 {
			continue
		}
		if !may(zonemap.ChunkStats(as, c)) {
			b, err := t.chunkBytes(ctx, c, idx)
			if err != nil {
				return err
			}
			skipped(b)
			continue
		}
		rec, err := t.snap.ReadChunk(ctx, c, 0, c.NumRows, idx)
		if err != nil {
			return err
		}
		err = fn(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// columnIndexes maps column names to the snapshot's column indexes.
func (t *table) columnIndexes(cols []string) ([]int, error) {
	idx := make([]int, len(cols))
	for i, c := range cols {
		idx[i] = -1
		for j, f := range t.schema.Fields {
			if strings.EqualFold(f.Name, c) && j < t.snap.Schema().NumFields() {
				idx[i] = j
			}
		}
		if idx[i] < 0 {
			return nil, fmt.Errorf("jobs: column %s not in the snapshot", c)
		}
	}
	return idx, nil
}

// chunkBytes is sql.LogicalBytes of columns idx of chunk c, from the
// zone maps when they tell it, else read.
func (t *table) chunkBytes(ctx context.Context, c storage.Chunk, idx []int) (int64, error) {
	var n int64
	var read []int
	for _, i := range idx {
		if i >= c.Stats.Len() {
			continue // the batch predates the column: all NULL
		}
		w := fixedWidth(t.snap.Schema().Field(i).Type)
		if w > 0 && c.Stats.At(i).NullCount == 0 {
			n += w * c.NumRows
			continue
		}
		read = append(read, i)
	}
	if len(read) > 0 {
		rec, err := t.snap.ReadChunk(ctx, c, 0, c.NumRows, read)
		if err != nil {
			return 0, err
		}
		n += sql.LogicalBytes(rec)
		rec.Release()
	}
	return n, nil
}

// fixedWidth is the bytes BigQuery bills per non-NULL value of an Arrow
// type (as sql.LogicalBytes counts them); 0 for variable-width types.
func fixedWidth(t arrow.DataType) int64 {
	switch t.ID() {
	case arrow.BOOL:
		return 1
	case arrow.INT64, arrow.FLOAT64, arrow.DATE32, arrow.TIMESTAMP, arrow.TIME64:
		return 8
	case arrow.DECIMAL128:
		return 16
	case arrow.DECIMAL256:
		return 32
	}
	return 0
}
