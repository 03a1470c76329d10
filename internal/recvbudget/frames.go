package recvbudget

import "encoding/binary"

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
	// inBlock: a HEADERS without END_HEADERS was read, and not yet the
	// CONTINUATION ending it: nothing may be injected in between.
	inBlock bool
}

// atBoundary reports whether a frame may be injected before the next
// byte read.
func (in *inParser) atBoundary() bool {
	return in.preface == 0 && in.hn == 0 && in.left == 0 && !in.inBlock
}

// parse follows b, read from the client. It returns how many bytes of b
// gRPC may have now: all of them, or fewer when an injection waits
// (c.hasInjectIn) and a frame boundary comes first, or when a DATA frame
// exceeds its stream's window (violated: b from that frame on is never
// to reach gRPC).
func (in *inParser) parse(c *Conn, b []byte) (n int, violated bool) {
	for len(b) > n {
		if in.preface > 0 {
			k := min(in.preface, len(b)-n)
			in.preface -= k
			n += k
			continue
		}
		if in.left == 0 {
			if in.hn == 0 && !in.inBlock && c.hasInjectIn.Load() {
				return n, false // an injection goes here
			}
			start := n
			k := copy(in.hdr[in.hn:], b[n:])
			in.hn += k
			n += k
			if in.hn < frameHeaderLen {
				return n, false
			}
			in.hn = 0
			in.left = uint32(in.hdr[0])<<16 | uint32(in.hdr[1])<<8 | uint32(in.hdr[2])
			in.typ = in.hdr[3]
			flags := in.hdr[4]
			in.sid = binary.BigEndian.Uint32(in.hdr[5:9]) & 0x7fffffff
			switch in.typ {
			case frameHeaders:
				in.inBlock = flags&flagEndHeaders == 0
				if in.sid > in.maxSid {
					in.maxSid = in.sid
					c.newStream(in.sid)
				}
			case frameContinuation:
				in.inBlock = flags&flagEndHeaders == 0
			case frameRSTStream:
				c.endStream(in.sid, true)
			case frameData:
				if !c.dataFrame(in.sid, in.left) {
					return start, true
				}
				in.padByte = flags&flagPadded != 0
				in.dataLeft = in.left
			}
			continue
		}
		rest := b[n:]
		if in.typ != frameData {
			k := min(in.left, uint32(len(rest)))
			in.left -= k
			n += int(k)
			continue
		}
		if in.padByte {
			in.padByte = false
			pad := uint32(rest[0])
			n++
			in.left--
			in.dataLeft = in.left - min(pad, in.left)
			continue
		}
		if in.dataLeft > 0 {
			k := min(in.dataLeft, uint32(len(rest)))
			c.data(in.sid, rest[:k])
			in.dataLeft -= k
			in.left -= k
			n += int(k)
			continue
		}
		k := min(in.left, uint32(len(rest))) // padding
		in.left -= k
		n += int(k)
	}
	return n, false
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
		if length == 4 && sid != 0 && c.windowOut(sid, binary.BigEndian.Uint32(f[9:13])&0x7fffffff) {
			return true, 0
		}
		return false, length - min(length, 4)
	case typ == frameRSTStream, typ == frameHeaders && flags&flagEndStream != 0:
		c.endStream(sid, false)
	}
	return false, length
}
