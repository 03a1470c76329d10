package sql

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// takeArray is compute.TakeArray (the rows of a at the Int32 indices
// idx; a NULL index gives a NULL row) for every column type the engine
// stores: arrow-go has no take kernel for MONTH_DAY_NANO_INTERVAL (an
// INTERVAL column), so a batch holding one failed ("invalid values byte
// width for take") whenever WHERE, a join or a window cut it.
func takeArray(ctx context.Context, a, idx arrow.Array) (arrow.Array, error) {
	iv, ok := a.(*array.MonthDayNanoInterval)
	if !ok {
		return compute.TakeArray(ctx, a, idx)
	}
	ix := idx.(*array.Int32)
	b := array.NewMonthDayNanoIntervalBuilder(memory.DefaultAllocator)
	defer b.Release()
	b.Reserve(ix.Len())
	for k := 0; k < ix.Len(); k++ {
		if ix.IsNull(k) || iv.IsNull(int(ix.Value(k))) {
			b.AppendNull()
			continue
		}
		b.Append(iv.Value(int(ix.Value(k))))
	}
	return b.NewArray(), nil
}
