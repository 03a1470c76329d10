package quota

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

func TestBucket(t *testing.T) {
	t0 := time.Unix(0, 0)
	b := newBucket(10, 3, t0) // 10/s, burst 3
	var got []bool
	for i := 0; i < 4; i++ {
		got = append(got, b.take(1, t0))
	}
	if fmt.Sprint(got) != "[true true true false]" {
		t.Fatalf("burst of 3: %v", got)
	}
	// 100 ms refills one token.
	if !b.take(1, t0.Add(100*time.Millisecond)) || b.take(1, t0.Add(100*time.Millisecond)) {
		t.Fatal("refill after 100 ms at 10/s is not one token")
	}
	// A request larger than the burst passes on a full bucket, into debt.
	b = newBucket(10, 3, t0)
	if !b.take(25, t0) || b.take(1, t0.Add(time.Second)) {
		t.Fatal("oversized request: want admitted once, then 2.2 s of debt")
	}
	if !b.take(1, t0.Add(3*time.Second)) {
		t.Fatal("debt not repaid after 3 s")
	}
	// reserve: the wait is the time to repay the debt.
	b = newBucket(10, 1, t0)
	if w := b.reserve(1, t0); w != 0 {
		t.Fatalf("first reserve waits %v", w)
	}
	if w := b.reserve(1, t0); w != 100*time.Millisecond {
		t.Fatalf("second reserve waits %v, want 100ms", w)
	}
	if w := b.reserve(1, t0); w != 200*time.Millisecond {
		t.Fatalf("third reserve waits %v, want 200ms", w)
	}
}

func unary(l *Limiter, req any, resp any, err error) (any, error) {
	return l.UnaryServerInterceptor()(context.Background(), req, &grpc.UnaryServerInfo{FullMethod: "/x/y"},
		func(ctx context.Context, req any) (any, error) { return resp, err })
}

func TestActiveStreams(t *testing.T) {
	l := New(Limits{MaxActiveStreams: 2}, Options{})
	table := "projects/p/datasets/d/tables/t"
	if _, err := unary(l, &storagepb.CreateWriteStreamRequest{Parent: table}, &storagepb.WriteStream{Name: table + "/streams/old"}, nil); err != nil {
		t.Fatal(err)
	}
	create := func(id string, herr error) error {
		_, err := unary(l, &storagepb.CreateWriteStreamRequest{Parent: table}, &storagepb.WriteStream{Name: table + "/streams/" + id}, herr)
		return err
	}
	if err := create("a", nil); err != nil {
		t.Fatal(err)
	}
	err := create("b", nil)
	if s, _ := status.FromError(err); s.Code() != codes.ResourceExhausted || !strings.HasPrefix(s.Message(), ActiveStreamsPrefix) ||
		!strings.Contains(s.Message(), "ActiveStreamCount=2. MaxAllowed=2.") {
		t.Fatalf("third stream: %v", err)
	}
	// Another project has its own count.
	if _, err := unary(l, &storagepb.CreateWriteStreamRequest{Parent: "projects/q/datasets/d/tables/t"},
		&storagepb.WriteStream{Name: "projects/q/datasets/d/tables/t/streams/x"}, nil); err != nil {
		t.Fatal(err)
	}
	// A failed finalize frees nothing; a finalize frees a slot; a failed
	// create takes none.
	if _, err := unary(l, &storagepb.FinalizeWriteStreamRequest{Name: table + "/streams/old"}, nil, status.Error(codes.NotFound, "x")); err == nil {
		t.Fatal("handler error lost")
	}
	if l.Active("p") != 2 {
		t.Fatalf("active after a failed finalize: %d", l.Active("p"))
	}
	if _, err := unary(l, &storagepb.FinalizeWriteStreamRequest{Name: table + "/streams/old"}, &storagepb.FinalizeWriteStreamResponse{}, nil); err != nil {
		t.Fatal(err)
	}
	if err := create("c", status.Error(codes.NotFound, "no table")); status.Code(err) != codes.NotFound {
		t.Fatalf("handler error: %v", err)
	}
	if l.Active("p") != 1 {
		t.Fatalf("active = %d, want 1", l.Active("p"))
	}
	if err := create("d", nil); err != nil {
		t.Fatal(err)
	}
}

func TestCreateStreamRateReject(t *testing.T) {
	now := time.Unix(0, 0)
	l := New(Limits{CreateStreamRate: 2, CreateStreamBurst: 1}, Options{Now: func() time.Time { return now }})
	req := &storagepb.CreateWriteStreamRequest{Parent: "projects/p/datasets/d/tables/t"}
	var got []codes.Code
	for _, at := range []time.Duration{0, 0, 400 * time.Millisecond, 500 * time.Millisecond, 600 * time.Millisecond} {
		now = time.Unix(0, 0).Add(at)
		_, err := unary(l, req, &storagepb.WriteStream{}, nil)
		got = append(got, status.Code(err))
		if err != nil && !strings.HasPrefix(status.Convert(err).Message(), CreateWriteStreamPrefix) {
			t.Fatalf("message %q", status.Convert(err).Message())
		}
	}
	if fmt.Sprint(got) != "[OK ResourceExhausted ResourceExhausted OK ResourceExhausted]" {
		t.Fatalf("2/s burst 1: %v", got)
	}
}

type fakeStream struct {
	grpc.ServerStream
	reqs []*storagepb.AppendRowsRequest
}

func (f *fakeStream) Context() context.Context { return context.Background() }
func (f *fakeStream) RecvMsg(m any) error {
	if len(f.reqs) == 0 {
		return fmt.Errorf("eof")
	}
	proto.Merge(m.(*storagepb.AppendRowsRequest), f.reqs[0])
	f.reqs = f.reqs[1:]
	return nil
}

func TestThroughputPerConnection(t *testing.T) {
	now := time.Unix(0, 0)
	req := &storagepb.AppendRowsRequest{WriteStream: "projects/p/datasets/d/tables/t/_default",
		Rows: &storagepb.AppendRowsRequest_ProtoRows{ProtoRows: &storagepb.AppendRowsRequest_ProtoData{
			Rows: &storagepb.ProtoRows{SerializedRows: [][]byte{make([]byte, 40)}}}}}
	// Room for two and a half requests.
	l := New(Limits{ConnBytesPerSec: int64(proto.Size(req)) * 5 / 2}, Options{Now: func() time.Time { return now }})
	fs := &fakeStream{reqs: []*storagepb.AppendRowsRequest{req, req, req, req}}
	var recvd []error
	err := l.StreamServerInterceptor()(nil, fs, &grpc.StreamServerInfo{FullMethod: storagepb.BigQueryWrite_AppendRows_FullMethodName},
		func(srv any, ss grpc.ServerStream) error {
			for i := 0; i < 4; i++ {
				var m storagepb.AppendRowsRequest
				err := ss.RecvMsg(&m)
				recvd = append(recvd, err)
				if err != nil {
					return err
				}
			}
			return nil
		})
	if len(recvd) != 3 || recvd[0] != nil || recvd[1] != nil {
		t.Fatalf("receives: %v", recvd)
	}
	if s, _ := status.FromError(err); s.Code() != codes.ResourceExhausted || !strings.HasPrefix(s.Message(), AppendRowsThroughputPrefix) ||
		!strings.HasSuffix(s.Message(), "Entity: projects/p/datasets/d/tables/t/_default") {
		t.Fatalf("connection ended with %v", err)
	}
}

func TestActiveStreamsFromCounter(t *testing.T) {
	engine := map[string]int{"p": 1}
	l := New(Limits{MaxActiveStreams: 2}, Options{Count: func(p string) int { return engine[p] }})
	table := "projects/p/datasets/d/tables/t"
	create := func() error {
		_, err := unary(l, &storagepb.CreateWriteStreamRequest{Parent: table}, &storagepb.WriteStream{Name: table + "/streams/x"}, nil)
		if err == nil {
			engine["p"]++
		}
		return err
	}
	if err := create(); err != nil {
		t.Fatal(err)
	}
	if err := create(); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("third stream with the engine counting 2: %v", err)
	}
	engine["p"] = 0 // finalized or expired, as the engine sees it
	if err := create(); err != nil {
		t.Fatal(err)
	}
}

func TestCreateStreamRateDelay(t *testing.T) {
	l := New(Limits{CreateStreamRate: 1000, CreateStreamBurst: 1, CreateStreamDelay: true}, Options{})
	req := &storagepb.CreateWriteStreamRequest{Parent: "projects/p/datasets/d/tables/t"}
	for i := 0; i < 3; i++ {
		if _, err := unary(l, req, &storagepb.WriteStream{}, nil); err != nil {
			t.Fatalf("call %d in delay mode: %v", i, err)
		}
	}
	if n := testutil.ToFloat64(l.delayed); n < 1 {
		t.Fatalf("%v calls delayed, want at least 1 (burst 1)", n)
	}
	// A caller that gives up while held gets its context's error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l = New(Limits{CreateStreamRate: 1e-6, CreateStreamBurst: 1, CreateStreamDelay: true}, Options{})
	call := func() error {
		_, err := l.UnaryServerInterceptor()(ctx, req, &grpc.UnaryServerInfo{}, func(context.Context, any) (any, error) { return &storagepb.WriteStream{}, nil })
		return err
	}
	if err := call(); err != nil {
		t.Fatal(err)
	}
	if err := call(); status.Code(err) != codes.Canceled {
		t.Fatalf("held call with a cancelled context: %v", err)
	}
}
