package recvbudget

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"net"
	"testing"
)

// FuzzConn feeds arbitrary client bytes (read in pieces of random sizes)
// and arbitrary gRPC writes (split at random) through Conn. Whatever the
// bytes: nothing panics, Read returns exactly the bytes read (with a
// 64-byte window, a prefix of them when the client exceeds it, then
// ErrFlowControl); with a budget that admits everything at once nothing
// is held back, so the bytes written out are exactly gRPC's (less a last
// frame start not yet whole); stall timers fire without harm; with a budget that makes messages wait, closing the
// connection returns every admission.
//
//	go test -run '^$' -fuzz FuzzConn -fuzztime 60s ./internal/recvbudget/
func FuzzConn(f *testing.F) {
	const n = 2 << 20
	server := func(sid uint32) []byte {
		var b []byte
		b = append(b, frame(0x4, 0, 0, make([]byte, 6))...)
		b = append(b, windowUpdate(sid, n)...)
		b = append(b, frame(frameHeaders, 0, sid, []byte{1, 2})...)
		b = append(b, frame(frameContinuation, flagEndHeaders, sid, []byte{3})...)
		b = append(b, frame(frameData, 0, sid, grpcPrefix(3))...)
		b = append(b, windowUpdate(0, 100)...)
		return append(b, frame(frameHeaders, flagEndStream|flagEndHeaders, sid, []byte{0x88})...)
	}
	add := func(seed byte, client, srv []byte) {
		in := binary.BigEndian.AppendUint32([]byte{seed}, uint32(len(client)))
		f.Add(append(append(in, client...), srv...))
	}
	add(1, clientOpen(1, n, false), server(1))
	add(2, clientOpen(1, n, true), server(1))
	add(3, append(clientOpen(1, 0, false), frame(frameRSTStream, 0, 1, []byte{0, 0, 0, 8})...), server(1))
	add(4, append(clientOpen(1, Threshold+1, false), clientOpen(3, n, true)[clientPreface:]...), server(3))
	add(5, []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), frame(6, 0, 0, make([]byte, 8)))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 5 {
			return
		}
		r := rand.New(rand.NewPCG(uint64(data[0]), 0))
		k := min(int(binary.BigEndian.Uint32(data[1:5])), len(data)-5)
		client, srv := data[5:5+k], data[5+k:]
		for _, cfg := range []struct{ budget, window int64 }{{1 << 40, 0}, {1, 0}, {1 << 40, 64}} {
			budget := cfg.budget
			clock := &fakeClock{}
			g := NewWithOptions(budget, 16<<20, Options{InitialWindow: cfg.window, AfterFunc: clock.AfterFunc})
			p := &pipeConn{fakeConn: fakeConn{local: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}}, queued: bytes.Clone(client)}
			c := g.Wrap(p)
			var read []byte
			var err error
			buf := make([]byte, 256)
			for err == nil {
				p.max = 1 + r.IntN(64)
				var m int
				m, err = c.Read(buf)
				read = append(read, buf[:m]...)
			}
			if err == net.ErrClosed { // all read
				err = nil
			}
			switch {
			case err == ErrFlowControl:
				if !bytes.HasPrefix(client, read) || len(read) == len(client) {
					t.Fatalf("budget %d window %d: a window exceeded, yet Read returned other bytes than a prefix of the client's", budget, cfg.window)
				}
			case err != nil:
				t.Fatalf("Read: %v", err)
			case !bytes.Equal(read, client):
				t.Fatalf("budget %d: Read returned other bytes than the client sent", budget)
			}
			for rest := srv; len(rest) > 0; {
				m := min(len(rest), 1+r.IntN(32))
				if w, err := c.Write(rest[:m]); w != m || err != nil {
					t.Fatalf("Write = %d, %v", w, err)
				}
				rest = rest[m:]
			}
			c.wg.Wait()
			if budget > 1 && err == nil {
				if g.Waiting() != 0 {
					t.Fatalf("%d waiting with a budget of %d", g.Waiting(), budget)
				}
				// Less a frame start the writes ended in, held until
				// it is whole.
				if got, want := p.written(), srv[:len(srv)-c.out.hn]; !bytes.Equal(got, want) {
					t.Fatalf("nothing held back, yet written %x, want %x", got, want)
				}
			}
			// Every message whose window is open stalls: its stream is
			// reset.
			for _, tm := range clock.pending() {
				tm.fire()
			}
			if err == nil {
				for range 100 {
					if _, err := c.Read(buf); err != nil {
						break
					}
				}
			}
			c.wg.Wait()
			c.Close()
			if g.InUse() != 0 || g.Waiting() != 0 {
				t.Fatalf("budget %d: %d in use, %d waiting after close", budget, g.InUse(), g.Waiting())
			}
		}
	})
}
