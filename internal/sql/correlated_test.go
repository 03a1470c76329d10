package sql

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/bqstore/bqstore/internal/schema"
)

// TestCorrelatedBilledOnce: a correlated subquery's table is billed once
// per query, as BigQuery (which runs it as a join) bills it: its columns'
// bytes, not once per run of the subquery. Each run added them again, so
// totalBytesProcessed (and maximumBytesBilled's check) grew with the
// number of distinct outer values.
func TestCorrelatedBilledOnce(t *testing.T) {
	ints := func(name string, vals ...int64) *memTable {
		mt := &memTable{schema: &schema.Schema{Fields: []*schema.Field{{Name: name, Type: schema.Integer}}}, batch: 2}
		for _, v := range vals {
			mt.rows = append(mt.rows, []any{v})
		}
		return mt
	}
	tables := map[string]*memTable{"t": ints("id", 1, 2, 3, 4), "u": ints("k", 1, 2, 2)}
	resolve := func(_ context.Context, nm TableName) (Table, error) { return tables[strings.ToLower(nm.Table)], nil }
	const want = 4*8 + 3*8 // t.id and u.k, once each
	for _, q := range []string{
		"SELECT id, (SELECT COUNT(*) FROM u WHERE u.k <= t.id) AS c FROM t",
		"SELECT id FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.k = t.id)",
		"SELECT id, ARRAY(SELECT k FROM u WHERE u.k < t.id) AS ks FROM t",
		"SELECT id, (SELECT COUNT(*) FROM u WHERE u.k <= t.id) AS c FROM t GROUP BY id",
	} {
		res, err := Run(context.Background(), q, resolve, Options{})
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if res.BytesProcessed != want {
			t.Errorf("%s: BytesProcessed %d, want %d (%s)", q, res.BytesProcessed, want, fmt.Sprint(res.Rows))
		}
	}
}
