package recvbudget

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeConn serves reads from in and records writes.
type fakeConn struct {
	in    *bytes.Reader
	mu    sync.Mutex
	out   bytes.Buffer
	local net.Addr
}

func newFake(in []byte, port int) *fakeConn {
	return &fakeConn{in: bytes.NewReader(in), local: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}}
}

func (f *fakeConn) Read(p []byte) (int, error) { return f.in.Read(p) }
func (f *fakeConn) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.out.Write(p)
}
func (f *fakeConn) written() []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return bytes.Clone(f.out.Bytes())
}
func (f *fakeConn) Close() error                     { return nil }
func (f *fakeConn) LocalAddr() net.Addr              { return f.local }
func (f *fakeConn) RemoteAddr() net.Addr             { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }
func (f *fakeConn) SetDeadline(time.Time) error      { return nil }
func (f *fakeConn) SetReadDeadline(time.Time) error  { return nil }
func (f *fakeConn) SetWriteDeadline(time.Time) error { return nil }

func frame(typ, flags byte, sid uint32, payload []byte) []byte {
	f := make([]byte, frameHeaderLen, frameHeaderLen+len(payload))
	n := len(payload)
	f[0], f[1], f[2] = byte(n>>16), byte(n>>8), byte(n)
	f[3], f[4] = typ, flags
	binary.BigEndian.PutUint32(f[5:9], sid)
	return append(f, payload...)
}

func windowUpdate(sid, inc uint32) []byte {
	return frame(frameWindowUpdate, 0, sid, binary.BigEndian.AppendUint32(nil, inc))
}

// grpcPrefix is a gRPC message prefix of length n.
func grpcPrefix(n uint32) []byte { return binary.BigEndian.AppendUint32([]byte{0}, n) }

// clientOpen is a client's preface, then HEADERS opening stream sid and
// DATA carrying the start of a message of length n (padded when pad).
func clientOpen(sid, n uint32, pad bool) []byte {
	b := []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	b = append(b, frame(frameHeaders, 0x4, sid, []byte{0x82})...)
	data := append(grpcPrefix(n), make([]byte, 1000)...)
	if pad {
		data = append(append([]byte{7}, data...), make([]byte, 7)...)
		return append(b, frame(frameData, flagPadded, sid, data)...)
	}
	return append(b, frame(frameData, 0, sid, data)...)
}

// clientWhole is clientOpen with the rest of the message: all of it.
func clientWhole(sid, n uint32, pad bool) []byte {
	return append(clientOpen(sid, n, pad), frame(frameData, 0, sid, make([]byte, n-1000))...)
}

func readAll(t *testing.T, c net.Conn) {
	t.Helper()
	buf := make([]byte, 7) // small reads: frames split across them
	for read := 0; ; {
		if read > 64<<10 {
			buf = make([]byte, 64<<10)
		}
		n, err := c.Read(buf)
		if err != nil {
			return
		}
		read += n
	}
}

// TestOutgoingPassThrough: outgoing frames pass unchanged whatever the
// write boundaries, when nothing is held back.
func TestOutgoingPassThrough(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(uint64(seed), 0))
	var stream []byte
	for range 200 {
		switch r.IntN(4) {
		case 0:
			stream = append(stream, frame(frameData, 0, 1, make([]byte, r.IntN(40)))...)
		case 1:
			stream = append(stream, windowUpdate(uint32(r.IntN(3)), uint32(r.IntN(1<<20)))...)
		case 2:
			stream = append(stream, frame(frameHeaders, flagEndStream, 3, []byte{1, 2, 3})...)
		default:
			stream = append(stream, frame(6, 0, 0, make([]byte, 8))...) // PING
		}
	}
	g := newGate(1 << 30)
	f := newFake(nil, 10)
	c := g.Wrap(f)
	for rest := stream; len(rest) > 0; {
		k := min(len(rest), 1+r.IntN(30))
		if n, err := c.Write(rest[:k]); n != k || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
		rest = rest[k:]
	}
	if got := f.written(); !bytes.Equal(got, stream) {
		t.Fatalf("written %d bytes differ from the %d given", len(got), len(stream))
	}
	c.Close()
}

// TestAdmission: a large message waits for the budget with its stream's
// WINDOW_UPDATEs held back; when an admitted message is done, the waiting
// one is admitted and the held-back increments are sent, summed.
func TestAdmission(t *testing.T) {
	const n = 2 << 20
	for _, pad := range []bool{false, true} {
		g := newGate(CostFactor * n)
		fa, fb := newFake(clientWhole(1, n, pad), 11), newFake(clientOpen(1, n, pad), 12)
		a, b := g.Wrap(fa), g.Wrap(fb)
		readAll(t, a)
		if g.InUse() != CostFactor*n || g.Waiting() != 0 {
			t.Fatalf("after A's message: in use %d, %d waiting", g.InUse(), g.Waiting())
		}
		readAll(t, b)
		if g.Waiting() != 1 {
			t.Fatalf("B's message: %d waiting, want 1", g.Waiting())
		}
		// gRPC raises B's window for its message: held back, in two
		// writes split inside the frame.
		wu := append(windowUpdate(1, n), windowUpdate(1, 100)...)
		if _, err := b.Write(wu[:5]); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Write(wu[5:]); err != nil {
			t.Fatal(err)
		}
		// A's own window is open: passed through.
		if _, err := a.Write(windowUpdate(1, n)); err != nil {
			t.Fatal(err)
		}
		if got := fb.written(); len(got) != 0 {
			t.Fatalf("B wrote %x while its message waits", got)
		}
		if got := fa.written(); !bytes.Equal(got, windowUpdate(1, n)) {
			t.Fatalf("A wrote %x", got)
		}
		a.done(n)
		b.wg.Wait() // the injector
		if got, want := fb.written(), windowUpdate(1, n+100); !bytes.Equal(got, want) {
			t.Fatalf("B wrote %x once admitted, want %x", got, want)
		}
		if g.InUse() != CostFactor*n || g.HighWater() != CostFactor*n {
			t.Fatalf("in use %d, high %d", g.InUse(), g.HighWater())
		}
		// B's stream answered with trailers: its admission is returned.
		if _, err := b.Write(frame(frameHeaders, flagEndStream|0x4, 1, []byte{0x88})); err != nil {
			t.Fatal(err)
		}
		if g.InUse() != 0 {
			t.Fatalf("in use %d after the stream ended", g.InUse())
		}
		a.Close()
		b.Close()
	}
}

// TestAdmissionReturned: a waiting message whose stream the client resets,
// and admitted ones on a closing connection, are returned.
func TestAdmissionReturned(t *testing.T) {
	const n = 2 << 20
	g := newGate(CostFactor * n)
	a := g.Wrap(newFake(clientOpen(1, n, false), 21))
	readAll(t, a)
	in := append(clientOpen(1, n, false), frame(frameRSTStream, 0, 1, []byte{0, 0, 0, 8})...)
	b := g.Wrap(newFake(in, 22))
	readAll(t, b)
	if g.Waiting() != 0 {
		t.Fatalf("%d waiting after the client reset its stream", g.Waiting())
	}
	c := g.Wrap(newFake(clientOpen(1, n, false), 23))
	readAll(t, c)
	if g.Waiting() != 1 {
		t.Fatalf("%d waiting, want 1", g.Waiting())
	}
	a.Close()
	c.wg.Wait()
	if g.Waiting() != 0 || g.InUse() != CostFactor*n {
		t.Fatalf("after A closed: %d waiting, %d in use", g.Waiting(), g.InUse())
	}
	c.Close()
	b.Close()
	if g.InUse() != 0 {
		t.Fatalf("%d in use with every connection closed", g.InUse())
	}
	// Small messages and messages over the receive limit are not admitted.
	for _, m := range []uint32{Threshold, 17 << 20} {
		d := g.Wrap(newFake(clientOpen(1, m, false), 24))
		readAll(t, d)
		if g.InUse() != 0 || g.Waiting() != 0 {
			t.Fatalf("message of %d bytes admitted", m)
		}
		d.Close()
	}
}

// TestInjectMidFrame: a WINDOW_UPDATE released while gRPC's writer is in
// the middle of a frame goes out right after that frame, even when no
// other write follows.
func TestInjectMidFrame(t *testing.T) {
	const n = 2 << 20
	g := newGate(CostFactor * n)
	fa, fb := newFake(clientWhole(1, n, false), 41), newFake(clientOpen(1, n, false), 42)
	a, b := g.Wrap(fa), g.Wrap(fb)
	readAll(t, a)
	readAll(t, b)
	if _, err := b.Write(windowUpdate(1, n)); err != nil { // held back
		t.Fatal(err)
	}
	data := frame(frameData, 0, 1, []byte("response"))
	if _, err := b.Write(data[:11]); err != nil {
		t.Fatal(err)
	}
	a.done(n) // B admitted while its writer is mid-frame
	b.wg.Wait()
	if got := fb.written(); !bytes.Equal(got, data[:11]) {
		t.Fatalf("B wrote %x mid-frame, want %x", got, data[:11])
	}
	if _, err := b.Write(data[11:]); err != nil {
		t.Fatal(err)
	}
	if got, want := fb.written(), append(bytes.Clone(data), windowUpdate(1, n)...); !bytes.Equal(got, want) {
		t.Fatalf("B wrote %x, want %x", got, want)
	}
	a.Close()
	b.Close()
}
