package ingest_test

// Fan-out (Config.Routes): one consumer group over two topics, each topic
// into its own table.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bqstore/bqstore/ingest"
	"github.com/bqstore/bqstore/ingest/rows"
	"github.com/bqstore/bqstore/internal/faults"
	"github.com/bqstore/bqstore/internal/server"
)

// routeBase separates the ids of topic b (routeBase+i) from topic a's.
const routeBase = 100_000

// routeEnv is a kfake cluster with topics "a" and "b" of parts partitions
// each: n records in a (ids 0..n-1) and n in b (ids routeBase..), and,
// every badEvery records, one that fits no table.
type routeEnv struct {
	c     *kfake.Cluster
	parts int32
}

func newRouteKafka(t *testing.T, parts int32, n, badEvery int) *routeEnv {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(parts, "a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := range n {
		for j, topic := range []string{"a", "b"} {
			id := i + j*routeBase
			recs = append(recs, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, `{"id":%d,"name":"%s%d","tags":[]}`, id, topic, i)})
			if badEvery > 0 && i%badEvery == badEvery-1 {
				recs = append(recs, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, `{"id":"bad-%s-%d"}`, topic, i)})
			}
		}
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return &routeEnv{c: c, parts: parts}
}

func (k *routeEnv) config(e *env, group string, routes []ingest.Route) ingest.Config {
	src := &ingest.KafkaSource{Brokers: k.c.ListenAddrs(), Topics: []string{"a", "b"}, Group: group,
		Opts: []kgo.Opt{kgo.SessionTimeout(6 * time.Second), kgo.HeartbeatInterval(200 * time.Millisecond)}}
	return ingest.Config{
		Start:  ingest.StartEarliest,
		Client: e.write, Routes: routes, Source: src, Unknown: rows.UnknownReject,
		MaxBatchRows: 50, MaxBatchAge: 100 * time.Millisecond, RequestBytes: 1 << 10, MemoryBudget: 1 << 20,
		CommitWindow: time.Millisecond,
		Backoff:      ingest.Backoff{Base: time.Millisecond, Max: 10 * time.Millisecond},
	}
}

// runToEnd runs cfg until the group's committed offsets reach the end of
// every partition of both topics, then stops it.
func (k *routeEnv) runToEnd(t *testing.T, cfg ingest.Config, group string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- ingest.Run(ctx, cfg) }()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(60 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		offs, err := adm.FetchOffsets(ctx, group)
		if err == nil {
			done := true
			ends.Each(func(e kadm.ListedOffset) {
				if o, ok := offs.Lookup(e.Topic, e.Partition); !ok || o.At != e.Offset {
					done = false
				}
			})
			if done {
				cancel()
				if err := <-errc; err != nil && !errors.Is(err, context.Canceled) {
					t.Fatalf("Run: %v", err)
				}
				return
			}
		}
		select {
		case err := <-errc:
			t.Fatalf("pipeline ended before committing everything: %v", err)
		case <-deadline:
			t.Fatalf("committed offsets %v never reached the ends %v", offs, ends)
		case <-tick.C:
		}
	}
}

// checkRouted: table a holds ids 0..n-1 once, table b ids routeBase.. once.
func checkRouted(t *testing.T, e *env, ta, tb string, n int) {
	t.Helper()
	checkExactlyOnce(t, e.readIDs(t, ta), n)
	got := map[int64]int{}
	for id, c := range e.readIDs(t, tb) {
		got[id-routeBase] = c
	}
	checkExactlyOnce(t, got, n)
}

// TestRouteTwoTopics: one group over two topics of two partitions, each
// topic routed to its table, dead letters of both in one dead-letter
// table: every record once in its table, every bad record once as a dead
// letter naming its topic.
func TestRouteTwoTopics(t *testing.T) {
	e := newEnv(t)
	ta, tb := e.table(t, "route_a"), e.table(t, "route_b")
	dlt := e.deadLetterTable(t, "route_dead")
	const n, badEvery = 400, 100
	k := newRouteKafka(t, 2, n, badEvery)
	cfg := k.config(e, "route", []ingest.Route{{Topic: "a", Table: ta}, {Topic: "b", Table: tb}})
	cfg.DeadLetterTable = dlt
	k.runToEnd(t, cfg, "route")
	checkRouted(t, e, ta, tb, n)
	dls := e.readDeadLetters(t, dlt, `"bad-`)
	checkDeadLettersOnce(t, dls, 2*n/badEvery)
	bySource := map[string]int{}
	for k := range dls {
		bySource[k[:strings.IndexByte(k, '/')]]++
	}
	if bySource["kafka:a"] != n/badEvery || bySource["kafka:b"] != n/badEvery {
		t.Fatalf("dead letters by source %v, want %d of each topic", bySource, n/badEvery)
	}
}

// TestRouteCrashBetweenTables: in one window, topic a's batch 2 is
// committed to table a and topic b's batch 2 is sealed but not committed
// to table b when the process dies (and a's DONE is lost). The restart
// finds a's streams committed (confirmed, not committed again) and
// commits b's: every record once in its table.
func TestRouteCrashBetweenTables(t *testing.T) {
	e := newEnv(t)
	ta, tb := e.table(t, "crash_route_a"), e.table(t, "crash_route_b")
	const n = 300
	k := newRouteKafka(t, 1, n, 0)
	routes := []ingest.Route{{Topic: "a", Table: ta}, {Topic: "b", Table: tb}}
	// Batches close at 50 rows, never by age (a slow first fetch would
	// otherwise move the batch boundaries the counts below rely on).
	cfg := k.config(e, "crash-route", routes)
	cfg.MaxBatchAge = time.Minute
	bSealed, aCommitted := make(chan struct{}), make(chan struct{})
	var onceA, onceB sync.Once
	cfg.Hooks = hookFunc(func(p ingest.Point, partition string, batch uint64) error {
		if batch != 2 {
			return nil
		}
		switch {
		case p == ingest.AfterSeal && partition == "kafka:b/0":
			onceB.Do(func() { close(bSealed) })
			select {
			case <-aCommitted:
			case <-time.After(30 * time.Second):
			}
			return errCrash
		case p == ingest.AfterCommit && partition == "kafka:a/0":
			select {
			case <-bSealed:
			case <-time.After(30 * time.Second):
				return errors.New("b's batch 2 never sealed")
			}
			onceA.Do(func() { close(aCommitted) })
			return errCrash
		}
		return nil
	})
	if err := ingest.Run(context.Background(), cfg); !errors.Is(err, errCrash) {
		t.Fatalf("first run: %v, want the injected crash", err)
	}
	// Between the two tables' commits: a holds its two batches, b its first.
	if got := len(e.readIDs(t, ta)); got != 100 {
		t.Fatalf("after the crash table a holds %d rows, want 100 (batches 1 and 2)", got)
	}
	if got := len(e.readIDs(t, tb)); got != 50 {
		t.Fatalf("after the crash table b holds %d rows, want 50 (batch 1; batch 2 sealed, not committed)", got)
	}
	cfg = k.config(e, "crash-route", routes)
	cfg.MaxBatchAge = time.Minute
	k.runToEnd(t, cfg, "crash-route")
	checkRouted(t, e, ta, tb, n)
}

// TestRouteChangedFailsClosed: a state written for one route refuses a
// run that sends its topic elsewhere; a topic without a route, or a route
// without a topic, stops the run at start.
func TestRouteChangedFailsClosed(t *testing.T) {
	e := newEnv(t)
	ta, tb, tc := e.table(t, "changed_a"), e.table(t, "changed_b"), e.table(t, "changed_c")
	const n = 100
	k := newRouteKafka(t, 1, n, 0)
	k.runToEnd(t, k.config(e, "changed", []ingest.Route{{Topic: "a", Table: ta}, {Topic: "b", Table: tb}}), "changed")

	cfg := k.config(e, "changed", []ingest.Route{{Topic: "a", Table: ta}, {Topic: "b", Table: tc}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := ingest.Run(ctx, cfg); !errors.Is(err, ingest.ErrConfigChanged) || !strings.Contains(err.Error(), "kafka:b/0") {
		t.Fatalf("rerouted run: %v, want ErrConfigChanged for kafka:b/0", err)
	}
	if got := len(e.readIDs(t, tc)); got != 0 {
		t.Fatalf("the rerouted table holds %d rows", got)
	}
	// Two topics share a table: a new group, so no state stands in the way.
	shared := k.config(e, "shared", []ingest.Route{{Topic: "a", Table: tc}, {Topic: "b", Table: tc}})
	k.runToEnd(t, shared, "shared")
	got := map[int64]int{}
	for id, c := range e.readIDs(t, tc) {
		if id >= routeBase {
			id = id - routeBase + n
		}
		got[id] = c
	}
	checkExactlyOnce(t, got, 2*n)

	for _, routes := range [][]ingest.Route{
		{{Topic: "a", Table: ta}}, // b has no route
		{{Topic: "a", Table: ta}, {Topic: "b", Table: tb}, {Topic: "c", Table: tc}}, // c is not consumed
	} {
		if err := ingest.Run(ctx, k.config(e, "changed", routes)); !errors.Is(err, ingest.ErrNoRoute) {
			t.Errorf("routes %v: %v, want ErrNoRoute", routes, err)
		}
	}
	bad := k.config(e, "changed", []ingest.Route{{Topic: "a", Table: ta}, {Topic: "b", Table: tb}})
	bad.Table = ta
	if err := ingest.Run(ctx, bad); err == nil || !strings.Contains(err.Error(), "give one") {
		t.Errorf("Table and Routes: %v", err)
	}
}

// TestRouteTwoMembers: two members of one group over both topics; the
// second joins while the first runs, so partitions of both topics move
// between them (cooperative rebalance): every record once in its table.
func TestRouteTwoMembers(t *testing.T) {
	e := newEnv(t)
	ta, tb := e.table(t, "members_a"), e.table(t, "members_b")
	const n = 1200
	k := newRouteKafka(t, 3, n, 0)
	routes := []ingest.Route{{Topic: "a", Table: ta}, {Topic: "b", Table: tb}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := k.config(e, "members", routes)
	first.MaxBatchRows = 20
	committed := make(chan struct{})
	var once sync.Once
	first.OnCommit = func(ingest.Committed) { once.Do(func() { close(committed) }) }
	errc := make(chan error, 1)
	go func() { errc <- ingest.Run(ctx, first) }()
	select {
	case <-committed: // the first member runs: the second's join moves partitions
	case err := <-errc:
		t.Fatalf("first member: %v", err)
	}
	second := k.config(e, "members", routes)
	second.MaxBatchRows = 20
	k.runToEnd(t, second, "members")
	cancel()
	if err := <-errc; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("first member: %v", err)
	}
	checkRouted(t, e, ta, tb, n)
}

// TestRouteFaultStorm: two topics routed to two tables (and a dead-letter
// table) against a server that drops commit and finalize replies, refuses
// stream creations and appends with RESOURCE_EXHAUSTED and resets
// appends: each table's commits are confirmed on their own
// (STREAM_ALREADY_COMMITTED through commit_time); every record once in
// its table, every bad record once as a dead letter.
func TestRouteFaultStorm(t *testing.T) {
	spec, err := faults.Parse("quota:rpc=AppendRows,p=0.05;quota:rpc=CreateWriteStream,p=0.3;" +
		"append.reset:when=after,p=0.03;finalize.drop_reply:p=0.3;commit.drop_reply:p=0.4")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, func(c *server.Config) { c.Faults, c.FaultSeed = spec, 11 })
	ta, tb := e.table(t, "storm_a"), e.table(t, "storm_b")
	dlt := e.deadLetterTable(t, "storm_dead")
	const n, badEvery = 300, 100
	k := newRouteKafka(t, 2, n, badEvery)
	m := ingest.NewMetrics(nil)
	cfg := k.config(e, "storm", []ingest.Route{{Topic: "a", Table: ta}, {Topic: "b", Table: tb}})
	cfg.DeadLetterTable = dlt
	cfg.Lease = 2 * time.Second
	cfg.Metrics = m
	k.runToEnd(t, cfg, "storm")
	checkRouted(t, e, ta, tb, n)
	checkDeadLettersOnce(t, e.readDeadLetters(t, dlt, `"bad-`), 2*n/badEvery)
	if got := counterValue(t, m.CommitFailures); got < 1 {
		t.Errorf("no commit failed: were the faults injected?")
	}
}
