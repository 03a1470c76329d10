package writeapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"testing"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"google.golang.org/grpc"

	"github.com/bqstore/bqstore/internal/storage"
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

// countingTables finds no table and counts lookups.
type countingTables struct{ lookups int }

func (ct *countingTables) LookupTable(ctx context.Context, project, dataset, table string) (TableInfo, error) {
	ct.lookups++
	return TableInfo{}, fmt.Errorf("table %s: %w", table, storage.ErrTableNotFound)
}

// TestConnStreamsEvicted: one connection naming ever more streams keeps
// state for at most MaxConnStreams of them, the least recently named going
// first (issue 12, finding 11: 200k streams on one connection grew to
// 1.1 GB).
func TestConnStreamsEvicted(t *testing.T) {
	tables := &countingTables{}
	s := New(tables, nil, nil, Options{MaxConnStreams: 8})
	c := newConn(t.Context(), s)
	name := func(i int) string { return fmt.Sprintf("projects/p/datasets/d/tables/t%d/streams/_default", i) }
	for i := range 10000 {
		c.cur = c.stream(name(i))
		if len(c.streams) > 8 || c.lru.Len() != len(c.streams) {
			t.Fatalf("after %d streams: %d kept (lru %d), want at most 8", i+1, len(c.streams), c.lru.Len())
		}
		if c.cur.name != name(i) {
			t.Fatalf("current stream %s, want %s", c.cur.name, name(i))
		}
	}
	// The most recent are still known (no lookup); an evicted one is
	// resolved again.
	n := tables.lookups
	c.stream(name(9999))
	c.stream(name(9992))
	if tables.lookups != n {
		t.Fatalf("naming a recent stream looked it up again")
	}
	c.stream(name(0))
	if tables.lookups != n+1 {
		t.Fatalf("naming an evicted stream: %d lookups, want 1", tables.lookups-n)
	}
}
