package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// KafkaSource consumes one topic (Topic), or several (Topics), as a member
// of one consumer group. Each assigned partition is a Partition (a
// TopicPartition: its key names its topic); its state (IDLE or SEALED) lives in
// the group's committed offset and its metadata, written only with
// member OffsetCommit requests carrying this member's ID and generation,
// so a member that lost the partition cannot seal (docs/ingest-protocol.md).
//
// The client runs with auto-commit off and BlockRebalanceOnPoll; seeks
// (SetOffsets) and pauses happen only on the polling goroutine, between a
// poll and AllowRebalance.
type KafkaSource struct {
	Brokers []string
	Topic   string
	// Topics, when set, replaces Topic: the member consumes them all
	// (fan-out: Config.Routes sends each topic to its table).
	Topics []string
	Group  string
	// Opts are extra franz-go options (tests shorten the session timeout).
	// They must keep the classic group protocol and its balancer: the
	// source watches each assignment through it (syncWatcher).
	Opts []kgo.Opt
	// MaxBuffered is the bytes fetched and not yet read per partition
	// before its fetching pauses (default 8 MiB).
	MaxBuffered int64
	// MemoryBudget bounds the client's fetch buffers and the records
	// fetched and not yet read, over all partitions (0: no bound but
	// MaxBuffered per partition). ingest.Run sets it, when zero, to half
	// of Config.MemoryBudget. Of it: a quarter for the client's fetches
	// (MaxConcurrentFetches 2 of FetchMaxBytes MemoryBudget/8 each,
	// FetchMaxPartitionBytes at most that), a quarter for fetches that
	// arrive while fetching pauses, and half for records buffered for the
	// workers: above that, every partition's fetching pauses until the
	// workers read it down to a quarter.
	// A broker may still return one record batch larger than
	// FetchMaxBytes, and compressed batches take more once decompressed
	// (franz-go cannot bound that).
	MemoryBudget int64
	// RevokeGrace bounds how long a cooperative revoke waits for a
	// partition's worker to finish a sealed batch (default 10 s; keep it
	// well under the group's rebalance timeout).
	RevokeGrace time.Duration
	Logger      *slog.Logger
	// TLS and SASL are the kafka:// URL's tls and sasl parameters; Secure
	// turns them into Opts (kafkaauth.go).
	TLS     bool
	SASL    string
	secured bool

	cl       *kgo.Client
	adm      *kadm.Client
	topicIDs map[string][16]byte
	log      *slog.Logger

	mu struct {
		sync.Mutex
		parts map[tp]*kafkaPartition
		// leaving: partitions being released whose worker still runs
		// (a revoke's grace): its stores still need their epochs.
		leaving map[tp]*kafkaPartition
		wake    context.CancelFunc // interrupts the current poll
		// woken: a wake came since the polling goroutine last applied
		// seeks and pauses; the next poll must not block (a wake between
		// two polls would otherwise be lost, and a seek wait for records
		// that may never come).
		woken  bool
		runErr error
		// member is this client's group member id at the last SyncGroup
		// (syncWatcher): the membership its partitions were assigned
		// under. "" before the first sync, or when Opts replaced the
		// balancer.
		member string
	}
	wg sync.WaitGroup // assign goroutines
	// clReady is closed once cl is set (a sync may come before NewClient
	// returned).
	clReady chan struct{}

	// queued is the bytes buffered over all partitions (kafkaPartition
	// queued); overBudget is set while it is over queueBudget and until
	// it is read down to half.
	queued      atomic.Int64
	overBudget  atomic.Bool
	queueBudget int64

	// beforePoll, if set (tests), runs on the polling goroutine before
	// each poll.
	beforePoll func()
}

// tp names a partition of one of the source's topics.
type tp struct {
	topic string
	p     int32
}

// ParseKafkaURL parses
// kafka://BROKER[,BROKER]/TOPIC[,TOPIC...]?group=G[&tls=true][&sasl=MECHANISM].
// The topic may be left out (kafka://BROKER/?group=G) when the caller
// sets Topics itself (the CLI's --route).
func ParseKafkaURL(s string) (*KafkaSource, error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "kafka" {
		return nil, fmt.Errorf("ingest: %q is not kafka://BROKER[,BROKER]/TOPIC?group=G", s)
	}
	path := strings.Trim(u.Path, "/")
	group := u.Query().Get("group")
	if u.Host == "" || strings.Contains(path, "/") || group == "" {
		return nil, fmt.Errorf("ingest: %q: want kafka://BROKER[,BROKER]/TOPIC?group=G", s)
	}
	ks := &KafkaSource{Brokers: strings.Split(u.Host, ","), Group: group}
	if path != "" {
		topics := strings.Split(path, ",")
		seen := map[string]bool{}
		for _, t := range topics {
			if t == "" || seen[t] {
				return nil, fmt.Errorf("ingest: %q: topic list %q has an empty or repeated topic", s, path)
			}
			seen[t] = true
		}
		if len(topics) == 1 {
			ks.Topic = topics[0]
		} else {
			ks.Topics = topics
		}
	}
	for k := range u.Query() {
		switch k {
		case "group":
		case "tls", "sasl":
			if err := ks.parseKafkaSecurity(s, k, u.Query().Get(k)); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("ingest: %q: unknown parameter %q (group, tls, sasl)", s, k)
		}
	}
	return ks, nil
}

// Single implements Source.
func (s *KafkaSource) Single() bool { return false }

// Ledger implements Source: the group's committed offsets.
func (s *KafkaSource) Ledger() Ledger { return kafkaLedger{s} }

// SourceTopics implements TopicSource: Topics, else Topic.
func (s *KafkaSource) SourceTopics() []string {
	if len(s.Topics) > 0 {
		return s.Topics
	}
	if s.Topic != "" {
		return []string{s.Topic}
	}
	return nil
}

func (s *KafkaSource) key(t tp) string { return "kafka:" + t.topic + "/" + strconv.Itoa(int(t.p)) }

// Run implements Source.
func (s *KafkaSource) Run(ctx context.Context, assign func(ctx context.Context, p Partition) error) error {
	s.log = s.Logger
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.MaxBuffered <= 0 {
		s.MaxBuffered = 8 << 20
	}
	var budgetOpts []kgo.Opt
	if s.MemoryBudget > 0 {
		// Two fetches of MemoryBudget/8 buffered in the client, and as
		// much again arriving while the pause is being applied, leave
		// half for the records buffered for the workers.
		fetch := min(s.MemoryBudget/8, 50<<20) // each of two concurrent fetches
		fetch = max(fetch, 16<<10)
		budgetOpts = []kgo.Opt{
			kgo.MaxConcurrentFetches(2),
			kgo.FetchMaxBytes(int32(fetch)),
			kgo.FetchMaxPartitionBytes(int32(min(fetch, 1<<20))),
		}
		s.queueBudget = max(s.MemoryBudget/2, 1)
		s.MaxBuffered = min(s.MaxBuffered, s.queueBudget)
	}
	if err := s.Secure(nil); err != nil {
		return err
	}
	topics := s.SourceTopics()
	if len(topics) == 0 {
		return errors.New("ingest: the kafka source names no topic")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.mu.Lock()
	s.mu.parts = map[tp]*kafkaPartition{}
	s.mu.leaving = map[tp]*kafkaPartition{}
	s.mu.member = ""
	s.mu.Unlock()
	s.clReady = make(chan struct{})
	ready := make(chan struct{}) // closed once cl, adm and topicIDs are set
	fail := func(err error) {
		s.mu.Lock()
		if s.mu.runErr == nil {
			s.mu.runErr = err
		}
		s.mu.Unlock()
		cancel()
	}
	// start begins the workers of partitions assigned to this member.
	start := func(ps []tp) {
		s.mu.Lock()
		member := s.mu.member
		var stale []tp
		for _, t := range ps {
			if s.mu.parts[t] != nil {
				stale = append(stale, t)
			}
		}
		s.mu.Unlock()
		if len(stale) > 0 {
			// Assigned again without having been revoked or lost (franz-go
			// re-adds a topic that metadata lost and found again): the
			// worker of the earlier assignment stops first.
			s.release(stale, "lost")
		}
		for _, t := range ps {
			kp := &kafkaPartition{s: s, topic: t.topic, p: t.p, member: member, done: make(chan struct{}), notify: make(chan struct{}, 1), revoking: make(chan struct{})}
			kp.mu.seekTo = -1
			// The client's pauses outlive an assignment: one paused
			// under an earlier assignment (buffer full, halted) would
			// never be fetched again. Marked paused, it is resumed by
			// the first applySeeksAndPauses.
			kp.mu.paused = true
			kp.ctx, kp.cancel = context.WithCancel(ctx)
			s.mu.Lock()
			s.mu.parts[t] = kp
			s.mu.Unlock()
			s.log.Info("partition assigned", "partition", s.key(t), "member", member)
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer close(kp.done)
				// The group may assign before NewClient returned.
				select {
				case <-ready:
				case <-kp.ctx.Done():
					return
				}
				if err := assign(kp.ctx, kp); err != nil {
					fail(err)
				}
			}()
		}
	}
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(s.Brokers...),
		kgo.ConsumerGroup(s.Group),
		kgo.ConsumeTopics(topics...),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		// Records of aborted transactions never existed: read committed.
		// Control records (transaction markers) are kept so that a batch
		// range can step over them: a partition ending in a marker still
		// reaches its end (the reader turns them into skips).
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		// An offset out of range is never silently reset: the partition's
		// reader reports a RecordsGoneError (crash table row 17). A
		// partition without a committed offset starts at its log start.
		kgo.ConsumeResetOffset(kgo.NoResetOffset()),
		kgo.Balancers(syncWatcher{GroupBalancer: kgo.CooperativeStickyBalancer(),
			onSync: func(assigned map[string][]int32) { s.synced(ctx, s.owned(assigned), start) }}),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { start(s.owned(m)) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { s.release(s.owned(m), "revoked") }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { s.release(s.owned(m), "lost") }),
	}, append(budgetOpts, s.Opts...)...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("ingest: kafka client: %w", err)
	}
	s.cl, s.adm = cl, kadm.NewClient(cl)
	close(s.clReady)
	defer func() {
		cancel()
		s.releaseAll()
		s.wg.Wait()
		cl.CloseAllowingRebalance()
	}()
	listed, err := s.adm.ListTopics(ctx, topics...)
	if err != nil {
		return fmt.Errorf("ingest: kafka topics %s: %w", strings.Join(topics, ","), err)
	}
	s.topicIDs = map[string][16]byte{}
	for _, t := range topics {
		if err := listed[t].Err; err != nil {
			return fmt.Errorf("ingest: kafka topic %s: %w", t, err)
		}
		s.topicIDs[t] = listed[t].ID
	}
	close(ready)

	for ctx.Err() == nil {
		if s.beforePoll != nil {
			s.beforePoll()
		}
		pctx, pcancel := context.WithCancel(ctx)
		s.mu.Lock()
		s.mu.wake = pcancel
		if s.mu.woken {
			pcancel() // the poll returns at once: apply what was asked
		}
		s.mu.Unlock()
		fetches := cl.PollRecords(pctx, 10000)
		pcancel()
		if fetches.IsClientClosed() {
			break
		}
		fetches.EachError(func(t string, p int32, err error) {
			if errors.Is(err, context.Canceled) {
				return
			}
			var lost *kgo.ErrDataLoss
			if errors.Is(err, kerr.OffsetOutOfRange) || errors.As(err, &lost) {
				s.mu.Lock()
				kp := s.mu.parts[tp{t, p}]
				s.mu.Unlock()
				if kp != nil {
					kp.mu.Lock()
					if lost != nil {
						kp.mu.diverged = err
					} else {
						kp.mu.outOfRange = err
					}
					kp.mu.Unlock()
					kp.signal()
				}
			}
			s.log.Warn("kafka fetch error", "topic", t, "partition", p, "err", err)
		})
		fetches.EachPartition(func(ftp kgo.FetchTopicPartition) {
			if len(ftp.Records) == 0 {
				return
			}
			s.mu.Lock()
			kp := s.mu.parts[tp{ftp.Topic, ftp.Partition}]
			s.mu.Unlock()
			if kp != nil {
				kp.mu.Lock()
				kp.mu.hwm = ftp.HighWatermark
				if ftp.LastStableOffset >= 0 {
					// Read committed: nothing past the LSO is readable yet.
					kp.mu.hwm = ftp.LastStableOffset
				}
				kp.mu.Unlock()
				kp.push(ftp.Records)
			}
		})
		s.applySeeksAndPauses()
		cl.AllowRebalance()
	}
	s.mu.Lock()
	err = s.mu.runErr
	s.mu.Unlock()
	return err
}

// takeMemoryBudget implements memoryBudgeter.
func (s *KafkaSource) takeMemoryBudget(offer int64) int64 {
	if s.MemoryBudget <= 0 {
		s.MemoryBudget = offer
	}
	return s.MemoryBudget
}

// owned lists the partitions of m that belong to the source's topics.
func (s *KafkaSource) owned(m map[string][]int32) []tp {
	var out []tp
	for _, t := range s.SourceTopics() {
		for _, p := range m[t] {
			out = append(out, tp{t, p})
		}
	}
	return out
}

// release stops the workers of revoked or lost partitions and waits for
// them. A revoked partition's worker first gets RevokeGrace to finish a
// sealed batch (Revoker); a lost one stops at once, leaving its seal to
// the next owner.
func (s *KafkaSource) release(ps []tp, why string) {
	var stopped []*kafkaPartition
	s.mu.Lock()
	for _, p := range ps {
		if kp := s.mu.parts[p]; kp != nil {
			delete(s.mu.parts, p)
			s.mu.leaving[p] = kp
			stopped = append(stopped, kp)
		}
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		for _, kp := range stopped {
			if s.mu.leaving[kp.tp()] == kp {
				delete(s.mu.leaving, kp.tp())
			}
		}
		s.mu.Unlock()
	}()
	if why == "revoked" {
		// A cooperative revoke: this member still owns the partitions
		// (the group gives them to another member only in the next
		// generation, after this callback returns), so a worker may
		// finish a sealed batch here (crash table row 13), for at most
		// RevokeGrace.
		for _, kp := range stopped {
			close(kp.revoking)
		}
		grace := time.NewTimer(s.revokeGrace())
		defer grace.Stop()
		for _, kp := range stopped {
			select {
			case <-kp.done:
			case <-grace.C:
				s.log.Warn("revoke grace over: the worker stops; its seal is left to the next owner", "partition", kp.Key())
			}
		}
	}
	for _, kp := range stopped {
		kp.cancel()
		<-kp.done
		kp.drop() // its buffer no longer counts against the budget
		s.log.Info("partition "+why, "partition", kp.Key())
	}
}

// syncWatcher is the group balancer (cooperative-sticky) with a look at
// every SyncGroup assignment this member receives, before franz-go acts
// on it.
type syncWatcher struct {
	kgo.GroupBalancer
	onSync func(assigned map[string][]int32)
}

// ParseSyncAssignment implements kgo.GroupBalancer.
func (w syncWatcher) ParseSyncAssignment(assignment []byte) (map[string][]int32, error) {
	m, err := w.GroupBalancer.ParseSyncAssignment(assignment)
	if err == nil {
		w.onSync(m)
	}
	return m, err
}

// synced runs on franz-go's group goroutine for every assignment this
// member receives (syncWatcher), before franz-go diffs it against the
// previous one. It records the member id the assignment belongs to, and
// handles the one loss franz-go does not report: a JoinGroup answered
// UNKNOWN_MEMBER_ID (the group dropped this member, say while it was
// paused mid-rebalance) makes franz-go join again as a new member without
// calling the lost callback, and a partition the group hands back is to
// franz-go one it kept. Meanwhile another member may have owned it and
// moved its state on, so the workers of the old membership stop here, as
// for a loss, and the partitions the new member holds start over from
// their stored state (a fenced worker would otherwise wait for ever for a
// callback that never comes). Partitions of the new assignment the old
// membership did not hold are started by the assigned callback, as
// usual; old ones missing from it are then revoked by franz-go, and
// release finds nothing left to stop.
func (s *KafkaSource) synced(ctx context.Context, assigned []tp, start func([]tp)) {
	select {
	case <-s.clReady:
	case <-ctx.Done():
		return
	}
	member, gen := s.cl.GroupMetadata()
	s.mu.Lock()
	prev := s.mu.member
	s.mu.member = member
	var lost []tp
	if prev != "" && prev != member {
		for t := range s.mu.parts {
			lost = append(lost, t)
		}
	}
	s.mu.Unlock()
	if len(lost) == 0 {
		return
	}
	s.log.Warn("this member was dropped from the group and joined it again as a new member: the workers of its old membership stop; the partitions it holds again start over from their stored state",
		"old_member", prev, "member", member, "generation", gen, "partitions", len(lost))
	s.release(lost, "lost")
	var again []tp
	for _, t := range assigned {
		if slices.Contains(lost, t) {
			again = append(again, t)
		}
	}
	start(again)
}

func (s *KafkaSource) revokeGrace() time.Duration {
	if s.RevokeGrace > 0 {
		return s.RevokeGrace
	}
	return 10 * time.Second
}

// Revoking implements Revoker.
func (kp *kafkaPartition) Revoking() <-chan struct{} { return kp.revoking }

func (s *KafkaSource) releaseAll() {
	s.mu.Lock()
	var ps []tp
	for p := range s.mu.parts {
		ps = append(ps, p)
	}
	s.mu.Unlock()
	s.release(ps, "released")
}

// part returns partition p if this member has it, or is releasing it
// and its worker still runs.
func (s *KafkaSource) part(p tp) *kafkaPartition {
	s.mu.Lock()
	defer s.mu.Unlock()
	if kp := s.mu.parts[p]; kp != nil {
		return kp
	}
	return s.mu.leaving[p]
}

func (s *KafkaSource) wake() {
	s.mu.Lock()
	s.mu.woken = true
	if s.mu.wake != nil {
		s.mu.wake()
	}
	s.mu.Unlock()
}

// applySeeksAndPauses runs on the polling goroutine. It applies every
// seek and pause asked before it clears woken; one asked later sets woken
// again (Open sets seekTo before it wakes), so the next poll returns at
// once and the next round applies it.
func (s *KafkaSource) applySeeksAndPauses() {
	s.mu.Lock()
	s.mu.woken = false
	parts := make([]*kafkaPartition, 0, len(s.mu.parts))
	for _, kp := range s.mu.parts {
		parts = append(parts, kp)
	}
	s.mu.Unlock()
	seeks := map[string]map[int32]kgo.EpochOffset{}
	pause, resume := map[string][]int32{}, map[string][]int32{}
	// The memory budget: every partition pauses while the records
	// buffered over all of them are over it, until read down to half.
	if s.queueBudget > 0 {
		switch total := s.queued.Load(); {
		case total > s.queueBudget:
			s.overBudget.Store(true)
		case total <= s.queueBudget/2:
			s.overBudget.Store(false)
		}
	}
	over := s.overBudget.Load()
	for _, kp := range parts {
		kp.mu.Lock()
		if kp.mu.seekTo >= 0 {
			if seeks[kp.topic] == nil {
				seeks[kp.topic] = map[int32]kgo.EpochOffset{}
			}
			seeks[kp.topic][kp.p] = kgo.EpochOffset{Epoch: kp.mu.seekEpoch, Offset: kp.mu.seekTo}
			s.queued.Add(-kp.mu.queued)
			kp.mu.queue, kp.mu.queued = nil, 0
			kp.mu.outOfRange = nil
			// A truncation found earlier (the client's own start from the
			// committed offset may find it before this seek) still holds
			// for any offset past where the log diverged; the client,
			// already moved back, would not check a seek it sees as
			// unchanged again.
			var lost *kgo.ErrDataLoss
			if d := kp.mu.diverged; d != nil && !(errors.As(d, &lost) && kp.mu.seekTo > lost.ResetTo) {
				kp.mu.diverged = nil
			}
			kp.mu.epoch = kp.mu.wantEpoch
			kp.mu.seekTo = -1
		}
		want := kp.mu.halted || over || kp.mu.queued > s.MaxBuffered ||
			(kp.mu.paused && kp.mu.queued > s.MaxBuffered/2)
		switch {
		case want && !kp.mu.paused:
			kp.mu.paused = true
			pause[kp.topic] = append(pause[kp.topic], kp.p)
		case !want && kp.mu.paused:
			kp.mu.paused = false
			resume[kp.topic] = append(resume[kp.topic], kp.p)
		}
		kp.mu.Unlock()
		kp.signal()
	}
	if len(seeks) > 0 {
		s.cl.SetOffsets(seeks)
	}
	if len(pause) > 0 {
		s.cl.PauseFetchPartitions(pause)
	}
	if len(resume) > 0 {
		s.cl.ResumeFetchPartitions(resume)
	}
}

// kafkaPartition buffers one partition's fetched records for its worker.
type kafkaPartition struct {
	s      *KafkaSource
	topic  string
	p      int32
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	notify chan struct{} // buffered(1): records arrived or a seek applied
	// revoking is closed when a cooperative revoke starts (Revoker).
	revoking chan struct{}
	// member is the group member id the partition was assigned to
	// (KafkaSource.mu.member then): its states are stored only while the
	// client is still that member (kafkaLedger.Store).
	member string
	mu     struct {
		sync.Mutex
		queue     []*kgo.Record
		queued    int64 // bytes in queue
		seekTo    int64 // pending seek, -1 if none
		seekEpoch int32 // its leader epoch (KIP-320), -1 if unknown
		epoch     int64 // seeks applied
		wantEpoch int64 // seeks requested
		paused    bool
		halted    bool  // the partition is paused by an error (halt): fetch nothing
		hwm       int64 // last stable offset (else high watermark) from the last fetch
		// outOfRange is the fetch's OFFSET_OUT_OF_RANGE since the last
		// seek: the client does not reset (NoResetOffset), so fetching of
		// this partition stops until the next seek.
		outOfRange error
		// diverged is the client's ErrDataLoss: the leader's log ends
		// below the offset a seek named under its epoch (KIP-320:
		// truncated by an unclean election), and the client moved its
		// cursor back. The reader fails closed; only a seek to where the
		// log diverged or before clears it.
		diverged error
		// epochs: the leader epoch of the records read, as marks in
		// ascending end order (a mark holds for the records up to the
		// next one); readTo is the end of the last record read.
		epochs []epochMark
		readTo int64
		// loaded is the committed offset and epoch last loaded.
		loaded epochMark
		// sealEnd is the end of the last seal loaded and the leader
		// epoch of the record before it (recorded in the seal): the
		// epoch of the DONE that resolves the seal.
		sealEnd epochMark
	}
}

// epochMark: the record ending at end (its offset + 1), and those after it
// up to the next mark, were written under leader epoch epoch.
type epochMark struct {
	end   int64
	epoch int32
}

// noteEpochLocked records the leader epoch of the record ending at end
// (REQUIRES: kp.mu held). Records read again after a seek back replace
// the marks past them.
func (kp *kafkaPartition) noteEpochLocked(end int64, epoch int32) {
	n := len(kp.mu.epochs)
	for n > 0 && kp.mu.epochs[n-1].end >= end {
		n--
	}
	kp.mu.epochs = kp.mu.epochs[:n]
	if n == 0 || kp.mu.epochs[n-1].epoch != epoch {
		kp.mu.epochs = append(kp.mu.epochs, epochMark{end: end, epoch: epoch})
	}
	kp.mu.readTo = end
}

// epochAt returns the leader epoch of the record ending at offset at: the
// epoch to commit and to seek with at that offset (KIP-320), or -1 when
// unknown (no record before it read, nor loaded: a committed offset, or
// the end of a seal).
func (kp *kafkaPartition) epochAt(at int64) int32 {
	kp.mu.Lock()
	defer kp.mu.Unlock()
	if at <= kp.mu.readTo {
		for i := len(kp.mu.epochs) - 1; i >= 0; i-- {
			if kp.mu.epochs[i].end <= at {
				return kp.mu.epochs[i].epoch
			}
		}
	}
	if kp.mu.loaded.end == at && at > 0 {
		return kp.mu.loaded.epoch
	}
	if kp.mu.sealEnd.end == at && at > 0 {
		return kp.mu.sealEnd.epoch
	}
	return -1
}

// End implements Ender: the last stable offset (the high watermark when
// the broker reports none) of the last fetch.
func (kp *kafkaPartition) End() int64 {
	kp.mu.Lock()
	defer kp.mu.Unlock()
	return kp.mu.hwm
}

func (kp *kafkaPartition) Key() string { return kp.s.key(kp.tp()) }

// Topic implements TopicPartition.
func (kp *kafkaPartition) Topic() string { return kp.topic }

func (kp *kafkaPartition) tp() tp { return tp{kp.topic, kp.p} }

func (kp *kafkaPartition) signal() {
	select {
	case kp.notify <- struct{}{}:
	default:
	}
}

// halt stops fetching the partition for good (its worker failed: the
// pipeline pauses it while it stays assigned) and drops what is buffered.
func (kp *kafkaPartition) halt() {
	kp.drop()
	kp.s.wake()
}

// drop empties the partition's buffer for good (halted or released).
func (kp *kafkaPartition) drop() {
	kp.mu.Lock()
	kp.mu.halted = true
	kp.s.queued.Add(-kp.mu.queued)
	kp.mu.queue, kp.mu.queued = nil, 0
	kp.mu.Unlock()
}

func (kp *kafkaPartition) push(recs []*kgo.Record) {
	kp.mu.Lock()
	if kp.mu.halted {
		kp.mu.Unlock()
		return
	}
	for _, r := range recs {
		kp.mu.queue = append(kp.mu.queue, r)
		kp.mu.queued += int64(len(r.Value))
		kp.s.queued.Add(int64(len(r.Value)))
	}
	kp.mu.Unlock()
	kp.signal()
}

// Open implements Partition: it asks the polling goroutine to seek to from
// and returns a reader that waits for the seek to apply.
//
// The seek carries the leader epoch of the record before from when it is
// known (read in this assignment, or committed with the state loaded):
// the client then checks with OffsetForLeaderEpoch that the leader's log
// still holds that record (KIP-320); a log truncated below from makes
// the reader fail closed with a RecordsGoneError.
func (kp *kafkaPartition) Open(_ context.Context, from int64) (RecordReader, error) {
	epoch := kp.epochAt(from)
	kp.mu.Lock()
	kp.mu.wantEpoch++
	kp.mu.seekTo, kp.mu.seekEpoch = from, epoch
	// The marks describe the log read up to from: those past it are read
	// again; after a jump forward, the records skipped were never read,
	// so no older mark may stand for them.
	if from > kp.mu.readTo {
		kp.mu.epochs = kp.mu.epochs[:0]
	}
	for n := len(kp.mu.epochs); n > 0 && kp.mu.epochs[n-1].end > from; n-- {
		kp.mu.epochs = kp.mu.epochs[:n-1]
	}
	if n := len(kp.mu.epochs); epoch >= 0 && (n == 0 || kp.mu.epochs[n-1].epoch != epoch) {
		kp.mu.epochs = append(kp.mu.epochs, epochMark{end: from, epoch: epoch})
	}
	kp.mu.readTo = from
	seek := kp.mu.wantEpoch
	kp.mu.Unlock()
	kp.s.wake()
	return &kafkaReader{kp: kp, epoch: seek, next: from}, nil
}

type kafkaReader struct {
	kp    *kafkaPartition
	epoch int64
	next  int64  // records below it were already returned (or skipped)
	key   []byte // the key of the record returned last
}

// Key returns the key of the record Next returned last (dead letters).
func (r *kafkaReader) Key() []byte { return r.key }

// Next implements RecordReader. It blocks until a record arrives or ctx ends.
func (r *kafkaReader) Next(ctx context.Context) ([]byte, int64, error) {
	kp := r.kp
	for {
		kp.mu.Lock()
		if kp.mu.epoch > r.epoch {
			kp.mu.Unlock()
			return nil, r.next, errors.New("ingest: kafka reader superseded by a newer seek")
		}
		if kp.mu.epoch == r.epoch {
			if d := kp.mu.diverged; d != nil {
				// Before the queue: the client resumed below the
				// truncation, so records fetched since are not the ones
				// the offsets named.
				kp.mu.Unlock()
				return nil, r.next, kp.gone(ctx, r.next, d)
			}
			for len(kp.mu.queue) > 0 {
				rec := kp.mu.queue[0]
				kp.mu.queue[0] = nil
				kp.mu.queue = kp.mu.queue[1:]
				kp.mu.queued -= int64(len(rec.Value))
				total := kp.s.queued.Add(-int64(len(rec.Value)))
				if rec.Offset < r.next {
					continue // fetched before a seek, or a re-delivery
				}
				r.next, r.key = rec.Offset+1, rec.Key
				kp.noteEpochLocked(r.next, rec.LeaderEpoch)
				wasPaused := kp.mu.paused && kp.mu.queued <= kp.s.MaxBuffered/2 &&
					(!kp.s.overBudget.Load() || total <= kp.s.queueBudget/2)
				kp.mu.Unlock()
				if wasPaused {
					kp.s.wake()
				}
				if rec.Attrs.IsControl() {
					// A transaction marker: no record, but the range
					// moves past it.
					return nil, r.next, nil
				}
				return rec.Value, r.next, nil
			}
			if oor := kp.mu.outOfRange; oor != nil {
				kp.mu.Unlock()
				return nil, r.next, kp.gone(ctx, r.next, oor)
			}
		}
		kp.mu.Unlock()
		select {
		case <-kp.notify:
		case <-ctx.Done():
			return nil, r.next, ctx.Err()
		}
	}
}

func (r *kafkaReader) Close() error { return nil }

// gone lists the partition's log start and end offsets to name the range
// that is missing.
func (kp *kafkaPartition) gone(ctx context.Context, want int64, err error) error {
	e := &RecordsGoneError{Partition: kp.Key(), Want: want, Start: -1, End: -1, Err: err}
	var lost *kgo.ErrDataLoss
	if errors.As(err, &lost) {
		e.Truncated, e.TruncatedTo = true, lost.ResetTo
	}
	if starts, lerr := kp.s.adm.ListStartOffsets(ctx, kp.topic); lerr == nil {
		if o, ok := starts.Lookup(kp.topic, kp.p); ok && o.Err == nil {
			e.Start = o.Offset
		}
	}
	if ends, lerr := kp.s.adm.ListEndOffsets(ctx, kp.topic); lerr == nil {
		if o, ok := ends.Lookup(kp.topic, kp.p); ok && o.Err == nil {
			e.End = o.Offset
		}
	}
	return e
}

// StartOffset implements Starter: earliest is the log start, latest the
// last stable offset (read committed), a time the first record at or after
// it; an offset must lie within the log.
func (kp *kafkaPartition) StartOffset(ctx context.Context, s StartPosition) (int64, error) {
	adm, topic := kp.s.adm, kp.topic
	lookup := func(l kadm.ListedOffsets, err error) (int64, error) {
		if err != nil {
			return 0, fmt.Errorf("ingest: ListOffsets %s: %w", kp.Key(), err)
		}
		o, ok := l.Lookup(topic, kp.p)
		if !ok || o.Err != nil {
			return 0, fmt.Errorf("ingest: ListOffsets %s: %v", kp.Key(), o.Err)
		}
		return o.Offset, nil
	}
	switch s.kind {
	case startEarliest:
		return lookup(adm.ListStartOffsets(ctx, topic))
	case startLatest:
		return lookup(adm.ListCommittedOffsets(ctx, topic))
	case startTime:
		off, err := lookup(adm.ListOffsetsAfterMilli(ctx, s.at.UnixMilli(), topic))
		if err != nil || off >= 0 {
			return off, err
		}
		return lookup(adm.ListCommittedOffsets(ctx, topic)) // no record that late: the end
	case startOffset:
		lo, err := lookup(adm.ListStartOffsets(ctx, topic))
		if err != nil {
			return 0, err
		}
		hi, err := lookup(adm.ListEndOffsets(ctx, topic))
		if err != nil {
			return 0, err
		}
		if s.offset < lo || s.offset > hi {
			return 0, fmt.Errorf("ingest: --start %d: outside partition %s's log [%d, %d]", s.offset, kp.Key(), lo, hi)
		}
		return s.offset, nil
	}
	return 0, fmt.Errorf("ingest: start position %s is not supported", s)
}
