package ingest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKafkaLeaderEpochs (KIP-320): a state is committed with the leader
// epoch of the last record it covers, and a partition resumed from a
// committed state seeks with that epoch, so a log truncated below the
// state (an unclean leader election) fails closed instead of being read on
// at an offset that now names other records.
func TestKafkaLeaderEpochs(t *testing.T) {
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
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	produce := func(n int) {
		t.Helper()
		for i := range n {
			if err := prod.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(3) // offsets 0-2, leader epoch 0
	if err := c.MoveTopicPartition("events", 0, c.LeaderFor("events", 0)); err != nil {
		t.Fatal(err) // a leader election: epoch 1
	}
	produce(3) // offsets 3-5, leader epoch 1

	adm, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	committedEpoch := func() (int32, error) {
		offs, err := kadm.NewClient(adm).FetchOffsets(ctx, "g")
		if err != nil {
			return 0, err
		}
		o, ok := offs.Lookup("events", 0)
		if !ok {
			return 0, errors.New("no committed offset")
		}
		return o.LeaderEpoch, nil
	}

	// A first member reads the six records and stores states at 3 and 6.
	s := &KafkaSource{Brokers: c.ListenAddrs(), Topic: "events", Group: "g"}
	err = runSource(ctx, s, func(pctx context.Context, p Partition) error {
		r, err := p.Open(pctx, 0)
		if err != nil {
			return err
		}
		for range 6 {
			if _, _, err := r.Next(pctx); err != nil {
				return err
			}
		}
		l := s.Ledger()
		for _, at := range []int64{3, 6} {
			if err := l.Store(pctx, p.Key(), State{Batch: uint64(at), Offset: at, DeadLetterEnd: -1}); err != nil {
				return err
			}
			want := int32(0)
			if at == 6 {
				want = 1
			}
			if got, err := committedEpoch(); err != nil || got != want {
				return fmt.Errorf("state at %d committed with leader epoch %d (%v), want %d (the epoch of record %d)", at, got, err, want, at-1)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// The log is then truncated to 4 under the state (an unclean election:
	// the broker answers OffsetForLeaderEpoch with an end below it), and
	// new records arrive at offsets 6 and 7.
	c.ControlKey(int16(kmsg.OffsetForLeaderEpoch), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kr.(*kmsg.OffsetForLeaderEpochRequest)
		resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewOffsetForLeaderEpochResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
				sp.Partition, sp.LeaderEpoch, sp.EndOffset = rp.Partition, rp.LeaderEpoch, 4
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	produce(2)
	s = &KafkaSource{Brokers: c.ListenAddrs(), Topic: "events", Group: "g"}
	err = runSource(ctx, s, func(pctx context.Context, p Partition) error {
		st, err := s.Ledger().Load(pctx, p.Key())
		if err != nil {
			return err
		}
		r, err := p.Open(pctx, st.Offset)
		if err != nil {
			return err
		}
		nctx, ncancel := context.WithTimeout(pctx, 10*time.Second)
		defer ncancel()
		rec, end, err := r.Next(nctx)
		var gone *RecordsGoneError
		if !errors.As(err, &gone) || !gone.Truncated || gone.TruncatedTo != 4 {
			return fmt.Errorf("resumed at %d past a truncation to 4: got record %q (end %d), err %v; want a RecordsGoneError (truncated to 4)", st.Offset, rec, end, err)
		}
		t.Logf("fails closed: %v", err)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// runSource runs s until assign, called for its first partition, returns.
func runSource(ctx context.Context, s *KafkaSource, assign func(context.Context, Partition) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	runErr := s.Run(ctx, func(pctx context.Context, p Partition) error {
		err := assign(pctx, p)
		select {
		case done <- err:
		default:
		}
		cancel()
		return nil
	})
	select {
	case err := <-done:
		return err
	default:
	}
	return fmt.Errorf("the source stopped before its partition was done: %v", runErr)
}

// TestKafkaEpochMarks: the epoch of an offset is that of the record read
// just before it; offsets never read (skipped by a seek forward) have
// none, so a seek or commit there cannot claim an older epoch (which
// would make the client see a truncation that is not there).
func TestKafkaEpochMarks(t *testing.T) {
	kp := &kafkaPartition{s: &KafkaSource{}}
	read := func(from, to int64, epoch int32) {
		kp.mu.Lock()
		defer kp.mu.Unlock()
		for end := from + 1; end <= to; end++ {
			kp.noteEpochLocked(end, epoch)
		}
	}
	check := func(at int64, want int32) {
		t.Helper()
		if got := kp.epochAt(at); got != want {
			t.Errorf("epochAt(%d) = %d, want %d", at, got, want)
		}
	}
	if _, err := kp.Open(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	read(0, 10, 0)
	read(10, 20, 1)
	check(0, -1)
	check(5, 0)
	check(10, 0)
	check(11, 1)
	check(20, 1)
	check(21, -1) // not read yet

	// A jump forward (records deleted, SkipDeletedRecords): offsets 21-99
	// were never read.
	if _, err := kp.Open(context.Background(), 100); err != nil {
		t.Fatal(err)
	}
	read(100, 105, 1)
	check(50, -1)
	check(100, -1)
	check(103, 1)

	// A seek back re-reads under the marks it replaces.
	if _, err := kp.Open(context.Background(), 102); err != nil {
		t.Fatal(err)
	}
	read(102, 110, 2)
	check(101, 1)
	check(102, 1)
	check(103, 2)
	check(110, 2)

	// A loaded state's epoch stands for its offset until records are read.
	kp.mu.Lock()
	kp.mu.loaded = epochMark{end: 500, epoch: 7}
	kp.mu.Unlock()
	check(500, 7)
	if _, err := kp.Open(context.Background(), 500); err != nil {
		t.Fatal(err)
	}
	check(500, 7)
	read(500, 502, 7)
	check(502, 7)
}

// TestKafkaRevokeCommitsEpoch: a state stored while a cooperative revoke
// lets the worker finish (crash table row 13) carries its leader epoch
// too, although the partition is already being given up.
func TestKafkaRevokeCommitsEpoch(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "events"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	prod, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("events"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for p := range int32(2) {
		for range 3 {
			if err := prod.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	fast := []kgo.Opt{kgo.HeartbeatInterval(100 * time.Millisecond)}
	a := &KafkaSource{Brokers: c.ListenAddrs(), Topic: "events", Group: "g", Opts: fast}
	stored := make(chan error, 2)
	read := make(chan struct{}, 2)
	actx, acancel := context.WithCancel(ctx)
	defer acancel()
	aDone := make(chan error, 1)
	go func() {
		aDone <- a.Run(actx, func(pctx context.Context, p Partition) error {
			r, err := p.Open(pctx, 0)
			if err != nil {
				return err
			}
			for range 3 {
				if _, _, err := r.Next(pctx); err != nil {
					return err
				}
			}
			read <- struct{}{}
			select {
			case <-p.(Revoker).Revoking():
			case <-pctx.Done():
				return nil
			}
			stored <- a.Ledger().Store(pctx, p.Key(), State{Batch: 1, Offset: 3, DeadLetterEnd: -1})
			return nil
		})
	}()
	// Member A has both partitions and read them; member B joins, and the
	// cooperative rebalance revokes one of them from A.
	for range 2 {
		select {
		case <-read:
		case <-ctx.Done():
			t.Fatal("member A never read both partitions")
		}
	}
	b := &KafkaSource{Brokers: c.ListenAddrs(), Topic: "events", Group: "g", Opts: fast}
	bctx, bcancel := context.WithCancel(ctx)
	defer bcancel()
	bDone := make(chan error, 1)
	go func() {
		bDone <- b.Run(bctx, func(pctx context.Context, p Partition) error { <-pctx.Done(); return nil })
	}()
	select {
	case err := <-stored:
		if err != nil {
			t.Fatalf("store during the revoke: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("no partition was revoked from member A")
	}
	adm, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	offs, err := kadm.NewClient(adm).FetchOffsets(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	offs.Each(func(o kadm.OffsetResponse) {
		if o.At == 3 {
			n++
			if o.LeaderEpoch != 0 {
				t.Errorf("partition %d: the state stored during the revoke has leader epoch %d, want 0", o.Partition, o.LeaderEpoch)
			}
		}
	})
	if n == 0 {
		t.Fatal("no state stored at offset 3")
	}
	acancel()
	bcancel()
	<-aDone
	<-bDone
}
