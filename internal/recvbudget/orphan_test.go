package recvbudget

import (
	"context"
	"testing"

	"google.golang.org/grpc/stats"
)

// TestResetWhileDecoding: a client that resets a stream whose large
// message it has sent whole, while gRPC's handler decodes it (the
// codec's copy and the decoded request: 2x its size, alive until the
// handler is done with it), does not get its admission back before the
// handler is done. Before, the RST_STREAM returned it at once, so a
// client could send a 16 MiB message, reset, and send the next while the
// first was still being decoded outside the budget. The admission goes
// when the handler is done with the message (Done, by length), when an
// RPC of the connection ends cancelled (the reset stream's handler
// returning without Done: it never got the message), at the latest
// Options.Grace after the reset, or when the connection closes.
func TestResetWhileDecoding(t *testing.T) {
	const n = 2 << 20
	rst := frame(frameRSTStream, 0, 1, []byte{0, 0, 0, errCodeCancel})
	open := func(clock *fakeClock, port int) (*Gate, *Conn) {
		g := NewWithOptions(1<<30, 16<<20, Options{InitialWindow: 1<<31 - 1, AfterFunc: clock.AfterFunc})
		c := g.Wrap(newFake(append(clientStreams(n, true, 1), rst...), port))
		readAll(t, c)
		return g, c
	}

	// The handler is done with the message after the reset.
	clock := &fakeClock{}
	g, c := open(clock, 81)
	if got := g.InUse(); got != CostFactor*n {
		t.Fatalf("in use %d after the client reset a stream whose message is being decoded, want %d", got, CostFactor*n)
	}
	c.done(n)
	if got := g.InUse(); got != 0 {
		t.Fatalf("in use %d once the handler is done, want 0", got)
	}
	if p := clock.pending(); len(p) != 0 {
		t.Fatalf("%d timers left running", len(p))
	}
	c.Close()

	// The reset stream's RPC ends, cancelled, without the message.
	clock = &fakeClock{}
	g, c = open(clock, 82)
	ctx, cancel := context.WithCancel(context.Background())
	h := g.StatsHandler()
	tag := &rpcTag{c: c, last: -1}
	rctx := context.WithValue(ctx, rpcCtxKey, tag)
	cancel()
	h.HandleRPC(rctx, &statsEnd)
	if got := g.InUse(); got != 0 {
		t.Fatalf("in use %d once a cancelled RPC of the connection ended, want 0", got)
	}
	c.Close()

	// Nothing claims it: the grace.
	clock = &fakeClock{}
	g, c = open(clock, 83)
	p := clock.pending()
	if len(p) != 1 {
		t.Fatalf("%d timers, want 1", len(p))
	}
	p[0].fire()
	if got := g.InUse(); got != 0 {
		t.Fatalf("in use %d after the grace, want 0", got)
	}
	c.Close()

	// The connection closes.
	clock = &fakeClock{}
	g, c = open(clock, 84)
	c.Close()
	if got := g.InUse(); got != 0 {
		t.Fatalf("in use %d after the connection closed, want 0", got)
	}
	if p := clock.pending(); len(p) != 0 {
		t.Fatalf("%d timers left running after close", len(p))
	}
}

var statsEnd = stats.End{}
