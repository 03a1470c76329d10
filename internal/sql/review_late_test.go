package sql

import (
	"context"
	"math/big"
	"testing"

	"github.com/bqstore/bqstore/internal/filter"

	"github.com/bqstore/bqstore/internal/schema"
)

// TestReviewLateWhereFirstProbe: adversarial review of the WHERE-first
// cut (whereRows): every column type through the Take, correlated
// columns, QUALIFY, UNNEST, streaming LIMIT/OFFSET.
func TestReviewLateWhereFirstProbe(t *testing.T) {
	tbl := &memTable{schema: &schema.Schema{Fields: []*schema.Field{
		{Name: "x", Type: schema.Integer}, {Name: "s", Type: schema.String},
		{Name: "n", Type: schema.Numeric}, {Name: "b", Type: schema.BigNumeric},
		{Name: "i", Type: schema.Interval}, {Name: "j", Type: schema.JSON},
		{Name: "g", Type: schema.Geography}, {Name: "dt", Type: schema.DateTime},
		{Name: "tm", Type: schema.Time}, {Name: "d", Type: schema.Date},
		{Name: "ts", Type: schema.Timestamp}, {Name: "bb", Type: schema.Bytes},
		{Name: "r", Type: schema.Range, RangeElementType: &schema.RangeElementType{Type: schema.Date}},
		{Name: "a", Type: schema.String, Mode: schema.Repeated},
		{Name: "st", Type: schema.Record, Fields: []*schema.Field{{Name: "u", Type: schema.Integer}, {Name: "v", Type: schema.String, Mode: schema.Repeated}}},
	}}, batch: 3}
	_ = tbl
	resolve := func(_ context.Context, _ TableName) (Table, error) { return tbl, nil }
	// rows via SQL literals would be easier; fill with typed values through the corpus parser is heavier: use nil-heavy rows.
	tbl.rows = [][]any{
		{int64(0), "a", big.NewRat(1, 2), big.NewRat(3, 1), nil, `{"k":1}`, "POINT(1 2)", int64(5), int64(6), int64(7), int64(8), "zz", nil, []any{"p"}, filter.Struct{int64(1), []any{"q"}}},
		{int64(2), "b", nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, []any{}, nil},
		{int64(4), "c", big.NewRat(5, 2), big.NewRat(7, 1), nil, `{"k":2}`, "POINT(3 4)", int64(15), int64(16), int64(17), int64(18), "yy", nil, []any{"r", "s"}, filter.Struct{int64(3), []any{}}},
		{int64(0), "d", nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, []any{}, nil},
	}
	for _, c := range []struct{ sql, want string }{
		// FAILS: an INTERVAL column (Arrow month_day_nano_interval) in
		// the batch: compute.TakeArray answers "invalid values byte
		// width for take"; before 9e063d8 no Take was made.
		{"SELECT s FROM t WHERE x != 0 AND i IS NULL", "[[b] [c]]"},
		{"SELECT COUNT(i) AS c FROM t WHERE x != 0", "[[0]]"},
		{"SELECT n, b FROM t WHERE x != 0", "[[<nil> <nil>] [5/2 7/1]]"},
		{"SELECT j, g, dt, tm, d, ts, bb FROM t WHERE x != 0", "[[<nil> <nil> <nil> <nil> <nil> <nil> <nil>] [{\"k\":2} POINT(3 4) 15 16 17 18 yy]]"},
		{"SELECT s FROM t WHERE x != 0 AND r IS NULL", "[[b] [c]]"},
		{"SELECT s, (SELECT MAX(u.s) FROM t u WHERE u.x = t.x) AS m FROM t WHERE EXISTS(SELECT 1 FROM t u WHERE u.x > t.x) AND x != 0", "[[b b]]"},
		{"SELECT s, DIV(8, x) AS y FROM t WHERE x != 0 QUALIFY ROW_NUMBER() OVER (ORDER BY s DESC) = 1", "[[c 2]]"},
		{"SELECT s, e FROM t, UNNEST(a) e WHERE x != 0", "[[c r] [c s]]"},
		{"SELECT s FROM t WHERE x != 0 LIMIT 1 OFFSET 1", "[[c]]"},
		{"SELECT SUM((SELECT COUNT(*) FROM t u WHERE u.x = t.x)) AS c FROM t WHERE x != 0", "[[2]]"},
		{"SELECT s, (SELECT COUNT(*) FROM t u WHERE u.x = t.x) AS k FROM t WHERE x = 0 AND s = 'd'", "[[d 2]]"},
		{"SELECT s FROM t WHERE x = 0 LIMIT 5 OFFSET 1", "[[d]]"},
		{"SELECT * EXCEPT(x, n, b, i, j, g, dt, tm, d, ts, bb, r, st) FROM t WHERE x = 4", "[[c [r s]]]"},
		{"SELECT s, ARRAY_LENGTH(a) AS l FROM t WHERE ARRAY_LENGTH(a) > 0 AND x != 0", "[[c 2]]"},
		{"SELECT s FROM t WHERE x IN (SELECT x FROM t WHERE s = 'c')", "[[c]]"},
		{"SELECT x, COUNT(*) AS c FROM t WHERE x != 2 GROUP BY x HAVING COUNT(*) > 1", "[[0 2]]"},
		{"SELECT 1 AS one FROM t WHERE RAND() < 0", "[]"},
		{"SELECT 1 AS one FROM t WHERE RAND() < 2", "[[1] [1] [1] [1]]"},
		{"SELECT COUNT(*) AS c, COUNTIF(RAND() < 2) AS d FROM t WHERE RAND() < 2", "[[4 4]]"},
		{"SELECT ARRAY_AGG(s ORDER BY s) AS z, SUM(DIV(8,x)) AS w FROM t WHERE x != 0", "[[[b c] 6]]"},
		{"SELECT s, SUM(DIV(8, x)) OVER (ORDER BY s ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS w FROM t WHERE x != 0", "[[b 4] [c 6]]"},
		{"SELECT s, st.u FROM t WHERE st.u > 2", "[[c 3]]"},
		{"SELECT DISTINCT DIV(8, x) AS y FROM t WHERE x != 0 ORDER BY y", "[[2] [4]]"},
		{"SELECT x, COUNT(*) AS c FROM t WHERE x != 0 GROUP BY ROLLUP(x) ORDER BY x", "[[<nil> 2] [2 1] [4 1]]"},
	} {
		checkBothPaths(t, resolve, c.sql, c.want)
	}
}
