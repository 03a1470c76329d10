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
	sentWin int64   // DATA frame bytes sent (taken from the window)
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
	// orphans: messages received whole, not yet handled, on streams
	// reset since (orphan.go): still admitted.
	orphans []*modelMsg
	// The client's view of the bytes written out: the WINDOW_UPDATE
	// increments per stream (its windows) and the RST_STREAMs the wrapper
	// sent for stalled streams, parsed up to wparsed.
	wparsed int
	incs    map[uint32]int64
	rstOut  map[uint32]int
	// Stall resets expected: RST_STREAMs the wrapper must send the client
	// (wantRstOut) and hand gRPC (wantRstIn), per stream.
	wantRstOut, wantRstIn map[uint32]int
	// failed: the client exceeded a window; violation is where its frame
	// starts in sent, goAway whether gRPC's writer was at a frame
	// boundary then (a GOAWAY is written).
	failed    bool
	violation int
	goAway    bool
}

// TestConnModel runs random HTTP/2 client byte streams (split at random
// read boundaries) and server write patterns (split at random write
// boundaries) through Conns sharing a Gate and checks them against a
// model after every step. The clients keep to the windows the wrapper
// writes out to them, except one now and then that exceeds one; stall
// timers fire at random (a fake clock):
//   - Read returns exactly the bytes the client sent, plus an
//     RST_STREAM (CANCEL) for each stalled stream, at a frame boundary
//     outside header blocks; for a client that exceeded a window, a
//     prefix of them ending before that frame, then ErrFlowControl, and
//     a GOAWAY is written if gRPC's writer was at a frame boundary;
//   - the bytes written out are gRPC's frames in order, less
//     WINDOW_UPDATEs on streams, plus injected ones and an RST_STREAM
//     (CANCEL) per stalled stream, never inside a header block; per
//     stream, the increments sent total those gRPC wrote, except for a
//     stream that ended while its message waited;
//   - an admitted message whose window lets its client send all of it
//     has a stall timer, and every pending timer is such a message's;
//   - the Gate holds exactly the admissions of large messages whose
//     prefix arrived, not yet handled, on streams not ended, and of the
//     messages received whole on streams reset since, until their grace
//     timers fire (orphans); it is FIFO
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
	var stats modelStats
	for _, seed := range seeds {
		if !runModel(t, seed, &stats) {
			t.Fatalf("seed %d failed: rerun with -run TestConnModel -recvbudget.seed=%d", seed, seed)
		}
	}
	t.Logf("%d seeds from %d: %d streams reset for stalling, %d connections closed for a window exceeded", len(seeds), seeds[0], stats.stalls, stats.violations)
}

// modelStats counts what the seeds exercised.
type modelStats struct{ stalls, violations int64 }

func runModel(t *testing.T, seed uint64, stats *modelStats) (ok bool) {
	r := rand.New(rand.NewPCG(seed, 1))
	const big = Threshold + 64<<10
	maxMsg := int64(Threshold + 512<<10)
	budget := int64(1+r.IntN(2)) * CostFactor * big
	clock := &fakeClock{}
	g := NewWithOptions(budget, int(maxMsg), Options{AfterFunc: clock.AfterFunc})
	uniq := int64(0)
	var conns []*modelConn
	for i := range 1 + r.IntN(3) {
		p := &pipeConn{fakeConn: fakeConn{local: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 100 + i}}}
		mc := &modelConn{p: p, c: g.Wrap(p), nextSid: 1, awaitingAtEnd: map[uint32]bool{},
			incs: map[uint32]int64{}, rstOut: map[uint32]int{}, wantRstOut: map[uint32]int{}, wantRstIn: map[uint32]int{}}
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
		switch op := r.IntN(22); {
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
			mc.endStream(s, true)
			mc.send(frame(frameRSTStream, 0, s.sid, []byte{0, 0, 0, 0}))
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
		case op < 21: // a stall timer of this connection fires
			if err := mc.fire(r, clock); err != "" {
				return fail("step %d: %s", step, err)
			}
			if r.IntN(2) == 0 { // and an orphan's grace
				if err := mc.fireOrphan(r); err != "" {
					return fail("step %d: %s", step, err)
				}
			}
		default:
			if r.IntN(30) == 0 { // the client exceeds a stream's window
				if s := pick(); s != nil {
					if err := mc.violate(r, s); err != "" {
						return fail("step %d: %s", step, err)
					}
				}
				break
			}
			if r.IntN(8) == 0 { // the connection closes
				for _, s := range mc.streams {
					s.ended, s.admitted = true, nil
				}
				mc.orphans = nil
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
		if err := check(g, conns, clock); err != "" {
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
	if err := check(g, conns, clock); err != "" {
		return fail("at the end: %s", err)
	}
	// The orphans' graces pass.
	for _, mc := range conns {
		for !mc.closed && len(mc.orphans) > 0 {
			if err := mc.fireOrphan(r); err != "" {
				return fail("at the end: %s", err)
			}
		}
	}
	if g.InUse() != 0 || g.Waiting() != 0 {
		return fail("every stream ended: %d in use, %d waiting", g.InUse(), g.Waiting())
	}
	for _, mc := range conns {
		if err := mc.checkOut(); err != "" {
			return fail("%s", err)
		}
	}
	stats.stalls += g.Stalls()
	stats.violations += g.Violations()
	return true
}

// send has the client send b; drain lets the wrapper read it.
func (mc *modelConn) send(b []byte) {
	mc.sent = append(mc.sent, b...)
	mc.p.queued = append(mc.p.queued, b...)
}

// drain reads what the client sent, in reads of random sizes, and what
// the wrapper injects for gRPC.
func (mc *modelConn) drain(r *rand.Rand) string {
	buf := make([]byte, 64<<10)
	for len(mc.p.queued) > 0 || mc.c.hasInjectIn.Load() && mc.c.in.atBoundary() {
		mc.p.max = 1 + r.IntN(1<<uint(r.IntN(17)))
		n, err := mc.c.Read(buf[:1+r.IntN(len(buf))])
		mc.read = append(mc.read, buf[:n]...)
		if err != nil && err != net.ErrClosed {
			return fmt.Sprintf("Read: %v", err)
		}
	}
	got, rsts, err := stripInjected(mc.read)
	if err != "" {
		return err
	}
	if !bytes.Equal(got, mc.sent) {
		return "Read returned other bytes than the client sent"
	}
	for sid, n := range mc.wantRstIn {
		if rsts[sid] != n {
			return fmt.Sprintf("stream %d: %d RST_STREAMs handed to gRPC, want %d", sid, rsts[sid], n)
		}
	}
	if len(rsts) > len(mc.wantRstIn) {
		return fmt.Sprintf("RST_STREAMs handed to gRPC for %v, want %v", rsts, mc.wantRstIn)
	}
	return ""
}

// stripInjected returns b (a client's bytes as Read returned them) less
// the RST_STREAM (CANCEL) frames injected for gRPC, which must sit at
// frame boundaries outside header blocks.
func stripInjected(b []byte) ([]byte, map[uint32]int, string) {
	if len(b) < clientPreface {
		return b, nil, ""
	}
	out := bytes.Clone(b[:clientPreface])
	rsts := map[uint32]int{}
	block := false
	for rest := b[clientPreface:]; len(rest) > 0; {
		if len(rest) < frameHeaderLen {
			return nil, nil, fmt.Sprintf("read ends in a frame header (%d bytes)", len(rest))
		}
		n := frameHeaderLen + (int(rest[0])<<16 | int(rest[1])<<8 | int(rest[2]))
		if len(rest) < n {
			return nil, nil, fmt.Sprintf("read ends inside a frame (%d of %d bytes)", len(rest), n)
		}
		f := rest[:n]
		rest = rest[n:]
		if f[3] == frameRSTStream && n == frameHeaderLen+4 && binary.BigEndian.Uint32(f[9:13]) == errCodeCancel {
			if block {
				return nil, nil, "RST_STREAM injected inside a header block"
			}
			rsts[binary.BigEndian.Uint32(f[5:9])]++
			continue
		}
		if f[3] == frameHeaders || f[3] == frameContinuation {
			block = f[4]&flagEndHeaders == 0
		}
		out = append(out, f...)
	}
	return out, rsts, ""
}

// window is stream s's window as its client sees it: the initial window
// plus the increments written out to it, less the DATA it sent.
func (mc *modelConn) window(s *modelStream) int64 {
	mc.parseWritten()
	return Threshold + mc.incs[s.sid] - s.sentWin
}

// parseWritten follows the frames written out to the client.
func (mc *modelConn) parseWritten() {
	w := mc.p.written()
	for {
		rest := w[mc.wparsed:]
		if len(rest) < frameHeaderLen {
			return
		}
		n := frameHeaderLen + (int(rest[0])<<16 | int(rest[1])<<8 | int(rest[2]))
		if len(rest) < n {
			return
		}
		sid := binary.BigEndian.Uint32(rest[5:9]) & 0x7fffffff
		switch {
		case rest[3] == frameWindowUpdate && n == windowFrameLen && sid != 0:
			mc.incs[sid] += int64(binary.BigEndian.Uint32(rest[9:13]))
		case rest[3] == frameRSTStream && n == frameHeaderLen+4 && binary.BigEndian.Uint32(rest[9:13]) == errCodeCancel:
			mc.rstOut[sid]++
		}
		mc.wparsed += n
	}
}

// fire fires one of the connection's pending stall timers: its message
// has not arrived, so its stream is reset.
func (mc *modelConn) fire(r *rand.Rand, clock *fakeClock) string {
	var mine []*fakeTimer
	var streams []*modelStream
	for _, tm := range clock.pending() {
		mc.c.mu.Lock()
		for sid, st := range mc.c.mu.streams {
			if st.cur != nil && st.cur.timer == Timer(tm) {
				for _, s := range mc.streams {
					if s.sid == sid {
						mine = append(mine, tm)
						streams = append(streams, s)
					}
				}
			}
		}
		mc.c.mu.Unlock()
	}
	if len(mine) == 0 {
		return ""
	}
	i := r.IntN(len(mine))
	s := streams[i]
	if s.ended { // (ending: gRPC's writer is writing its end; the wrapper has not seen it)
		return fmt.Sprintf("stream %d: a stall timer runs for a stream the model ended", s.sid)
	}
	mc.endStream(s, true)
	mc.wantRstOut[s.sid]++
	mc.wantRstIn[s.sid]++
	mine[i].fire()
	return ""
}

// violate has the client send a DATA frame larger than s's window: the
// connection must fail before gRPC sees it.
func (mc *modelConn) violate(r *rand.Rand, s *modelStream) string {
	win := mc.window(s)
	n := win + 1 + int64(r.IntN(100))
	if n >= 1<<24 {
		return ""
	}
	mc.violation = len(mc.sent)
	mc.goAway = mc.c.out.atBoundary()
	mc.send(frame(frameData, 0, s.sid, make([]byte, n)))
	buf := make([]byte, 64<<10)
	var err error
	for err == nil {
		mc.p.max = 1 + r.IntN(1<<uint(r.IntN(17)))
		var k int
		k, err = mc.c.Read(buf)
		mc.read = append(mc.read, buf[:k]...)
	}
	if err != ErrFlowControl {
		return fmt.Sprintf("a frame of %d bytes over a window of %d: Read error %v, want ErrFlowControl", n, win, err)
	}
	// What gRPC read: whole frames (less the injected ones), then at most
	// the start of the frame over the window's header.
	whole := clientPreface + len(wholeFrames(mc.read[clientPreface:]))
	got, _, bad := stripInjected(mc.read[:whole])
	got = append(got, mc.read[whole:]...)
	if bad != "" || len(got) > mc.violation+frameHeaderLen-1 || !bytes.Equal(got, mc.sent[:len(got)]) {
		return fmt.Sprintf("a frame over the window: Read returned %d bytes (%s), the frame starts at %d", len(got), bad, mc.violation)
	}
	if mc.c.g.Violations() == 0 {
		return "violation not counted"
	}
	for _, s := range mc.streams {
		s.ended, s.admitted = true, nil
	}
	mc.orphans = nil
	mc.failed, mc.closed = true, true
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

// sendData sends up to k bytes of s's messages in DATA frames (some
// padded, some empty), within s's window, and follows which large
// messages' prefixes arrive.
func (mc *modelConn) sendData(r *rand.Rand, s *modelStream, k int, maxMsg int64) {
	for k > 0 {
		n := min(k, 1+r.IntN(20<<10))
		if r.IntN(8) == 0 {
			mc.send(frame(frameData, 0, s.sid, nil))
		}
		pad := -1
		if r.IntN(3) == 0 {
			pad = r.IntN(20)
		}
		over := int64(pad + 1) // the pad length byte and the padding
		if win := mc.window(s); int64(n)+over > win {
			if n = int(win - over); n <= 0 {
				return // flow control: wait for a WINDOW_UPDATE
			}
		}
		payload := s.pending[:n]
		var flags byte
		if pad >= 0 {
			flags |= flagPadded
			payload = append(append([]byte{byte(pad)}, payload...), make([]byte, pad)...)
		}
		s.sentWin += int64(len(payload))
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
			}
		}
		s.pending = s.pending[n:]
		k -= n
	}
}

func (mc *modelConn) endStream(s *modelStream, reset bool) {
	mc.c.mu.Lock()
	if st := mc.c.mu.streams[s.sid]; st != nil && st.await != nil {
		mc.awaitingAtEnd[s.sid] = true
	}
	mc.c.mu.Unlock()
	if reset && !s.ended {
		for _, m := range s.admitted {
			if m.received {
				mc.orphans = append(mc.orphans, m)
			}
		}
	}
	s.ended, s.admitted = true, nil
}

// fireOrphan fires the grace timer of one of the connection's orphans.
func (mc *modelConn) fireOrphan(r *rand.Rand) string {
	mc.c.mu.Lock()
	orphans := append([]*admission(nil), mc.c.mu.orphans...)
	mc.c.mu.Unlock()
	if len(orphans) != len(mc.orphans) {
		return fmt.Sprintf("%d orphans, model %d", len(orphans), len(mc.orphans))
	}
	if len(orphans) == 0 {
		return ""
	}
	a := orphans[r.IntN(len(orphans))]
	for i, m := range mc.orphans {
		if m.length == a.length {
			mc.orphans = append(mc.orphans[:i], mc.orphans[i+1:]...)
			break
		}
	}
	tm, _ := a.timer.(*fakeTimer)
	if tm == nil {
		return "an orphan without a timer"
	}
	tm.fire()
	return ""
}

// serverFrames is a few frames gRPC's writer might write, on s if not nil.
// base is where its bytes start in all gRPC writes.
func (mc *modelConn) serverFrames(r *rand.Rand, s *modelStream, base int) []byte {
	sid := uint32(0)
	if s != nil {
		sid = s.sid
	}
	switch r.IntN(10) {
	case 9:
		// The handler asks for the stream's current message: gRPC opens
		// the window for all of it (inFlow.maybeAdjust).
		if s != nil && len(s.msgs) > 0 && s.msgs[0] > Threshold {
			return windowUpdate(sid, uint32(s.msgs[0]))
		}
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
			return frame(frameRSTStream, 0, sid, []byte{0, 0, 0, 0})
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
				mc.endStream(e.s, false)
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

// wholeFrames is b up to the end of its last whole frame.
func wholeFrames(b []byte) []byte {
	n := 0
	for len(b)-n >= frameHeaderLen {
		m := frameHeaderLen + (int(b[n])<<16 | int(b[n+1])<<8 | int(b[n+2]))
		if len(b)-n < m {
			break
		}
		n += m
	}
	return b[:n]
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
	written, wrote := mc.p.written(), mc.wrote
	if mc.failed {
		// The connection failed where gRPC's writer was: its last frame
		// may be partial, and nothing follows it but a GOAWAY.
		written, wrote = wholeFrames(written), wholeFrames(wrote)
	}
	got, err := parseFrames(written)
	if err != nil {
		return "written: " + err.Error()
	}
	want, err := parseFrames(wrote)
	if err != nil {
		return "given: " + err.Error()
	}
	goAways := 0
	rsts := map[uint32]int{}
	kept := got[:0]
	for _, f := range got {
		switch {
		case f.typ == frameGoAway:
			goAways++
			if !bytes.Equal(f.raw[13:17], []byte{0, 0, 0, errCodeFlowControl}) {
				return fmt.Sprintf("GOAWAY %x", f.raw)
			}
		case f.typ == frameRSTStream && binary.BigEndian.Uint32(f.raw[9:13]) == errCodeCancel:
			rsts[f.sid]++
		default:
			kept = append(kept, f)
		}
	}
	got = kept
	if wantGoAway := mc.failed && mc.goAway; (goAways == 1) != wantGoAway || goAways > 1 {
		return fmt.Sprintf("%d GOAWAYs written, want one: %v", goAways, wantGoAway)
	}
	for sid, n := range mc.wantRstOut {
		if rsts[sid] != n && !mc.failed && !mc.closed {
			return fmt.Sprintf("stream %d: %d RST_STREAMs sent for stalling, want %d", sid, rsts[sid], n)
		}
	}
	for sid, n := range rsts {
		if n > mc.wantRstOut[sid] {
			return fmt.Sprintf("stream %d: %d RST_STREAMs sent for stalling, want %d", sid, n, mc.wantRstOut[sid])
		}
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

// check compares the Gate with the model, and the stall timers with the
// wrapper's streams.
func check(g *Gate, conns []*modelConn, clock *fakeClock) string {
	pending := map[*fakeTimer]bool{}
	for _, tm := range clock.pending() {
		pending[tm] = true
	}
	for _, mc := range conns {
		if mc.closed {
			continue
		}
		mc.c.mu.Lock()
		for sid, st := range mc.c.mu.streams {
			a := st.cur
			if a == nil {
				continue
			}
			tm, _ := a.timer.(*fakeTimer)
			open := st.await != a && st.window >= st.left
			if open != (tm != nil) {
				mc.c.mu.Unlock()
				return fmt.Sprintf("stream %d: window %d, %d bytes to come, waiting %v: timer %v", sid, st.window, st.left, st.await == a, tm != nil)
			}
			if tm != nil && !pending[tm] {
				mc.c.mu.Unlock()
				return fmt.Sprintf("stream %d: its message's timer was stopped or fired", sid)
			}
			delete(pending, tm)
		}
		for _, a := range mc.c.mu.orphans {
			tm, _ := a.timer.(*fakeTimer)
			if tm == nil || !pending[tm] {
				mc.c.mu.Unlock()
				return "an orphan's grace timer was stopped or fired"
			}
			delete(pending, tm)
		}
		if len(mc.c.mu.orphans) != len(mc.orphans) {
			n := len(mc.c.mu.orphans)
			mc.c.mu.Unlock()
			return fmt.Sprintf("%d orphans, model %d", n, len(mc.orphans))
		}
		mc.c.mu.Unlock()
	}
	if len(pending) > 0 {
		return fmt.Sprintf("%d stall timers pending for no message being received", len(pending))
	}
	var want int64
	for _, mc := range conns {
		for _, s := range mc.streams {
			for _, m := range s.admitted {
				want += min(CostFactor*m.length, g.max)
			}
		}
		for _, m := range mc.orphans {
			want += min(CostFactor*m.length, g.max)
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
