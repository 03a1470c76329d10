package sql

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/bqstore/bqstore/internal/schema"
)

// TestFastAggregate: the simple aggregate's fast path answers what the
// generic path does (the same query made to miss the fast path by a
// no-op: x + 0), NULLs, empty inputs, a WHERE, FLOAT64 sums in row order
// with NaN and infinities, and an INT64 SUM overflow (the generic
// path's error). The table is random; the seed is logged.
func TestFastAggregate(t *testing.T) {
	seed := int64(7)
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	var rows [][]any
	for i := 0; i < 5000; i++ {
		var a, f any
		if rng.Intn(5) > 0 {
			a = rng.Int63n(2000) - 1000
		}
		switch rng.Intn(50) {
		case 0:
		case 1:
			f = math.NaN()
		case 2:
			f = math.Inf(1 - 2*rng.Intn(2))
		default:
			f = rng.NormFloat64() * 1e6
		}
		rows = append(rows, []any{a, f, fmt.Sprint(i % 13)})
	}
	rows = append(rows, []any{nil, nil, nil})
	big := [][]any{{int64(math.MaxInt64), 1.0, "x"}, {int64(1), 2.0, "y"}}
	mk := func(rows [][]any) *memTable {
		return &memTable{schema: &schema.Schema{Fields: []*schema.Field{
			{Name: "a", Type: schema.Integer}, {Name: "f", Type: schema.Float}, {Name: "s", Type: schema.String}}}, rows: rows, batch: 333}
	}
	tables := map[string]*memTable{"t": mk(rows), "big": mk(big), "empty": mk(nil)}
	resolve := func(_ context.Context, n TableName) (Table, error) { return tables[n.Table], nil }
	for _, c := range []struct{ fast, generic string }{
		{"SELECT COUNT(*), COUNT(a), SUM(a), MIN(a), MAX(a), SUM(f), COUNT(s) FROM t",
			"SELECT COUNT(*), COUNT(a + 0), SUM(a + 0), MIN(a + 0), MAX(a + 0), SUM(f + 0), COUNT(CONCAT(s, '')) FROM t"},
		{"SELECT COUNT(*) AS n, SUM(a) AS s FROM t WHERE a > 500 OR s = '3'",
			"SELECT COUNT(*) AS n, SUM(a + 0) AS s FROM t WHERE a > 500 OR s = '3'"},
		{"SELECT COUNT(*), SUM(a), MIN(a), MAX(a), SUM(f) FROM empty",
			"SELECT COUNT(*), SUM(a + 0), MIN(a + 0), MAX(a + 0), SUM(f + 0) FROM empty"},
		{"SELECT SUM(a), MAX(a) FROM t WHERE a IS NULL", "SELECT SUM(a + 0), MAX(a + 0) FROM t WHERE a IS NULL"},
		{"SELECT SUM(a) FROM big", "SELECT SUM(a + 0) FROM big"},
	} {
		fast, ferr := Run(context.Background(), c.fast, resolve, Options{})
		gen, gerr := Run(context.Background(), c.generic, resolve, Options{})
		if fmt.Sprint(ferr) != fmt.Sprint(gerr) {
			t.Errorf("%s: error %v, generic %v", c.fast, ferr, gerr)
			continue
		}
		if ferr != nil {
			continue
		}
		if fmt.Sprint(fast.Rows) != fmt.Sprint(gen.Rows) || fields(fast) != fields(gen) || fast.BytesProcessed != gen.BytesProcessed {
			t.Errorf("%s: %v %v (%d bytes), generic %v %v (%d bytes)", c.fast, fast.Rows, fast.Schema.Fields, fast.BytesProcessed, gen.Rows, gen.Schema.Fields, gen.BytesProcessed)
		}
	}
}

func fields(r *Result) string {
	var s string
	for _, f := range r.Schema.Fields {
		s += f.Name + ":" + string(f.Type) + " "
	}
	return s
}
