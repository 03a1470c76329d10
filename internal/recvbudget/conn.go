package recvbudget

import (
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
)

// HTTP/2 frame types and flags the wrapper looks at (RFC 9113).
const (
	frameData         = 0x0
	frameHeaders      = 0x1
	frameRSTStream    = 0x3
	framePushPromise  = 0x5
	frameWindowUpdate = 0x8
	frameContinuation = 0x9

	flagEndStream  = 0x1
	flagEndHeaders = 0x4
	flagPadded     = 0x8

	frameHeaderLen = 9
	windowFrameLen = frameHeaderLen + 4
	clientPreface  = len("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
)

// Conn is a server connection whose large gRPC messages are admitted by a
// Gate (see the package comment). Read is called by gRPC's reader
// goroutine only; Write by its writer and by the connection's injector.
//
// Lock order: wmu, then mu, then Gate.mu.
type Conn struct {
	net.Conn
	g      *Gate
	maxMsg int64

	in inParser // owned by the reading goroutine

	wmu sync.Mutex // serializes writes to Conn; guards out
	out outParser

	mu struct {
		sync.Mutex
		streams   map[uint32]*streamState
		inject    []byte // WINDOW_UPDATE frames to send at the next frame boundary
		injecting bool   // an injector goroutine is running
		closed    bool
	}
	hasInject atomic.Bool    // mu.inject is not empty (read without mu by the writer)
	wg        sync.WaitGroup // the injector goroutine
	closeOnce sync.Once
	closeErr  error
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
}

// Wrap wraps a server connection.
func (g *Gate) Wrap(c net.Conn) *Conn {
	w := &Conn{Conn: c, g: g, maxMsg: g.maxMsg}
	w.in.preface = clientPreface
	w.mu.streams = make(map[uint32]*streamState)
	g.register(w)
	return w
}

// Read reads from the connection and follows the frames read.
func (c *Conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.in.parse(c, p[:n])
	}
	return n, err
}

// Close closes the connection and returns its admissions.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.closeErr = c.Conn.Close()
		c.mu.Lock()
		c.mu.closed = true
		var rel []*admission
		for _, st := range c.mu.streams {
			rel = append(rel, st.adms...)
		}
		c.mu.streams = nil
		c.mu.inject = nil
		c.mu.Unlock()
		for _, a := range rel {
			c.g.release(a)
		}
		c.g.unregister(c)
		c.wg.Wait()
	})
	return c.closeErr
}

// newStream notes a stream the client opened.
func (c *Conn) newStream(id uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.mu.closed {
		c.mu.streams[id] = &streamState{}
	}
}

// endStream forgets a stream (reset by either side, or answered with its
// trailers) and returns its admissions.
func (c *Conn) endStream(id uint32) {
	c.mu.Lock()
	st := c.mu.streams[id]
	delete(c.mu.streams, id)
	c.mu.Unlock()
	if st != nil {
		for _, a := range st.adms {
			c.g.release(a)
		}
	}
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
	for len(b) > 0 {
		if st.left > 0 {
			k := min(int64(len(b)), st.left)
			st.left -= k
			b = b[k:]
			if st.left == 0 && st.cur != nil {
				st.cur.received = true
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
	}
}

// withhold reports whether a WINDOW_UPDATE of inc for stream id must be
// held back (its message waits for admission), and holds it.
func (c *Conn) withhold(id uint32, inc uint32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.mu.streams[id]
	if st == nil || st.await == nil {
		return false
	}
	st.await.withheld += inc
	return true
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
	if a.withheld == 0 {
		return
	}
	var f [windowFrameLen]byte
	binary.BigEndian.PutUint32(f[0:4], 4<<8|frameWindowUpdate) // length 4, type
	binary.BigEndian.PutUint32(f[5:9], a.stream)
	binary.BigEndian.PutUint32(f[9:13], a.withheld)
	a.withheld = 0
	c.mu.inject = append(c.mu.inject, f[:]...)
	c.hasInject.Store(true)
	if !c.mu.injecting {
		c.mu.injecting = true
		c.wg.Add(1)
		go c.injectLoop()
	}
}

// injectLoop writes the pending WINDOW_UPDATE frames when the outgoing
// byte stream is at a frame boundary; otherwise the writer does, at its
// next boundary. Started by grant, at most one at a time; Close waits. It
// stops only when it finds nothing pending under mu, where grant looks at
// injecting: frames queued while it writes are its to send.
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

// done returns the admission of a handled message of length n.
func (c *Conn) done(n int64) {
	if n <= Threshold {
		return
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
	c.mu.Unlock()
	if found != nil {
		c.g.release(found)
	}
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

// inParser follows the incoming HTTP/2 frames; it never changes them.
type inParser struct {
	preface  int // client preface bytes still to skip
	hdr      [frameHeaderLen]byte
	hn       int
	left     uint32 // payload bytes of the current frame still to come
	typ      byte
	sid      uint32
	padByte  bool   // PADDED DATA: the pad length comes next
	dataLeft uint32 // DATA bytes (of left) before the padding
	maxSid   uint32 // highest stream the client opened
}

func (in *inParser) parse(c *Conn, b []byte) {
	for len(b) > 0 {
		if in.preface > 0 {
			k := min(in.preface, len(b))
			in.preface -= k
			b = b[k:]
			continue
		}
		if in.left == 0 {
			k := copy(in.hdr[in.hn:], b)
			in.hn += k
			b = b[k:]
			if in.hn < frameHeaderLen {
				return
			}
			in.hn = 0
			in.left = uint32(in.hdr[0])<<16 | uint32(in.hdr[1])<<8 | uint32(in.hdr[2])
			in.typ = in.hdr[3]
			flags := in.hdr[4]
			in.sid = binary.BigEndian.Uint32(in.hdr[5:9]) & 0x7fffffff
			switch in.typ {
			case frameHeaders:
				if in.sid > in.maxSid {
					in.maxSid = in.sid
					c.newStream(in.sid)
				}
			case frameRSTStream:
				c.endStream(in.sid)
			case frameData:
				in.padByte = flags&flagPadded != 0
				in.dataLeft = in.left
			}
			continue
		}
		if in.typ != frameData {
			k := min(in.left, uint32(len(b)))
			in.left -= k
			b = b[k:]
			continue
		}
		if in.padByte {
			in.padByte = false
			pad := uint32(b[0])
			b = b[1:]
			in.left--
			in.dataLeft = in.left - min(pad, in.left)
			continue
		}
		if in.dataLeft > 0 {
			k := min(in.dataLeft, uint32(len(b)))
			c.data(in.sid, b[:k])
			in.dataLeft -= k
			in.left -= k
			b = b[k:]
			continue
		}
		k := min(in.left, uint32(len(b))) // padding
		in.left -= k
		b = b[k:]
	}
}

// outParser follows the outgoing HTTP/2 frames. A frame header split
// across writes is held until it is whole (hdr), so that a WINDOW_UPDATE
// can be dropped whole.
type outParser struct {
	hdr  [windowFrameLen]byte
	hn   int
	left uint32 // payload bytes of the current frame still to be written
	// inBlock: a HEADERS or PUSH_PROMISE without END_HEADERS was written,
	// and not yet the CONTINUATION with it. Nothing may be injected in
	// between (RFC 9113 section 6.10).
	inBlock bool
}

// atBoundary reports whether a frame may be written now.
func (o *outParser) atBoundary() bool { return o.hn == 0 && o.left == 0 && !o.inBlock }

// write passes p through to c.Conn, frame by frame.
// REQUIRES: c.wmu held.
func (o *outParser) write(c *Conn, p []byte) error {
	start := 0 // p[start:i] is to be written as is
	i := 0
	flush := func(end int) error {
		var err error
		if end > start {
			_, err = c.Conn.Write(p[start:end])
		}
		start = end
		return err
	}
	for i < len(p) {
		if o.left > 0 {
			k := min(o.left, uint32(len(p)-i))
			o.left -= k
			i += int(k)
			continue
		}
		if o.hn > 0 {
			// A frame start begun in an earlier write.
			for o.hn < o.need() && i < len(p) {
				o.hdr[o.hn] = p[i]
				o.hn++
				i++
			}
			start = i
			if o.hn < o.need() {
				return nil
			}
			drop, left := o.frame(c, o.hdr[:o.hn])
			if !drop {
				if _, err := c.Conn.Write(o.hdr[:o.hn]); err != nil {
					return err
				}
			}
			o.hn, o.left = 0, left
			continue
		}
		// At a frame boundary within p.
		if !o.inBlock && c.hasInject.Load() {
			if err := flush(i); err != nil {
				return err
			}
			if err := c.flushInjectLocked(); err != nil {
				return err
			}
		}
		rest := p[i:]
		n := frameHeaderLen
		if len(rest) > 3 && rest[3] == frameWindowUpdate {
			n = windowFrameLen
		}
		if len(rest) < n {
			// The frame's start continues in the next write: hold it.
			if err := flush(i); err != nil {
				return err
			}
			o.hn = copy(o.hdr[:], rest)
			start = len(p)
			return nil
		}
		drop, left := o.frame(c, rest[:n])
		if drop {
			if err := flush(i); err != nil {
				return err
			}
			start = i + n
		}
		i += n
		o.left = left
	}
	if err := flush(len(p)); err != nil {
		return err
	}
	if o.atBoundary() && c.hasInject.Load() {
		// p ended at a boundary: what the injector could not send
		// mid-frame goes now, not at some later write.
		return c.flushInjectLocked()
	}
	return nil
}

// need is how many bytes of the buffered frame start must be seen to
// decide on it.
func (o *outParser) need() int {
	if o.hn >= 4 && o.hdr[3] == frameWindowUpdate {
		return windowFrameLen
	}
	return frameHeaderLen
}

// frame decides on an outgoing frame from its start f (its header, and
// its payload for a WINDOW_UPDATE): whether to drop it, and how many of
// its payload bytes follow f.
func (o *outParser) frame(c *Conn, f []byte) (drop bool, left uint32) {
	length := uint32(f[0])<<16 | uint32(f[1])<<8 | uint32(f[2])
	typ, flags := f[3], f[4]
	sid := binary.BigEndian.Uint32(f[5:9]) & 0x7fffffff
	switch typ {
	case frameHeaders, framePushPromise:
		o.inBlock = flags&flagEndHeaders == 0
	case frameContinuation:
		o.inBlock = flags&flagEndHeaders == 0
	}
	switch {
	case typ == frameWindowUpdate:
		if length == 4 && sid != 0 && c.withhold(sid, binary.BigEndian.Uint32(f[9:13])&0x7fffffff) {
			return true, 0
		}
		return false, length - min(length, 4)
	case typ == frameRSTStream, typ == frameHeaders && flags&flagEndStream != 0:
		c.endStream(sid)
	}
	return false, length
}
