package ingest_test

// The nemesis test's schedule: its events and how a seed draws them (the
// test itself is in nemesis_test.go).

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// nemesisEvent is one step of the schedule.
type nemesisEvent struct {
	At   time.Duration
	Kind string // kill9, pause, leave, join, kfake, drop, server-faults, server-kill9, schema, leader
	// Arg picks the member (kill9, leave, join) when the event applies:
	// the Arg-th (mod) of the slots it can apply to, so every event acts.
	Arg int
	// kfake: the request key and the error; Count requests.
	Key   kmsg.Key
	Err   *kerr.Error
	Count int
	Spec  string        // server-faults: the fault spec
	Down  time.Duration // kill9 and server-kill9: time until the restart
}

func (e nemesisEvent) String() string {
	switch e.Kind {
	case "kill9":
		return fmt.Sprintf("%7v kill -9 a member (#%d), restart after %v", e.At, e.Arg, e.Down)
	case "leave", "join":
		return fmt.Sprintf("%7v a member (#%d) %ss", e.At, e.Arg, e.Kind)
	case "pause":
		return fmt.Sprintf("%7v SIGSTOP a member (#%d) for %v (a GC pause)", e.At, e.Arg, e.Down)
	case "kfake":
		return fmt.Sprintf("%7v kfake: %s answers %s (%d requests)", e.At, e.Key.Name(), e.Err.Message, e.Count)
	case "drop":
		return fmt.Sprintf("%7v kfake: drop the connection of the next %s", e.At, e.Key.Name())
	case "server-faults":
		return fmt.Sprintf("%7v server faults %q", e.At, e.Spec)
	case "server-kill9":
		return fmt.Sprintf("%7v kill -9 the server, restart after %v", e.At, e.Down)
	case "schema":
		return fmt.Sprintf("%7v add a column to the table; records then fill it", e.At)
	case "leader":
		return fmt.Sprintf("%7v a leader election for partition %d (its leader epoch goes up)", e.At, e.Arg)
	}
	return fmt.Sprintf("%7v %s", e.At, e.Kind)
}

const nemesisSlots = 3

// nemesisSchedule draws the schedule of one run from the seed.
func nemesisSchedule(rng *rand.Rand, dur time.Duration) []nemesisEvent {
	kfakeFaults := map[kmsg.Key][]*kerr.Error{
		kmsg.OffsetCommit: {kerr.IllegalGeneration, kerr.RebalanceInProgress, kerr.NotCoordinator, kerr.CoordinatorLoadInProgress, kerr.RequestTimedOut},
		kmsg.OffsetFetch:  {kerr.NotCoordinator, kerr.CoordinatorLoadInProgress},
		kmsg.Heartbeat:    {kerr.RebalanceInProgress, kerr.NotCoordinator, kerr.IllegalGeneration},
		kmsg.JoinGroup:    {kerr.NotCoordinator, kerr.CoordinatorLoadInProgress},
		kmsg.SyncGroup:    {kerr.NotCoordinator, kerr.RebalanceInProgress},
		kmsg.Fetch:        {kerr.RequestTimedOut, kerr.NotLeaderForPartition},
	}
	keys := []kmsg.Key{kmsg.OffsetCommit, kmsg.OffsetFetch, kmsg.Heartbeat, kmsg.JoinGroup, kmsg.SyncGroup, kmsg.Fetch}
	serverSpecs := []string{
		"append.reset:when=before,times=2",
		"append.reset:when=after,times=2",
		"append.stall:duration=1500ms,times=1",
		"commit.drop_reply:times=2",
		"finalize.drop_reply:times=2",
		"commit.drop_reply:p=0.3;finalize.drop_reply:p=0.3;append.reset:when=after,p=0.05",
	}
	var ev []nemesisEvent
	n := int(dur/(400*time.Millisecond)) + 1
	for range n {
		e := nemesisEvent{At: time.Duration(rng.Int64N(int64(dur)))}
		switch r := rng.IntN(100); {
		case r < 18:
			e.Kind, e.Arg, e.Down = "kill9", rng.IntN(nemesisSlots), time.Duration(100+rng.IntN(1500))*time.Millisecond
		case r < 24:
			// Longer than the session (2 s) half of the time: the member
			// comes back as a zombie of an older generation.
			e.Kind, e.Arg, e.Down = "pause", rng.IntN(nemesisSlots), time.Duration(500+rng.IntN(3500))*time.Millisecond
		case r < 30:
			e.Kind, e.Arg = "leave", rng.IntN(nemesisSlots)
		case r < 40:
			e.Kind, e.Arg = "join", rng.IntN(nemesisSlots)
		case r < 62:
			e.Kind = "kfake"
			e.Key = keys[rng.IntN(len(keys))]
			errs := kfakeFaults[e.Key]
			e.Err, e.Count = errs[rng.IntN(len(errs))], 1+rng.IntN(3)
		case r < 70:
			e.Kind, e.Key = "drop", keys[rng.IntN(len(keys))]
		case r < 88:
			e.Kind, e.Spec = "server-faults", serverSpecs[rng.IntN(len(serverSpecs))]
		case r < 95:
			e.Kind, e.Down = "server-kill9", time.Duration(100+rng.IntN(1000))*time.Millisecond
		default:
			e.Kind = "schema"
		}
		ev = append(ev, e)
	}
	sort.SliceStable(ev, func(i, j int) bool { return ev[i].At < ev[j].At })
	return ev
}

// withLeaderElections adds one or two leader elections (a partition's
// leader epoch goes up, as after a broker failover; kfake has one broker,
// which stays the leader) to a schedule: the members commit and seek with
// leader epochs (KIP-320), and a new epoch must not look like a truncation.
func withLeaderElections(ev []nemesisEvent, rng *rand.Rand, dur time.Duration) []nemesisEvent {
	for range 1 + rng.IntN(2) {
		ev = append(ev, nemesisEvent{At: time.Duration(rng.Int64N(int64(dur))), Kind: "leader", Arg: rng.IntN(3)})
	}
	sort.SliceStable(ev, func(i, j int) bool { return ev[i].At < ev[j].At })
	return ev
}
