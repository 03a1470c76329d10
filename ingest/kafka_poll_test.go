package ingest

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKafkaSeekWakesPoll: a seek (Open) requested while the polling
// goroutine is between two polls must not wait for the next fetch with
// records: when none comes (the partition was read to its end and the
// producer is idle), the seek must still apply. The hook opens the
// partition again at that exact moment: after the seeks of one round
// were applied, before the next poll starts.
func TestKafkaSeekWakesPoll(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "events"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	prod, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("events"))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	produce := func(v string) error {
		return prod.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr()
	}
	for _, v := range []string{"a", "b", "c"} {
		if err := produce(v); err != nil {
			t.Fatal(err)
		}
	}

	s := &KafkaSource{Brokers: c.ListenAddrs(), Topic: "events", Group: "g"}
	var (
		reopen  atomic.Bool // the worker read everything: the hook opens again
		part    atomic.Pointer[kafkaPartition]
		reopend = make(chan RecordReader, 1)
	)
	s.beforePoll = func() {
		kp := part.Load()
		if kp == nil || !reopen.CompareAndSwap(true, false) {
			return
		}
		r, err := kp.Open(ctx, 0)
		if err != nil {
			t.Error(err)
			return
		}
		reopend <- r
	}
	errc := make(chan error, 1)
	go func() {
		errc <- s.Run(ctx, func(pctx context.Context, p Partition) error {
			kp := p.(*kafkaPartition)
			r, err := kp.Open(pctx, 0)
			if err != nil {
				return err
			}
			for range 3 {
				if _, _, err := r.Next(pctx); err != nil {
					return err
				}
			}
			part.Store(kp)
			reopen.Store(true)
			// One more record makes the polling goroutine go round once
			// more, through the hook; then nothing more is produced.
			if err := produce("d"); err != nil {
				return err
			}
			r2 := <-reopend
			nctx, ncancel := context.WithTimeout(pctx, 5*time.Second)
			defer ncancel()
			v, _, err := r2.Next(nctx)
			if err != nil {
				return errors.New("the seek requested between two polls never applied: " + err.Error())
			}
			if string(v) != "a" {
				return errors.New("after the seek to 0: got " + string(v))
			}
			cancel()
			return nil
		})
	}()
	if err := <-errc; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}
