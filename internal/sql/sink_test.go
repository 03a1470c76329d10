package sql

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
)

// sinkRecorder is a Sink that keeps the rows it gets (copies of the
// slices, as a sink may not keep them) and their batches.
type sinkRecorder struct {
	schema  *schema.Schema
	rows    [][]any
	batches int
}

func (s *sinkRecorder) Begin(_ context.Context, sch *schema.Schema) error {
	if s.schema != nil {
		return errors.New("Begin twice")
	}
	s.schema = sch
	return nil
}

func (s *sinkRecorder) Write(_ context.Context, rows [][]any) error {
	if s.schema == nil {
		return errors.New("Write before Begin")
	}
	s.batches++
	for _, r := range rows {
		s.rows = append(s.rows, append([]any(nil), r...))
	}
	return nil
}

// TestSinkStreams: a plain scan streams to the sink with the memory of
// one batch (PeakMemory, the budget's own accounting, stays near one
// batch of rows however many the result has), under a budget the whole
// result would exceed; LIMIT/OFFSET apply in the stream; a query that
// must materialize hands the sink its complete result, and one past the
// budget fails with a *ResourcesError.
func TestSinkStreams(t *testing.T) {
	const n, batch = 200_000, 1000
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = []any{int64(i), fmt.Sprintf("name-%06d", i)}
	}
	tbl := &memTable{schema: &schema.Schema{Fields: []*schema.Field{
		{Name: "k", Type: schema.Integer}, {Name: "s", Type: schema.String}}}, rows: rows, batch: batch}
	resolve := func(_ context.Context, _ TableName) (Table, error) { return tbl, nil }
	// One batch of rows: rowBytes of [k, s, k+1] is about 200 bytes.
	const oneBatch = batch * 256
	const budget = 1 << 20 // the whole result needs ~40 MB
	for _, c := range []struct {
		sql        string
		first      []any
		count      int
		peakAtMost int64
	}{
		{"SELECT k, s, k + 1 AS k1 FROM t", []any{int64(0), "name-000000", int64(1)}, n, oneBatch},
		{"SELECT * FROM t WHERE MOD(k, 2) = 1", []any{int64(1), "name-000001"}, n / 2, oneBatch},
		{"SELECT k FROM t LIMIT 10 OFFSET 2500", []any{int64(2500)}, 10, oneBatch},
		{"SELECT k FROM t LIMIT 0", nil, 0, 0},
		{"SELECT k FROM t UNION ALL SELECT k FROM t WHERE k < 10", []any{int64(0)}, n + 10, budget},
		{"SELECT k FROM t WHERE k < 100 ORDER BY k DESC", []any{int64(99)}, 100, budget},
		{"SELECT k, s FROM t UNION ALL SELECT 1.5, 'x' LIMIT 3 OFFSET 199999", []any{199999.0, "name-199999"}, 2, 2 * oneBatch},
		{"WITH w AS (SELECT k FROM t WHERE k < 5) SELECT k FROM w WHERE k > (SELECT MIN(k) FROM (SELECT k FROM w UNION ALL SELECT 1)) UNION ALL SELECT k FROM t",
			[]any{int64(1)}, n + 4, budget},
		{"SELECT k FROM (SELECT k FROM t WHERE k < 5 UNION ALL SELECT 7) WHERE k < 3", []any{int64(0)}, 3, budget},
	} {
		sink := &sinkRecorder{}
		res, err := Run(context.Background(), c.sql, resolve, Options{MaxMemory: budget, Sink: sink})
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
			continue
		}
		if res.Rows != nil || res.NumRows != int64(c.count) || len(sink.rows) != c.count {
			t.Errorf("%s: Result.Rows %d, NumRows %d, sink %d rows; want nil, %d, %d", c.sql, len(res.Rows), res.NumRows, len(sink.rows), c.count, c.count)
			continue
		}
		if sink.schema == nil || len(sink.schema.Fields) != len(res.Schema.Fields) {
			t.Errorf("%s: sink schema %v, result %v", c.sql, sink.schema, res.Schema)
		}
		if c.count > 0 && fmt.Sprint(sink.rows[0]) != fmt.Sprint(c.first) {
			t.Errorf("%s: first row %v, want %v", c.sql, sink.rows[0], c.first)
		}
		if res.PeakMemory > c.peakAtMost {
			t.Errorf("%s: peak memory %d, want at most %d", c.sql, res.PeakMemory, c.peakAtMost)
		}
	}
	// Without a sink the same scan holds its result, past the budget.
	var re *ResourcesError
	if _, err := Run(context.Background(), "SELECT k, s FROM t", resolve, Options{MaxMemory: budget}); !errors.As(err, &re) {
		t.Fatalf("held result past the budget: %v, want *ResourcesError", err)
	}
	if _, err := Run(context.Background(), "SELECT k, s FROM t ORDER BY s", resolve, Options{MaxMemory: budget, Sink: &sinkRecorder{}}); !errors.As(err, &re) {
		t.Fatalf("a sort past the budget: %v, want *ResourcesError", err)
	}
	// A query with no FROM streams too, and a WITH entry feeds a stream.
	sink := &sinkRecorder{}
	if _, err := Run(context.Background(), "WITH w AS (SELECT k FROM t WHERE k < 3) SELECT k * 10 AS k10 FROM w", resolve, Options{Sink: sink}); err != nil || fmt.Sprint(sink.rows) != "[[0] [10] [20]]" {
		t.Fatalf("WITH: %v %v", sink.rows, err)
	}
	sink = &sinkRecorder{}
	if _, err := Run(context.Background(), "SELECT 1 AS a, 'x' AS b", resolve, Options{Sink: sink}); err != nil || fmt.Sprint(sink.rows) != "[[1 x]]" {
		t.Fatalf("no FROM: %v %v", sink.rows, err)
	}
	// Duplicate result columns are refused before any row goes out.
	sink = &sinkRecorder{}
	if _, err := Run(context.Background(), "SELECT k, k FROM t", resolve, Options{Sink: sink}); err == nil || sink.schema != nil {
		t.Fatalf("duplicate columns: %v, sink began %v", err, sink.schema != nil)
	}
}

// TestSinkArrays: the streamed path gives ARRAY and STRUCT columns the
// schema the materialized path does (REPEATED, RECORD with fields), and
// fails a NULL element with BigQuery's error, streamed or not. The
// streamed path named them by their GoogleSQL spelling ("ARRAY<STRING>"),
// which the anonymous result table refused (e2e
// TestQueryArraysOfficialClient: 'Field tags: invalid type').
func TestSinkArrays(t *testing.T) {
	tbl := &memTable{schema: &schema.Schema{Fields: []*schema.Field{{Name: "k", Type: schema.Integer}}},
		rows: [][]any{{int64(1)}, {int64(2)}}, batch: 1}
	resolve := func(_ context.Context, _ TableName) (Table, error) { return tbl, nil }
	for _, q := range []string{
		"SELECT k, [k, k] AS a, STRUCT(k AS x) AS s FROM t",
		"SELECT k, [k, k] AS a, STRUCT(k AS x) AS s FROM t ORDER BY k",
	} {
		sink := &sinkRecorder{}
		if _, err := Run(context.Background(), q, resolve, Options{Sink: sink}); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		a, s := sink.schema.Fields[1], sink.schema.Fields[2]
		if a.Mode != schema.Repeated || a.Type != schema.Integer || s.Type != schema.Record || len(s.Fields) != 1 {
			t.Fatalf("%s: schema a=%s %s, s=%s with %d fields", q, a.Type, a.Mode, s.Type, len(s.Fields))
		}
		if len(sink.rows) != 2 {
			t.Fatalf("%s: %d rows", q, len(sink.rows))
		}
	}
	for _, q := range []string{
		"SELECT [k, NULL] AS a FROM t",
		"SELECT [k, NULL] AS a FROM t ORDER BY k",
	} {
		var fe *filter.Error
		if _, err := Run(context.Background(), q, resolve, Options{Sink: &sinkRecorder{}}); !errors.As(err, &fe) || !strings.Contains(fe.Msg, "Array cannot have a null element") {
			t.Fatalf("%s: err %v, want the null-element error", q, err)
		}
	}
}
