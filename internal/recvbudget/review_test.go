package recvbudget

import (
	"bytes"
	"testing"
)

// hookConn is a fakeConn that calls onWrite (once) after its first write.
type hookConn struct {
	*fakeConn
	onWrite func()
}

func (h *hookConn) Write(p []byte) (int, error) {
	n, err := h.fakeConn.Write(p)
	if f := h.onWrite; f != nil {
		h.onWrite = nil
		f()
	}
	return n, err
}

// waiting returns the admission of stream sid of c.
func admissionOf(t *testing.T, c *Conn, sid uint32) *admission {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.mu.streams[sid]
	if st == nil || len(st.adms) == 0 {
		t.Fatalf("stream %d has no admission", sid)
	}
	return st.adms[len(st.adms)-1]
}

// clientStreams is a client's preface, then for each stream sid HEADERS
// and one DATA frame carrying the start of a message of length n (or all
// of it when whole).
func clientStreams(n uint32, whole bool, sids ...uint32) []byte {
	b := []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	for _, sid := range sids {
		b = append(b, frame(frameHeaders, 0x4, sid, []byte{0x82})...)
		body := 1000
		if whole {
			body = int(n)
		}
		b = append(b, frame(frameData, 0, sid, append(grpcPrefix(n), make([]byte, body)...))...)
	}
	return b
}

// TestInjectAfterLastFlush: a message admitted while the injector is
// writing the previous one's WINDOW_UPDATE gets its own sent too. Before,
// the injector, still marked running, ignored it on its way out, and the
// stream waited for its window until gRPC happened to write again.
func TestInjectAfterLastFlush(t *testing.T) {
	const n = 2 << 20
	g := newGate(2 * CostFactor * n)
	a := g.Wrap(newFake(clientStreams(n, false, 1, 3), 51))
	readAll(t, a)
	fb := &hookConn{fakeConn: newFake(clientStreams(n, false, 1, 3), 52)}
	b := g.Wrap(fb)
	readAll(t, b)
	if g.Waiting() != 2 {
		t.Fatalf("%d waiting, want 2", g.Waiting())
	}
	for _, sid := range []uint32{1, 3} {
		if _, err := b.Write(windowUpdate(sid, n)); err != nil { // held back
			t.Fatal(err)
		}
	}
	a3 := admissionOf(t, a, 3)
	fb.onWrite = func() { g.release(a3) } // admits B's stream 3 mid-injection
	g.release(admissionOf(t, a, 1))       // admits B's stream 1
	b.wg.Wait()
	want := append(windowUpdate(1, n), windowUpdate(3, n)...)
	if got := fb.written(); !bytes.Equal(got, want) {
		t.Fatalf("B wrote %x, want %x", got, want)
	}
	a.Close()
	b.Close()
}

// TestInjectNotInHeaderBlock: a WINDOW_UPDATE is never injected between a
// HEADERS frame without END_HEADERS and its CONTINUATION frames (RFC 9113
// section 6.10: the client must treat any other frame there as a
// connection error). grpc-go splits header blocks over 16 KiB so.
func TestInjectNotInHeaderBlock(t *testing.T) {
	const n = 2 << 20
	const endHeaders = 0x4
	hdrs := frame(frameHeaders, 0, 1, bytes.Repeat([]byte{1}, 30))
	cont1 := frame(0x9, 0, 1, bytes.Repeat([]byte{2}, 20))
	cont2 := frame(0x9, endHeaders|0, 1, bytes.Repeat([]byte{3}, 10))
	for _, split := range []bool{true, false} {
		g := newGate(CostFactor * n)
		a := g.Wrap(newFake(clientStreams(n, false, 1), 61))
		readAll(t, a)
		fb := newFake(clientStreams(n, false, 3), 62)
		b := g.Wrap(fb)
		readAll(t, b)
		if _, err := b.Write(windowUpdate(3, n)); err != nil { // held back
			t.Fatal(err)
		}
		if split {
			if _, err := b.Write(hdrs); err != nil {
				t.Fatal(err)
			}
			g.release(admissionOf(t, a, 1)) // admits B's stream 3 inside the header block
			b.wg.Wait()
			if _, err := b.Write(cont1); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Write(cont2); err != nil {
				t.Fatal(err)
			}
		} else {
			// Trailers split over HEADERS (END_STREAM, not END_HEADERS)
			// and CONTINUATIONs in one write end a stream whose admission
			// goes to B's stream 3 at once: its WINDOW_UPDATE must wait
			// for the end of the block.
			a.Close() // its admission goes to B's stream 3
			b.wg.Wait()
			fb.out.Reset()
			c := g.Wrap(newFake(clientStreams(n, false, 1, 5), 63))
			readAll(t, c) // stream 1 admitted, 5 waits
			if _, err := c.Write(windowUpdate(5, n)); err != nil {
				t.Fatal(err)
			}
			fc := c.Conn.(*fakeConn)
			b.Close() // the budget is stream 1's
			block := append(append(frame(frameHeaders, flagEndStream, 1, bytes.Repeat([]byte{1}, 30)), cont1...), cont2...)
			if _, err := c.Write(block); err != nil {
				t.Fatal(err)
			}
			c.wg.Wait()
			if got, want := fc.written(), append(bytes.Clone(block), windowUpdate(5, n)...); !bytes.Equal(got, want) {
				t.Errorf("trailers: C wrote\n%x\nwant\n%x", got, want)
			}
			c.Close()
			continue
		}
		got := fb.written()
		want := append(append(append(bytes.Clone(hdrs), cont1...), cont2...), windowUpdate(3, n)...)
		if !bytes.Equal(got, want) {
			t.Errorf("split=%v: B wrote\n%x\nwant\n%x", split, got, want)
		}
		a.Close()
		b.Close()
	}
}

// TestDoneReturnsReceivedMessage: Done (by length) returns the admission
// of a message received whole, not that of another stream's message of
// the same length still arriving: that one's bytes are still coming in
// and must stay admitted after the first stream ends.
func TestDoneReturnsReceivedMessage(t *testing.T) {
	const n = 2 << 20
	for i := range 40 {
		g := newGate(2 * CostFactor * n)
		in := append(clientStreams(n, true, 1), clientStreams(n, false, 3)[clientPreface:]...)
		c := g.Wrap(newFake(in, 70))
		buf := make([]byte, 64<<10)
		for {
			if _, err := c.Read(buf); err != nil {
				break
			}
		}
		if g.InUse() != 2*CostFactor*n {
			t.Fatalf("in use %d, want both admitted", g.InUse())
		}
		c.done(n) // stream 1's message handled
		if _, err := c.Write(frame(frameHeaders, flagEndStream|0x4, 1, []byte{0x88})); err != nil {
			t.Fatal(err)
		}
		if got := g.InUse(); got != CostFactor*n {
			t.Fatalf("run %d: in use %d after stream 1 ended, want %d (stream 3's message still arriving)", i, got, CostFactor*n)
		}
		c.Close()
		if g.InUse() != 0 {
			t.Fatalf("in use %d after close", g.InUse())
		}
	}
}
