package sql

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

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

// TestCorrelatedKeyedRuns: a run of a correlated subquery whose WHERE
// equates a column of its table with one of the enclosing row reads only
// the kept rows holding the row's value (correlated_scan.go). The same
// queries with the equality hidden from that (u.k + 0) read every row;
// both must agree, on random tables with NULL keys, keys spread over
// batches, STRING keys, and an INT64 = FLOAT64 equality (not indexed).
func TestCorrelatedKeyedRuns(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	for iter := 0; iter < 20; iter++ {
		mk := func(n, keys int) *memTable {
			mt := &memTable{schema: &schema.Schema{Fields: []*schema.Field{
				{Name: "k", Type: schema.Integer}, {Name: "v", Type: schema.Integer},
				{Name: "s", Type: schema.String}, {Name: "f", Type: schema.Float}}}, batch: 1 + rng.Intn(4)}
			for i := 0; i < n; i++ {
				var k, s, f any = int64(rng.Intn(keys)), fmt.Sprintf("s%d", rng.Intn(keys)), float64(rng.Intn(keys))
				if rng.Intn(5) == 0 {
					k = nil
				}
				if rng.Intn(5) == 0 {
					s = nil
				}
				mt.rows = append(mt.rows, []any{k, int64(rng.Intn(10)), s, f})
			}
			return mt
		}
		tables := map[string]*memTable{"t": mk(1+rng.Intn(12), 1+rng.Intn(5)), "u": mk(rng.Intn(12), 1+rng.Intn(5))}
		resolve := func(_ context.Context, nm TableName) (Table, error) { return tables[strings.ToLower(nm.Table)], nil }
		for _, q := range []string{
			"SELECT k, v, EXISTS (SELECT 1 FROM u WHERE u.k = t.k AND u.v > t.v) AS e FROM t ORDER BY k, v, e",
			"SELECT k, v, (SELECT COUNT(*) FROM u WHERE t.k = u.k) AS c FROM t ORDER BY k, v, c",
			"SELECT s, v, (SELECT SUM(v) FROM u WHERE u.s = t.s) AS c FROM t ORDER BY s, v, c",
			"SELECT k, f, (SELECT COUNT(*) FROM u WHERE u.k = t.f) AS c FROM t ORDER BY k, f, c",
			"SELECT k, ARRAY(SELECT v FROM u WHERE k = t.k ORDER BY v) AS vs FROM t ORDER BY k, v",
			"SELECT k, COUNT(*) AS n, (SELECT MAX(v) FROM u WHERE u.k = t.k) AS m FROM t GROUP BY k ORDER BY k",
			"SELECT k, v, (SELECT COUNT(*) FROM u WHERE u.k = k AND u.v >= t.v) AS c FROM t ORDER BY k, v, c", // k is u.k
			"SELECT k, v, (SELECT COUNT(*) FROM u AS t2 WHERE t2.k = k AND t2.s = t.s) AS c FROM t ORDER BY k, v, c",
		} {
			plain := strings.NewReplacer("u.k = t.k", "u.k + 0 = t.k", "t.k = u.k", "t.k = u.k + 0", "u.s = t.s", "CONCAT(u.s, '') = t.s",
				"u.k = t.f", "u.k + 0 = t.f", "k = t.k", "k + 0 = t.k", "u.k = k AND", "u.k + 0 = k AND", "t2.k = k", "t2.k + 0 = k").Replace(q)
			got, err1 := Run(context.Background(), q, resolve, Options{})
			want, err2 := Run(context.Background(), plain, resolve, Options{})
			if err1 != nil || err2 != nil {
				t.Fatalf("seed %d: %s: %v / %s: %v", seed, q, err1, plain, err2)
			}
			if g, w := fmt.Sprint(got.Rows), fmt.Sprint(want.Rows); g != w {
				t.Fatalf("seed %d: %s\n got %s\nwant %s (%s)", seed, q, g, w, plain)
			}
		}
	}
}

// TestCorrelatedWhereFiltersFirst: in WHERE c AND <correlated subquery>,
// the subquery runs only for the rows c keeps. It ran for every row of
// the block's input, the whole WHERE applied after: over a FROM
// subquery, which each run materializes anew, a 20,000-row table took
// seconds for the 10 rows a.k < 10 keeps. Conjuncts after the subquery
// (which AND evaluates only where the subquery's does not decide) and an
// OR at the top level do not filter first.
func TestCorrelatedWhereFiltersFirst(t *testing.T) {
	const n = 200
	tb := &memTable{schema: &schema.Schema{Fields: []*schema.Field{{Name: "k", Type: schema.Integer}}}, batch: 64}
	for i := 0; i < n; i++ {
		tb.rows = append(tb.rows, []any{int64(i)})
	}
	resolve := func(_ context.Context, nm TableName) (Table, error) { return tb, nil }
	runs := 0
	testHookCorrelatedRun = func() { runs++ }
	defer func() { testHookCorrelatedRun = nil }()
	for _, c := range []struct {
		q     string
		count int64
		runs  int
	}{
		{"SELECT COUNT(*) FROM t a WHERE a.k < 10 AND EXISTS (SELECT 1 FROM (SELECT k FROM t) d WHERE d.k = a.k)", 10, 10},
		{"SELECT COUNT(*) FROM t a WHERE a.k < 10 AND a.k >= 5 AND EXISTS (SELECT 1 FROM t d WHERE d.k = a.k + 1)", 5, 5},
		{"SELECT COUNT(*) FROM t a WHERE a.k < 10 AND (SELECT COUNT(*) FROM t d WHERE d.k <= a.k) > 3 AND a.k > 1", 7, 10},
		{"SELECT COUNT(*) FROM t a WHERE a.k < 10 AND EXISTS (SELECT 1 FROM t d WHERE d.k = a.k) AND EXISTS (SELECT 1 FROM t e WHERE e.k = a.k + 195)", 5, 20},
		{"SELECT COUNT(*) FROM t a WHERE EXISTS (SELECT 1 FROM t d WHERE d.k = a.k + 195) AND a.k < 10", 5, n},
		{"SELECT COUNT(*) FROM t a WHERE a.k < 10 OR EXISTS (SELECT 1 FROM t d WHERE d.k = a.k + 195)", 10, n},
		{"SELECT COUNT(*) FROM t a WHERE (a.k < 10 OR a.k > 190) AND EXISTS (SELECT 1 FROM t d WHERE d.k = a.k + 5)", 14, 19},
		{"SELECT COUNT(*) FROM t a WHERE a.k BETWEEN 3 AND 7 AND EXISTS (SELECT 1 FROM t d WHERE d.k = a.k)", 5, 5},
	} {
		runs = 0
		res, err := Run(context.Background(), c.q, resolve, Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.q, err)
		}
		if got := res.Rows[0][0]; got != c.count {
			t.Errorf("%s: COUNT(*) = %v, want %d", c.q, got, c.count)
		}
		if runs != c.runs {
			t.Errorf("%s: the subquery ran %d times, want %d", c.q, runs, c.runs)
		}
	}
}
