package ingest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafkaLedger stores partition states as the group's committed offsets.
type kafkaLedger struct{ s *KafkaSource }

// Identity names the state this ledger holds: the group's offsets of the
// topics (sorted: the order of the routes does not matter).
func (l kafkaLedger) Identity() string {
	topics := slices.Sorted(slices.Values(l.s.SourceTopics()))
	return "kafka-group:" + l.s.Group + "/topic:" + strings.Join(topics, ",")
}

func (l kafkaLedger) partition(key string) (tp, error) {
	topics := l.s.SourceTopics()
	for _, t := range topics {
		prefix := "kafka:" + t + "/"
		if !strings.HasPrefix(key, prefix) {
			continue
		}
		p, err := strconv.ParseInt(strings.TrimPrefix(key, prefix), 10, 32)
		if err == nil {
			return tp{t, int32(p)}, nil
		}
	}
	return tp{}, fmt.Errorf("ingest: %q is not a partition of %s", key, strings.Join(topics, ","))
}

// Load implements Ledger with an OffsetFetch (RequireStable). A partition
// that never committed is Missing.
func (l kafkaLedger) Load(ctx context.Context, key string) (State, error) {
	p, err := l.partition(key)
	if err != nil {
		return State{}, err
	}
	resps, err := l.s.adm.FetchOffsets(kadm.RequireStable(ctx), l.s.Group)
	if err != nil {
		return State{}, fmt.Errorf("ingest: OffsetFetch %s: %w", key, err)
	}
	o, ok := resps.Lookup(p.topic, p.p)
	if ok && o.Err != nil {
		return State{}, fmt.Errorf("ingest: OffsetFetch %s: %w", key, o.Err)
	}
	if !ok || o.At < 0 {
		// No state: the worker starts it at Config.Start, never at a
		// guess (a group whose offsets expired reads as never started).
		st := State{DeadLetterEnd: -1, Missing: true}
		resps.Each(func(r kadm.OffsetResponse) {
			if r.Topic == p.topic && r.Partition != p.p && r.Err == nil && r.At >= 0 {
				st.PeersWithState++
			}
		})
		return st, nil
	}
	kp := l.s.part(p)
	if kp != nil {
		kp.mu.Lock()
		kp.mu.loaded = epochMark{end: o.At, epoch: o.LeaderEpoch}
		kp.mu.Unlock()
	}
	st, toEpoch, err := decodeState([]byte(o.Metadata))
	if err == nil && kp != nil && st.Sealed && toEpoch >= 0 {
		kp.mu.Lock()
		kp.mu.sealEnd = epochMark{end: st.To, epoch: toEpoch}
		kp.mu.Unlock()
	}
	if err != nil {
		if !strings.HasPrefix(o.Metadata, "{") {
			// Committed by another tool (no seal): IDLE at its offset.
			return State{Offset: o.At, DeadLetterEnd: -1}, nil
		}
		return State{}, fmt.Errorf("ingest: %s: %w", key, err)
	}
	if st.Offset != o.At {
		if st.Sealed {
			return State{}, fmt.Errorf("ingest: %s: committed offset %d differs from the seal's start %d (offsets reset by hand?)", key, o.At, st.Offset)
		}
		st.Offset = o.At
	}
	return st, nil
}

// Store implements Ledger with a member OffsetCommit: fenced by the
// group generation, it fails with ErrFenced once the partition moved.
func (l kafkaLedger) Store(ctx context.Context, key string, st State) error {
	p, err := l.partition(key)
	if err != nil {
		return err
	}
	member, gen := l.s.cl.GroupMetadata()
	if member == "" || gen < 0 {
		return fmt.Errorf("%w: not a group member", ErrFenced)
	}
	kp := l.s.part(p)
	if kp != nil && kp.member != "" && kp.member != member {
		// The group dropped the member the partition was assigned to
		// and this client joined again as another: the generation it
		// now holds is not one under which it owned the partition
		// (synced stops this worker).
		return fmt.Errorf("%w: OffsetCommit %s: the partition was assigned to member %s; this client is now member %s", ErrFenced, key, kp.member, member)
	}
	st.Generation = gen
	// A seal records the leader epoch of its range's last record too: a
	// recovery stores DONE at its end without reading the range (Load).
	toEpoch := int32(-1)
	if st.Sealed && kp != nil {
		toEpoch = kp.epochAt(st.To)
	}
	meta, err := st.encode(toEpoch)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrStoreFinal, err)
	}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = l.s.Group
	req.Generation = gen
	req.MemberID = member
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = p.topic
	t.TopicID = l.s.topicIDs[p.topic]
	pp := kmsg.NewOffsetCommitRequestTopicPartition()
	pp.Partition = p.p
	pp.Offset = st.Offset
	// KIP-320: the epoch of the last record the state covers, so that a
	// resume from it can tell a truncated log (see Open).
	pp.LeaderEpoch = -1
	if kp != nil {
		pp.LeaderEpoch = kp.epochAt(st.Offset)
	}
	m := string(meta)
	pp.Metadata = &m
	t.Partitions = append(t.Partitions, pp)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, l.s.cl)
	if err != nil {
		return fmt.Errorf("ingest: OffsetCommit %s: %w", key, err)
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				switch {
				case errors.Is(err, kerr.IllegalGeneration), errors.Is(err, kerr.UnknownMemberID),
					errors.Is(err, kerr.StaleMemberEpoch), errors.Is(err, kerr.FencedInstanceID):
					// Fencing replies: the worker re-reads and retries
					// while the group leaves it the partition.
					return fmt.Errorf("%w: OffsetCommit %s: %w", ErrFenced, key, err)
				case errors.Is(err, kerr.OffsetMetadataTooLarge), errors.Is(err, kerr.InvalidCommitOffsetSize),
					errors.Is(err, kerr.GroupAuthorizationFailed), errors.Is(err, kerr.TopicAuthorizationFailed),
					errors.Is(err, kerr.UnknownTopicOrPartition), errors.Is(err, kerr.UnknownTopicID),
					errors.Is(err, kerr.InvalidGroupID):
					return fmt.Errorf("%w: OffsetCommit %s: %w", ErrStoreFinal, key, err)
				}
				// REBALANCE_IN_PROGRESS, NOT_COORDINATOR,
				// COORDINATOR_LOAD_IN_PROGRESS, REQUEST_TIMED_OUT (maybe
				// applied), ...: ambiguous or transient.
				return fmt.Errorf("ingest: OffsetCommit %s: %w", key, err)
			}
		}
	}
	return nil
}
