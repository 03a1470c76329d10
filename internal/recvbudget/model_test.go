package recvbudget

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"testing"
	"time"
)

var (
	modelSeed = flag.Uint64("recvbudget.seed", 0, "TestConnModel: run this seed only")
	modelRuns = flag.Int("recvbudget.runs", 6, "TestConnModel: seeds to run")
)

// pipeConn is a net.Conn whose reads come from what the test queued and
// whose writes are recorded; Read returns at most max bytes at a time.
type pipeConn struct {
	fakeConn
	queued []byte
	max    int
}

func (p *pipeConn) Read(b []byte) (int, error) {
	if len(p.queued) == 0 {
		return 0, net.ErrClosed
	}
	n := copy(b[:min(len(b), p.max)], p.queued)
	p.queued = p.queued[n:]
	return n, nil
}

// modelStream is the test's view of one stream: what its client still
// has to send and the large messages it expects admitted.
type modelStream struct {
	sid     uint32
	pending []byte  // gRPC bytes (prefixes and bodies) not yet sent
	msgs    []int64 // lengths of the messages in pending, in order
	sentMsg int64   // bytes of the current message sent (prefix included)
	// admitted: large messages whose prefix was sent and not yet done.
	admitted []*modelMsg
	ending   bool // the server wrote or is writing its end
	ended    bool
}

// pendingEnd: gRPC's writer ends s once it has written pos bytes.
type pendingEnd struct {
	pos int
	s   *modelStream
}

type modelMsg struct {
	length   int64
	received bool
}

type modelConn struct {
	c       *Conn
	p       *pipeConn
	streams []*modelStream
	nextSid uint32
	sent    []byte // every byte the test had the client send
	read    []byte // every byte Read returned
	wrote   []byte // every byte given to Write (gRPC's outgoing frames)
	unsent  []byte // frames gRPC's writer has yet to finish writing
	ends    []pendingEnd
	// awaitingAtEnd: streams that ended with their message not yet
	// admitted: their held-back increments are dropped.
	awaitingAtEnd map[uint32]bool
	closed        bool
}

// TestConnModel runs random HTTP/2 client byte streams (split at random
// read boundaries) and server write patterns (split at random write
// boundaries) through Conns sharing a Gate and checks them against a
// model after every step:
//   - Read returns exactly the bytes the client sent;
//   - the bytes written out are gRPC's frames in order, less
//     WINDOW_UPDATEs on streams, plus injected ones, never inside a
//     header block; per stream, the increments sent total those gRPC
//     wrote, except for a stream that ended while its message waited;
//   - the Gate holds exactly the admissions of large messages whose
//     prefix arrived, not yet handled, on streams not ended; it is FIFO
//     and grants its head as soon as it fits; nothing waits to be injected
//     once gRPC's writer is at a frame boundary;
//   - with every stream ended, nothing is in use or waiting.
//
// Seeds are printed; -recvbudget.seed=N reruns one.
func TestConnModel(t *testing.T) {
	seeds := []uint64{*modelSeed}
	if *modelSeed == 0 {
		base := uint64(time.Now().UnixNano())
		seeds = seeds[:0]
		runs := *modelRuns
		if testing.Short() {
			runs = 3
		}
		for i := range runs {
			seeds = append(seeds, base+uint64(i))
		}
	}
	for _, seed := range seeds {
		if !runModel(t, seed) {
			t.Fatalf("seed %d failed: rerun with -run TestConnModel -recvbudget.seed=%d", seed, seed)
		}
	}
	t.Logf("%d seeds from %d", len(seeds), seeds[0])
}

func runModel(t *testing.T, seed uint64) (ok bool) {
	r := rand.New(rand.NewPCG(seed, 1))
	const big = Threshold + 64<<10
	maxMsg := int64(Threshold + 512<<10)
	budget := int64(1+r.IntN(2)) * CostFactor * big
	g := New(budget, int(maxMsg))
	uniq := int64(0)
	var conns []*modelConn
	for i := range 1 + r.IntN(3) {
		p := &pipeConn{fakeConn: fakeConn{local: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 100 + i}}}
		mc := &modelConn{p: p, c: g.Wrap(p), nextSid: 1, awaitingAtEnd: map[uint32]bool{}}
		mc.send([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"))
		mc.send(frame(0x4, 0, 0, make([]byte, 6))) // SETTINGS
		conns = append(conns, mc)
	}
	fail := func(format string, args ...any) bool {
		t.Errorf("seed %d: "+format, append([]any{seed}, args...)...)
		return false
	}
	defer func() {
		for _, mc := range conns {
			mc.c.Close()
		}
	}()
	msgLen := func() int64 {
		switch r.IntN(6) {
		case 0:
			return 0
		case 1:
			return int64(r.IntN(100))
		case 2:
			return Threshold
		case 3:
			return maxMsg + 1 // refused by gRPC from its prefix: never admitted
		default:
			uniq++ // unique lengths: Done matches by length
			return Threshold + uniq
		}
	}
	steps := 40 + r.IntN(80)
	totalData := 0
	for step := 0; step < steps; step++ {
		mc := conns[r.IntN(len(conns))]
		if mc.closed {
			continue
		}
		var live []*modelStream
		for _, s := range mc.streams {
			if !s.ended && !s.ending {
				live = append(live, s)
			}
		}
		pick := func() *modelStream {
			if len(live) == 0 {
				return nil
			}
			return live[r.IntN(len(live))]
		}
		switch op := r.IntN(20); {
		case op < 3 && len(live) < 5: // the client opens a stream
			s := &modelStream{sid: mc.nextSid}
			mc.nextSid += 2
			for range 1 + r.IntN(3) {
				n := msgLen()
				s.msgs = append(s.msgs, n)
				flagByte := byte(r.IntN(2)) // compressed or not: the same to the wrapper
				s.pending = append(s.pending, flagByte, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
				if n <= maxMsg {
					s.pending = append(s.pending, bytes.Repeat([]byte{byte(n)}, int(n))...)
				} else {
					// gRPC ends the stream: nothing follows on it.
					s.pending = append(s.pending, make([]byte, 100)...)
					break
				}
			}
			mc.streams = append(mc.streams, s)
			mc.send(clientHeaders(r, s.sid))
		case op < 11: // the client sends some of a stream's messages
			s := pick()
			if s == nil || len(s.pending) == 0 {
				continue
			}
			k := 1 + r.IntN(min(len(s.pending), 40))
			if r.IntN(3) == 0 && totalData < 6<<20 {
				k = min(len(s.pending), 1+r.IntN(big+10))
			}
			totalData += k
			mc.sendData(r, s, k, maxMsg)
		case op < 12: // the client resets a stream
			s := pick()
			if s == nil {
				continue
			}
			mc.endStream(s)
			mc.send(frame(frameRSTStream, 0, s.sid, []byte{0, 0, 0, 8}))
		case op < 13: // other client frames
			switch r.IntN(4) {
			case 0:
				mc.send(frame(6, 0, 0, make([]byte, 8))) // PING
			case 1:
				mc.send(windowUpdate(0, uint32(1+r.IntN(1<<20))))
			case 2:
				mc.send(frame(0x2, 0, mc.nextSid-2+uint32(r.IntN(2))*2, make([]byte, 5))) // PRIORITY
			default:
				mc.send(frame(0x4, 1, 0, nil)) // SETTINGS ack
			}
		case op < 15: // a handler is done with a message received whole
			s := pick()
			if s == nil {
				continue
			}
			// gRPC's flow control lets no message in whole before
			// it is admitted; this test's client ignores it, so only
			// admitted ones are handled.
			mc.c.mu.Lock()
			var await int64 = -1
			if st := mc.c.mu.streams[s.sid]; st != nil && st.await != nil {
				await = st.await.length
			}
			mc.c.mu.Unlock()
			for i, m := range s.admitted {
				if m.received && m.length != await {
					s.admitted = append(s.admitted[:i], s.admitted[i+1:]...)
					mc.c.done(m.length)
					break
				}
			}
		case op < 19: // gRPC's writer writes some frames
			var out []byte
			for range r.IntN(4) {
				out = append(out, mc.serverFrames(r, pick(), len(mc.wrote)+len(mc.unsent)+len(out))...)
			}
			// The writer may stop anywhere (mid-frame, inside a header
			// block) until a later step: grants meanwhile must wait.
			mc.unsent = append(mc.unsent, out...)
			k := len(mc.unsent)
			if r.IntN(2) == 0 {
				k = r.IntN(k + 1)
			}
			mc.write(t, r, mc.unsent[:k])
			mc.unsent = mc.unsent[k:]
		default:
			if r.IntN(8) == 0 { // the connection closes
				for _, s := range mc.streams {
					s.ended, s.admitted = true, nil
				}
				mc.write(t, r, mc.unsent) // so that what it wrote parses
				mc.unsent = nil
				mc.closed = true
				mc.c.Close()
			}
		}
		mc.c.wg.Wait()
		if !mc.closed {
			if err := mc.drain(r); err != "" {
				return fail("step %d: %s", step, err)
			}
		}
		for _, c := range conns {
			c.c.wg.Wait()
		}
		if err := check(g, conns); err != "" {
			return fail("step %d: %s", step, err)
		}
	}
	// End every stream: the server answers each with trailers.
	for _, mc := range conns {
		if mc.closed {
			continue
		}
		mc.write(t, r, mc.unsent)
		mc.unsent = nil
		for _, s := range mc.streams {
			if !s.ended && !s.ending {
				mc.write(t, r, mc.trailers(r, s, len(mc.wrote)))
			}
		}
		for _, c := range conns {
			c.c.wg.Wait()
		}
	}
	if err := check(g, conns); err != "" {
		return fail("at the end: %s", err)
	}
	if g.InUse() != 0 || g.Waiting() != 0 {
		return fail("every stream ended: %d in use, %d waiting", g.InUse(), g.Waiting())
	}
	for _, mc := range conns {
		if err := mc.checkOut(); err != "" {
			return fail("%s", err)
		}
	}
	return true
}

// send has the client send b; drain lets the wrapper read it.
func (mc *modelConn) send(b []byte) {
	mc.sent = append(mc.sent, b...)
	mc.p.queued = append(mc.p.queued, b...)
}

// drain reads what the client sent, in reads of random sizes.
func (mc *modelConn) drain(r *rand.Rand) string {
	buf := make([]byte, 64<<10)
	for len(mc.p.queued) > 0 {
		mc.p.max = 1 + r.IntN(1<<uint(r.IntN(17)))
		n, _ := mc.c.Read(buf)
		mc.read = append(mc.read, buf[:n]...)
	}
	if !bytes.Equal(mc.read, mc.sent) {
		return "Read returned other bytes than the client sent"
	}
	return ""
}

// clientHeaders opens stream sid: HEADERS, possibly padded, with a
// priority, or split over CONTINUATIONs.
func clientHeaders(r *rand.Rand, sid uint32) []byte {
	block := make([]byte, 1+r.IntN(60))
	var flags byte = flagEndHeaders
	payload := block
	if r.IntN(3) == 0 {
		flags |= flagPadded
		pad := r.IntN(10)
		payload = append(append([]byte{byte(pad)}, payload...), make([]byte, pad)...)
	}
	if r.IntN(3) == 0 {
		flags |= 0x20 // PRIORITY
		payload = append(make([]byte, 5), payload...)
	}
	if r.IntN(3) == 0 {
		cut := r.IntN(len(payload) + 1)
		return append(frame(frameHeaders, flags&^flagEndHeaders, sid, payload[:cut]),
			frame(frameContinuation, flagEndHeaders, sid, payload[cut:])...)
	}
	return frame(frameHeaders, flags, sid, payload)
}

// sendData sends k bytes of s's messages in DATA frames (some padded,
// some empty) and follows which large messages' prefixes arrive.
func (mc *modelConn) sendData(r *rand.Rand, s *modelStream, k int, maxMsg int64) {
	granted := mc.granted(s.sid)
	for k > 0 {
		n := min(k, 1+r.IntN(20<<10))
		// Flow control: of a large message not yet admitted the client
		// sends at most the stream window (Threshold bytes, its prefix
		// included); gRPC resets a stream that sends more.
		if cur := s.msgs[0]; cur > Threshold && cur <= maxMsg && !granted {
			if s.sentMsg >= Threshold {
				return
			}
			n = min(n, int(Threshold-s.sentMsg))
		}
		if r.IntN(8) == 0 {
			mc.send(frame(frameData, 0, s.sid, nil))
		}
		payload := s.pending[:n]
		var flags byte
		if r.IntN(3) == 0 {
			flags |= flagPadded
			pad := r.IntN(20)
			payload = append(append([]byte{byte(pad)}, payload...), make([]byte, pad)...)
		}
		mc.send(frame(frameData, flags, s.sid, payload))
		for range n {
			s.sentMsg++
			cur := s.msgs[0]
			if s.sentMsg == 5 && cur > Threshold && cur <= maxMsg {
				s.admitted = append(s.admitted, &modelMsg{length: cur})
			}
			if cur > maxMsg && s.sentMsg == 5+100 || s.sentMsg == 5+cur {
				if s.sentMsg == 5+cur && cur > Threshold {
					s.admitted[len(s.admitted)-1].received = true
				}
				s.msgs = s.msgs[1:]
				s.sentMsg = 0
				granted = false // the next message is not admitted yet
			}
		}
		s.pending = s.pending[n:]
		k -= n
	}
}

// granted reports whether the current large message of stream sid is
// admitted (false when its prefix has not arrived).
func (mc *modelConn) granted(sid uint32) bool {
	c := mc.c
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.mu.streams[sid]
	if st == nil || st.cur == nil {
		return false
	}
	c.g.mu.Lock()
	defer c.g.mu.Unlock()
	return st.cur.granted
}

func (mc *modelConn) endStream(s *modelStream) {
	mc.c.mu.Lock()
	if st := mc.c.mu.streams[s.sid]; st != nil && st.await != nil {
		mc.awaitingAtEnd[s.sid] = true
	}
	mc.c.mu.Unlock()
	s.ended, s.admitted = true, nil
}

// serverFrames is a few frames gRPC's writer might write, on s if not nil.
// base is where its bytes start in all gRPC writes.
func (mc *modelConn) serverFrames(r *rand.Rand, s *modelStream, base int) []byte {
	sid := uint32(0)
	if s != nil {
		sid = s.sid
	}
	switch r.IntN(9) {
	case 0:
		return frame(6, 0, 0, make([]byte, 8)) // PING
	case 1:
		return frame(0x4, 0, 0, make([]byte, 6*r.IntN(3))) // SETTINGS
	case 2:
		return windowUpdate(0, uint32(1+r.IntN(1<<20)))
	case 3, 4:
		if sid != 0 {
			return windowUpdate(sid, uint32(1+r.IntN(1<<20)))
		}
	case 5:
		if sid != 0 {
			return frame(frameData, 0, sid, make([]byte, r.IntN(100)))
		}
	case 6:
		if sid != 0 {
			return headerBlock(r, sid, 0)
		}
	case 7:
		if sid != 0 && r.IntN(3) == 0 {
			return mc.trailers(r, s, base)
		}
	case 8:
		if sid != 0 && r.IntN(4) == 0 {
			s.ending = true
			mc.ends = append(mc.ends, pendingEnd{base + frameHeaderLen, s})
			return frame(frameRSTStream, 0, sid, []byte{0, 0, 0, 8})
		}
	}
	return frame(6, 1, 0, make([]byte, 8)) // PING ack
}

// trailers ends s; base is where they start in all gRPC writes.
func (mc *modelConn) trailers(r *rand.Rand, s *modelStream, base int) []byte {
	s.ending = true
	mc.ends = append(mc.ends, pendingEnd{base + frameHeaderLen, s})
	return headerBlock(r, s.sid, flagEndStream)
}

// headerBlock is HEADERS, split over CONTINUATIONs one time in two.
func headerBlock(r *rand.Rand, sid uint32, flags byte) []byte {
	block := make([]byte, r.IntN(100))
	if r.IntN(2) == 0 {
		return frame(frameHeaders, flags|flagEndHeaders, sid, block)
	}
	b := frame(frameHeaders, flags, sid, block[:len(block)/3])
	b = append(b, frame(frameContinuation, 0, sid, block[len(block)/3:2*len(block)/3])...)
	return append(b, frame(frameContinuation, flagEndHeaders, sid, block[2*len(block)/3:])...)
}

// write has gRPC's writer write out, in writes of random sizes.
func (mc *modelConn) write(t *testing.T, r *rand.Rand, out []byte) {
	for len(out) > 0 {
		k := min(len(out), 1+r.IntN(1<<uint(r.IntN(8))))
		// The streams this write ends (with their state before it).
		var left []pendingEnd
		for _, e := range mc.ends {
			if e.pos <= len(mc.wrote)+k {
				mc.endStream(e.s)
			} else {
				left = append(left, e)
			}
		}
		mc.ends = left
		mc.wrote = append(mc.wrote, out[:k]...)
		if n, err := mc.c.Write(out[:k]); n != k || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
		out = out[k:]
	}
}

type outFrame struct {
	typ, flags byte
	sid        uint32
	raw        []byte
}

func parseFrames(b []byte) ([]outFrame, error) {
	var fs []outFrame
	for len(b) > 0 {
		if len(b) < frameHeaderLen {
			return nil, fmt.Errorf("%d bytes left, not a frame", len(b))
		}
		n := frameHeaderLen + (int(b[0])<<16 | int(b[1])<<8 | int(b[2]))
		if len(b) < n {
			return nil, fmt.Errorf("frame of %d bytes, %d left", n, len(b))
		}
		fs = append(fs, outFrame{b[3], b[4], binary.BigEndian.Uint32(b[5:9]) & 0x7fffffff, b[:n]})
		b = b[n:]
	}
	return fs, nil
}

// checkOut compares what the wrapper wrote with what gRPC wrote.
func (mc *modelConn) checkOut() string {
	got, err := parseFrames(mc.p.written())
	if err != nil {
		return "written: " + err.Error()
	}
	want, err := parseFrames(mc.wrote)
	if err != nil {
		return "given: " + err.Error()
	}
	sums := func(fs []outFrame) (rest []outFrame, inc map[uint32]uint64, inBlock string) {
		inc = map[uint32]uint64{}
		block := false
		for i, f := range fs {
			if block && f.typ != frameContinuation {
				inBlock = fmt.Sprintf("frame %d (type %d) inside a header block", i, f.typ)
			}
			switch f.typ {
			case frameHeaders, frameContinuation:
				block = f.flags&flagEndHeaders == 0
			}
			if f.typ == frameWindowUpdate && f.sid != 0 {
				inc[f.sid] += uint64(binary.BigEndian.Uint32(f.raw[9:13]))
				continue
			}
			rest = append(rest, f)
		}
		return rest, inc, inBlock
	}
	gotRest, gotInc, bad := sums(got)
	if bad != "" {
		return "written: " + bad
	}
	wantRest, wantInc, _ := sums(want)
	if len(gotRest) != len(wantRest) {
		return fmt.Sprintf("%d frames other than stream WINDOW_UPDATEs written, %d given", len(gotRest), len(wantRest))
	}
	for i := range gotRest {
		if !bytes.Equal(gotRest[i].raw, wantRest[i].raw) {
			return fmt.Sprintf("frame %d written %x, given %x", i, gotRest[i].raw, wantRest[i].raw)
		}
	}
	for sid, w := range wantInc {
		g := gotInc[sid]
		// Closing a connection drops what it held back.
		if g > w || g < w && !mc.awaitingAtEnd[sid] && !mc.closed {
			return fmt.Sprintf("stream %d: WINDOW_UPDATEs of %d written, %d given (ended waiting: %v)", sid, g, w, mc.awaitingAtEnd[sid])
		}
	}
	for sid, g := range gotInc {
		if wantInc[sid] == 0 {
			return fmt.Sprintf("stream %d: WINDOW_UPDATEs of %d written, none given", sid, g)
		}
	}
	return ""
}

// check compares the Gate with the model.
func check(g *Gate, conns []*modelConn) string {
	var want int64
	for _, mc := range conns {
		for _, s := range mc.streams {
			for _, m := range s.admitted {
				want += min(CostFactor*m.length, g.max)
			}
		}
		if !mc.closed {
			mc.c.mu.Lock()
			pending := len(mc.c.mu.inject)
			mc.c.mu.Unlock()
			if pending > 0 && mc.c.out.atBoundary() {
				return fmt.Sprintf("%d bytes of WINDOW_UPDATE left to inject at a frame boundary", pending)
			}
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	got := g.mu.used
	for _, w := range g.mu.waiters {
		got += w.cost
	}
	if got != want {
		return fmt.Sprintf("admitted and waiting %d bytes, model %d", got, want)
	}
	if g.mu.used > g.max {
		return fmt.Sprintf("%d in use, over %d", g.mu.used, g.max)
	}
	if len(g.mu.waiters) > 0 && g.mu.used+g.mu.waiters[0].cost <= g.max {
		return "the first waiter fits and was not granted"
	}
	return ""
}
