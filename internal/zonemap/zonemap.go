// Package zonemap exposes the engine's per-batch column statistics (a
// snapshot chunk's zone maps) to the filter's pruning (filter.MayMatch),
// for the Read API's row_restriction and for queries' WHERE.
package zonemap

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/storage"
	"github.com/bqstore/bqstore/internal/storage/segment"
)

// ChunkStats exposes a chunk's zone maps (one per top-level column of the
// snapshot schema) to the filter's pruning. Nested paths have no stats.
func ChunkStats(s *arrow.Schema, c storage.Chunk) filter.ColumnStatsFunc {
	return func(path []string) (filter.ColumnStats, bool) {
		if len(path) != 1 {
			return filter.ColumnStats{}, false
		}
		idx := -1
		for i, f := range s.Fields() {
			if strings.EqualFold(f.Name, path[0]) {
				idx = i
				break
			}
		}
		if idx < 0 || idx >= c.Stats.Len() {
			return filter.ColumnStats{}, false
		}
		cs := c.Stats.At(idx)
		// The stats describe the whole stored batch, of which the chunk
		// may be a part, so the chunk's null count is only known when the
		// batch has none. Otherwise report "some, not all" (NullCount
		// strictly between 0 and RowCount), which prunes neither IS NULL
		// nor IS NOT NULL: conservative.
		out := filter.ColumnStats{RowCount: c.NumRows}
		if cs.NullCount > 0 {
			out.RowCount, out.NullCount = c.NumRows+1, 1
		}
		switch cs.Kind {
		case segment.KindInt:
			out.HasMinMax, out.Min, out.Max = true, cs.MinI, cs.MaxI
		case segment.KindFloat:
			out.HasMinMax, out.Min, out.Max = true, cs.MinF, cs.MaxF
		case segment.KindBytes:
			switch s.Field(idx).Type.ID() {
			case arrow.BINARY:
				out.HasMinMax, out.Min, out.Max = true, cs.MinB, cs.MaxB
			default:
				out.HasMinMax, out.Min, out.Max = true, string(cs.MinB), string(cs.MaxB)
			}
		case segment.KindBool:
			out.HasMinMax, out.Min, out.Max = true, cs.MinI == 1, cs.MaxI == 1
		}
		return out, true
	}
}
