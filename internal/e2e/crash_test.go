package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	storage "cloud.google.com/go/bigquery/storage/apiv1"
	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"cloud.google.com/go/bigquery/storage/managedwriter"
	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/bqstore/bqstore/internal/testkit"
)

// crashSchema: every row names the writer that wrote it and its sequence
// number within that writer, so that the check can tell acknowledged,
// ambiguous and never-sent rows apart.
var crashSchema = bigquery.Schema{
	{Name: "id", Type: bigquery.IntegerFieldType, Required: true},
	{Name: "kind", Type: bigquery.StringFieldType},
}

// ledger records what the writers of all cycles know about each row id.
type ledger struct {
	mu sync.Mutex
	// acked: the server acknowledged the rows as visible (append ack on
	// _default/COMMITTED, flush ack on BUFFERED, commit ack on PENDING):
	// each must be in the table exactly once.
	acked map[int64]bool
	// maybe: sent, outcome unknown (the server died): present at most
	// once. groups holds PENDING streams whose commit outcome is unknown:
	// all of a group's rows are present, or none.
	maybe  map[int64]bool
	groups [][]int64
}

func (l *ledger) add(m map[int64]bool, ids []int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range ids {
		m[id] = true
	}
}

// crashRun is a kill -9 test's cycle count (BQSTORE_CRASH_CYCLES, else
// cycles) and its random source, seeded from BQSTORE_CRASH_SEED or the
// clock and logged so the seed replays the run; stream tells the tests'
// sources apart.
func crashRun(t *testing.T, cycles int, stream uint64) (int, *rand.Rand) {
	t.Helper()
	if s := os.Getenv("BQSTORE_CRASH_CYCLES"); s != "" {
		cycles, _ = strconv.Atoi(s)
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("BQSTORE_CRASH_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (BQSTORE_CRASH_SEED), %d cycles (BQSTORE_CRASH_CYCLES)", seed, cycles)
	return cycles, rand.New(rand.NewPCG(seed, stream))
}

// TestCrashKill9 runs the server as a child process under concurrent load
// of every stream type, kills it with SIGKILL at a random moment, restarts
// it on the same data directory, and checks that every acknowledged row is
// there exactly once, no row is there twice, no unacknowledged PENDING
// stream is half-visible and nothing never sent appears.
func TestCrashKill9(t *testing.T) {
	cycles, rng := crashRun(t, 20, 1)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	l := &ledger{acked: map[int64]bool{}, maybe: map[int64]bool{}}
	tp := fmt.Sprintf("projects/%s/datasets/d/tables/crash", project)
	for cycle := 0; cycle < cycles; cycle++ {
		c := testkit.StartChild(t, dir)
		if cycle == 0 {
			bq, err := bigquery.NewClient(ctx, project, testkit.RESTOptions(c.HTTPAddr)...)
			if err != nil {
				t.Fatal(err)
			}
			if err := bq.Dataset("d").Create(ctx, &bigquery.DatasetMetadata{}); err != nil {
				t.Fatal(err)
			}
			if err := bq.Dataset("d").Table("crash").Create(ctx, &bigquery.TableMetadata{Schema: crashSchema}); err != nil {
				t.Fatal(err)
			}
			bq.Close()
		} else {
			verifyCrash(t, ctx, c.GRPCAddr, tp, l, cycle)
		}
		runLoad(t, ctx, c, tp, l, cycle, rng)
	}
	c := testkit.StartChild(t, dir)
	verifyCrash(t, ctx, c.GRPCAddr, tp, l, cycles)
	c.Kill()
}

// runLoad starts writers of every stream type, kills the server after a
// random delay, and waits for the writers to notice.
func runLoad(t *testing.T, ctx context.Context, c *testkit.Child, tp string, l *ledger, cycle int, rng *rand.Rand) {
	t.Helper()
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	mw, err := managedwriter.NewClient(wctx, project, testkit.GRPCOptions(c.GRPCAddr)...)
	if err != nil {
		t.Fatal(err)
	}
	defer mw.Close()
	wc, err := storage.NewBigQueryWriteClient(wctx, testkit.GRPCOptions(c.GRPCAddr)...)
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Close()
	dp, md := descriptor(t, crashSchema)
	enc := func(ids []int64, kind string) [][]byte {
		out := make([][]byte, len(ids))
		for i, id := range ids {
			m := dynamicpb.NewMessage(md)
			m.Set(md.Fields().ByName("id"), protoreflect.ValueOfInt64(id))
			m.Set(md.Fields().ByName("kind"), protoreflect.ValueOfString(kind))
			out[i], _ = proto.Marshal(m)
		}
		return out
	}
	// ids of writer w in this cycle: cycle*1e12 + w*1e9 + seq.
	base := func(w int) int64 { return int64(cycle)*1e12 + int64(w)*1e9 }

	var wg sync.WaitGroup
	writer := func(w int, typ managedwriter.StreamType) {
		defer wg.Done()
		seq := base(w)
		for wctx.Err() == nil {
			opts := []managedwriter.WriterOption{managedwriter.WithDestinationTable(tp), managedwriter.WithType(typ), managedwriter.WithSchemaDescriptor(dp)}
			ms, err := mw.NewManagedStream(wctx, opts...)
			if err != nil {
				return
			}
			var streamIDs []int64
			var off int64
			for b := 0; b < 5 && wctx.Err() == nil; b++ {
				n := 1 + int(seq%7)
				ids := make([]int64, n)
				for i := range ids {
					ids[i] = seq
					seq++
				}
				var aopts []managedwriter.AppendOption
				if typ != managedwriter.DefaultStream {
					aopts = append(aopts, managedwriter.WithOffset(off))
				}
				l.add(l.maybe, ids)
				r, err := ms.AppendRows(wctx, enc(ids, string(typ)), aopts...)
				if err != nil {
					return
				}
				if _, err := r.GetResult(wctx); err != nil {
					return
				}
				off += int64(n)
				streamIDs = append(streamIDs, ids...)
				if typ == managedwriter.DefaultStream || typ == managedwriter.CommittedStream {
					l.add(l.acked, ids)
				}
			}
			switch typ {
			case managedwriter.BufferedStream:
				if off > 0 {
					if _, err := ms.FlushRows(wctx, off-1); err != nil {
						return
					}
					l.add(l.acked, streamIDs)
				}
			case managedwriter.PendingStream:
				if _, err := ms.Finalize(wctx); err != nil {
					return
				}
				l.mu.Lock()
				l.groups = append(l.groups, streamIDs)
				l.mu.Unlock()
				resp, err := mw.BatchCommitWriteStreams(wctx, &storagepb.BatchCommitWriteStreamsRequest{Parent: tp, WriteStreams: []string{ms.StreamName()}})
				if err != nil || len(resp.GetStreamErrors()) > 0 {
					return
				}
				l.add(l.acked, streamIDs)
			}
			ms.Close()
		}
	}
	for w, typ := range []managedwriter.StreamType{managedwriter.DefaultStream, managedwriter.DefaultStream,
		managedwriter.CommittedStream, managedwriter.PendingStream, managedwriter.PendingStream, managedwriter.BufferedStream} {
		wg.Add(1)
		go writer(w, typ)
	}
	time.Sleep(time.Duration(20+rng.IntN(300)) * time.Millisecond)
	c.Kill()
	stop()
	wg.Wait()
}

// verifyCrash reads the table on the restarted server and checks the
// ledger.
func verifyCrash(t *testing.T, ctx context.Context, addr, tp string, l *ledger, cycle int) {
	t.Helper()
	rc, err := storage.NewBigQueryReadClient(ctx, testkit.GRPCOptions(addr)...)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	e := &env{t: t, ctx: ctx, rc: rc}
	seen := map[int64]int{}
	for _, rec := range e.readAll(tp, 3, nil, nil) {
		for _, id := range rec.Column(0).(*array.Int64).Int64Values() {
			seen[id]++
		}
		rec.Release()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, n := range seen {
		if n > 1 {
			t.Fatalf("after kill %d: row %d is in the table %d times", cycle, id, n)
		}
		if !l.maybe[id] {
			t.Fatalf("after kill %d: row %d was never sent", cycle, id)
		}
	}
	for id := range l.acked {
		if seen[id] != 1 {
			t.Fatalf("after kill %d: acknowledged row %d is missing", cycle, id)
		}
	}
	for _, g := range l.groups {
		present := 0
		for _, id := range g {
			present += seen[id]
		}
		if present != 0 && present != len(g) {
			t.Fatalf("after kill %d: a PENDING stream is half visible: %d of %d rows", cycle, present, len(g))
		}
	}
	t.Logf("kill %d: %d rows visible, %d acknowledged, all present once", cycle, len(seen), len(l.acked))
}
