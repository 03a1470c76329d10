package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bqstore/bqstore/ingest"
	"github.com/bqstore/bqstore/ingest/rows"
)

func TestParseKafkaURL(t *testing.T) {
	s, err := ingest.ParseKafkaURL("kafka://127.0.0.1:9092,127.0.0.1:9093/events?group=g1")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Brokers) != 2 || s.Brokers[1] != "127.0.0.1:9093" || s.Topic != "events" || s.Group != "g1" {
		t.Fatalf("parsed %+v", s)
	}
	// Several topics (fan-out), or none: Topics set by the caller (--route).
	if s, err := ingest.ParseKafkaURL("kafka://h/a,b?group=g"); err != nil || !slices.Equal(s.SourceTopics(), []string{"a", "b"}) {
		t.Fatalf("ParseKafkaURL(a,b) = %+v, %v", s, err)
	}
	// The ledger's identity (which binds a dead-letter file) does not
	// depend on the order of the topics.
	ab, _ := ingest.ParseKafkaURL("kafka://h/a,b?group=g")
	ba, _ := ingest.ParseKafkaURL("kafka://h/b,a?group=g")
	type identifier interface{ Identity() string }
	if x, y := ab.Ledger().(identifier).Identity(), ba.Ledger().(identifier).Identity(); x != y {
		t.Errorf("ledger identities %q and %q differ by topic order", x, y)
	}
	if s, err := ingest.ParseKafkaURL("kafka://h/?group=g"); err != nil || len(s.SourceTopics()) != 0 {
		t.Fatalf("ParseKafkaURL(no topic) = %+v, %v", s, err)
	}
	for _, bad := range []string{"kafka://h/t", "kafka:///t?group=g", "http://h/t?group=g",
		"kafka://h/t/u?group=g", "kafka://h/t?group=g&x=1", "kafka://h/a,,b?group=g", "kafka://h/a,a?group=g"} {
		if _, err := ingest.ParseKafkaURL(bad); err == nil {
			t.Errorf("ParseKafkaURL(%q) accepted", bad)
		}
	}
}

// kafkaEnv is an in-process Kafka (kfake) with a topic of events.
type kafkaEnv struct {
	c     *kfake.Cluster
	topic string
	parts int32
}

func newKafka(t *testing.T, parts int32, n int, badEvery int) *kafkaEnv {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(parts, "events"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	// kfake does not enforce real Kafka's offset.metadata.max.bytes (4096):
	// refuse bigger metadata here, so a seal that only fits in kfake fails.
	c.ControlKey(int16(kmsg.OffsetCommit), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kr.(*kmsg.OffsetCommitRequest)
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		tooBig := false
		for _, rt := range req.Topics {
			st := kmsg.NewOffsetCommitResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition = rp.Partition
				if rp.Metadata != nil && len(*rp.Metadata) > 4096 {
					sp.ErrorCode = kerr.OffsetMetadataTooLarge.Code
					tooBig = true
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		if !tooBig {
			return nil, nil, false // let the cluster handle it
		}
		resp.SetVersion(req.Version)
		return resp, nil, true
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: "events", Value: fmt.Appendf(nil, `{"id":%d,"name":"k%d","tags":[]}`, i, i)})
		if badEvery > 0 && i%badEvery == badEvery-1 {
			recs = append(recs, &kgo.Record{Topic: "events", Value: []byte(`{"id":[]}`)})
		}
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return &kafkaEnv{c: c, topic: "events", parts: parts}
}

// waitCommitted waits until the group's committed offsets reach the end of
// every partition (the pipeline has committed everything) or fails.
func (k *kafkaEnv) waitCommitted(t *testing.T, group string, errc <-chan error) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	ends, err := adm.ListEndOffsets(ctx, k.topic)
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
				o, ok := offs.Lookup(e.Topic, e.Partition)
				if !ok || o.At != e.Offset {
					done = false
				}
			})
			if done {
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

func (k *kafkaEnv) config(e *env, table, group string, dl *ingest.DeadLetters) (ingest.Config, *ingest.KafkaSource) {
	src := &ingest.KafkaSource{Brokers: k.c.ListenAddrs(), Topic: k.topic, Group: group,
		Opts: []kgo.Opt{kgo.SessionTimeout(6 * time.Second), kgo.HeartbeatInterval(200 * time.Millisecond)}}
	return ingest.Config{
		Start:  ingest.StartEarliest,
		Client: e.write, Table: table, Source: src, DeadLetters: dl, Unknown: rows.UnknownReject,
		MaxBatchRows: 50, MaxBatchAge: 100 * time.Millisecond, RequestBytes: 1 << 10, MemoryBudget: 1 << 20,
		CommitWindow: time.Millisecond,
		Backoff:      ingest.Backoff{Base: time.Millisecond, Max: 10 * time.Millisecond},
	}, src
}

func TestKafkaExactlyOnce(t *testing.T) {
	e := newEnv(t)
	table := e.table(t, "kafka_events")
	const n = 600
	k := newKafka(t, 3, n, 100)
	dl, err := ingest.OpenDeadLetters(filepath.Join(t.TempDir(), "dead.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	defer dl.Close()
	cfg, _ := k.config(e, table, "g", dl)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- ingest.Run(ctx, cfg) }()
	k.waitCommitted(t, "g", errc)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
	checkExactlyOnce(t, e.readIDs(t, table), n)
}

// TestKafkaCrashAfterSeal crashes one partition's worker after its seal,
// then restarts: the new run resolves the seal from the committed-offset
// metadata, commits, and continues at its end.
func TestKafkaCrashTable(t *testing.T) {
	e := newEnv(t)
	const n = 300
	k := newKafka(t, 2, n, 0)
	for i, p := range []ingest.Point{ingest.AfterFinalize, ingest.AfterSeal, ingest.AfterCommit} {
		t.Run("point="+string(p), func(t *testing.T) {
			table := e.table(t, fmt.Sprintf("kafka_crash_%d", i))
			group := fmt.Sprintf("crash%d", i)
			cfg, _ := k.config(e, table, group, nil)
			cfg.Hooks = &crashAt{point: p, batch: 2}
			err := ingest.Run(context.Background(), cfg)
			if !errors.Is(err, errCrash) {
				t.Fatalf("first run: %v, want the injected crash", err)
			}
			cfg, _ = k.config(e, table, group, nil)
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() { errc <- ingest.Run(ctx, cfg) }()
			k.waitCommitted(t, group, errc)
			cancel()
			<-errc
			checkExactlyOnce(t, e.readIDs(t, table), n)
		})
	}
}

// TestKafkaTwoMembers runs two pipelines in one group: partitions are
// spread (and rebalanced when the second joins) and every record lands
// exactly once.
func TestKafkaTwoMembers(t *testing.T) {
	e := newEnv(t)
	table := e.table(t, "kafka_two")
	const n = 1200
	k := newKafka(t, 4, n, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 2)
	var wg sync.WaitGroup
	for range 2 {
		cfg, _ := k.config(e, table, "two", nil)
		cfg.MaxBatchRows = 20
		wg.Add(1)
		go func() {
			defer wg.Done()
			errc <- ingest.Run(ctx, cfg)
		}()
	}
	k.waitCommitted(t, "two", errc)
	cancel()
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
	}
	checkExactlyOnce(t, e.readIDs(t, table), n)
}

// TestKafkaSchemaChangeWhileIdle: partitions go idle (their batch's stream
// and the one created ahead predate what follows), the table gains a
// column, then records using it arrive. The first such record ends its
// batch and is mapped again with a stream created after the change: no
// dead letters, every record once.
func TestKafkaSchemaChangeWhileIdle(t *testing.T) {
	e := newEnv(t)
	table := e.table(t, "kafka_evolve")
	const n = 100
	k := newKafka(t, 2, n, 0)
	dl, err := ingest.OpenDeadLetters(filepath.Join(t.TempDir(), "dead.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	defer dl.Close()
	cfg, _ := k.config(e, table, "evolve", dl)
	cfg.MaxSpareAge = 50 * time.Millisecond
	// Wait until every partition ran idle batches (AfterCreate repeats
	// for the same batch number while nothing arrives), so its unused
	// streams predate the schema change.
	var mu sync.Mutex
	idle := map[string]int{}
	idleEnough := make(chan struct{})
	cfg.Hooks = hookFunc(func(p ingest.Point, partition string, batch uint64) error {
		if p != ingest.AfterCreate || batch != 2 {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		idle[partition]++
		if len(idle) == 2 && idle["kafka:events/0"] >= 4 && idle["kafka:events/1"] >= 4 {
			select {
			case <-idleEnough:
			default:
				close(idleEnough)
			}
		}
		return nil
	})
	m := ingest.NewMetrics(nil)
	cfg.Metrics = m
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- ingest.Run(ctx, cfg) }()
	k.waitCommitted(t, "evolve", errc)
	select {
	case <-idleEnough:
	case err := <-errc:
		t.Fatalf("pipeline stopped: %v", err)
	}

	tbl := e.bq.Dataset("d").Table("kafka_evolve")
	md, err := tbl.Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	schema := append(md.Schema, &bigquery.FieldSchema{Name: "extra", Type: bigquery.StringFieldType})
	if _, err := tbl.Update(ctx, bigquery.TableMetadataToUpdate{Schema: schema}, md.ETag); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.c.ListenAddrs()...), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := n; i < 2*n; i++ {
		recs = append(recs, &kgo.Record{Topic: "events", Value: fmt.Appendf(nil, `{"id":%d,"extra":"x"}`, i)})
	}
	err = cl.ProduceSync(ctx, recs...).FirstErr()
	cl.Close()
	if err != nil {
		t.Fatal(err)
	}
	k.waitCommitted(t, "evolve", errc)
	cancel()
	<-errc
	if got := counterValue(t, m.DeadLetters); got != 0 {
		t.Fatalf("%v dead letters: records with the new column were mapped with the old schema", got)
	}
	checkExactlyOnce(t, e.readIDs(t, table), 2*n)
}

// TestKafkaReadCommitted: a transactional producer commits some
// transactions and aborts others, and the partition ends in a commit
// marker. Only committed records land (each once), and the committed
// offset still reaches the log end past the control records.
func TestKafkaReadCommitted(t *testing.T) {
	e := newEnv(t)
	table := e.table(t, "kafka_txn")
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "events"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx := context.Background()
	pl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Close()
	rec := func(id int) *kgo.Record {
		return &kgo.Record{Topic: "events", Value: fmt.Appendf(nil, `{"id":%d,"name":"t%d","tags":[]}`, id, id)}
	}
	var plain []*kgo.Record
	for i := range 10 {
		plain = append(plain, rec(i))
	}
	if err := pl.ProduceSync(ctx, plain...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	tx, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.TransactionalID("ingest-test"))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	want := 10
	for i, commit := range []bool{true, false, true, false, true} {
		if err := tx.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		var recs []*kgo.Record
		for j := range 10 {
			id := 10 + i*10 + j
			if !commit {
				id += 1000 // never committed: must never appear
			}
			recs = append(recs, rec(id))
		}
		if err := tx.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		end := kgo.TryCommit
		if !commit {
			end = kgo.TryAbort
		}
		if err := tx.EndTransaction(ctx, end); err != nil {
			t.Fatal(err)
		}
		if commit {
			want += 10
		}
	}
	k := &kafkaEnv{c: c, topic: "events", parts: 1}
	cfg, _ := k.config(e, table, "txn", nil)
	runCtx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- ingest.Run(runCtx, cfg) }()
	k.waitCommitted(t, "txn", errc)
	cancel()
	<-errc
	got := e.readIDs(t, table)
	// Committed ids are 0..9 plus 10..19, 30..39 and 50..59.
	for id, n := range got {
		if id >= 1000 {
			t.Fatalf("id %d of an aborted transaction was ingested", id)
		}
		if n != 1 {
			t.Fatalf("id %d present %d times", id, n)
		}
	}
	if len(got) != want {
		t.Fatalf("table holds %d ids, want %d: %v", len(got), want, got)
	}
}
