// Package recvbudget bounds the memory of gRPC messages being received,
// across all connections, by admitting each large message against a byte
// budget before its bytes are let in.
//
// # Why below gRPC
//
// grpc-go buffers a message whole before the handler sees it, and lets it
// in as soon as the handler asks for the next message: after reading the
// 5-byte length prefix it raises the stream's flow-control window to the
// message's length, and the client sends all of it. Nothing between the
// prefix and the body can be hooked from above (interceptors, codecs and
// stats handlers run once the message is in), so N connections each
// sending a 15 MiB AppendRows held N x 15 MiB (three times that with the
// codec's copy and the decoded message) whatever the in-flight budget.
//
// # How
//
// Each server connection is wrapped (Conn, below TLS when TLS is on). The
// wrapper reads the HTTP/2 frames that pass through it without changing
// them on the way in, following each stream's gRPC length prefixes. When
// a message larger than the stream window (Threshold) starts, it asks the
// Gate for the message's cost (3x its length: the transport's frames, the
// codec's contiguous copy and the decoded message) and, until the Gate
// grants it, holds back the WINDOW_UPDATE frames gRPC writes for that
// stream; it sends them, summed, once granted. A client that keeps to
// flow control can therefore push at most one window (1 MiB) of a message
// that is not admitted, and the sum of admitted messages is at most the
// Gate's budget. Neither the connection's reader nor its writer ever
// waits for the Gate: other streams, pings and responses flow as before.
//
// The window is enforced here, not by gRPC: once the handler asks for a
// message, grpc-go accepts data up to its length on the stream whether or
// not the WINDOW_UPDATE was sent. The wrapper keeps each stream's window
// as the client sees it (the initial window, plus the increments let
// out, less the DATA received) and, when a DATA frame exceeds it, closes
// the connection (GOAWAY FLOW_CONTROL_ERROR, RFC 9113 section 6.9.1)
// without handing gRPC that frame (TestReceiveBudgetWindowIgnored).
//
// An admission is returned when the message has been handled (Done, by the
// AppendRows handler once its rows hold the engine's in-flight budget or
// have been answered; for other methods as soon as the message is
// decoded), when its stream ends, or when its connection closes. A
// stream reset while its message, received whole, is being handled
// leaves the admission until the handler is done with it (orphan.go).
//
// # Deadlock freedom
//
// The Gate is FIFO. A granted message completes without needing anything
// else from the Gate: its window is open, the connection's reader never
// blocks on the Gate, and its handler, before it can return the
// admission, waits only on the engine's in-flight budget, which is
// returned by WAL syncs and never by receiving. So every admission is
// returned in finite time once its client sends, and waiters are granted
// in order.
//
// A message is admitted whole at its prefix, so a client could announce
// 16 MiB, send nothing more and hold 48 MiB of the budget with 5 bytes
// sent (TestReceiveBudgetStalledPrefix). Hence the stall limit: once an
// admitted message's window lets its client send all of it (from then
// on only the client can make it late), it must arrive within
// Options.Grace plus its remaining bytes at Options.MinRate. Otherwise
// its admission is returned and its stream reset: the client is sent
// RST_STREAM (CANCEL), and gRPC is handed one at the next incoming frame
// boundary, as if the client had sent it, so that it drops the stream,
// its buffers and any bytes of it still to come (the reader, if it waits
// for the stalled client, is woken by a read deadline in the past, which
// Read hides from gRPC). A client that stalls inside a frame never lets
// the reader reach that boundary, while gRPC keeps what it received of
// the message: its connection is cut if the RST_STREAM has not reached
// gRPC Options.Grace after the stall. Honest uploads are not slowed: they are still
// admitted whole and sent at full speed; the limit ends only a message
// that arrives slower than MinRate once past the grace.
//
// # Streams across connections
//
// A stream's first window (Options.InitialWindow) is granted by SETTINGS
// the moment the client opens it, and gRPC buffers what arrives in it
// until the handler reads: each open stream lets its client push a window
// ahead of its handler, outside the budget. gRPC caps the streams of one
// connection (grpc.MaxConcurrentStreams), not those of many, so the Gate
// caps the streams open across its connections (Options.MaxStreams): a
// stream the client opens at the cap is refused (RST_STREAM
// REFUSED_STREAM to the client, and to gRPC right after the stream's
// header block, before any of its DATA). A stream counts from its
// HEADERS until it ends: reset by either side, answered with its
// trailers, stalled, or its connection closed. Hence the invariant, the
// bytes gRPC holds of messages not yet handed to their handlers,
// whatever the clients do:
//
//	transport bytes <= MaxStreams x InitialWindow + max/CostFactor
//
// (the second term: the admitted messages' bytes beyond their windows),
// plus a frame in the reader of each connection; with the server's
// defaults 1024 x 1 MiB + 32 MiB (TestReceiveBudgetManyConnections in
// internal/e2e checks it with many connections). A limit on connections
// alone bounds nothing here: any one of them may open a hundred streams.
//
// Rejected alternatives: a blocking mem.BufferPool (experimental.
// BufferPool) sees only 16 KB frame buffers, without their connection or
// message, so blocking there deadlocks as soon as partial messages fill
// the budget; reserving the largest message before each Recv parks the
// budget on idle connections; admitting a message in parts as its bytes
// arrive deadlocks the same way once partly admitted messages fill the
// budget, and a client can still stall one byte short of each part.
package recvbudget

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/credentials"
)

// Threshold is the message length above which a message must be admitted:
// the server's initial stream window (grpc.InitialWindowSize). A smaller
// message arrives within the window whether admitted or not.
const Threshold = 1 << 20

// CostFactor is what a message costs while it is received and decoded, in
// multiples of its length: the transport's frame buffers, the codec's
// contiguous copy and the decoded message.
const CostFactor = 3

// Defaults of Options.
const (
	// DefaultGrace and DefaultMinRate: a 16 MiB message has 26 s to
	// arrive once its client may send all of it.
	DefaultGrace   = 10 * time.Second
	DefaultMinRate = 1 << 20
)

// Options tune a Gate; the zero value is the defaults.
type Options struct {
	// InitialWindow is the stream flow-control window the server
	// advertises (grpc.InitialWindowSize; default Threshold). A client
	// that sends more on a stream than this plus the WINDOW_UPDATEs let
	// out to it has its connection closed (GOAWAY FLOW_CONTROL_ERROR).
	InitialWindow int64
	// Grace and MinRate bound how long an admitted message may take to
	// arrive once its stream's window lets its client send all of it:
	// Grace plus its remaining bytes at MinRate bytes per second
	// (defaults DefaultGrace, DefaultMinRate). Past that its stream is
	// reset (RST_STREAM CANCEL, to the client and to gRPC) and its
	// admission returned.
	Grace   time.Duration
	MinRate int64
	// MaxStreams bounds the streams open at once across every connection
	// of the Gate (0: no bound). A stream the client opens beyond it is
	// refused: the client is sent RST_STREAM (REFUSED_STREAM), and gRPC
	// is handed one right after the stream's headers, as if the client
	// had sent it, so that it drops the stream before any of its DATA.
	// See "Streams across connections" in the package comment.
	MaxStreams int64
	// AfterFunc starts the stall timers (default time.AfterFunc; tests
	// inject a clock).
	AfterFunc func(time.Duration, func()) Timer
}

// Timer is a stall timer (*time.Timer).
type Timer interface{ Stop() bool }

// Gate is the budget of messages being received (FIFO).
type Gate struct {
	max    int64
	maxMsg int64 // the server's receive limit
	opts   Options

	stalls     atomic.Int64 // streams reset because their message stalled
	violations atomic.Int64 // connections closed for a flow-control violation
	streams    atomic.Int64 // streams open, across connections (at most opts.MaxStreams)
	refused    atomic.Int64 // streams refused at opts.MaxStreams

	mu struct {
		sync.Mutex
		used    int64
		high    int64 // high-water mark of used
		waiters []*admission
		conns   map[string]*Conn // by local+remote address, for Stats
	}
}

// New returns a Gate of max bytes for a server whose receive limit is
// maxMsg (grpc.MaxRecvMsgSize): gRPC refuses a longer message from its
// prefix, unread, so it is not admitted.
func New(max int64, maxMsg int) *Gate { return NewWithOptions(max, maxMsg, Options{}) }

// NewWithOptions is New with Options.
func NewWithOptions(max int64, maxMsg int, o Options) *Gate {
	if o.InitialWindow <= 0 {
		o.InitialWindow = Threshold
	}
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	if o.MinRate <= 0 {
		o.MinRate = DefaultMinRate
	}
	if o.AfterFunc == nil {
		o.AfterFunc = func(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
	}
	g := &Gate{max: max, maxMsg: int64(maxMsg), opts: o}
	g.mu.conns = make(map[string]*Conn)
	return g
}

// Stalls is the number of streams reset because their admitted message
// did not arrive in time.
func (g *Gate) Stalls() int64 { return g.stalls.Load() }

// Violations is the number of connections closed because their client
// sent more than the flow-control window let it.
func (g *Gate) Violations() int64 { return g.violations.Load() }

// OpenStreams is the number of streams open now, across connections.
func (g *Gate) OpenStreams() int64 { return g.streams.Load() }

// RefusedStreams is the number of streams refused because
// Options.MaxStreams were open.
func (g *Gate) RefusedStreams() int64 { return g.refused.Load() }

// openStream counts a stream the client opens; it reports false, counting
// nothing, when Options.MaxStreams are open.
func (g *Gate) openStream() bool {
	for {
		n := g.streams.Load()
		if g.opts.MaxStreams > 0 && n >= g.opts.MaxStreams {
			g.refused.Add(1)
			return false
		}
		if g.streams.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// Max is the Gate's budget in bytes.
func (g *Gate) Max() int64 { return g.max }

// InUse is the sum of admitted messages' costs now.
func (g *Gate) InUse() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.mu.used
}

// HighWater is the largest InUse has been.
func (g *Gate) HighWater() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.mu.high
}

// Waiting is the number of messages waiting to be admitted.
func (g *Gate) Waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.mu.waiters)
}

// admission is one large message's claim on the Gate. Its fields other
// than cost and length are guarded by its connection's mu.
type admission struct {
	c      *Conn
	stream uint32
	length int64 // the message's length (its gRPC prefix)
	cost   int64 // at most Gate.max
	// granted is set by the Gate (under Gate.mu, then published to the
	// connection under Conn.mu by grant).
	granted bool
	// withheld sums the WINDOW_UPDATE increments held back for the
	// stream while this admission waits.
	withheld uint32
	returned bool // returned to the Gate (guarded by Gate.mu)
	received bool // the message has been received whole
	// timer, once the client may send all of the message, resets its
	// stream if it has not arrived in time (nil until then; stopped when
	// it arrives or the admission is returned).
	timer Timer
}

// acquire grants a at once or queues it; it reports whether a was
// granted.
func (g *Gate) acquire(a *admission) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.mu.waiters) == 0 && g.mu.used+a.cost <= g.max {
		g.takeLocked(a)
		return true
	}
	g.mu.waiters = append(g.mu.waiters, a)
	return false
}

// REQUIRES: g.mu held.
func (g *Gate) takeLocked(a *admission) {
	a.granted = true
	g.mu.used += a.cost
	g.mu.high = max(g.mu.high, g.mu.used)
}

// release returns a to the Gate (granted or still waiting) and grants the
// waiters that now fit, in order.
func (g *Gate) release(a *admission) {
	g.mu.Lock()
	if a.returned {
		g.mu.Unlock()
		return
	}
	a.returned = true
	if a.granted {
		g.mu.used -= a.cost
	} else {
		for i, w := range g.mu.waiters {
			if w == a {
				g.mu.waiters = append(g.mu.waiters[:i], g.mu.waiters[i+1:]...)
				break
			}
		}
	}
	var granted []*admission
	for len(g.mu.waiters) > 0 && g.mu.used+g.mu.waiters[0].cost <= g.max {
		w := g.mu.waiters[0]
		g.mu.waiters = g.mu.waiters[1:]
		g.takeLocked(w)
		granted = append(granted, w)
	}
	g.mu.Unlock()
	for _, w := range granted {
		w.c.grant(w)
	}
}

func connKey(c net.Conn) string {
	return c.LocalAddr().String() + "|" + c.RemoteAddr().String()
}

func (g *Gate) register(c *Conn) {
	g.mu.Lock()
	g.mu.conns[connKey(c)] = c
	g.mu.Unlock()
}

func (g *Gate) unregister(c *Conn) {
	g.mu.Lock()
	if g.mu.conns[connKey(c)] == c {
		delete(g.mu.conns, connKey(c))
	}
	g.mu.Unlock()
}

func (g *Gate) lookup(local, remote net.Addr) *Conn {
	if local == nil || remote == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.mu.conns[local.String()+"|"+remote.String()]
}

// Listener wraps every accepted connection (for servers without TLS).
func (g *Gate) Listener(l net.Listener) net.Listener { return &listener{Listener: l, g: g} }

type listener struct {
	net.Listener
	g *Gate
}

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return l.g.Wrap(c), nil
}

type ctxKey int

const (
	connCtxKey ctxKey = iota
	rpcCtxKey
)

// rpcTag is what the stats handler keeps for one RPC.
type rpcTag struct {
	c       *Conn
	handled bool // Done is the handler's to call (AppendRows)
	mu      sync.Mutex
	last    int // length of the last message received, not yet Done
}

// Done tells the Gate that the message last received on ctx's RPC has
// been handled: its memory is accounted elsewhere or gone. For RPCs
// registered with HandledBy only; a no-op otherwise.
func Done(ctx context.Context) {
	t, _ := ctx.Value(rpcCtxKey).(*rpcTag)
	if t == nil || t.c == nil {
		return
	}
	t.done()
}

// done returns the admission of the message last received on t's RPC,
// not yet Done; it reports whether there was one.
func (t *rpcTag) done() bool {
	t.mu.Lock()
	n := t.last
	t.last = -1
	t.mu.Unlock()
	return n >= 0 && t.c.done(int64(n))
}

// Creds wraps the connections TLS credentials hand to gRPC, so that the
// Gate follows the decrypted frames.
func (g *Gate) Creds(inner credentials.TransportCredentials) credentials.TransportCredentials {
	return &creds{TransportCredentials: inner, g: g}
}

type creds struct {
	credentials.TransportCredentials
	g *Gate
}

func (c *creds) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, ai, err := c.TransportCredentials.ServerHandshake(raw)
	if err != nil {
		return conn, ai, err
	}
	return c.g.Wrap(conn), ai, nil
}

func (c *creds) Clone() credentials.TransportCredentials {
	return &creds{TransportCredentials: c.TransportCredentials.Clone(), g: c.g}
}
