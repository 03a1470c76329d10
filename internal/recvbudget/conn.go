package recvbudget

import (
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// HTTP/2 frame types, flags and error codes the wrapper uses (RFC 9113).
const (
	frameData         = 0x0
	frameHeaders      = 0x1
	frameRSTStream    = 0x3
	framePushPromise  = 0x5
	frameGoAway       = 0x7
	frameWindowUpdate = 0x8
	frameContinuation = 0x9

	flagEndStream  = 0x1
	flagEndHeaders = 0x4
	flagPadded     = 0x8

	errCodeFlowControl = 0x3
	errCodeRefused     = 0x7
	errCodeCancel      = 0x8

	frameHeaderLen = 9
	windowFrameLen = frameHeaderLen + 4
	clientPreface  = len("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
)

// ErrFlowControl is what Read returns once the client sent more on a
// stream than its flow-control window (the connection is closed).
var ErrFlowControl = errors.New("recvbudget: client exceeded a stream's flow-control window")

// Conn is a server connection whose large gRPC messages are admitted by a
// Gate (see the package comment). Read is called by gRPC's reader
// goroutine only; Write by its writer and by the connection's injector.
//
// Lock order: wmu, then mu, then Gate.mu.
type Conn struct {
	net.Conn
	g      *Gate
	maxMsg int64

	// Owned by the reading goroutine.
	in     inParser
	inInj  []byte // injected frames being returned to gRPC
	inRest []byte // bytes read, not yet returned (they follow an injection point)
	inErr  error  // the read error to return after inRest
	failed error  // the connection failed: every Read returns it

	wmu sync.Mutex // serializes writes to Conn; guards out
	out outParser

	mu struct {
		sync.Mutex
		streams   map[uint32]*streamState
		inject    []byte // frames to send at the next outgoing frame boundary
		injecting bool   // an injector goroutine is running
		// injectIn: RST_STREAM frames for gRPC's reader, to be returned at
		// the next incoming frame boundary.
		injectIn []byte
		// orphans are admissions of messages received whole on streams
		// reset since (by the client, or a stall) and not yet Done:
		// gRPC may still be handing them to their handlers (orphan.go).
		orphans []*admission
		// cut, while an RST_STREAM of a stall has not reached gRPC, cuts
		// the connection if it still has not after Options.Grace: the
		// client stalled inside a frame or a header block, where none
		// can be injected, and gRPC holds its stream's bytes outside the
		// budget (TestStallMidFrame). cutGen tells a stale firing.
		cut    Timer
		cutGen uint64
		closed bool
	}
	hasInject   atomic.Bool    // mu.inject is not empty (read without mu by the writer)
	hasInjectIn atomic.Bool    // mu.injectIn is not empty (read without mu by the reader)
	woken       atomic.Bool    // a read deadline was set to wake the reader (set and cleared under mu)
	wg          sync.WaitGroup // the injector goroutine and stall timers' functions
	closeOnce   sync.Once
	closeErr    error
}

// streamState is one stream's gRPC framing (written by the reader) and
// its admissions. Guarded by Conn.mu.
type streamState struct {
	pfx   [5]byte
	pfxN  int
	left  int64        // bytes of the current message still to come
	cur   *admission   // the current message's admission (nil if small)
	adms  []*admission // not yet done, in arrival order
	await *admission   // the last admission while its window is closed
	// window is what the client may still send on the stream: the
	// initial window plus the increments let out, less the DATA
	// received (RFC 9113 section 6.9.1).
	window int64
}

// Wrap wraps a server connection.
func (g *Gate) Wrap(c net.Conn) *Conn {
	w := &Conn{Conn: c, g: g, maxMsg: g.maxMsg}
	w.in.preface = clientPreface
	w.mu.streams = make(map[uint32]*streamState)
	g.register(w)
	return w
}

// Read reads from the connection and follows the frames read. At an
// incoming frame boundary it returns the RST_STREAM frames of stalled
// streams (stalled) to gRPC as if the client had sent them.
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		if len(c.inInj) == 0 && c.hasInjectIn.Load() && c.in.atBoundary() {
			c.mu.Lock()
			c.inInj = append(c.inInj, c.mu.injectIn...)
			c.mu.injectIn = nil
			c.hasInjectIn.Store(false)
			c.stopCutLocked()
			c.mu.Unlock()
		}
		if len(c.inInj) > 0 {
			n := copy(p, c.inInj)
			c.inInj = c.inInj[n:]
			return n, nil
		}
		if c.failed != nil {
			return 0, c.failed
		}
		if len(c.inRest) > 0 {
			n := copy(p, c.inRest)
			c.inRest = c.inRest[n:]
			err := error(nil)
			if len(c.inRest) == 0 {
				err, c.inErr = c.inErr, nil
			}
			if k, err := c.follow(p, n, err); k > 0 || err != nil {
				return k, err
			}
			continue // an injection comes first
		}
		if err := c.inErr; err != nil {
			c.inErr = nil
			return 0, err
		}
		n, err := c.Conn.Read(p)
		woke := false
		if c.woken.Load() {
			c.mu.Lock()
			if c.woken.Load() {
				_ = c.Conn.SetReadDeadline(time.Time{})
				c.woken.Store(false)
				woke = true
			}
			c.mu.Unlock()
		}
		if woke && isTimeout(err) {
			// Our own wake-up (stalled), not the caller's deadline.
			if n == 0 {
				continue
			}
			err = nil
		}
		if n == 0 {
			return 0, err
		}
		if k, err := c.follow(p, n, err); k > 0 || err != nil {
			return k, err
		}
		// An injection comes first.
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return err != nil && errors.As(err, &ne) && ne.Timeout()
}

// follow parses p[:n], just read, and returns what of it gRPC may have
// now: up to an injection point (the rest is kept for the next Read) or
// up to a flow-control violation (the connection then fails).
func (c *Conn) follow(p []byte, n int, err error) (int, error) {
	k, violated := c.in.parse(c, p[:n])
	if violated {
		c.fail()
		if k == 0 {
			return 0, c.failed
		}
		return k, nil
	}
	if k < n {
		rest := make([]byte, 0, n-k+len(c.inRest))
		c.inRest = append(append(rest, p[k:n]...), c.inRest...)
		c.inErr, err = err, nil
	}
	return k, err
}

// fail closes the connection after a flow-control violation, with a
// GOAWAY (FLOW_CONTROL_ERROR) if gRPC's writer is at a frame boundary.
// Called by the reader.
func (c *Conn) fail() {
	c.failed = ErrFlowControl
	c.g.violations.Add(1)
	// A writer blocked on a client that does not read gives up wmu within
	// the deadline; the connection is being closed anyway.
	_ = c.Conn.SetWriteDeadline(time.Now().Add(time.Second))
	c.wmu.Lock()
	if c.out.atBoundary() {
		var f [frameHeaderLen + 8]byte
		binary.BigEndian.PutUint32(f[0:4], 8<<8|frameGoAway)
		binary.BigEndian.PutUint32(f[9:13], c.in.maxSid)
		binary.BigEndian.PutUint32(f[13:17], errCodeFlowControl)
		_, _ = c.Conn.Write(f[:])
	}
	c.wmu.Unlock()
	c.Close()
}

// Close closes the connection and returns its admissions.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.closeErr = c.Conn.Close()
		c.mu.Lock()
		c.mu.closed = true
		rel := c.mu.orphans
		c.mu.orphans = nil
		for _, st := range c.mu.streams {
			rel = append(rel, st.adms...)
		}
		c.g.streams.Add(-int64(len(c.mu.streams)))
		c.mu.streams = nil
		c.mu.inject = nil
		c.mu.injectIn = nil
		c.stopTimersLocked(rel)
		c.stopCutLocked()
		c.mu.Unlock()
		for _, a := range rel {
			c.g.release(a)
		}
		c.g.unregister(c)
		c.wg.Wait()
	})
	return c.closeErr
}

// REQUIRES: c.mu held.
func (c *Conn) stopTimersLocked(adms []*admission) {
	for _, a := range adms {
		if a.timer != nil {
			a.timer.Stop()
			a.timer = nil
		}
	}
}

// REQUIRES: c.mu held.
func (c *Conn) stopCutLocked() {
	if c.mu.cut != nil {
		c.mu.cut.Stop()
		c.mu.cut = nil
	}
}

// cutIfStuck closes the connection under gRPC if the RST_STREAMs of the
// stall that started cut generation gen have not reached gRPC (cut is
// stopped when they do); gRPC's reader then fails and closes the
// connection (Close returns its admissions).
func (c *Conn) cutIfStuck(gen uint64) {
	c.mu.Lock()
	if c.mu.closed || c.mu.cut == nil || c.mu.cutGen != gen {
		c.mu.Unlock()
		return
	}
	c.mu.cut = nil
	c.wg.Add(1) // Close, once it has set closed, waits for the rest
	defer c.wg.Done()
	c.mu.Unlock()
	_ = c.Conn.Close()
}

// newStream notes a stream the client opened, or refuses it when the
// Gate's streams are at Options.MaxStreams: the client is sent
// RST_STREAM (REFUSED_STREAM) and gRPC is handed one at the next incoming
// frame boundary, which is the end of the stream's header block (the
// reader, which calls newStream, is in it), before any DATA of the
// stream. gRPC still sees the headers, so that its HPACK table stays the
// client's; the handler it may start sees its stream cancelled before
// any message, so the stream was not processed and clients retry it
// (grpc-go and grpc-js once, transparently; then UNAVAILABLE).
func (c *Conn) newStream(id uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return
	}
	if !c.g.openStream() {
		rst := rstStream(id, errCodeRefused)
		c.mu.injectIn = append(c.mu.injectIn, rst[:]...)
		c.hasInjectIn.Store(true)
		c.queueOutLocked(rst[:])
		return
	}
	c.mu.streams[id] = &streamState{window: c.g.opts.InitialWindow}
}

// endStream forgets a stream (reset by either side, or answered with its
// trailers) and returns its admissions, but for those a reset by the
// client leaves orphaned (orphan.go).
func (c *Conn) endStream(id uint32, byClient bool) {
	c.mu.Lock()
	st := c.mu.streams[id]
	var rel []*admission
	if st != nil {
		delete(c.mu.streams, id)
		c.g.streams.Add(-1)
		c.stopTimersLocked(st.adms)
		rel = c.orphanLocked(st.adms, byClient)
	}
	c.mu.Unlock()
	for _, a := range rel {
		c.g.release(a)
	}
}

// dataFrame takes a DATA frame of length n (padding included) from a
// stream's window; it reports false when the window is smaller: the
// client ignored flow control. Frames on streams that ended or never
// opened are gRPC's to drop.
func (c *Conn) dataFrame(id uint32, n uint32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.mu.streams[id]
	if st == nil {
		return true
	}
	if int64(n) > st.window {
		return false
	}
	st.window -= int64(n)
	return true
}

// data follows the gRPC framing of a stream's DATA bytes and asks the
// Gate to admit each large message as it starts.
func (c *Conn) data(id uint32, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.mu.streams[id]
	if st == nil {
		return // ended, or never opened: gRPC refuses it
	}
	// Its window may cover what is left of the message now.
	defer c.clockLocked(st)
	for len(b) > 0 {
		if st.left > 0 {
			k := min(int64(len(b)), st.left)
			st.left -= k
			b = b[k:]
			if st.left == 0 && st.cur != nil {
				st.cur.received = true
				c.stopTimersLocked([]*admission{st.cur})
				st.cur = nil
			}
			continue
		}
		k := copy(st.pfx[st.pfxN:], b)
		st.pfxN += k
		b = b[k:]
		if st.pfxN < len(st.pfx) {
			return
		}
		st.pfxN = 0
		st.left = int64(binary.BigEndian.Uint32(st.pfx[1:]))
		if st.left <= Threshold || st.left > c.maxMsg {
			continue
		}
		a := &admission{c: c, stream: id, length: st.left, cost: min(CostFactor*st.left, c.g.max)}
		st.adms = append(st.adms, a)
		st.cur = a
		if !c.g.acquire(a) {
			st.await = a
		}
		c.clockLocked(st)
	}
}

// windowOut handles a WINDOW_UPDATE of inc for stream id that gRPC
// writes: it reports whether it must be held back (the stream's message
// waits for admission), and holds it; otherwise the stream's window
// grows by inc.
func (c *Conn) windowOut(id uint32, inc uint32) (withheld bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.mu.streams[id]
	if st == nil {
		return false
	}
	if st.await != nil {
		st.await.withheld += inc
		return true
	}
	st.window += int64(inc)
	c.clockLocked(st)
	return false
}

// clockLocked starts the stall timer of the stream's current message
// once it is admitted and the window lets its client send all of it:
// from then on only the client can make it late.
// REQUIRES: c.mu held.
func (c *Conn) clockLocked(st *streamState) {
	a := st.cur
	if a == nil || a.timer != nil || st.await == a || st.window < st.left {
		return
	}
	o := c.g.opts
	d := o.Grace + time.Duration(float64(st.left)/float64(o.MinRate)*float64(time.Second))
	a.timer = o.AfterFunc(d, func() { c.stalled(a) })
}

// stalled resets the stream of admitted message a if a has not arrived
// whole: its admission is returned at once, gRPC is handed an RST_STREAM
// (CANCEL) as if the client had sent it, so that it drops the stream and
// its buffers, and the client is sent one.
func (c *Conn) stalled(a *admission) {
	c.mu.Lock()
	st := c.mu.streams[a.stream]
	if c.mu.closed || st == nil || st.cur != a || a.received {
		c.mu.Unlock()
		return
	}
	// Close, once it has set closed, waits for the rest.
	c.wg.Add(1)
	defer c.wg.Done()
	delete(c.mu.streams, a.stream)
	c.g.streams.Add(-1)
	c.stopTimersLocked(st.adms)
	rst := rstStream(a.stream, errCodeCancel)
	c.mu.injectIn = append(c.mu.injectIn, rst[:]...)
	c.hasInjectIn.Store(true)
	c.queueOutLocked(rst[:])
	if c.mu.cut == nil {
		c.mu.cutGen++
		gen := c.mu.cutGen
		c.mu.cut = c.g.opts.AfterFunc(c.g.opts.Grace, func() { c.cutIfStuck(gen) })
	}
	// Wake the reader if it waits for the client: its Read returns at
	// once and, at a frame boundary, hands gRPC the RST_STREAM.
	c.woken.Store(true)
	_ = c.Conn.SetReadDeadline(time.Unix(1, 0))
	rel := c.orphanLocked(st.adms, true)
	c.mu.Unlock()
	c.g.stalls.Add(1)
	for _, x := range rel {
		c.g.release(x)
	}
}

func rstStream(id uint32, code uint32) [frameHeaderLen + 4]byte {
	var f [frameHeaderLen + 4]byte
	binary.BigEndian.PutUint32(f[0:4], 4<<8|frameRSTStream)
	binary.BigEndian.PutUint32(f[5:9], id)
	binary.BigEndian.PutUint32(f[9:13], code)
	return f
}

// grant opens the window of an admitted message: the increments held
// back are sent by the injector.
func (c *Conn) grant(a *admission) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return
	}
	st := c.mu.streams[a.stream]
	if st == nil || st.await != a {
		return
	}
	st.await = nil
	if a.withheld > 0 {
		var f [windowFrameLen]byte
		binary.BigEndian.PutUint32(f[0:4], 4<<8|frameWindowUpdate) // length 4, type
		binary.BigEndian.PutUint32(f[5:9], a.stream)
		binary.BigEndian.PutUint32(f[9:13], a.withheld)
		st.window += int64(a.withheld)
		a.withheld = 0
		c.queueOutLocked(f[:])
	}
	c.clockLocked(st)
}

// queueOutLocked queues frames f for the client: the injector writes
// them at the next outgoing frame boundary.
// REQUIRES: c.mu held.
func (c *Conn) queueOutLocked(f []byte) {
	c.mu.inject = append(c.mu.inject, f...)
	c.hasInject.Store(true)
	if !c.mu.injecting {
		c.mu.injecting = true
		c.wg.Add(1)
		go c.injectLoop()
	}
}

// injectLoop writes the pending frames when the outgoing byte stream is
// at a frame boundary; otherwise the writer does, at its next boundary.
// Started by queueOutLocked, at most one at a time; Close waits. It stops
// only when it finds nothing pending under mu, where queueOutLocked looks
// at injecting: frames queued while it writes are its to send.
func (c *Conn) injectLoop() {
	defer c.wg.Done()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	for {
		c.mu.Lock()
		f := c.mu.inject
		if len(f) == 0 || !c.out.atBoundary() {
			c.mu.injecting = false
			c.mu.Unlock()
			return
		}
		c.mu.inject = nil
		c.hasInject.Store(false)
		c.mu.Unlock()
		if _, err := c.Conn.Write(f); err != nil {
			c.mu.Lock()
			c.mu.injecting = false
			c.mu.Unlock()
			return
		}
	}
}

// flushInjectLocked writes the pending frames.
// REQUIRES: c.wmu held, the outgoing stream at a frame boundary.
func (c *Conn) flushInjectLocked() error {
	c.mu.Lock()
	f := c.mu.inject
	c.mu.inject = nil
	c.hasInject.Store(false)
	c.mu.Unlock()
	if len(f) == 0 {
		return nil
	}
	_, err := c.Conn.Write(f)
	return err
}

// done returns the admission of a handled message of length n; it
// reports whether it found one.
func (c *Conn) done(n int64) bool {
	if n <= Threshold {
		return false
	}
	var found *admission
	c.mu.Lock()
	for _, st := range c.mu.streams {
		for i, a := range st.adms {
			// Only a message received whole has been handled: another
			// stream's message of the same length may still be arriving.
			if a.length == n && a.received && st.await != a {
				found = a
				st.adms = append(st.adms[:i], st.adms[i+1:]...)
				break
			}
		}
		if found != nil {
			break
		}
	}
	if found == nil {
		found = c.claimOrphanLocked(n)
	}
	c.mu.Unlock()
	if found != nil {
		c.g.release(found)
	}
	return found != nil
}

// Write writes gRPC's outgoing frames, less the WINDOW_UPDATEs held back,
// plus the injected ones at frame boundaries.
func (c *Conn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.out.write(c, p); err != nil {
		return 0, err
	}
	return len(p), nil
}
