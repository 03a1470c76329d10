package ingest_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bqstore/bqstore/ingest"
)

// TestKafkaRecordsGoneBeforeReplay is crash table row 17: the pipeline
// stops with batch 2 unsealed, then DeleteRecords (what retention does)
// removes records it had not committed. The next run must not skip them
// silently: it stops with a RecordsGoneError naming the partition and the
// missing offsets, counted in bqstore_ingest_source_gaps_total, and commits
// nothing past the gap. With SkipDeletedRecords it steps over the gap and
// ingests the rest, still counting it.
func TestKafkaRecordsGoneBeforeReplay(t *testing.T) {
	e := newEnv(t)
	table := e.table(t, "kafka_gone")
	const n, deleted = 200, 30
	k := newKafka(t, 1, n, 0) // one partition: id i is at offset i
	ctx := context.Background()

	cfg, _ := k.config(e, table, "gone", nil)
	cfg.Hooks = &crashAt{point: ingest.AfterCreate, batch: 2, settled: true}
	var mu sync.Mutex
	var commits []ingest.Committed
	cfg.OnCommit = func(c ingest.Committed) {
		mu.Lock()
		commits = append(commits, c)
		mu.Unlock()
	}
	if err := ingest.Run(ctx, cfg); !errors.Is(err, errCrash) {
		t.Fatalf("first run: %v, want the injected crash", err)
	}
	mu.Lock()
	if len(commits) != 1 || commits[0].From != 0 || commits[0].To != commits[0].Rows || commits[0].Time.IsZero() {
		t.Fatalf("OnCommit saw %+v, want batch 1 only, [0, rows) with a commit time", commits)
	}
	mu.Unlock()

	cl, err := kgo.NewClient(kgo.SeedBrokers(k.c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	offs, err := adm.FetchOffsets(ctx, "gone")
	if err != nil {
		t.Fatal(err)
	}
	o, ok := offs.Lookup(k.topic, 0)
	if !ok || o.At <= 0 || o.At+deleted >= n {
		t.Fatalf("committed offset %+v after batch 1", o)
	}
	x := o.At
	del := kadm.Offsets{}
	del.Add(kadm.Offset{Topic: k.topic, Partition: 0, At: x + deleted})
	if _, err := adm.DeleteRecords(ctx, del); err != nil {
		t.Fatal(err)
	}

	// Default: fail closed (the partition pauses).
	cfg, _ = k.config(e, table, "gone", nil)
	m := ingest.NewMetrics(nil)
	cfg.Metrics = m
	err = runUntilPaused(t, cfg, "kafka:events/0").Err
	var gone *ingest.RecordsGoneError
	if !errors.As(err, &gone) {
		t.Fatalf("second run: %v, want a RecordsGoneError", err)
	}
	if gone.Partition != "kafka:events/0" || gone.Want != x || gone.Start != x+deleted || gone.Lost() != deleted || gone.End != n {
		t.Fatalf("error %+v: want partition kafka:events/0, records [%d, %d) gone, end %d", gone, x, x+deleted, n)
	}
	if got := counterValue(t, m.SourceGaps.WithLabelValues("fail_closed")); got != 1 {
		t.Fatalf("fail_closed gaps counted %v, want 1", got)
	}
	checkExactlyOnce(t, e.readIDs(t, table), int(x))

	// Told to skip: the rest arrives, the gap is counted and stays empty.
	cfg, _ = k.config(e, table, "gone", nil)
	cfg.SkipDeletedRecords = true
	m = ingest.NewMetrics(nil)
	cfg.Metrics = m
	rctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- ingest.Run(rctx, cfg) }()
	k.waitCommitted(t, "gone", errc)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("third run: %v", err)
	}
	if got := counterValue(t, m.SourceGaps.WithLabelValues("skipped")); got != 1 {
		t.Fatalf("skipped gaps counted %v, want 1", got)
	}
	ids := e.readIDs(t, table)
	for i := x; i < x+deleted; i++ {
		if ids[i] != 0 {
			t.Fatalf("id %d (deleted from Kafka) is in the table", i)
		}
		ids[i] = 1 // so that checkExactlyOnce checks the rest
	}
	checkExactlyOnce(t, ids, n)
}
