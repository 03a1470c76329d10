package sql

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
)

// wideQueries are the two shapes whose compile work used to grow with the
// square of their length: every expression was lexed (and copied) with
// the whole statement before it blanked, so that error positions stayed
// the statement's.
func wideQueries(n int) map[string]string {
	var union, cols strings.Builder
	for i := range n {
		if i > 0 {
			union.WriteString(" UNION ALL ")
		}
		fmt.Fprintf(&union, "SELECT a + %d AS x, b FROM t WHERE a > %d", i, -i)
	}
	cols.WriteString("SELECT ")
	for i := range n {
		if i > 0 {
			cols.WriteString(", ")
		}
		fmt.Fprintf(&cols, "a + %d AS c%d", i, i)
	}
	cols.WriteString(" FROM t WHERE b = 'x' ORDER BY c0")
	return map[string]string{"union": union.String(), "select": cols.String()}
}

func wideResolver() Resolver {
	t := &memTable{schema: &schema.Schema{Fields: []*schema.Field{
		{Name: "a", Type: schema.Integer}, {Name: "b", Type: schema.String}}}, rows: [][]any{{int64(1), "x"}}, batch: 8}
	return func(context.Context, TableName) (Table, error) { return t, nil }
}

// go test -run '^$' -bench BenchmarkCompileWide -benchmem ./internal/sql/
//
// A 2,000-branch UNION ALL and a 3,000-column select list over a table of
// one row: the cost is the compilation's.
func BenchmarkCompileWide(b *testing.B) {
	for _, c := range []struct {
		shape string
		n     int
	}{{"union", 2000}, {"select", 3000}} {
		q := wideQueries(c.n)[c.shape]
		b.Run(fmt.Sprintf("shape=%s/n=%d", c.shape, c.n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(q)))
			for b.Loop() {
				if _, err := Run(context.Background(), q, wideResolver(), Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestCompileLinear: a 2,000-branch UNION ALL and a 3,000-column select
// list compile in work linear in their length. The expression layer was
// handed each expression with the whole statement before it blanked, so
// that its error positions were the statement's: it lexed (and runner.text
// copied) about n²/2 bytes. Doubling n now doubles the bytes lexed and
// allocated; it quadrupled them. Counts, not time.
func TestCompileLinear(t *testing.T) {
	for _, c := range []struct {
		shape string
		n     int
	}{{"union", 1000}, {"select", 1500}} {
		var lexed, alloc [2]int64
		var size [2]int
		for k, n := range []int{c.n, 2 * c.n} {
			q := wideQueries(n)[c.shape]
			size[k] = len(q)
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			before, beforeAlloc := filter.LexedBytes(), ms.TotalAlloc
			if _, err := Run(context.Background(), q, wideResolver(), Options{}); err != nil {
				t.Fatalf("%s n=%d: %v", c.shape, n, err)
			}
			runtime.ReadMemStats(&ms)
			lexed[k], alloc[k] = filter.LexedBytes()-before, int64(ms.TotalAlloc-beforeAlloc)
		}
		t.Logf("%s: %d bytes: lexed %d, allocated %d; %d bytes: lexed %d, allocated %d", c.shape, size[0], lexed[0], alloc[0], size[1], lexed[1], alloc[1])
		// Each expression is lexed a few times (substitute, then the
		// parser); a quadratic cost would lex far more than its text.
		if lexed[1] > 8*int64(size[1]) {
			t.Errorf("%s: lexed %d bytes to compile a query of %d", c.shape, lexed[1], size[1])
		}
		// Twice the query, at most 2.5 times the work (quadratic: 4).
		if 2*lexed[1] > 5*lexed[0] || 2*alloc[1] > 5*alloc[0] {
			t.Errorf("%s: from %d to %d bytes, lexed bytes %d -> %d, allocated %d -> %d: not linear", c.shape, size[0], size[1], lexed[0], lexed[1], alloc[0], alloc[1])
		}
	}
}

// TestCompileCancel: compiling a long query stops once its context is
// done, at the next SELECT block or expression: the compile did not look
// at the context, so a cancelled job went on compiling all of a
// 3,000-column select list, or every branch of a 2,000-branch UNION ALL
// (which a sink's probe compiles before reading anything).
func TestCompileCancel(t *testing.T) {
	for _, c := range []struct {
		name, q string
		sink    bool // a top-level UNION ALL with a sink compiles every branch before reading (streamUnion's probe)
	}{
		{"union", wideQueries(2000)["union"], true},
		{"select", wideQueries(3000)["select"], false},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		inner := wideResolver()
		// The first table opened cancels the query, as a client's
		// jobs.cancel would while it compiles.
		resolve := func(ctx context.Context, name TableName) (Table, error) {
			cancel()
			return inner(ctx, name)
		}
		opts := Options{}
		if c.sink {
			opts.Sink = &sinkRecorder{}
		}
		before := filter.LexedBytes()
		_, err := Run(ctx, c.q, resolve, opts)
		// The statement is lexed whole once, by the parser, before
		// anything runs; after that, a few expressions at most.
		lexed := filter.LexedBytes() - before - int64(len(c.q))
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s: err = %v, want context.Canceled", c.name, err)
		}
		if lexed > int64(len(c.q))/100 {
			t.Errorf("%s: lexed %d bytes of a %d-byte query after it was cancelled", c.name, lexed, len(c.q))
		}
		cancel()
	}
}
