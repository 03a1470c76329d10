package recvbudget

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// newGate is a Gate for tests whose clients send whole messages without
// waiting for WINDOW_UPDATEs: its streams' initial window is the largest
// there is, so flow control never stops them.
func newGate(max int64) *Gate {
	return NewWithOptions(max, 16<<20, Options{InitialWindow: 1<<31 - 1})
}

// fakeClock records the stall timers started; the test fires them.
type fakeClock struct {
	mu     sync.Mutex
	timers []*fakeTimer
}

type fakeTimer struct {
	clock   *fakeClock
	d       time.Duration
	f       func()
	stopped bool
	fired   bool
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{clock: c, d: d, f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	was := !t.stopped && !t.fired
	t.stopped = true
	return was
}

// pending returns the timers neither stopped nor fired.
func (c *fakeClock) pending() []*fakeTimer {
	c.mu.Lock()
	defer c.mu.Unlock()
	var p []*fakeTimer
	for _, t := range c.timers {
		if !t.stopped && !t.fired {
			p = append(p, t)
		}
	}
	return p
}

// fire runs t's function as its timer would.
func (t *fakeTimer) fire() {
	t.clock.mu.Lock()
	if t.stopped || t.fired {
		t.clock.mu.Unlock()
		return
	}
	t.fired = true
	t.clock.mu.Unlock()
	t.f()
}

// TestWindowViolation: a client that sends more on a stream than the
// window let out to it has its connection closed before gRPC sees the
// frame that exceeds it (RFC 9113 section 6.9.1): Read returns what came
// before, then ErrFlowControl; a GOAWAY (FLOW_CONTROL_ERROR) is written
// and the connection's admissions are returned. The same bytes pass when
// gRPC's WINDOW_UPDATE was let out first, and when they fit the initial
// window.
func TestWindowViolation(t *testing.T) {
	const n = 2 << 20
	ok := clientOpen(1, n, false) // HEADERS, and DATA within the window
	over := frame(frameData, 0, 1, make([]byte, Threshold))
	for _, tc := range []struct {
		name   string
		update bool // gRPC raises the window for the message first
		wait   bool // the message waits for the budget (the update is held back)
	}{{"no-update", false, false}, {"update", true, false}, {"held-back", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			g := New(CostFactor*n, 16<<20)
			if tc.wait {
				a := g.Wrap(newFake(clientOpen(1, n, false), 81))
				readAll(t, a)
				defer a.Close()
			}
			f := newFake(append(bytes.Clone(ok), over...), 82)
			c := g.Wrap(f)
			defer c.Close()
			buf := make([]byte, len(ok))
			if _, err := c.Read(buf); err != nil { // HEADERS and the prefix
				t.Fatal(err)
			}
			if tc.update {
				if _, err := c.Write(windowUpdate(1, n)); err != nil {
					t.Fatal(err)
				}
			}
			var got []byte
			var err error
			for err == nil {
				var k int
				k, err = c.Read(buf)
				got = append(got, buf[:k]...)
			}
			violated := !tc.update || tc.wait
			if !violated {
				if !bytes.Equal(got, over) || err != io.EOF {
					t.Fatalf("read %d bytes (%v), want the %d of the frame", len(got), err, len(over))
				}
				return
			}
			if len(got) != 0 || !errors.Is(err, ErrFlowControl) {
				t.Fatalf("read %d bytes of the frame over the window, err %v; want none and ErrFlowControl", len(got), err)
			}
			want := frame(frameGoAway, 0, 0, []byte{0, 0, 0, 1, 0, 0, 0, errCodeFlowControl})
			if w := f.written(); !bytes.Equal(w, want) {
				t.Fatalf("wrote %x, want GOAWAY %x", w, want)
			}
			if g.Violations() != 1 {
				t.Fatalf("%d violations counted", g.Violations())
			}
			if !tc.wait && g.InUse() != 0 {
				t.Fatalf("%d in use after the violating connection closed", g.InUse())
			}
			if tc.wait && (g.Waiting() != 0 || g.InUse() != CostFactor*n) {
				t.Fatalf("%d waiting, %d in use: the violating connection's admission was not returned", g.Waiting(), g.InUse())
			}
		})
	}
}

// TestStalledMessage: an admitted message whose client may send all of
// it (its window open) and does not is reset once its timer fires: its
// admission is returned at once (the message waiting behind it is
// admitted), gRPC reads an RST_STREAM (CANCEL) for the stream as if the
// client had sent it, and the client is sent one. The timer starts only
// once the window lets the client send the message (not while gRPC has
// not asked for it), and stops when the message arrives.
func TestStalledMessage(t *testing.T) {
	const n = 2 << 20
	clock := &fakeClock{}
	g := NewWithOptions(CostFactor*n, 16<<20, Options{Grace: 5 * time.Second, MinRate: 1 << 20, AfterFunc: clock.AfterFunc})
	fa := newFake(clientStreams(n, false, 1), 91) // prefix and 1000 bytes, then nothing
	a := g.Wrap(fa)
	readAll(t, a)
	fb := newFake(clientStreams(n, false, 1), 92)
	b := g.Wrap(fb)
	readAll(t, b)
	if g.InUse() != CostFactor*n || g.Waiting() != 1 {
		t.Fatalf("in use %d, %d waiting", g.InUse(), g.Waiting())
	}
	if p := clock.pending(); len(p) != 0 {
		t.Fatalf("%d timers before gRPC opened the window", len(p))
	}
	if _, err := a.Write(windowUpdate(1, n)); err != nil {
		t.Fatal(err)
	}
	p := clock.pending()
	if len(p) != 1 {
		t.Fatalf("%d timers once the window is open, want 1", len(p))
	}
	left := float64(n - 1000)
	if want := 5*time.Second + time.Duration(left/(1<<20)*float64(time.Second)); p[0].d != want {
		t.Fatalf("timer of %v, want %v", p[0].d, want)
	}
	if _, err := b.Write(windowUpdate(1, n)); err != nil { // held back: B waits
		t.Fatal(err)
	}
	p[0].fire()
	b.wg.Wait()
	a.wg.Wait()
	if g.Stalls() != 1 || g.Waiting() != 0 || g.InUse() != CostFactor*n {
		t.Fatalf("after the stall: %d stalls, %d waiting, %d in use (B's message)", g.Stalls(), g.Waiting(), g.InUse())
	}
	rst := frame(frameRSTStream, 0, 1, []byte{0, 0, 0, errCodeCancel})
	if got := fa.written(); !bytes.Equal(got, append(windowUpdate(1, n), rst...)) {
		t.Fatalf("A wrote %x, want its window update then RST_STREAM %x", got, rst)
	}
	if got, want := fb.written(), windowUpdate(1, n); !bytes.Equal(got, want) {
		t.Fatalf("B wrote %x, want %x once admitted", got, want)
	}
	buf := make([]byte, 64)
	k, err := a.Read(buf)
	if err != nil || !bytes.Equal(buf[:k], rst) {
		t.Fatalf("gRPC read %x, %v; want the injected %x", buf[:k], err, rst)
	}
	// B's timer started with its window; B's message arrives: stopped.
	p = clock.pending()
	if len(p) != 1 {
		t.Fatalf("%d timers, want B's", len(p))
	}
	fb.in = bytes.NewReader(frame(frameData, 0, 1, make([]byte, n-1000)))
	readAll(t, b)
	if len(clock.pending()) != 0 {
		t.Fatal("B's timer still runs after its message arrived")
	}
	p[0].fire() // too late: nothing happens
	if g.Stalls() != 1 || g.InUse() != CostFactor*n {
		t.Fatalf("a late timer reset B: %d stalls, %d in use", g.Stalls(), g.InUse())
	}
	a.Close()
	b.Close()
	if g.InUse() != 0 {
		t.Fatalf("%d in use after close", g.InUse())
	}
}

// TestInjectInAtBoundary: an RST_STREAM for gRPC is returned at the next
// incoming frame boundary, never inside a frame or a header block: the
// bytes read past the boundary wait for the next Read.
func TestInjectInAtBoundary(t *testing.T) {
	const n = 2 << 20
	clock := &fakeClock{}
	g := NewWithOptions(1<<30, 16<<20, Options{InitialWindow: 1<<31 - 1, AfterFunc: clock.AfterFunc})
	head := clientStreams(n, false, 1)
	ping := frame(6, 0, 0, make([]byte, 8))
	hdrs := frame(frameHeaders, 0, 3, []byte{1, 2})
	cont := frame(frameContinuation, flagEndHeaders, 3, []byte{3})
	tail := append(append(append(bytes.Clone(ping), hdrs...), cont...), ping...)
	f := newFake(append(bytes.Clone(head), tail...), 93)
	c := g.Wrap(f)
	defer c.Close()
	buf := make([]byte, len(head)+len(ping)+len(hdrs)+3)
	if k, err := c.Read(buf[:len(head)+4]); err != nil || k != len(head)+4 { // mid-PING
		t.Fatalf("Read = %d, %v", k, err)
	}
	p := clock.pending()
	if len(p) != 1 {
		t.Fatalf("%d timers, want 1", len(p))
	}
	p[0].fire()
	rst := frame(frameRSTStream, 0, 1, []byte{0, 0, 0, errCodeCancel})
	var got []byte
	for {
		k, err := c.Read(buf)
		if err != nil {
			break
		}
		got = append(got, buf[:k]...)
	}
	// The PING's rest, then the RST, then HEADERS+CONTINUATION and PING.
	want := append(append(bytes.Clone(ping[4:]), rst...), tail[len(ping):]...)
	if !bytes.Equal(got, want) {
		t.Fatalf("read\n%x\nwant\n%x", got, want)
	}
	// Inside a header block: after the CONTINUATION.
	f2 := newFake(append(bytes.Clone(head), append(bytes.Clone(hdrs), cont...)...), 94)
	c2 := g.Wrap(f2)
	defer c2.Close()
	if k, err := c2.Read(buf[:len(head)+len(hdrs)]); err != nil || k != len(head)+len(hdrs) {
		t.Fatalf("Read = %d, %v", k, err)
	}
	p = clock.pending()
	if len(p) != 1 {
		t.Fatalf("%d timers, want 1", len(p))
	}
	p[0].fire()
	got = got[:0]
	for {
		k, err := c2.Read(buf)
		if err != nil {
			break
		}
		got = append(got, buf[:k]...)
	}
	if want := append(bytes.Clone(cont), rst...); !bytes.Equal(got, want) {
		t.Fatalf("read\n%x\nwant\n%x", got, want)
	}
}

// TestStallWakesReader: gRPC's reader blocked on a stalled client (a real
// connection with deadlines: net.Pipe) is woken when the stall timer
// fires, and reads the injected RST_STREAM, not a timeout; afterwards
// reads block again as before (the deadline is cleared).
func TestStallWakesReader(t *testing.T) {
	const n = 2 << 20
	clock := &fakeClock{}
	g := NewWithOptions(CostFactor*n, 16<<20, Options{AfterFunc: clock.AfterFunc})
	client, server := net.Pipe()
	defer client.Close()
	c := g.Wrap(server)
	defer c.Close()
	var fromServer bytes.Buffer
	drained := make(chan struct{})
	go func() { // the client reads what the server writes
		defer close(drained)
		_, _ = io.Copy(&fromServer, client)
	}()
	reads := make(chan []byte)
	errs := make(chan error, 1)
	go func() { // gRPC's reader
		buf := make([]byte, 64<<10)
		for {
			k, err := c.Read(buf)
			if err != nil {
				errs <- err
				return
			}
			reads <- bytes.Clone(buf[:k])
		}
	}()
	in := clientStreams(n, false, 1)
	go func() { _, _ = client.Write(in) }()
	var got []byte
	for len(got) < len(in) {
		got = append(got, <-reads...)
	}
	if _, err := c.Write(windowUpdate(1, n)); err != nil { // the window opens: the clock starts
		t.Fatal(err)
	}
	p := clock.pending()
	if len(p) != 1 {
		t.Fatalf("%d timers, want 1", len(p))
	}
	p[0].fire()
	c.wg.Wait() // the injector has sent the client its RST_STREAM
	rst := frame(frameRSTStream, 0, 1, []byte{0, 0, 0, errCodeCancel})
	select {
	case b := <-reads:
		if !bytes.Equal(b, rst) {
			t.Fatalf("the woken reader read %x, want %x", b, rst)
		}
	case err := <-errs:
		t.Fatalf("the woken reader failed: %v", err)
	}
	ping := frame(6, 0, 0, make([]byte, 8))
	go func() { _, _ = client.Write(ping) }()
	select {
	case b := <-reads:
		if !bytes.Equal(b, ping) {
			t.Fatalf("then read %x, want the client's PING", b)
		}
	case err := <-errs:
		t.Fatalf("after the wake-up, Read failed: %v (the deadline was left set?)", err)
	}
	client.Close()
	<-errs
	c.Close()
	<-drained
	if want := append(windowUpdate(1, n), rst...); !bytes.Equal(fromServer.Bytes(), want) {
		t.Fatalf("the client got %x, want %x", fromServer.Bytes(), want)
	}
}
