package writeapi

import (
	"context"
	"errors"
	"io"
	"runtime"
	"testing"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"google.golang.org/grpc"
)

// fakeAppendStream is an AppendRows server stream driven by the test: Recv
// returns the requests of recv in order (io.EOF once it is closed), and
// Send blocks until sendGate is closed.
type fakeAppendStream struct {
	grpc.ServerStream
	ctx      context.Context
	recv     chan *storagepb.AppendRowsRequest
	sendGate chan struct{}
	sendErr  error
	// onRecv, when set, runs at the start of the n-th Recv (from 1).
	onRecv func(n int)
	nRecv  int
}

func (f *fakeAppendStream) Context() context.Context { return f.ctx }

func (f *fakeAppendStream) Recv() (*storagepb.AppendRowsRequest, error) {
	f.nRecv++
	if f.onRecv != nil {
		f.onRecv(f.nRecv)
	}
	r, ok := <-f.recv
	if !ok {
		return nil, io.EOF
	}
	return r, nil
}

func (f *fakeAppendStream) Send(*storagepb.AppendRowsResponse) error {
	<-f.sendGate
	return f.sendErr
}

// TestUnansweredCountedOnDrop: a request received after the client went
// away while the response queue is full must not stay counted as
// unanswered, or a graceful shutdown waits for it until its deadline
// (issue 11, finding 10).
func TestUnansweredCountedOnDrop(t *testing.T) {
	s := New(nil, nil, nil, Options{MaxInflightRequests: 1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := &fakeAppendStream{
		ctx:      ctx,
		recv:     make(chan *storagepb.AppendRowsRequest),
		sendGate: make(chan struct{}),
		sendErr:  errors.New("client gone"),
		// The client goes away when the handler asks for the third
		// request, that is once the second one is queued.
		onRecv: func(n int) {
			if n == 3 {
				cancel()
			}
		},
	}
	done := make(chan error, 1)
	go func() { done <- s.AppendRows(f) }()
	// Requests without write_stream are answered in-band without touching
	// the engine. The first one occupies the sender (blocked in Send), the
	// second fills the queue.
	f.recv <- &storagepb.AppendRowsRequest{}
	f.recv <- &storagepb.AppendRowsRequest{}
	// The third arrives as the client goes away: the queue is full.
	f.recv <- &storagepb.AppendRowsRequest{}
	for s.unanswered.Load() < 3 {
		// The handler counts the third request before queueing it.
		runtime.Gosched()
	}
	close(f.sendGate)
	close(f.recv)
	<-done
	if n := s.unanswered.Load(); n != 0 {
		t.Fatalf("unanswered = %d after the connection ended, want 0 (Idle would never report true)", n)
	}
}
