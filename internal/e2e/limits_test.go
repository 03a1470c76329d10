package e2e

import (
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"cloud.google.com/go/bigquery/storage/managedwriter"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/bqstore/bqstore/internal/server"
	"github.com/bqstore/bqstore/internal/storage/vfs"
	"github.com/bqstore/bqstore/internal/testkit"
)

// gatedFS is the disk whose file syncs block while the gate is armed.
type gatedFS struct {
	vfs.FS
	g *syncGate
}

type syncGate struct {
	mu      sync.Mutex
	armed   bool
	release chan struct{}
	blocked chan struct{} // closed when a sync first waits at the gate
	once    sync.Once
}

func newSyncGate() *syncGate {
	return &syncGate{release: make(chan struct{}), blocked: make(chan struct{})}
}

func (g *syncGate) arm() { g.mu.Lock(); g.armed = true; g.mu.Unlock() }

func (g *syncGate) open() { g.mu.Lock(); g.armed = false; g.mu.Unlock(); close(g.release) }

func (g *syncGate) wait() {
	g.mu.Lock()
	armed := g.armed
	g.mu.Unlock()
	if armed {
		g.once.Do(func() { close(g.blocked) })
		<-g.release
	}
}

type gatedFile struct {
	vfs.File
	g *syncGate
}

func (f gatedFile) Sync() error { f.g.wait(); return f.File.Sync() }

func (fs gatedFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return gatedFile{f, fs.g}, nil
}

func (fs gatedFS) OpenAppend(name string) (vfs.File, error) {
	f, err := fs.FS.OpenAppend(name)
	if err != nil {
		return nil, err
	}
	return gatedFile{f, fs.g}, nil
}

// TestBudgetTakenBeforeDecode: the in-flight byte budget covers requests
// being decoded, not only frames waiting for their sync (issue 11 finding
// 10, issue 12 finding 6). With the whole budget held by an append whose
// sync is stalled, a request on another connection waits for budget before
// it is decoded: it is not answered (not even with its decode error) until
// the budget frees.
func TestBudgetTakenBeforeDecode(t *testing.T) {
	gate := newSyncGate()
	srv := testkit.Start(t, func(c *server.Config) {
		c.Storage.FS = gatedFS{vfs.Default, gate}
		c.Storage.MaxInflightBytes = 64 << 10
	})
	e := dial(t, t.Context(), srv)
	tp := e.table("t_budget", simpleSchema)
	ms, md := committedWriter(t, e, tp)

	// Connection A: one append larger than the budget; its sync waits at
	// the gate, holding the whole budget.
	gate.arm()
	big := dynamicpb.NewMessage(md)
	big.Set(md.Fields().ByName("id"), protoreflect.ValueOfInt64(1))
	big.Set(md.Fields().ByName("name"), protoreflect.ValueOfString(strings.Repeat("x", 100<<10)))
	b, err := proto.Marshal(big)
	if err != nil {
		t.Fatal(err)
	}
	ra, err := ms.AppendRows(e.ctx, [][]byte{b})
	if err != nil {
		t.Fatal(err)
	}
	<-gate.blocked

	// Connection B: a request whose rows do not decode.
	dp, _ := descriptor(t, simpleSchema)
	stream, err := e.wc.AppendRows(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = stream.Send(&storagepb.AppendRowsRequest{
		WriteStream: tp + "/streams/_default",
		Rows: &storagepb.AppendRowsRequest_ProtoRows{ProtoRows: &storagepb.AppendRowsRequest_ProtoData{
			WriterSchema: &storagepb.ProtoSchema{ProtoDescriptor: dp},
			Rows:         &storagepb.ProtoRows{SerializedRows: [][]byte{{0xff, 0xff, 0xff}}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	answered := make(chan *storagepb.AppendRowsResponse, 1)
	go func() {
		resp, err := stream.Recv()
		if err != nil {
			t.Errorf("connection B: %v", err)
		}
		answered <- resp
	}()
	// Either B is answered at once (the budget was not consulted before
	// decoding) or it waits for the budget: nothing else can happen while
	// the gate is closed.
	waits := func() float64 { return metricValue(t, srv, "bqstore_storage_budget_waits_total") }
	for waits() == 0 {
		select {
		case resp := <-answered:
			gate.open()
			t.Fatalf("connection B was answered (%v) while the in-flight budget was exhausted: the budget is taken after decoding", resp.GetError())
		case <-time.After(time.Millisecond): // poll the metric
		}
	}
	gate.open()
	resp := <-answered
	if c := codes.Code(resp.GetError().GetCode()); c != codes.InvalidArgument {
		t.Fatalf("connection B: %v, want INVALID_ARGUMENT", status.FromProto(resp.GetError()))
	}
	if _, err := ra.GetResult(e.ctx); err != nil {
		t.Fatalf("connection A: %v", err)
	}
	_ = stream.CloseSend()
}

// TestReceiveLimit: a request over the gRPC receive limit (16 MiB) is
// refused by gRPC from its length prefix before it is buffered, while one
// a little over the Storage API's 10 MB limit still reaches the service and
// is answered in-band (TestRequestTooLarge).
func TestReceiveLimit(t *testing.T) {
	e := newEnv(t)
	tp := e.table("t_recv_limit", simpleSchema)
	dp, md := descriptor(t, simpleSchema)
	big := dynamicpb.NewMessage(md)
	big.Set(md.Fields().ByName("id"), protoreflect.ValueOfInt64(1))
	big.Set(md.Fields().ByName("name"), protoreflect.ValueOfString(strings.Repeat("x", 20<<20)))
	b, err := proto.Marshal(big)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := e.wc.AppendRows(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = stream.Send(&storagepb.AppendRowsRequest{
		WriteStream: tp + "/streams/_default",
		Rows: &storagepb.AppendRowsRequest_ProtoRows{ProtoRows: &storagepb.AppendRowsRequest_ProtoData{
			WriterSchema: &storagepb.ProtoSchema{ProtoDescriptor: dp},
			Rows:         &storagepb.ProtoRows{SerializedRows: [][]byte{b}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err == nil {
		t.Fatalf("20 MiB request answered in-band (%v): want the call refused with RESOURCE_EXHAUSTED by the receive limit", resp.GetError())
	}
	if c := status.Code(err); c != codes.ResourceExhausted {
		t.Fatalf("20 MiB request: %v, want RESOURCE_EXHAUSTED", err)
	}
}

// metricValue reads an unlabelled counter or gauge of the server's registry
// (0 when absent).
func metricValue(t *testing.T, srv *testkit.Server, name string) float64 {
	t.Helper()
	mfs, err := srv.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) > 0 {
			m := mf.GetMetric()[0]
			return m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return 0
}

// TestReceiveBudget: messages being received are admitted against the
// receive budget before their bytes are let in (issue 12 finding 6). Eight
// connections each send a 15 MiB AppendRows at once; the gRPC transport's
// buffers (frames received and not yet decoded, counted by the server's
// buffer pool) must stay under what the budget admits (one such message at
// 3x its size) plus the 1 MiB stream window each waiting connection may
// push. Before, every connection's message was let in whole at once
// (8 x 15 MiB of frames, and as much again in copies).
func TestReceiveBudget(t *testing.T) {
	const (
		conns  = 8
		size   = 15 << 20
		budget = 48 << 20
	)
	srv := testkit.Start(t, func(c *server.Config) { c.MaxReceiveBytes = budget })
	e := dial(t, t.Context(), srv)
	tp := e.table("t_recv_budget", simpleSchema)
	dp, md := descriptor(t, simpleSchema)
	big := dynamicpb.NewMessage(md)
	big.Set(md.Fields().ByName("id"), protoreflect.ValueOfInt64(1))
	big.Set(md.Fields().ByName("name"), protoreflect.ValueOfString(strings.Repeat("x", size)))
	row, err := proto.Marshal(big)
	if err != nil {
		t.Fatal(err)
	}
	req := &storagepb.AppendRowsRequest{
		WriteStream: tp + "/streams/_default",
		Rows: &storagepb.AppendRowsRequest_ProtoRows{ProtoRows: &storagepb.AppendRowsRequest_ProtoData{
			WriterSchema: &storagepb.ProtoSchema{ProtoDescriptor: dp},
			Rows:         &storagepb.ProtoRows{SerializedRows: [][]byte{row}},
		}},
	}
	var wg sync.WaitGroup
	for i := range conns {
		cc, err := grpc.NewClient(srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			stream, err := storagepb.NewBigQueryWriteClient(cc).AppendRows(e.ctx)
			if err != nil {
				t.Errorf("connection %d: %v", i, err)
				return
			}
			if err := stream.Send(req); err != nil {
				t.Errorf("connection %d: send: %v", i, err)
				return
			}
			resp, err := stream.Recv()
			if err != nil {
				t.Errorf("connection %d: %v", i, err)
				return
			}
			// Over the Storage API's 10 MB: refused in-band, after it
			// was received.
			if c := codes.Code(resp.GetError().GetCode()); c != codes.InvalidArgument {
				t.Errorf("connection %d: %v, want INVALID_ARGUMENT", i, status.FromProto(resp.GetError()))
			}
			_ = stream.CloseSend()
		}()
	}
	wg.Wait()
	max, high, bufs := srv.ReceiveBudget()
	t.Logf("receive budget %d MiB, admitted at most %.1f MiB; transport buffers at most %.1f MiB", max>>20, float64(high)/(1<<20), float64(bufs)/(1<<20))
	if high > max {
		t.Errorf("admitted %d bytes, over the budget of %d", high, max)
	}
	// What the budget admits (frames are 1/3 of a message's cost), plus a
	// window (1 MiB, and a frame over) per connection, plus 1 MiB of
	// small frames.
	bound := int64(max/3 + conns*(1<<20+16<<10) + 1<<20)
	if bufs > bound {
		t.Errorf("transport buffers reached %d bytes, want at most %d (budget %d, %d connections)", bufs, bound, max, conns)
	}
}

// TestDiskQuota: with --max-disk-bytes, an append that would take the data
// directory past the limit is refused RESOURCE_EXHAUSTED in-band before
// anything of it is stored (a client does not retry it: it is not the
// throughput quota); the connection stays usable, every acknowledged row
// reads back and no refused one does (issue 12).
func TestDiskQuota(t *testing.T) {
	const limit = 2 << 20
	srv := testkit.Start(t, func(c *server.Config) { c.MaxDiskBytes = limit })
	e := dial(t, t.Context(), srv)
	tp := e.table("t_disk_quota", simpleSchema)
	ms, md := committedWriter(t, e, tp)
	row := dynamicpb.NewMessage(md)
	row.Set(md.Fields().ByName("id"), protoreflect.ValueOfInt64(1))
	row.Set(md.Fields().ByName("name"), protoreflect.ValueOfString(strings.Repeat("x", 100<<10)))
	b, err := proto.Marshal(row)
	if err != nil {
		t.Fatal(err)
	}
	var acked int64
	for {
		if acked > 2*limit/(100<<10) {
			t.Fatalf("%d appends of 100 KiB acknowledged under a %d-byte disk limit", acked, limit)
		}
		r, err := ms.AppendRows(e.ctx, [][]byte{b}, managedwriter.WithOffset(acked))
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.GetResult(e.ctx)
		if err == nil {
			acked++
			continue
		}
		if c := status.Code(err); c != codes.ResourceExhausted {
			t.Fatalf("append %d: %v, want RESOURCE_EXHAUSTED", acked, err)
		}
		if !strings.Contains(err.Error(), "--max-disk-bytes") {
			t.Errorf("append %d: %v: the message should name the flag", acked, err)
		}
		break
	}
	if acked == 0 {
		t.Fatal("the first append was refused")
	}
	// Refused again (the connection is usable), still nothing stored.
	r, err := ms.AppendRows(e.ctx, [][]byte{b}, managedwriter.WithOffset(acked))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.GetResult(e.ctx); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("append after the refusal: %v, want RESOURCE_EXHAUSTED", err)
	}
	var rows int64
	for _, rec := range e.readAll(tp, 1, nil, nil) {
		rows += rec.NumRows()
		rec.Release()
	}
	if rows != acked {
		t.Fatalf("%d rows read back, %d acknowledged", rows, acked)
	}
}
