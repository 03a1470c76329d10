package recvbudget

import (
	"context"
	"sync/atomic"

	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/stats"
)

// StatsHandler returns the grpc.StatsHandler that ties RPCs to their
// connection and returns admissions as messages are decoded: at once for
// every method but those listed in handled, whose handlers call Done once
// a message's memory is accounted for elsewhere (or, failing that, when
// the next message arrives or the RPC ends).
func (g *Gate) StatsHandler(handled ...string) stats.Handler {
	h := &statsHandler{g: g, handled: map[string]bool{}}
	for _, m := range handled {
		h.handled[m] = true
	}
	return h
}

type statsHandler struct {
	g       *Gate
	handled map[string]bool
}

func (h *statsHandler) TagConn(ctx context.Context, info *stats.ConnTagInfo) context.Context {
	if c := h.g.lookup(info.LocalAddr, info.RemoteAddr); c != nil {
		return context.WithValue(ctx, connCtxKey, c)
	}
	return ctx
}

func (h *statsHandler) HandleConn(context.Context, stats.ConnStats) {}

func (h *statsHandler) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	c, _ := ctx.Value(connCtxKey).(*Conn)
	if c == nil {
		return ctx
	}
	return context.WithValue(ctx, rpcCtxKey, &rpcTag{c: c, handled: h.handled[info.FullMethodName], last: -1})
}

func (h *statsHandler) HandleRPC(ctx context.Context, s stats.RPCStats) {
	t, _ := ctx.Value(rpcCtxKey).(*rpcTag)
	if t == nil || s.IsClient() {
		return
	}
	switch s := s.(type) {
	case *stats.InPayload:
		if !t.handled {
			t.c.done(int64(s.CompressedLength))
			return
		}
		t.mu.Lock()
		prev := t.last
		t.last = s.CompressedLength
		t.mu.Unlock()
		if prev >= 0 {
			t.c.done(int64(prev))
		}
	case *stats.End:
		if !t.done() && ctx.Err() != nil {
			// A cancelled RPC's handler is done: it may be the one of a
			// reset stream whose message it never got (orphan.go).
			t.c.endCancelled()
		}
	}
}

// Pool is a mem.BufferPool that counts the bytes of the buffers it has
// handed out and not yet taken back: with experimental.BufferPool, the
// frames gRPC has received and not yet decoded (and its temporary
// buffers). It only measures; the Gate bounds.
type Pool struct {
	inner      mem.BufferPool
	used, high atomic.Int64
}

// NewPool returns a Pool over mem.DefaultBufferPool.
func NewPool() *Pool { return &Pool{inner: mem.DefaultBufferPool()} }

// Get implements mem.BufferPool.
func (p *Pool) Get(n int) *[]byte {
	b := p.inner.Get(n)
	u := p.used.Add(int64(cap(*b)))
	for {
		h := p.high.Load()
		if u <= h || p.high.CompareAndSwap(h, u) {
			break
		}
	}
	return b
}

// Put implements mem.BufferPool.
func (p *Pool) Put(b *[]byte) {
	p.used.Add(-int64(cap(*b)))
	p.inner.Put(b)
}

// InUse is the bytes handed out now.
func (p *Pool) InUse() int64 { return p.used.Load() }

// HighWater is the most InUse has been.
func (p *Pool) HighWater() int64 { return p.high.Load() }
