package recvbudget

import (
	"bytes"
	"testing"
)

// TestMaxStreams: streams across connections are capped (Options.
// MaxStreams). A stream opened at the cap is refused: gRPC reads its
// header block whole (HPACK), then an RST_STREAM (REFUSED_STREAM) before
// the stream's DATA, which follows as sent (gRPC drops it: the stream is
// closed); the client is sent the same RST_STREAM. A stream that ends, on
// a reset by either side, trailers, or its connection closing, frees its
// place.
func TestMaxStreams(t *testing.T) {
	g := NewWithOptions(1<<30, 16<<20, Options{MaxStreams: 2})
	a := g.Wrap(newFake(clientOpen(1, 100, false), 51))
	readAll(t, a)
	hdrs := frame(frameHeaders, 0, 3, []byte{1, 2})
	cont := frame(frameContinuation, flagEndHeaders, 3, []byte{3})
	data := frame(frameData, 0, 3, append(grpcPrefix(100), make([]byte, 100)...))
	in := append(append(append(clientOpen(1, 100, false), hdrs...), cont...), data...)
	fb := newFake(in, 52)
	b := g.Wrap(fb)
	if n := g.OpenStreams(); n != 1 {
		t.Fatalf("%d streams open, want 1", n)
	}
	var got []byte
	buf := make([]byte, 5) // small reads: frames split across them
	for {
		k, err := b.Read(buf)
		if err != nil {
			break
		}
		got = append(got, buf[:k]...)
	}
	rst := frame(frameRSTStream, 0, 3, []byte{0, 0, 0, errCodeRefused})
	open := clientOpen(1, 100, false)
	want := append(append(append(append(bytes.Clone(open), hdrs...), cont...), rst...), data...)
	if !bytes.Equal(got, want) {
		t.Fatalf("read\n%x\nwant\n%x", got, want)
	}
	b.wg.Wait() // the injector
	if out := fb.written(); !bytes.Equal(out, rst) {
		t.Fatalf("client sent %x, want %x", out, rst)
	}
	if g.OpenStreams() != 2 || g.RefusedStreams() != 1 {
		t.Fatalf("%d open, %d refused; want 2, 1", g.OpenStreams(), g.RefusedStreams())
	}
	// Trailers end B's stream 1: a place frees.
	if _, err := b.Write(frame(frameHeaders, flagEndStream|flagEndHeaders, 1, []byte{1})); err != nil {
		t.Fatal(err)
	}
	if n := g.OpenStreams(); n != 1 {
		t.Fatalf("%d open after trailers, want 1", n)
	}
	// The client resets A's stream; then a new stream is let in.
	c := g.Wrap(newFake(append(append(clientOpen(1, 100, false), frame(frameRSTStream, 0, 1, []byte{0, 0, 0, 8})...),
		frame(frameHeaders, flagEndHeaders, 3, []byte{1})...), 53))
	readAll(t, c)
	if g.OpenStreams() != 2 || g.RefusedStreams() != 1 {
		t.Fatalf("%d open, %d refused; want 2, 1", g.OpenStreams(), g.RefusedStreams())
	}
	a.Close()
	if n := g.OpenStreams(); n != 1 {
		t.Fatalf("%d open after A closed, want 1", n)
	}
	b.Close()
	c.Close()
	if n := g.OpenStreams(); n != 0 {
		t.Fatalf("%d open with every connection closed", n)
	}
}
