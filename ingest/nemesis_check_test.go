package ingest_test

// The nemesis test's checker side: waiting for lag zero, describing the
// group on a stall, reading the dead-letter table, keeping and tailing member logs
// (the test, its schedule and the cluster are in nemesis_test.go).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/api/iterator"

	"github.com/bqstore/bqstore/internal/testkit"
)

func head(ids []int64) []int64 {
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	if len(ids) > 20 {
		return ids[:20]
	}
	return ids
}

// waitLagZero waits until the group's committed offsets reach the end of
// every partition. The bound does not count the time the stall watch saw
// the test process not run (a machine that runs nothing gives the members
// no time either), and the lag it reports is read after the deadline, not
// before a stall.
func (n *nemesis) waitLagZero(ctx context.Context, bound time.Duration, watch *stallWatch) error {
	start, stalled0 := time.Now(), watch.stalled()
	var lag int64
	var err error
	for {
		lag, err = n.k.lag(ctx, n.group)
		if err == nil && lag == 0 {
			n.logf("lag zero")
			return nil
		}
		if time.Since(start) >= bound+watch.stalled()-stalled0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("lag %d after %v (the test process stalled for %v of it) (%v); the group: %s",
		lag, time.Since(start).Round(time.Millisecond), (watch.stalled() - stalled0).Round(time.Millisecond), err, n.describeGroup(ctx))
}

// describeGroup names the group's state, members and their partitions,
// and the committed offsets: who holds a stalled partition.
func (n *nemesis) describeGroup(ctx context.Context) string {
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.k.c.ListenAddrs()...))
	if err != nil {
		return err.Error()
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var b strings.Builder
	groups, err := adm.DescribeGroups(ctx, n.group)
	if err != nil {
		return err.Error()
	}
	for _, g := range groups {
		fmt.Fprintf(&b, "state %s, protocol %s, %d members:", g.State, g.Protocol, len(g.Members))
		for _, m := range g.Members {
			var parts []int32
			if a, ok := m.Assigned.AsConsumer(); ok {
				for _, t := range a.Topics {
					parts = append(parts, t.Partitions...)
				}
			}
			fmt.Fprintf(&b, " [%s %s partitions %v, its process %s]", m.MemberID, m.ClientHost, parts, n.processState(m.ClientID))
		}
	}
	if offs, err := adm.FetchOffsets(ctx, n.group); err == nil {
		offs.Each(func(o kadm.OffsetResponse) {
			fmt.Fprintf(&b, "; %s/%d at %d %q", o.Topic, o.Partition, o.At, o.Metadata)
		})
	}
	return b.String()
}

// processState says whether the member process of a client id runs.
func (n *nemesis) processState(clientID string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	m := n.mu.byClient[clientID]
	switch {
	case m == nil:
		return "unknown"
	case m.exitedAt.IsZero():
		return fmt.Sprintf("%s (pid %d) runs", clientID, m.cmd.Process.Pid)
	}
	return fmt.Sprintf("%s (pid %d) exited %v ago", clientID, m.cmd.Process.Pid, time.Since(m.exitedAt).Round(time.Millisecond))
}

// committedEpochs lists the leader epoch of each partition's committed
// state (KIP-320; a leader election raises it).
func (n *nemesis) committedEpochs(ctx context.Context) string {
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.k.c.ListenAddrs()...))
	if err != nil {
		return err.Error()
	}
	defer cl.Close()
	offs, err := kadm.NewClient(cl).FetchOffsets(ctx, n.group)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for p := range n.k.parts {
		if o, ok := offs.Lookup(n.k.topic, p); ok {
			fmt.Fprintf(&b, " %d:%d", p, o.LeaderEpoch)
		}
	}
	return "[" + strings.TrimSpace(b.String()) + "]"
}

// readNemesisDeadLetters counts the dead-letter table's rows by the
// poison record's id (poison-N) and lists the rows that are not a poison
// record's.
func readNemesisDeadLetters(t *testing.T, e *env, table string) (map[string]int, []string) {
	t.Helper()
	name := table[strings.LastIndexByte(table, '/')+1:]
	it := e.bq.Dataset("d").Table(name).Read(context.Background())
	count := map[string]int{}
	var other []string
	for {
		var row []bigquery.Value
		err := testkit.NextRow(it, &row)
		if err == iterator.Done {
			break
		}
		if err != nil {
			t.Fatalf("read %s: %v", table, err)
		}
		raw, _ := row[4].([]byte)
		var rec struct {
			ID any `json:"id"`
		}
		id, isPoison := "", false
		if json.Unmarshal(raw, &rec) == nil {
			id, isPoison = rec.ID.(string)
		}
		if !isPoison || !strings.HasPrefix(id, "poison-") {
			other = append(other, fmt.Sprintf("%v/%v@%v %q (%v)", row[0], row[1], row[2], raw, row[5]))
			continue
		}
		count[id]++
	}
	return count, other
}

// keepLogs copies the members' logs out of the test's temporary directory
// (removed when the test ends) and returns where they are.
func keepLogs(dir string, seed uint64) string {
	out, err := os.MkdirTemp("", fmt.Sprintf("bqstore-nemesis-seed%d-", seed))
	if err != nil {
		return "(not kept: " + err.Error() + ")"
	}
	files, _ := filepath.Glob(filepath.Join(dir, "member-*.log"))
	files = append(files, filepath.Join(dir, "test-goroutines.txt")) // dumpStacks's, if any
	for _, f := range files {
		if data, err := os.ReadFile(f); err == nil {
			_ = os.WriteFile(filepath.Join(out, filepath.Base(f)), data, 0o644)
		}
	}
	return out
}

// tailLogs returns the last lines of each member's log.
func tailLogs(dir string) string {
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(dir, "member-*.log"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > 60 {
			lines = lines[len(lines)-60:]
		}
		fmt.Fprintf(&b, "\n--- %s (last %d lines)\n%s", filepath.Base(f), len(lines), strings.Join(lines, "\n"))
	}
	return b.String()
}
