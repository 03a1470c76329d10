package sql

import (
	"context"
	"errors"
	"testing"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
)

// FuzzQuery: any text either runs or fails with a positioned *filter.Error
// (or the resolver's error); it never panics. The seeds are in
// testdata/fuzz/FuzzQuery and below.
func FuzzQuery(f *testing.F) {
	for _, s := range []string{
		"SELECT 1", "SELECT COUNT(*) FROM t", "SELECT a, COUNT(*) FROM t GROUP BY 1 HAVING COUNT(*) > 1 ORDER BY 2 DESC LIMIT 3",
		"SELECT DISTINCT b FROM d.t WHERE a IS NOT NULL ORDER BY b NULLS LAST", "SELECT SUM(a) / COUNT(a), MIN(b), MAX(b) FROM `p.d.t`",
		"SELECT a x, b AS y FROM t ORDER BY x", "SELECT * FROM t LIMIT 1 OFFSET 2", "SELECT COUNT(DISTINCT a), COUNTIF(a > 1) FROM t;",
		"SELECT", "SELECT FROM", "SELECT (", "SELECT a FROM t GROUP", "SELECT COUNT(COUNT(a)) FROM t", "WITH x AS (SELECT 1) SELECT 1",
		"SELECT CASE WHEN a > 1 THEN 'x' END FROM t GROUP BY 1", "SELECT a FROM t JOIN u ON true", "SELECT 1 /* c */ -- d",
		"WITH x AS (SELECT a FROM t) SELECT x.a FROM x", "SELECT * EXCEPT (a) REPLACE (b || 'z' AS b) FROM t",
		"SELECT t.*, u.b FROM t JOIN t u USING (a)", "SELECT * FROM t x LEFT JOIN (SELECT a AS k FROM t) y ON x.a = y.k AND y.k > 1",
		"SELECT a FROM t UNION ALL SELECT 1 ORDER BY 1 DESC LIMIT 1", "(SELECT a FROM t) EXCEPT DISTINCT (SELECT 3)",
		"SELECT COUNT(*) FROM t, t u, t v WHERE t.a = u.a", "SELECT * FROM t FULL JOIN t u ON t.a < u.a",
		"SELECT a FROM (t JOIN t u USING (a)", "SELECT STRING_AGG(b, ',' ORDER BY a DESC LIMIT 2), CORR(a, a), LOGICAL_OR(a > 1) FROM t",
		"SELECT BIT_XOR(DISTINCT a), VAR_POP(a), STDDEV(a), ANY_VALUE(b) FROM t GROUP BY b", "SELECT STRING_AGG(b ORDER BY) FROM t",
		"SELECT a FROM t WHERE a IN (SELECT a FROM u) AND EXISTS (SELECT 1) AND a > (SELECT MIN(a) FROM t)", "SELECT (SELECT (SELECT 1))",
		"SELECT a NOT IN (SELECT", "SELECT EXISTS", "SELECT EXISTS (WITH x AS (SELECT 1) SELECT * FROM x)",
		"SELECT a, ROW_NUMBER() OVER (PARTITION BY b ORDER BY a DESC NULLS LAST) rn FROM t QUALIFY rn = 1",
		"SELECT SUM(a) OVER (ORDER BY a ROWS BETWEEN 2 PRECEDING AND CURRENT ROW), LAG(b, 1, 'x') OVER (ORDER BY a) FROM t",
		"SELECT NTILE(2) OVER (), FIRST_VALUE(a) OVER (ORDER BY b RANGE UNBOUNDED PRECEDING) FROM t", "SELECT RANK() OVER (ORDER BY",
		"SELECT a, x, o FROM t, UNNEST([1, 2]) x WITH OFFSET o", "SELECT * FROM UNNEST(['a', NULL]) AS s WITH OFFSET AS pos", "SELECT * FROM UNNEST([",
		"SELECT a, (SELECT COUNT(*) FROM u WHERE u.a < t.a) FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.b = t.b)",
		"SELECT b, SUM(a), SUM(SUM(a)) OVER (), RANK() OVER (ORDER BY COUNT(*) DESC) FROM t GROUP BY b QUALIFY LAG(b) OVER (ORDER BY b) IS NULL", "SELECT 1 UNION", "WITH x AS (SELECT 1) ", "SELECT t. FROM t",
		"SELECT c[OFFSET(1)], c[SAFE_ORDINAL(a)], r.f, ARRAY_LENGTH(c) FROM t", "SELECT [1, a], STRUCT(a AS x, b), (a, b).x, ARRAY<STRUCT<x INT64>>[(1)]",
		"SELECT ARRAY_AGG(a IGNORE NULLS ORDER BY b LIMIT 2), ARRAY_CONCAT_AGG(c) FROM t", "SELECT * FROM UNNEST(GENERATE_ARRAY(1, 5)) x WITH OFFSET",
		"SELECT ARRAY(SELECT AS STRUCT a, b FROM t), (SELECT AS STRUCT 1 x).x", "SELECT r FROM t GROUP BY r ORDER BY r", "SELECT STRUCT<a INT64>(1) = (1)",
		"SELECT [STRUCT(1 AS a)][OFFSET(0)].a, GENERATE_DATE_ARRAY('2020-01-01', '2020-02-01', INTERVAL 1 WEEK)", "SELECT ARRAY<",
		"WITH RECURSIVE r AS ((SELECT 1 AS n) UNION ALL (SELECT n + 1 FROM r WHERE n < 3)) SELECT * FROM r", "WITH RECURSIVE a AS (SELECT * FROM b), b AS (SELECT * FROM a) SELECT 1",
		"SELECT a, SUM(a) OVER w, RANK() OVER (w ORDER BY b) FROM t WINDOW w AS (PARTITION BY b), v AS w", "SELECT COUNT(*) OVER (ORDER BY a RANGE BETWEEN 2 PRECEDING AND 1 FOLLOWING) FROM t",
		"SELECT a, b, GROUPING(a), COUNT(*) FROM t GROUP BY ROLLUP(a, (b)), CUBE(b), GROUPING SETS ((a, b), a, ())", "SELECT a FROM t GROUP BY ROLLUP((",
		"SELECT * FROM t FOR SYSTEM_TIME AS OF CURRENT_TIMESTAMP() AS x", "SELECT _TABLE_SUFFIX FROM `d.t*` WHERE _TABLE_SUFFIX BETWEEN '1' AND '2'",
		"SELECT a FROM t INTERSECT ALL SELECT a FROM t EXCEPT ALL SELECT 1", "SELECT a FROM t WHERE a NOT IN (SELECT a FROM t u WHERE u.b = t.b)",
		"SELECT PERCENTILE_CONT(a, 0.5 RESPECT NULLS) OVER (PARTITION BY b), PERCENTILE_DISC(b, 0.25) OVER () FROM t", "SELECT PERCENTILE_CONT(a, @p) OVER (",
		"SELECT LAST_VALUE(a IGNORE NULLS) OVER (ORDER BY b ROWS 1 PRECEDING), NTH_VALUE(a, 2 RESPECT NULLS) OVER (ORDER BY a), LAG(a, 1, 0.5) OVER (ORDER BY a) FROM t",
		"SELECT ANY_VALUE(b HAVING MIN a), STRING_AGG(DISTINCT b ORDER BY b DESC LIMIT 1), SUM(INTERVAL 1 DAY), ARRAY_AGG(DISTINCT a IGNORE NULLS ORDER BY a) FROM t", "SELECT ANY_VALUE(b HAVING",
		"SELECT a, v FROM t, UNNEST([t.a, t.a * 10]) AS v", "SELECT a, e, o FROM t LEFT JOIN UNNEST(t.c) AS e WITH OFFSET o ON e > t.a",
		"SELECT * FROM t JOIN UNNEST([t.a]) AS a USING (a)", "SELECT a FROM t RIGHT JOIN UNNEST(t.c) AS e ON TRUE", "SELECT (SELECT SUM(v) FROM t.c AS v) FROM t",
		"SELECT x, y FROM t, UNNEST([STRUCT(t.a AS x, t.c AS z)]) AS s, s.z AS y", "SELECT f FROM t, UNNEST([t.r]) WHERE f IS NULL", "SELECT 1 FROM t, t.r.f",
		"SELECT b FROM t GROUP BY b HAVING COUNT(*) IN (SELECT a FROM u WHERE u.b = t.b)", "SELECT b, SUM((SELECT COUNT(*) FROM u WHERE u.b = t.b)) OVER () FROM t GROUP BY b",
		"SELECT DISTINCT a FROM t GROUP BY a ORDER BY a + 1", "SELECT a AS x, b AS x FROM t GROUP BY 1, 2 HAVING x > 1",
		"SELECT STRUCT(1 AS a, NULL AS b) UNION ALL SELECT STRUCT(2, 'y')", "SELECT CAST(1 AS NUMERIC) UNION ALL SELECT 2.5 UNION ALL SELECT -1", "SELECT (1, NULL) UNION ALL SELECT (",
	} {
		f.Add(s)
	}
	tbl := &memTable{schema: &schema.Schema{Fields: []*schema.Field{
		{Name: "a", Type: schema.Integer}, {Name: "b", Type: schema.String},
		{Name: "c", Type: schema.Integer, Mode: schema.Repeated},
		{Name: "r", Type: schema.Record, Fields: []*schema.Field{{Name: "f", Type: schema.String}}}}},
		rows: [][]any{{int64(1), "x", []any{int64(1), int64(2)}, filter.Struct{"p"}}, {nil, "y", []any{}, nil}, {int64(3), nil, nil, filter.Struct{nil}}}, batch: 2}
	resolve := func(_ context.Context, n TableName) (Table, error) {
		if n.Table == "t" || n.Table == "u" {
			return tbl, nil
		}
		return nil, errResolve
	}
	f.Fuzz(func(t *testing.T, src string) {
		_, err := Run(context.Background(), src, resolve, Options{MaxMemory: 16 << 20})
		if err == nil || errors.Is(err, errResolve) {
			return
		}
		var fe *filter.Error
		if !errors.As(err, &fe) || fe.Line < 1 || fe.Column < 1 {
			t.Fatalf("%q: error without a position: %v", src, err)
		}
	})
}

var errResolve = errors.New("no such table")
