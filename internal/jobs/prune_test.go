package jobs

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/sql"
)

// TestQueryPrunes: a WHERE the zone maps rule out for most batches skips
// them (PrunedBatches counts them), with the same rows as a WHERE they
// cannot prune, and the same totalBytesProcessed: BigQuery bills the
// columns read whole, pruned or not (an unpartitioned, unclustered
// table).
func TestQueryPrunes(t *testing.T) {
	const n = 100_000 // 25 batches of 4,096 rows, x ascending
	s, cat, db := engineStore(t, Options{})
	fillTable(t, cat, db, "big", n)
	run := func(q string) *sql.Result {
		t.Helper()
		res, err := sql.Run(context.Background(), q, func(ctx context.Context, name sql.TableName) (sql.Table, error) {
			return s.open("p", Query{}, name, time.Now())
		}, sql.Options{})
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return res
	}
	for _, c := range []struct{ pruned, whole string }{
		{"SELECT COUNT(*), SUM(x), MAX(s) FROM d.big WHERE x < 5000", "SELECT COUNT(*), SUM(x), MAX(s) FROM d.big WHERE IF(x IS NULL, 0, x) < 5000"},
		{"SELECT x, s FROM d.big WHERE x BETWEEN 90000 AND 90003", "SELECT x, s FROM d.big WHERE IF(x IS NULL, 0, x) BETWEEN 90000 AND 90003"},
		{"SELECT s FROM d.big WHERE x > 1000000", "SELECT s FROM d.big WHERE IF(x IS NULL, 0, x) > 1000000"},
		{"SELECT x FROM d.big WHERE s = 'row-7' AND x < 10", "SELECT x FROM d.big WHERE IF(s IS NULL, '', s) = 'row-7' AND IF(x IS NULL, 0, x) < 10"},
	} {
		p, w := run(c.pruned), run(c.whole)
		if p.PrunedBatches < 20 || w.PrunedBatches != 0 {
			t.Errorf("%s: %d batches pruned (%d without pruning), want 20 or more", c.pruned, p.PrunedBatches, w.PrunedBatches)
		}
		if fmt.Sprint(p.Rows) != fmt.Sprint(w.Rows) {
			t.Errorf("%s: %v, want %v", c.pruned, p.Rows, w.Rows)
		}
		if p.BytesProcessed != w.BytesProcessed || p.BytesProcessed == 0 {
			t.Errorf("%s: %d bytes processed, want the whole columns' %d", c.pruned, p.BytesProcessed, w.BytesProcessed)
		}
	}
	// A streamed LIMIT reads no batch past its rows, and bills them all.
	whole := run("SELECT x, s FROM d.big")
	res, err := sql.Run(context.Background(), "SELECT x, s FROM d.big LIMIT 3", func(ctx context.Context, name sql.TableName) (sql.Table, error) {
		return s.open("p", Query{}, name, time.Now())
	}, sql.Options{Sink: discard{}})
	if err != nil || res.NumRows != 3 || res.PrunedBatches < 20 || res.BytesProcessed != whole.BytesProcessed {
		t.Fatalf("LIMIT 3: %v, %d rows, %d batches unread, %d bytes (want %d)", err, res.NumRows, res.PrunedBatches, res.BytesProcessed, whole.BytesProcessed)
	}
}

type discard struct{}

func (discard) Begin(context.Context, *schema.Schema) error { return nil }
func (discard) Write(context.Context, [][]any) error        { return nil }
