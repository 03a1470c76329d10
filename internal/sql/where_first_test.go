package sql

import (
	"context"
	"fmt"
	"testing"

	"github.com/bqstore/bqstore/internal/schema"
)

// TestWhereBeforeSelectList: the select list, GROUP BY keys and
// aggregate arguments are evaluated only on the rows WHERE keeps, as in
// BigQuery, where `SELECT 1/x FROM t WHERE x != 0` never divides by
// zero. They were evaluated on the whole batch and the rows dropped
// afterwards, so the row WHERE excludes failed the query.
// A correlated subquery's value too (correlated.go): it was computed for
// every input row before WHERE, so `(SELECT DIV(8, t.x))` failed on the
// rows WHERE drops.
func TestWhereBeforeSelectList(t *testing.T) {
	tbl := &memTable{schema: &schema.Schema{Fields: []*schema.Field{{Name: "x", Type: schema.Integer}, {Name: "s", Type: schema.String}}},
		rows: [][]any{{int64(0), "a"}, {int64(2), "b"}, {int64(4), "c"}, {int64(0), "d"}}, batch: 3}
	resolve := func(_ context.Context, _ TableName) (Table, error) { return tbl, nil }
	for _, c := range []struct{ sql, want string }{
		{"SELECT 1/x AS y FROM t WHERE x != 0", "[[0.5] [0.25]]"},
		{"SELECT s, DIV(8, x) AS y FROM t WHERE x != 0 ORDER BY s DESC", "[[c 2] [b 4]]"},
		{"SELECT DIV(8, x) AS y FROM t WHERE x != 0 ORDER BY y LIMIT 1", "[[2]]"},
		{"SELECT SUM(DIV(8, x)) AS y FROM t WHERE x != 0", "[[6]]"},
		{"SELECT DIV(8, x) AS k, COUNT(*) AS c FROM t WHERE x != 0 GROUP BY k ORDER BY k", "[[2 1] [4 1]]"},
		{"SELECT 1/x AS y FROM t WHERE x != 0 UNION ALL SELECT 1/x FROM t WHERE x = 4", "[[0.5] [0.25] [0.25]]"},
		{"SELECT COUNT(*) AS c FROM t WHERE x = 0", "[[2]]"},
		{"SELECT s FROM t WHERE FALSE", "[]"},
		{"SELECT 1/a.x AS y FROM t a JOIN t b ON a.s = b.s WHERE a.x != 0", "[[0.5] [0.25]]"},
		{"SELECT s, (SELECT COUNT(*) FROM t u WHERE u.x = t.x) AS c, DIV(8, x) AS y FROM t WHERE x != 0", "[[b 1 4] [c 1 2]]"},
		{"SELECT s, EXISTS(SELECT 1 FROM t u WHERE u.x < t.x) AS e FROM t WHERE x != 0 AND s != 'x'", "[[b true] [c true]]"},
		{"SELECT DIV(8, x) AS y, ROW_NUMBER() OVER (ORDER BY s) AS r FROM t WHERE x != 0", "[[4 1] [2 2]]"},
		{"SELECT x, s FROM t WHERE x = 0 AND s > 'a'", "[[0 d]]"},
		{"SELECT s, (SELECT DIV(8, t.x)) AS y FROM t WHERE x != 0", "[[b 4] [c 2]]"},
		{"SELECT (SELECT DIV(8, t.x)) AS y FROM t WHERE x != 0 LIMIT 1", "[[4]]"},
		{"SELECT s FROM t WHERE x != 0 ORDER BY (SELECT DIV(8, t.x))", "[[c] [b]]"},
		{"SELECT SUM((SELECT DIV(8, t.x))) AS y FROM t WHERE x != 0", "[[6]]"},
		{"SELECT s, (SELECT DIV(8, t.x)) AS y FROM t WHERE x != 0 AND EXISTS (SELECT 1 FROM t u WHERE u.x = t.x)", "[[b 4] [c 2]]"},
	} {
		checkBothPaths(t, resolve, c.sql, c.want)
	}
}

// checkBothPaths runs query materialized and streamed to a Sink and
// checks both give want (the rows as fmt.Sprint prints them).
func checkBothPaths(t *testing.T, resolve Resolver, query, want string) {
	t.Helper()
	for _, sink := range []bool{false, true} {
		opts := Options{}
		rec := &sinkRecorder{}
		if sink {
			opts.Sink = rec
		}
		res, err := Run(context.Background(), query, resolve, opts)
		if err != nil {
			t.Errorf("%s (sink %v): %v", query, sink, err)
			continue
		}
		rows := res.Rows
		if sink {
			rows = rec.rows
		}
		if got := fmt.Sprint(rows); got != want {
			t.Errorf("%s (sink %v): %s, want %s", query, sink, got, want)
		}
	}
}
