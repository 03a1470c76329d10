package ingest_test

// TestNemesis is a randomized, seeded test in the spirit of Jepsen for the
// Kafka pipeline (issue 13): a kfake cluster in this process; a producer
// writing plain records, committed and aborted transactions and poison
// records; two or three ingest members, each a child process (the test
// binary re-executed) in one consumer group, so they can be kill -9ed; a
// `bqstore serve` child, so it can be kill -9ed too. A nemesis schedule
// drawn from the seed (nemesis_schedule_test.go) applies, at its moments:
// kill -9 and restart of a member, a member paused (SIGSTOP, as a GC pause
// past its session: it comes back a zombie), members leaving (SIGTERM)
// and joining (rebalances), kfake faults on the group and fetch requests
// (ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS, NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS, REQUEST_TIMED_OUT after the request was
// applied, dropped connections), server faults through PUT /admin/faults
// (append.reset before and after durability, append.stall,
// commit.drop_reply, finalize.drop_reply), server kill -9 and restart,
// a schema change (a column added, then filled by new records) and leader
// elections (leader epochs go up).
//
// Then the nemesis stops (pending restarts happen, faults are removed, the
// membership stays as the nemesis left it) and the checker requires,
// within a bounded time: lag zero on every partition (no stall); every
// valid record exactly once in the table; no record of an aborted
// transaction; no other rows; every poison record exactly once in the
// dead-letter table (written in the same seal as the data). A failure
// prints the seed, the schedule and the command that replays it.
//
// One kfake bug (a killed member can stay in the group for ever) is
// worked around as described in nemesis_kfake_test.go.
//
// The seed fixes the data and the schedule (what happens and when); it
// cannot fix the interleaving of real processes, so a replay reproduces
// the conditions, not every step.
//
// The normal `go test` runs a few short seeds. The soak:
//
//	INGEST_NEMESIS_SOAK=1h go test ./ingest/ -run 'TestNemesis$' -v -timeout 0
//
// runs seeds one after another for that long (INGEST_NEMESIS_SEED=N
// starts at N; INGEST_NEMESIS_DURATION sets each seed's nemesis phase,
// default 8s) and stops at the first failure. A failure keeps the member
// logs (the pipeline's and the Kafka client's); INGEST_NEMESIS_KEEP_LOGS=1
// keeps them for passing seeds too.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bqstore/bqstore/ingest"
	"github.com/bqstore/bqstore/ingest/rows"
	"github.com/bqstore/bqstore/internal/testkit"
)

// nemesisMemberEnv makes the test binary run one ingest member of the
// nemesis test (see runNemesisMemberIfRequested).
const nemesisMemberEnv = "BQSTORE_NEMESIS_MEMBER"

// nemesisTxns turns transactional producing (committed and aborted
// transactions) on; INGEST_NEMESIS_TXNS=0 turns it off.
var nemesisTxns = os.Getenv("INGEST_NEMESIS_TXNS") != "0"

type memberSpec struct {
	// ClientID names this process in the group (kfake builds the member
	// id from it): the test tells a dead process's member from a live one.
	ClientID string
	GRPC     string
	Table    string
	Brokers  []string
	Topic    string
	Group    string
	// DeadLetterTable: poison records go to this table, in the seal
	// with the data, so the checker can require each exactly once.
	DeadLetterTable string
}

// runNemesisMemberIfRequested runs one Kafka ingest member until SIGTERM
// and exits: 0 after a clean stop, 1 when the pipeline failed.
func runNemesisMemberIfRequested() {
	v, ok := os.LookupEnv(nemesisMemberEnv)
	if !ok {
		return
	}
	var s memberSpec
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		fmt.Fprintln(os.Stderr, "nemesis member:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	// Debug: every batch is logged, so a failure's member logs show
	// where a partition stopped.
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	err := func() error {
		conn, err := ingest.Dial(ctx, s.GRPC, true, 2)
		if err != nil {
			return err
		}
		defer conn.Close()
		// RevokeGrace well under the rebalance timeout, as KafkaSource
		// asks: a member finishing a sealed batch in its revoke must
		// rejoin before the group gives up on it.
		src := &ingest.KafkaSource{Brokers: s.Brokers, Topic: s.Topic, Group: s.Group, Logger: log,
			RevokeGrace: nemesisRebalance / 3,
			// The client's own log (joins, syncs, heartbeats, revokes) goes
			// to the member's log too: a stall's story is in the group.
			Opts: []kgo.Opt{kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelInfo, func() string {
				return time.Now().UTC().Format("time=2006-01-02T15:04:05.000Z kgo ")
			})), kgo.ClientID(s.ClientID), kgo.FetchMaxBytes(nemesisFetchMaxBytes), kgo.SessionTimeout(nemesisSession), kgo.HeartbeatInterval(200 * time.Millisecond),
				kgo.RebalanceTimeout(nemesisRebalance)}}
		return ingest.Run(ctx, ingest.Config{
			Start:  ingest.StartEarliest,
			Client: conn.Write, Table: s.Table, Source: src, DeadLetterTable: s.DeadLetterTable, Unknown: rows.UnknownReject,
			MaxBatchRows: 50, MaxBatchAge: 100 * time.Millisecond, RequestBytes: 2 << 10, MemoryBudget: 1 << 20,
			CommitWindow: 5 * time.Millisecond, Lease: 3 * time.Second, Logger: log,
			Backoff: ingest.Backoff{Base: 5 * time.Millisecond, Max: 200 * time.Millisecond},
		})
	}()
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "nemesis member: run failed:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func TestNemesis(t *testing.T) {
	if testing.Short() {
		t.Skip("the nemesis runs child processes; skipped with -short")
	}
	seed := uint64(1)
	if s := os.Getenv("INGEST_NEMESIS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("INGEST_NEMESIS_SEED=%q: %v", s, err)
		}
		seed = v
	}
	dur := 5 * time.Second
	if s := os.Getenv("INGEST_NEMESIS_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("INGEST_NEMESIS_DURATION=%q: %v", s, err)
		}
		dur = d
	}
	if s := os.Getenv("INGEST_NEMESIS_SOAK"); s != "" {
		soak, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("INGEST_NEMESIS_SOAK=%q: %v", s, err)
		}
		if os.Getenv("INGEST_NEMESIS_DURATION") == "" {
			dur = 8 * time.Second
		}
		start, first := time.Now(), seed
		end := start.Add(soak)
		n := 0
		for ; time.Now().Before(end); seed++ {
			if !t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runNemesis(t, seed, dur) }) {
				t.Fatalf("soak: seed %d failed after %d clean seeds (seeds %d-%d, %v)", seed, n, first, seed, time.Since(start).Round(time.Second))
			}
			n++
		}
		t.Logf("soak: %d seeds clean (seeds %d-%d, nemesis %v each) in %v of wall time", n, first, seed-1, dur, time.Since(start).Round(time.Second))
		return
	}
	if os.Getenv("INGEST_NEMESIS_SEED") != "" {
		runNemesis(t, seed, dur)
		return
	}
	for _, s := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprintf("seed=%d", s), func(t *testing.T) { runNemesis(t, s, dur) })
	}
}

// nemesis is one run's world.
type nemesis struct {
	t     *testing.T
	seed  uint64
	dir   string
	k     *kafkaEnv
	table string
	// dlTable receives the dead letters (Config.DeadLetterTable).
	dlTable string
	group   string
	srvDir  string

	mu struct {
		sync.Mutex
		srv     *testkit.Child
		members [nemesisSlots]*member
		want    [nemesisSlots]bool // the slot should be running
		exits   []string           // unexpected member exits
		history []string
		started int // member processes started, for client ids
		// byClient: every member process started, by client id.
		byClient map[string]*member
		reaped   int  // dead members evicted by the kfake work-around
		quiet    bool // the nemesis stopped: any member failure is a finding
	}
	kfakeFaults []*kfake.FaultHandle
	// schemaChanged: the table has the column extra; the producer fills it.
	schemaChanged atomic.Bool
}

// addColumn adds the nullable column extra to the table (a schema change
// while the pipeline runs: new streams report it, records naming it make
// a batch end and map again with a fresh stream).
func (n *nemesis) addColumn() error {
	srv := n.server()
	if srv == nil {
		return errors.New("server down")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	bq, err := bigquery.NewClient(ctx, project, testkit.RESTOptions(srv.HTTPAddr)...)
	if err != nil {
		return err
	}
	defer bq.Close()
	tbl := bq.Dataset("d").Table("nemesis")
	md, err := tbl.Metadata(ctx)
	if err != nil {
		return err
	}
	schema := append(md.Schema, &bigquery.FieldSchema{Name: "extra", Type: bigquery.StringFieldType})
	_, err = tbl.Update(ctx, bigquery.TableMetadataToUpdate{Schema: schema}, md.ETag)
	return err
}

type member struct {
	slot     int
	clientID string
	cmd      *exec.Cmd
	log      *os.File
	exited   chan struct{}
	err      error
	exitedAt time.Time // guarded by nemesis.mu
}

func (n *nemesis) logf(format string, args ...any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.mu.history = append(n.mu.history, fmt.Sprintf("%s "+format, append([]any{time.Now().Format("15:04:05.000")}, args...)...))
}

func (n *nemesis) server() *testkit.Child {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.mu.srv
}

// startMember starts slot's member process (REQUIRES: n.mu held).
func (n *nemesis) startMemberLocked(slot int) {
	if m := n.mu.members[slot]; m != nil {
		select {
		case <-m.exited:
		default:
			return // running
		}
	}
	srv := n.mu.srv
	n.mu.started++
	clientID := fmt.Sprintf("nemesis-m%d-%d", slot, n.mu.started)
	spec, _ := json.Marshal(memberSpec{ClientID: clientID, GRPC: srv.GRPCAddr, Table: n.table, Brokers: n.k.c.ListenAddrs(), Topic: n.k.topic,
		Group: n.group, DeadLetterTable: n.dlTable})
	logf, err := os.OpenFile(filepath.Join(n.dir, fmt.Sprintf("member-%d.log", slot)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		n.t.Error(err)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), nemesisMemberEnv+"="+string(spec))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		n.t.Error(err)
		return
	}
	m := &member{slot: slot, clientID: clientID, cmd: cmd, log: logf, exited: make(chan struct{})}
	n.mu.members[slot] = m
	if n.mu.byClient == nil {
		n.mu.byClient = map[string]*member{}
	}
	n.mu.byClient[clientID] = m
	go func() {
		m.err = cmd.Wait()
		logf.Close()
		n.mu.Lock()
		defer n.mu.Unlock()
		m.exitedAt = time.Now()
		close(m.exited)
		if m.err != nil && !isKilled(m.err) && !isTerminated(m.err) {
			x := fmt.Sprintf("member %d (pid %d) exited: %v (quiet phase: %v)", slot, cmd.Process.Pid, m.err, n.mu.quiet)
			n.mu.exits = append(n.mu.exits, x)
			n.mu.history = append(n.mu.history, time.Now().Format("15:04:05.000")+" "+x)
		}
	}()
}

func isKilled(err error) bool {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return true
		}
	}
	return false
}

func isTerminated(err error) bool {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM {
			return true
		}
	}
	return false
}

// signalMember sends sig to slot's member and waits for it to exit.
func (n *nemesis) signalMember(slot int, sig syscall.Signal) {
	n.mu.Lock()
	m := n.mu.members[slot]
	n.mu.Unlock()
	if m == nil {
		return
	}
	select {
	case <-m.exited:
		return
	default:
	}
	_ = m.cmd.Process.Signal(sig)
	select {
	case <-m.exited:
	case <-time.After(30 * time.Second):
		_ = m.cmd.Process.Signal(syscall.SIGKILL)
		<-m.exited
		n.logf("member %d did not stop on %v within 30s: killed", slot, sig)
	}
}

// supervise restarts members that should run and are not (as a service
// manager would), until ctx ends. Once a second it also evicts the group
// members of dead processes that kfake keeps (reapDeadMembers).
func (n *nemesis) supervise(ctx context.Context) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.k.c.ListenAddrs()...))
	if err != nil {
		n.t.Error(err)
		return
	}
	defer cl.Close()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if i%10 == 0 {
			n.reapDeadMembers(ctx, cl)
		}
		n.mu.Lock()
		for slot := range nemesisSlots {
			if !n.mu.want[slot] || n.mu.srv == nil {
				continue
			}
			if m := n.mu.members[slot]; m != nil {
				select {
				case <-m.exited:
				default:
					continue
				}
			}
			n.mu.history = append(n.mu.history, fmt.Sprintf("%s supervisor: (re)start member %d", time.Now().Format("15:04:05.000"), slot))
			n.startMemberLocked(slot)
		}
		n.mu.Unlock()
	}
}

func (n *nemesis) putServerFaults(spec string) error {
	srv := n.server()
	if srv == nil {
		return errors.New("server down")
	}
	return putFaults(http.DefaultClient, srv.AdminAddr, n.seed, spec, n.t.Logf)
}

// putFaultsAttempts bounds putFaults's tries. A try that fails in
// transport (no HTTP answer) is tried again: the machine running the soak
// has frozen whole for over a minute (the stall watch saw 78 s), and a
// dial that began before the freeze times out as soon as the process runs
// again, while the server, frozen with it, is fine. A PUT of the same
// spec is idempotent. A server that is really stuck still fails the run:
// here after the last try, and in the lag wait after it.
const putFaultsAttempts = 4

// putFaults installs spec as the server's fault schedule (empty clears it).
func putFaults(c *http.Client, addr string, seed uint64, spec string, logf func(string, ...any)) error {
	var err error
	for try := 1; try <= putFaultsAttempts; try++ {
		if err = putFaultsOnce(c, addr, seed, spec); err == nil || !errors.As(err, new(*url.Error)) {
			return err
		}
		logf("PUT /admin/faults, try %d of %d: %v", try, putFaultsAttempts, err)
	}
	return err
}

func putFaultsOnce(c *http.Client, addr string, seed uint64, spec string) error {
	req, err := http.NewRequest(http.MethodPut, "http://"+addr+"/admin/faults?seed="+strconv.FormatUint(seed, 10), strings.NewReader(spec))
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("PUT /admin/faults: %s", resp.Status)
	}
	return nil
}

func (n *nemesis) killServer() {
	n.mu.Lock()
	srv := n.mu.srv
	n.mu.srv = nil
	n.mu.Unlock()
	if srv != nil {
		srv.Kill()
	}
}

// serverAddrs picks the server's three loopback addresses, which every
// restart reuses, from ports below the kernel's ephemeral range: a port
// from that range (what :0 gives) is free for any other process's
// outgoing connection or :0 listener while the server is down, and
// members then reach a stranger, or the restart cannot listen (seen on a
// busy machine: "bind: address already in use", then NotFound from some
// other test's server).
func serverAddrs(t *testing.T) [3]string {
	t.Helper()
	lo := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil && v > 12000 {
				lo = v
			}
		}
	}
	var addrs [3]string
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for i, tries := 0, 0; i < len(addrs); tries++ {
		if tries > 1000 {
			t.Fatalf("no free loopback port below %d", lo)
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", 10000+rand.IntN(lo-10000)))
		if err != nil {
			continue
		}
		held = append(held, l)
		addrs[i] = l.Addr().String()
		i++
	}
	return addrs
}

func (n *nemesis) startServer(grpcAddr, httpAddr, adminAddr string) {
	args := []string{"--project", project}
	if grpcAddr != "" {
		args = append(args, "--grpc-addr", grpcAddr, "--http-addr", httpAddr, "--admin-addr", adminAddr)
	}
	srv := testkit.StartChild(n.t, n.srvDir, args...)
	n.mu.Lock()
	n.mu.srv = srv
	n.mu.Unlock()
}

// pickSlot returns the arg-th (mod) slot whose want flag is want, and
// whether there is one. A leave keeps at least one member.
func (n *nemesis) pickSlot(arg int, want bool) (int, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var slots []int
	for slot := range nemesisSlots {
		if n.mu.want[slot] == want {
			slots = append(slots, slot)
		}
	}
	if len(slots) == 0 {
		return 0, false
	}
	return slots[arg%len(slots)], true
}

func (n *nemesis) apply(e nemesisEvent, restarts chan<- func()) {
	switch e.Kind {
	case "kill9":
		slot, ok := n.pickSlot(e.Arg, true)
		if !ok {
			n.logf("nemesis: %s: no member runs", e)
			return
		}
		n.logf("nemesis: %s: member %d", e, slot)
		n.mu.Lock()
		n.mu.want[slot] = false
		n.mu.Unlock()
		n.signalMember(slot, syscall.SIGKILL)
		time.AfterFunc(e.Down, func() {
			restarts <- func() {
				n.logf("nemesis: member %d back", slot)
				n.mu.Lock()
				n.mu.want[slot] = true
				n.mu.Unlock()
			}
		})
		return
	case "pause":
		slot, ok := n.pickSlot(e.Arg, true)
		if !ok {
			n.logf("nemesis: %s: no member runs", e)
			return
		}
		n.mu.Lock()
		m := n.mu.members[slot]
		n.mu.Unlock()
		if m == nil {
			return
		}
		n.logf("nemesis: %s: member %d", e, slot)
		_ = m.cmd.Process.Signal(syscall.SIGSTOP)
		time.AfterFunc(e.Down, func() {
			_ = m.cmd.Process.Signal(syscall.SIGCONT)
			n.logf("nemesis: member %d continues", slot)
		})
		return
	case "leave":
		slot, ok := n.pickSlot(e.Arg, true)
		n.mu.Lock()
		running := 0
		for _, w := range n.mu.want {
			if w {
				running++
			}
		}
		n.mu.Unlock()
		if !ok || running < 2 {
			n.logf("nemesis: %s: skipped (keep one member)", e)
			return
		}
		n.logf("nemesis: %s: member %d", e, slot)
		n.mu.Lock()
		n.mu.want[slot] = false
		n.mu.Unlock()
		n.signalMember(slot, syscall.SIGTERM)
		return
	case "join":
		slot, ok := n.pickSlot(e.Arg, false)
		if !ok {
			n.logf("nemesis: %s: every slot runs", e)
			return
		}
		n.logf("nemesis: %s: member %d", e, slot)
		n.mu.Lock()
		n.mu.want[slot] = true
		n.mu.Unlock()
		return
	}
	n.logf("nemesis: %s", e)
	switch e.Kind {
	case "kfake":
		n.kfakeFaults = append(n.kfakeFaults, n.k.c.Fault(kfake.Fault{Keys: []kmsg.Key{e.Key}, Err: e.Err, Count: e.Count}))
	case "drop":
		n.k.c.ControlKey(int16(e.Key), func(kmsg.Request) (kmsg.Response, error, bool) {
			return nil, errors.New("nemesis: connection dropped"), true
		})
	case "leader":
		p := int32(e.Arg) % n.k.parts
		if err := n.k.c.MoveTopicPartition(n.k.topic, p, n.k.c.LeaderFor(n.k.topic, p)); err != nil {
			n.logf("nemesis: leader election failed: %v", err)
		}
	case "server-faults":
		if err := n.putServerFaults(e.Spec); err != nil {
			n.logf("nemesis: server faults not installed: %v", err)
		}
	case "schema":
		if n.schemaChanged.Load() {
			return
		}
		if err := n.addColumn(); err != nil {
			n.logf("nemesis: schema change failed: %v", err)
			return
		}
		n.schemaChanged.Store(true)
	case "server-kill9":
		srv := n.server()
		if srv == nil {
			return
		}
		g, h, a := srv.GRPCAddr, srv.HTTPAddr, srv.AdminAddr
		n.killServer()
		time.AfterFunc(e.Down, func() {
			restarts <- func() {
				n.startServer(g, h, a)
				n.logf("nemesis: server back")
			}
		})
	}
}

// producer writes records until ctx ends: ids from 0 up for valid records
// (plain or in committed transactions), ids from abortedBase for records of
// aborted transactions, and poison records (an id that is not a number).
type produced struct {
	valid   map[int64]bool
	aborted map[int64]bool
	poison  map[string]bool
}

const abortedBase = 1_000_000_000

func (n *nemesis) produce(ctx context.Context, rng *rand.Rand) (*produced, error) {
	p := &produced{valid: map[int64]bool{}, aborted: map[int64]bool{}, poison: map[string]bool{}}
	opts := []kgo.Opt{kgo.SeedBrokers(n.k.c.ListenAddrs()...), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.DefaultProduceTopic(n.k.topic)}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var tx *kgo.Client
	if nemesisTxns {
		tx, err = kgo.NewClient(append(opts, kgo.TransactionalID(fmt.Sprintf("nemesis-%d", n.seed)))...)
		if err != nil {
			return nil, err
		}
		defer tx.Close()
	}
	next, nextAborted, nextPoison := int64(0), int64(abortedBase), 0
	batch := func(k int, abort bool) ([]*kgo.Record, []int64) {
		var recs []*kgo.Record
		var ids []int64
		for range k {
			if !abort && rng.IntN(40) == 0 {
				key := fmt.Sprintf("poison-%d", nextPoison)
				nextPoison++
				recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, `{"id":%q}`, key)})
				p.poison[key] = true
				continue
			}
			id := next
			if abort {
				id = nextAborted
				nextAborted++
			} else {
				next++
			}
			ids = append(ids, id)
			if n.schemaChanged.Load() && rng.IntN(2) == 0 {
				recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, `{"id":%d,"name":"n%d","tags":[],"extra":"e%d"}`, id, id, id)})
				continue
			}
			recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, `{"id":%d,"name":"n%d","tags":[]}`, id, id)})
		}
		return recs, ids
	}
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return p, nil
		case <-tick.C:
		}
		k := 1 + rng.IntN(8)
		pctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		switch r := rng.IntN(10); {
		case tx != nil && r < 2: // a committed transaction
			recs, ids := batch(k, false)
			if err := produceTxn(pctx, tx, recs, true); err != nil {
				cancel()
				return nil, fmt.Errorf("committed transaction: %w", err)
			}
			for _, id := range ids {
				p.valid[id] = true
			}
		case tx != nil && r < 4: // an aborted transaction
			recs, ids := batch(k, true)
			if err := produceTxn(pctx, tx, recs, false); err != nil {
				cancel()
				return nil, fmt.Errorf("aborted transaction: %w", err)
			}
			for _, id := range ids {
				p.aborted[id] = true
			}
		default:
			recs, ids := batch(k, false)
			if err := cl.ProduceSync(pctx, recs...).FirstErr(); err != nil {
				cancel()
				return nil, fmt.Errorf("produce: %w", err)
			}
			for _, id := range ids {
				p.valid[id] = true
			}
		}
		cancel()
	}
}

func produceTxn(ctx context.Context, tx *kgo.Client, recs []*kgo.Record, commit bool) error {
	if err := tx.BeginTransaction(); err != nil {
		return err
	}
	if err := tx.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		_ = tx.EndTransaction(ctx, kgo.TryAbort)
		return err
	}
	end := kgo.TryAbort
	if commit {
		end = kgo.TryCommit
	}
	return tx.EndTransaction(ctx, end)
}

func runNemesis(t *testing.T, seed uint64, dur time.Duration) {
	rng := rand.New(rand.NewPCG(seed, 0x6e656d65))
	schedule := nemesisSchedule(rng, dur)
	// Leader elections come from their own stream, so adding them left
	// every seed's other events as they were.
	schedule = withLeaderElections(schedule, rand.New(rand.NewPCG(seed, 0x6c656164)), dur)
	replay := fmt.Sprintf("INGEST_NEMESIS_SEED=%d INGEST_NEMESIS_DURATION=%v go test ./ingest/ -run 'TestNemesis$' -v", seed, dur)
	if !nemesisTxns {
		replay = "INGEST_NEMESIS_TXNS=0 " + replay
	}
	var sched strings.Builder
	for _, e := range schedule {
		sched.WriteString("  " + e.String() + "\n")
	}
	t.Logf("seed %d, nemesis %v, %d events (replay: %s)", seed, dur, len(schedule), replay)

	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "events"),
		kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	n := &nemesis{t: t, seed: seed, dir: t.TempDir(), k: &kafkaEnv{c: c, topic: "events", parts: 3},
		group: "nemesis", srvDir: t.TempDir()}
	watch := startStallWatch(n)
	defer watch.Close()
	addrs := serverAddrs(t)
	n.startServer(addrs[0], addrs[1], addrs[2])
	srv := n.server()
	ctx := context.Background()
	bq, err := bigquery.NewClient(ctx, project, testkit.RESTOptions(srv.HTTPAddr)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := bq.Dataset("d").Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := bq.Dataset("d").Table("nemesis").Create(ctx, &bigquery.TableMetadata{Schema: eventSchema}); err != nil {
		t.Fatal(err)
	}
	n.dlTable = (&env{bq: bq}).deadLetterTable(t, "nemesis_dead_letters")
	bq.Close()
	n.table = "projects/" + project + "/datasets/d/tables/nemesis"

	failed := false
	defer func() {
		if !failed && !t.Failed() {
			if os.Getenv("INGEST_NEMESIS_KEEP_LOGS") != "" {
				t.Logf("member logs kept in %s", keepLogs(n.dir, seed))
			}
			if testing.Verbose() {
				n.mu.Lock()
				t.Logf("schedule:\n%shistory:\n  %s", sched.String(), strings.Join(n.mu.history, "\n  "))
				n.mu.Unlock()
			}
			return
		}
		n.mu.Lock()
		hist := strings.Join(n.mu.history, "\n  ")
		exits := strings.Join(n.mu.exits, "\n  ")
		n.mu.Unlock()
		kept := keepLogs(n.dir, seed)
		t.Logf("NEMESIS FAILED: seed %d\nschedule:\n%shistory:\n  %s\nunexpected member exits:\n  %s\nreplay: %s\nmember logs (whole files kept in %s): %s",
			seed, sched.String(), hist, exits, replay, kept, tailLogs(n.dir))
	}()

	// Members 0 and 1 run from the start; slot 2 joins when the schedule says.
	n.mu.Lock()
	n.mu.want[0], n.mu.want[1] = true, true
	n.mu.Unlock()
	superCtx, stopSuper := context.WithCancel(ctx)
	superDone := make(chan struct{})
	go func() {
		defer close(superDone)
		n.supervise(superCtx)
	}()
	defer func() {
		stopSuper()
		<-superDone
		for slot := range nemesisSlots {
			n.signalMember(slot, syscall.SIGKILL)
		}
	}()

	prodCtx, stopProd := context.WithCancel(ctx)
	type prodResult struct {
		p   *produced
		err error
	}
	prodc := make(chan prodResult, 1)
	prodRng := rand.New(rand.NewPCG(seed, 0x70726f64))
	go func() {
		p, err := n.produce(prodCtx, prodRng)
		prodc <- prodResult{p, err}
	}()

	// The nemesis phase.
	restarts := make(chan func(), 16)
	start := time.Now()
	for _, e := range schedule {
		for wait := time.Until(start.Add(e.At)); wait > 0; wait = time.Until(start.Add(e.At)) {
			select {
			case f := <-restarts:
				f()
			case <-time.After(wait):
			}
		}
		n.apply(e, restarts)
	}
	for wait := time.Until(start.Add(dur)); wait > 0; wait = time.Until(start.Add(dur)) {
		select {
		case f := <-restarts:
			f()
		case <-time.After(wait):
		}
	}
	stopProd()
	pr := <-prodc
	if pr.err != nil {
		failed = true
		t.Fatalf("producer: %v", pr.err)
	}

	// Quiet: pending restarts happen, faults go, every slot runs.
	n.logf("nemesis stops")
	deadline := time.After(5 * time.Second)
drain:
	for {
		select {
		case f := <-restarts:
			f()
		case <-deadline:
			break drain
		case <-time.After(2 * time.Second): // the longest restart delay
			break drain
		}
	}
	for _, h := range n.kfakeFaults {
		h.Remove()
	}
	if n.server() == nil {
		failed = true
		t.Fatal("the server is still down after the nemesis")
	}
	if err := n.putServerFaults(""); err != nil {
		failed = true
		t.Fatalf("clearing server faults: %v", err)
	}
	// The membership stays as the nemesis left it: a restart here would
	// rebalance the group and hide a partition stalled on a member.
	n.mu.Lock()
	n.mu.quiet = true
	n.mu.Unlock()

	const bound = 90 * time.Second
	p0 := readPressure()
	if err := n.waitLagZero(ctx, bound, watch); err != nil {
		failed = true
		// Stacks first: the members' go to their logs, kept below.
		stacks := n.dumpStacks()
		t.Fatalf("no progress: %v\n%s; %s\n%s (whole dump: test-goroutines.txt in the kept log dir)",
			err, watch, readPressure().since(p0), stacks)
	}
	stopSuper()
	<-superDone
	for slot := range nemesisSlots {
		n.signalMember(slot, syscall.SIGTERM)
	}
	n.mu.Lock()
	exits := append([]string(nil), n.mu.exits...)
	n.mu.Unlock()
	// A member's run must survive every fault of the schedule: a run
	// that stops on one (a rebalance, a coordinator move, a server
	// restart) takes every partition of the member down with it.
	for _, x := range exits {
		failed = true
		t.Errorf("a member's run failed: %s (its log: %s)", x, filepath.Join(n.dir, "member-*.log"))
	}

	// The checker.
	srv = n.server()
	e := &env{}
	e.bq, err = bigquery.NewClient(ctx, project, testkit.RESTOptions(srv.HTTPAddr)...)
	if err != nil {
		t.Fatal(err)
	}
	defer e.bq.Close()
	if err := e.bq.EnableStorageReadClient(ctx, testkit.GRPCOptions(srv.GRPCAddr)...); err != nil {
		t.Fatal(err)
	}
	got := e.readIDs(t, n.table)
	var missing, dup, aborted, other []int64
	for id := range pr.p.valid {
		switch got[id] {
		case 0:
			missing = append(missing, id)
		case 1:
		default:
			dup = append(dup, id)
		}
	}
	for id := range got {
		switch {
		case pr.p.aborted[id]:
			aborted = append(aborted, id)
		case !pr.p.valid[id]:
			other = append(other, id)
		}
	}
	dls, dlOther := readNemesisDeadLetters(t, e, n.dlTable)
	var dlMissing, dlDup []string
	for k := range pr.p.poison {
		switch dls[k] {
		case 0:
			dlMissing = append(dlMissing, k)
		case 1:
		default:
			dlDup = append(dlDup, k)
		}
	}
	sort.Strings(dlMissing)
	sort.Strings(dlDup)
	n.mu.Lock()
	reaped := n.mu.reaped
	n.mu.Unlock()
	t.Logf("seed %d: %d valid records, %d aborted, %d poison; table %d rows; dead letters %d; dead members kfake kept: %d; committed leader epochs %s",
		seed, len(pr.p.valid), len(pr.p.aborted), len(pr.p.poison), len(got), len(dls), reaped, n.committedEpochs(ctx))
	if len(missing)+len(dup)+len(aborted)+len(other)+len(dlMissing)+len(dlDup)+len(dlOther) > 0 {
		failed = true
		t.Errorf("exactly-once violated: missing %v, duplicated %v, aborted-transaction rows %v, other rows %v; "+
			"poison records without a dead letter %v, dead-lettered more than once %v, other dead letters %v",
			head(missing), head(dup), head(aborted), head(other), dlMissing, dlDup, dlOther)
	}
}
