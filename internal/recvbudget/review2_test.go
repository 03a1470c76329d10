package recvbudget

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// TestStallMidFrame: a client that stalls inside a DATA frame (its header
// announced more bytes than it sends) cannot be handed an RST_STREAM:
// gRPC may only be given one at a frame boundary, which never comes. Its
// admission is returned at the stall, yet gRPC keeps the message's bytes
// received so far, outside the budget, for as long as the client keeps
// the connection (keepalive's 2 h), one such message per connection.
// Unless the RST_STREAM reaches gRPC within another grace, the connection
// is cut. Before, nothing followed the stall: the reader stayed blocked
// and no timer was left.
func TestStallMidFrame(t *testing.T) {
	const n = 2 << 20
	clock := &fakeClock{}
	g := NewWithOptions(CostFactor*n, 16<<20, Options{AfterFunc: clock.AfterFunc})
	client, server := net.Pipe()
	defer client.Close()
	c := g.Wrap(server)
	defer c.Close()
	drained := make(chan struct{})
	go func() { defer close(drained); _, _ = io.Copy(io.Discard, client) }()
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
	// HEADERS, then a DATA frame of 16 KiB of which only the prefix and
	// 1000 bytes are sent.
	in := []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	in = append(in, frame(frameHeaders, flagEndHeaders, 1, []byte{0x82})...)
	data := frame(frameData, 0, 1, append(grpcPrefix(n), make([]byte, 16<<10-5)...))
	in = append(in, data[:frameHeaderLen+5+1000]...)
	go func() { _, _ = client.Write(in) }()
	var got []byte
	for len(got) < len(in) {
		got = append(got, <-reads...)
	}
	if _, err := c.Write(windowUpdate(1, n)); err != nil { // the clock starts
		t.Fatal(err)
	}
	p := clock.pending()
	if len(p) != 1 {
		t.Fatalf("%d timers, want 1", len(p))
	}
	p[0].fire()
	if g.Stalls() != 1 || g.InUse() != 0 {
		t.Fatalf("%d stalls, %d in use", g.Stalls(), g.InUse())
	}
	p = clock.pending()
	if len(p) != 1 {
		t.Fatalf("after a stall inside a frame: %d timers, want 1 to cut the connection", len(p))
	}
	if want := DefaultGrace; p[0].d != want {
		t.Fatalf("cut after %v, want %v", p[0].d, want)
	}
	p[0].fire()
	select {
	case b := <-reads:
		t.Fatalf("gRPC read %x, want the connection cut", b)
	case <-errs:
	}
	c.Close()
	<-drained
	if g.InUse() != 0 {
		t.Fatalf("%d in use", g.InUse())
	}
}

// TestStallHandedNoCut: once the RST_STREAM of a stall reaches gRPC, the
// connection is not cut: its other streams go on.
func TestStallHandedNoCut(t *testing.T) {
	const n = 2 << 20
	clock := &fakeClock{}
	g := NewWithOptions(CostFactor*n, 16<<20, Options{AfterFunc: clock.AfterFunc, Grace: time.Second})
	f := newFake(clientStreams(n, false, 1), 95)
	c := g.Wrap(f)
	defer c.Close()
	readAll(t, c)
	if _, err := c.Write(windowUpdate(1, n)); err != nil {
		t.Fatal(err)
	}
	p := clock.pending()
	if len(p) != 1 {
		t.Fatalf("%d timers, want 1", len(p))
	}
	p[0].fire()
	c.wg.Wait()
	buf := make([]byte, 64)
	k, err := c.Read(buf)
	if rst := frame(frameRSTStream, 0, 1, []byte{0, 0, 0, errCodeCancel}); err != nil || !bytes.Equal(buf[:k], rst) {
		t.Fatalf("gRPC read %x, %v; want %x", buf[:k], err, rst)
	}
	if p := clock.pending(); len(p) != 0 {
		t.Fatalf("%d timers left once the RST_STREAM reached gRPC", len(p))
	}
}

// TestWindowExact: the stream window is charged with whole DATA payloads
// (padding and pad length included, RFC 9113 section 6.9.1): a client
// that sends exactly the window, in padded and empty frames, passes, and
// one byte more is a violation unless gRPC let that byte out first.
func TestWindowExact(t *testing.T) {
	in := []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	in = append(in, frame(frameHeaders, flagEndHeaders, 1, []byte{0x82})...)
	sent := 0
	for sent < Threshold-300 {
		n := min(16<<10, Threshold-300-sent)
		// Pad length byte, n-1-100 bytes of empty gRPC messages, 100 of padding.
		p := append([]byte{100}, make([]byte, n-101+100)...)
		in = append(in, frame(frameData, flagPadded, 1, p)...)
		sent += len(p)
	}
	in = append(in, frame(frameData, 0, 1, nil)...) // an empty DATA frame
	in = append(in, frame(frameData, 0, 1, make([]byte, Threshold-sent))...)
	for _, extra := range []bool{false, true} {
		g := New(1<<30, 16<<20)
		one := frame(frameData, flagEndStream, 1, []byte{0})
		c := g.Wrap(newFake(append(bytes.Clone(in), one...), 96))
		buf := make([]byte, len(in))
		got := 0
		for got < len(in) {
			k, err := c.Read(buf[:len(in)-got])
			if err != nil {
				t.Fatalf("extra=%v: read %d of the window's %d bytes: %v", extra, got, len(in), err)
			}
			got += k
		}
		if extra {
			if _, err := c.Write(windowUpdate(1, 1)); err != nil {
				t.Fatal(err)
			}
		}
		k, err := c.Read(buf)
		if extra && (err != nil || k != len(one)) {
			t.Fatalf("after a 1-byte WINDOW_UPDATE: read %d, %v", k, err)
		}
		if !extra && (k != 0 || !errors.Is(err, ErrFlowControl)) {
			t.Fatalf("1 byte over the window: read %d, %v; want ErrFlowControl", k, err)
		}
		c.Close()
	}
}
