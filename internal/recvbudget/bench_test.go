package recvbudget

import (
	"io"
	"net"
	"testing"
)

// The cost the wrapper adds to every byte of a gRPC connection: following
// 16 KiB DATA frames in, and passing them out.
//
//	go test -run '^$' -bench . -benchmem -count 10 ./internal/recvbudget/

type discardConn struct{ net.Conn }

func (discardConn) Write(p []byte) (int, error) { return len(p), nil }

type loopReader struct {
	net.Conn
	b   []byte
	off int
}

func (r *loopReader) Read(p []byte) (int, error) {
	n := copy(p, r.b[r.off:])
	r.off += n
	if r.off == len(r.b) {
		r.off = 0
	}
	return n, nil
}

// dataFrames is 1 MiB of 16 KiB DATA frames on stream 1, carrying 256 KiB
// gRPC messages.
func dataFrames() []byte {
	var b []byte
	payload := make([]byte, 16<<10)
	for i := 0; len(b) < 1<<20; i++ {
		if i%16 == 0 {
			copy(payload, grpcPrefix(256<<10-5))
		} else {
			clear(payload[:5])
		}
		b = append(b, frame(frameData, 0, 1, payload)...)
	}
	return b
}

func BenchmarkConnWrite(b *testing.B) {
	g := New(1<<30, 16<<20)
	c := g.Wrap(discardConn{newFake(nil, 30)})
	defer c.Close()
	buf := dataFrames()
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkConnRead(b *testing.B) {
	g := New(1<<30, 16<<20)
	frames := dataFrames()
	in := append(append([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), frame(frameHeaders, 0x4, 1, []byte{0x82})...), frames...)
	r := &loopReader{Conn: discardConn{newFake(nil, 31)}, b: in}
	c := g.Wrap(r)
	// gRPC's writer gives the window back as the handler reads.
	wu := windowUpdate(1, uint32(len(frames)))
	defer c.Close()
	buf := make([]byte, 1<<20)
	if _, err := io.ReadFull(c, buf[:len(in)-len(frames)]); err != nil {
		b.Fatal(err)
	}
	r.b, r.off = frames, 0
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Write(wu); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawRead is BenchmarkConnRead without the wrapper: the copy
// alone.
func BenchmarkRawRead(b *testing.B) {
	frames := dataFrames()
	r := &loopReader{Conn: newFake(nil, 32), b: frames}
	buf := make([]byte, 1<<20)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := io.ReadFull(r, buf); err != nil {
			b.Fatal(err)
		}
	}
}
