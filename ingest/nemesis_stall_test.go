package ingest_test

// Instruments for a "no progress" failure of the nemesis: was the stall
// ours, kfake's, or the machine's?
//
// Seed 182 of the lead's soak (main at 93fd5d0) failed with "no progress:
// lag 175 after 1m30s": from about 22:25:52 to 22:27:16.7 no member
// logged anything, then everything recovered within a second. Its member
// logs say the member processes themselves did not run in that window,
// not only kfake: member 1's read of partition 1 ran under a 100 ms
// batch-age deadline inside a 3 s lease (context.WithTimeout), yet it
// returned "lease expired reading the source" only at 22:27:16.84; its
// FinalizeWriteStream under the same kind of lease failed with
// DeadlineExceeded in the same millisecond; and every member's kgo read
// deadlines (fetches, heartbeats, member 2's parked JoinGroup: seconds)
// fired within the same 100 ms. A kfake goroutine blocked in the test
// process cannot delay timers in other processes; a machine that ran
// none of them (a host pause of the VM, or a CPU or memory stall on this
// shared 2-core machine) does. Files on the machine agree: none under
// /tmp, /work or /root has a modification time from 22:25:50.9 to
// 22:27:17.1, while builds and soaks wrote every second before and after
// (and gaps like it at 22:20:56-22:22:14 and 22:30:03-22:32:06).
// Replaying seed 182 fifteen times, and seeds 183-188, ran clean.

// So that the next such failure says which it was, without a reading of
// logs: the test process runs a stall watch (the largest gap between its
// 100 ms ticks, by the monotonic and by the wall clock), the failure
// message names the gap and the machine's pressure-stall counters over
// the wait (Linux /proc/pressure), and a "no progress" failure dumps every
// goroutine of the test process (kfake's included) into the kept log dir
// and sends SIGQUIT to the members, whose Go runtime writes their stacks
// into their logs.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// stallGap is the smallest tick gap the watch names in the history.
const stallGap = 2 * time.Second

// stallWatch ticks every 100 ms in the test process and records the
// gaps between ticks; Close stops it and waits for its goroutine.
type stallWatch struct {
	n    *nemesis
	stop chan struct{}
	done chan struct{}

	mu struct {
		sync.Mutex
		max     time.Duration // largest gap by the monotonic clock
		maxWall time.Duration // the wall clock's gap at the same tick
		at      time.Time     // when the largest gap ended
		stalled time.Duration // the sum of the gaps of stallGap or more
	}
}

func startStallWatch(n *nemesis) *stallWatch {
	w := &stallWatch{n: n, stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

func (w *stallWatch) run() {
	defer close(w.done)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
		now := time.Now()
		gap, wall := now.Sub(last), now.Round(0).Sub(last.Round(0))
		w.mu.Lock()
		if gap > w.mu.max {
			w.mu.max, w.mu.maxWall, w.mu.at = gap, wall, now
		}
		if gap >= stallGap {
			w.mu.stalled += gap
		}
		w.mu.Unlock()
		if gap >= stallGap || wall >= stallGap {
			w.n.logf("stall watch: the test process did not run for %v (wall clock %v), from %s",
				gap.Round(time.Millisecond), wall.Round(time.Millisecond), last.Format("15:04:05.000"))
		}
		last = now
	}
}

// String names the largest gap.
func (w *stallWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("the test process's largest scheduling gap: %v (wall clock %v), ended %s",
		w.mu.max.Round(time.Millisecond), w.mu.maxWall.Round(time.Millisecond), w.mu.at.Format("15:04:05.000"))
}

// stalled is the time the test process did not run, summed over the
// gaps of stallGap or more.
func (w *stallWatch) stalled() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mu.stalled
}

// Close stops the watch and waits for it.
func (w *stallWatch) Close() {
	close(w.stop)
	<-w.done
}

// pressure is a reading of the machine's pressure-stall totals and of
// its CPUs' steal time (microseconds; Linux /proc/pressure and
// /proc/stat, absent elsewhere).
type pressure struct {
	at     time.Time
	values map[string]int64 // "memory full", "cpu some", ...
}

func readPressure() pressure {
	p := pressure{at: time.Now(), values: map[string]int64{}}
	for _, res := range []string{"cpu", "memory", "io"} {
		data, err := os.ReadFile("/proc/pressure/" + res)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			f := strings.Fields(line)
			if len(f) == 0 {
				continue
			}
			for _, kv := range f[1:] {
				var v int64
				if _, err := fmt.Sscanf(kv, "total=%d", &v); err == nil {
					p.values[res+" "+f[0]] = v
				}
			}
		}
	}
	// /proc/stat's steal: time the hypervisor ran something else (USER_HZ
	// ticks, 100 a second on Linux), summed over the CPUs.
	if data, err := os.ReadFile("/proc/stat"); err == nil {
		f := strings.Fields(strings.SplitN(string(data), "\n", 2)[0])
		var v int64
		if len(f) > 8 && f[0] == "cpu" {
			if _, err := fmt.Sscan(f[8], &v); err == nil {
				p.values["cpu steal"] = v * 10_000
			}
		}
	}
	return p
}

// since names the stall time each counter gained from p0 to p.
func (p pressure) since(p0 pressure) string {
	if len(p.values) == 0 {
		return "no /proc/pressure here"
	}
	var parts []string
	for _, k := range []string{"cpu some", "memory some", "memory full", "io some", "io full", "cpu steal"} {
		v, ok := p.values[k]
		v0, ok0 := p0.values[k]
		if !ok || !ok0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %v", k, (time.Duration(v-v0)*time.Microsecond).Round(time.Millisecond)))
	}
	return fmt.Sprintf("machine pressure stalls over the last %v: %s", p.at.Sub(p0.at).Round(time.Millisecond), strings.Join(parts, ", "))
}

// dumpStacks writes every goroutine of the test process to
// dir/test-goroutines.txt, sends SIGQUIT to the running members (their
// stacks go to their logs) and waits for them to exit. It returns what
// the failure message says: where kfake's goroutines are.
func (n *nemesis) dumpStacks() string {
	var b strings.Builder
	f, err := os.Create(filepath.Join(n.dir, "test-goroutines.txt"))
	if err == nil {
		err = pprof.Lookup("goroutine").WriteTo(f, 2)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(&b, "goroutine dump failed: %v; ", err)
	}
	var all strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&all, 2)
	b.WriteString(kfakeStacks(all.String()))
	n.logf("SIGQUIT to the members: their stacks go to their logs (each then exits with status 2)")
	for slot := range nemesisSlots {
		n.signalMember(slot, syscall.SIGQUIT)
	}
	return b.String()
}

// kfakeStacks picks the goroutines with a kfake frame out of a debug=2
// dump and names each by its header (its wait reason and how long) and
// its first kfake frame (file:line); the connections' reader and writer
// goroutines are only counted.
func kfakeStacks(dump string) string {
	var out []string
	conns := 0
	for _, g := range strings.Split(dump, "\n\n") {
		lines := strings.Split(strings.TrimSpace(g), "\n")
		if len(lines) < 2 || !strings.Contains(g, "/kfake.") {
			continue
		}
		frame := ""
		for i := 1; i < len(lines); i++ {
			if strings.Contains(lines[i], "/kfake.") {
				frame = strings.TrimSpace(lines[i])
				frame = frame[strings.LastIndex(frame, "/")+1:]
				if i+1 < len(lines) {
					loc := strings.Fields(lines[i+1])[0]
					frame += " at " + loc[strings.LastIndex(loc, "/")+1:]
				}
				break
			}
		}
		if strings.Contains(frame, "(*clientConn).") || strings.Contains(frame, "(*broker).listen") {
			conns++
			continue
		}
		out = append(out, strings.TrimSuffix(lines[0], ":")+" "+frame)
	}
	return fmt.Sprintf("kfake goroutines (and %d of its connections'): %s", conns, strings.Join(out, "; "))
}

// TestKfakeStacks: the failure message finds kfake's goroutines in a
// goroutine dump (the cluster's run loop among them).
func TestKfakeStacks(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// One answered request: the cluster's goroutines run by then.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	if err := pprof.Lookup("goroutine").WriteTo(&all, 2); err != nil {
		t.Fatal(err)
	}
	got := kfakeStacks(all.String())
	if !strings.Contains(got, "kfake.(*Cluster).run(") {
		t.Fatalf("kfakeStacks did not name the cluster's run loop: %s", got)
	}
	t.Log(got)
}
