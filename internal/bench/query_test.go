package bench_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bqstore/bqstore/internal/bench"
	"github.com/bqstore/bqstore/internal/testkit"
)

// TestQueryTiny: the query workload writes a tiny table, runs every query
// of its fixed set on it and reports each (none fails), with the raw scan.
func TestQueryTiny(t *testing.T) {
	srv := testkit.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := bench.Query(ctx, bench.QueryConfig{
		Target: bench.Target{Endpoint: srv.GRPCAddr(), API: "http://" + srv.HTTPAddr(), Insecure: true,
			Project: "local", Dataset: "bench", Cleanup: true},
		Rows: 2000, RowBytes: 100,
	})
	var out bytes.Buffer
	if res != nil {
		res.Print(&out, false)
	}
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if res.Rows != 2000 || len(res.Queries) != 7 || res.RawRowsPerSec <= 0 {
		t.Fatalf("result %+v\n%s", res, out.String())
	}
	for _, q := range res.Queries {
		if q.Bytes <= 0 || q.RowsPerSec <= 0 {
			t.Errorf("%s: %+v", q.Name, q)
		}
	}
	for _, name := range []string{"agg", "filter", "groupby", "join", "orderby", "window", "distinct", "raw scan"} {
		if !strings.Contains(out.String(), name) {
			t.Errorf("no %s in\n%s", name, out.String())
		}
	}
	t.Logf("\n%s", out.String())
}
