package ingest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bqstore/bqstore/ingest"
)

// produceTo writes records to the given partitions, in order.
func produceTo(t *testing.T, k *kafkaEnv, recs []*kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, r := range recs {
		r.Topic = k.topic
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// waitPaused runs until h reports key paused and returns its entry; it
// fails the test if the run stops first.
func waitPaused(t *testing.T, h *ingest.Health, key string, errc <-chan error) ingest.PausedPartition {
	t.Helper()
	deadline := time.After(60 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, p := range h.Paused() {
			if p.Partition == key {
				return p
			}
		}
		select {
		case err := <-errc:
			t.Fatalf("Run stopped (%v) before pausing %s", err, key)
		case <-deadline:
			t.Fatalf("%s never paused (paused: %v)", key, h.Paused())
		case <-tick.C:
		}
	}
}

// TestPartitionErrorPausesOnlyIt: partition 0 holds a record that does
// not fit the table and the run has no dead-letter sink, a permanent
// error. Before, it stopped the whole run (and, in a group, the next
// member that took the partition, and the next). Now partition 0 is
// paused (kept assigned, not fetched, reported on /healthz and in
// bqstore_ingest_partition_paused) while partition 1 is ingested to its
// end; the run goes on until cancelled.
func TestPartitionErrorPausesOnlyIt(t *testing.T) {
	e := newEnv(t)
	table := e.table(t, "pause_one")
	k := newKafkaCluster(t, 2, 0)
	const n = 100
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Partition: int32(i % 2), Value: fmt.Appendf(nil, `{"id":%d,"name":"k%d","tags":[]}`, i, i)})
		if i == 60 {
			recs = append(recs, &kgo.Record{Partition: 0, Value: []byte(`{"id":"poison"}`)})
		}
	}
	produceTo(t, k, recs)

	cfg, _ := k.config(e, table, "pause", nil)
	h := ingest.NewHealth()
	m := ingest.NewMetrics(nil)
	cfg.Health, cfg.Metrics = h, m
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- ingest.Run(ctx, cfg) }()

	p := waitPaused(t, h, "kafka:events/0", errc)
	if !strings.Contains(p.Reason, "no dead-letter sink") {
		t.Fatalf("paused for %q, want the record that does not fit", p.Reason)
	}
	// Partition 1 goes on to its end.
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, k.topic)
	if err != nil {
		t.Fatal(err)
	}
	end1, _ := ends.Lookup(k.topic, 1)
	for {
		offs, err := adm.FetchOffsets(ctx, "pause")
		if err == nil {
			if o, ok := offs.Lookup(k.topic, 1); ok && o.At == end1.Offset {
				break
			}
		}
		select {
		case err := <-errc:
			t.Fatalf("Run stopped while partition 1 was ingested: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if got := gaugeValue(t, m.PartitionPaused.WithLabelValues("kafka:events/0")); got != 1 {
		t.Errorf("bqstore_ingest_partition_paused{partition=kafka:events/0} = %v, want 1", got)
	}
	if got := counterValue(t, m.PartitionEvents.WithLabelValues("assigned")); got != 2 {
		t.Errorf("partitions assigned = %v, want 2", got)
	}

	// /healthz names it.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	var body struct {
		Status string
		Paused []struct{ Partition, Reason string }
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("/healthz body %q: %v", rec.Body.String(), err)
	}
	if rec.Code != http.StatusServiceUnavailable || body.Status != "degraded" || len(body.Paused) != 1 ||
		body.Paused[0].Partition != "kafka:events/0" || !strings.Contains(body.Paused[0].Reason, "poison") && !strings.Contains(body.Paused[0].Reason, "no dead-letter sink") {
		t.Fatalf("/healthz = %d %s, want 503 naming kafka:events/0 and why", rec.Code, rec.Body.String())
	}

	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v, want it to run until cancelled", err)
	}
	if len(h.Paused()) != 0 {
		t.Errorf("after the run: paused %v, want none", h.Paused())
	}
	// Every id of partition 1 once; partition 0 up to its failed batch.
	ids := e.readIDs(t, table)
	for i := 1; i < n; i += 2 {
		if ids[int64(i)] != 1 {
			t.Fatalf("id %d (partition 1) is in the table %d times, want once", i, ids[int64(i)])
		}
	}
	for id, c := range ids {
		if c != 1 || (id%2 == 0 && id > 60) {
			t.Fatalf("id %d is in the table %d times (partition 0 past the poison record must not be)", id, c)
		}
	}
}

// runUntilPaused runs the pipeline until Health reports key paused, then
// stops it and returns the paused entry (its Err is the worker's error).
func runUntilPaused(t *testing.T, cfg ingest.Config, key string) ingest.PausedPartition {
	t.Helper()
	h := ingest.NewHealth()
	cfg.Health = h
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- ingest.Run(ctx, cfg) }()
	p := waitPaused(t, h, key, errc)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v, want it to run until cancelled", err)
	}
	return p
}
