package e2e

import (
	"bytes"
	"encoding/binary"
	"net"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/bqstore/bqstore/internal/server"
)

// The hostile client's raw HTTP/2 abuse of the receive side
// (internal/recvbudget): what the official clients never send.

// rawEvent is what the server did on a raw connection.
type rawEvent struct {
	sid    uint32
	code   http2.ErrCode
	goAway bool // a GOAWAY (code is its error code)
	ended  bool // the stream was answered (END_STREAM)
	closed bool // the connection ended
	pong   bool // a PING was answered
}

// rawConn is a raw HTTP/2 client connection to the server's gRPC port.
type rawConn struct {
	h      *hostile
	c      net.Conn
	fr     *http2.Framer
	block  []byte // HEADERS block of an AppendRows call
	events chan rawEvent
}

func (h *hostile) rawDial(kind string) *rawConn {
	h.t.Helper()
	c, err := net.Dial("tcp", h.e.srv.GRPCAddr())
	if err != nil {
		h.t.Fatalf("%s: %v", kind, err)
	}
	if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
		h.t.Fatalf("%s: %v", kind, err)
	}
	fr := http2.NewFramer(c, c)
	if err := fr.WriteSettings(); err != nil {
		h.t.Fatalf("%s: %v", kind, err)
	}
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":authority", h.e.srv.GRPCAddr()},
		{":path", "/google.cloud.bigquery.storage.v1.BigQueryWrite/AppendRows"},
		{"content-type", "application/grpc"}, {"te", "trailers"}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	rc := &rawConn{h: h, c: c, fr: fr, block: hb.Bytes(), events: make(chan rawEvent, 1024)}
	go func() {
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				rc.events <- rawEvent{closed: true}
				return
			}
			switch f := f.(type) {
			case *http2.RSTStreamFrame:
				rc.events <- rawEvent{sid: f.StreamID, code: f.ErrCode}
			case *http2.GoAwayFrame:
				rc.events <- rawEvent{code: f.ErrCode, goAway: true}
			case *http2.HeadersFrame:
				if f.StreamEnded() {
					rc.events <- rawEvent{sid: f.StreamID, ended: true}
				}
			case *http2.PingFrame:
				if f.IsAck() {
					rc.events <- rawEvent{pong: true}
				}
			}
		}
	}()
	return rc
}

// open opens stream sid and sends data on it (the headers' fields never
// change: HPACK's table stays as it was).
func (rc *rawConn) open(sid uint32, data []byte) error {
	if err := rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: sid, BlockFragment: rc.block, EndHeaders: true}); err != nil {
		return err
	}
	for len(data) > 0 {
		n := min(len(data), 16<<10)
		if err := rc.fr.WriteData(sid, false, data[:n]); err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// next is the server's next event, failing the test when none comes in
// time.
func (rc *rawConn) next(kind string) rawEvent {
	select {
	case ev := <-rc.events:
		return ev
	case <-time.After(time.Minute):
		rc.h.t.Fatalf("%s: the server did nothing for a minute", kind)
	case <-rc.h.e.ctx.Done():
		rc.h.t.Fatalf("%s: %v", kind, rc.h.e.ctx.Err())
	}
	return rawEvent{}
}

// rawAbuse runs one abuse of the receive side on a raw connection:
//   - stalled prefixes: streams announce a large message and send nothing
//     more; each is reset (RST_STREAM CANCEL) once its window is open and
//     the grace has passed;
//   - window ignored: a stream sends a whole large message without
//     waiting for WINDOW_UPDATEs; the connection is closed (GOAWAY
//     FLOW_CONTROL_ERROR) unless its window happened to open in time, in
//     which case the call is answered;
//   - stream flood: more streams than a connection may have, each sending
//     part of a message; those over the cap are refused;
//   - connection flood: more streams than the server may have open at
//     once (--max-open-streams), over several connections (rawConnFlood).
//
// Afterwards nothing of the connection stays admitted.
func (h *hostile) rawAbuse(kind string) {
	rc := h.rawDial(kind)
	defer rc.c.Close()
	prefix := func(n int) []byte { return binary.BigEndian.AppendUint32([]byte{0}, uint32(n)) }
	switch h.rng.IntN(4) {
	case 0:
		streams := 1 + h.rng.IntN(3)
		for i := range streams {
			if err := rc.open(uint32(2*i+1), prefix(1<<20+1+h.rng.IntN(2<<20))); err != nil {
				h.t.Fatalf("%s: %v", kind, err)
			}
		}
		for reset := 0; reset < streams; {
			ev := rc.next(kind)
			if ev.closed || ev.goAway || ev.ended || ev.code != http2.ErrCodeCancel {
				h.t.Fatalf("%s: %+v, want RST_STREAM CANCEL", kind, ev)
			}
			reset++
		}
	case 1:
		n := 1<<20 + 1 + h.rng.IntN(14<<20)
		if err := rc.open(1, append(prefix(n), make([]byte, n)...)); err != nil {
			break // the server closed the connection while it was sent
		}
		for {
			ev := rc.next(kind)
			if ev.goAway && ev.code != http2.ErrCodeFlowControl {
				h.t.Fatalf("%s: GOAWAY %v, want FLOW_CONTROL_ERROR", kind, ev.code)
			}
			if ev.closed || ev.ended || ev.sid == 1 {
				break
			}
		}
	case 2:
		over := 1 + h.rng.IntN(20)
		for i := range server.DefaultGRPCMaxStreams + over {
			// Part of a message under the window: nothing to admit, so
			// no stream ends but by the cap.
			if err := rc.open(uint32(2*i+1), append(prefix(512<<10), make([]byte, 64<<10)...)); err != nil {
				h.t.Fatalf("%s: %v", kind, err)
			}
		}
		for refused := 0; refused < over; {
			ev := rc.next(kind)
			if ev.closed || ev.goAway {
				h.t.Fatalf("%s: %+v, want %d streams refused", kind, ev, over)
			}
			if ev.code == http2.ErrCodeRefusedStream {
				refused++
			}
		}
	case 3:
		h.rawConnFlood(kind)
	}
	rc.c.Close()
	for metricValue(h.t, h.e.srv, "bqstore_grpc_receive_admitted_bytes") != 0 || metricValue(h.t, h.e.srv, "bqstore_grpc_receive_waiting") != 0 {
		if h.e.ctx.Err() != nil {
			h.t.Fatalf("%s: the receive budget never drained after the connection closed", kind)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// rawConnFlood opens more streams than the server may have open at once
// (hostileMaxOpenStreams), spread over a few connections of at most
// --max-grpc-streams each, every stream sending the prefix of a 1 MiB
// message and part of its window, never the whole: the handlers wait for
// the rest while gRPC holds what came. The streams over the cap are
// refused (RST_STREAM REFUSED_STREAM), so the transport's buffers stay
// under the cap's windows (checked at the end of TestHostileClient); once
// the connections close, their streams no longer count.
func (h *hostile) rawConnFlood(kind string) {
	const window = 1 << 20
	before := metricValue(h.t, h.e.srv, "bqstore_grpc_open_streams")
	total := hostileMaxOpenStreams + 1 + h.rng.IntN(64)
	conns := 2 + h.rng.IntN(3)
	per := (total + conns - 1) / conns
	fill := 64<<10 + h.rng.IntN(window-5-64<<10)
	msg := append(binary.BigEndian.AppendUint32([]byte{0}, window), make([]byte, fill)...)
	var rcs []*rawConn
	defer func() {
		for _, rc := range rcs {
			rc.c.Close()
		}
	}()
	for opened := 0; opened < total; {
		rc := h.rawDial(kind)
		rcs = append(rcs, rc)
		for i := 0; i < per && opened < total; i++ {
			if err := rc.open(uint32(2*i+1), msg); err != nil {
				h.t.Fatalf("%s: %v", kind, err)
			}
			opened++
		}
		// gRPC reads frames in order: once it answers, it has taken in
		// (or refused) every stream before.
		if err := rc.fr.WritePing(false, [8]byte{1}); err != nil {
			h.t.Fatalf("%s: %v", kind, err)
		}
	}
	refused := 0
	for _, rc := range rcs {
		for {
			ev := rc.next(kind)
			if ev.closed || ev.goAway || ev.ended {
				h.t.Fatalf("%s: %+v, want streams refused or left open", kind, ev)
			}
			if ev.pong {
				break
			}
			if ev.code != http2.ErrCodeRefusedStream {
				h.t.Fatalf("%s: RST_STREAM %v on stream %d, want REFUSED_STREAM", kind, ev.code, ev.sid)
			}
			refused++
		}
	}
	// Other streams of the hostile client may be open too.
	if over := total - hostileMaxOpenStreams; refused < over || refused > over+int(before)+8 {
		h.t.Fatalf("%s: %d of %d streams over %d connections refused, want %d (%v others open before)",
			kind, refused, total, len(rcs), over, before)
	}
	for _, rc := range rcs {
		rc.c.Close()
	}
	for metricValue(h.t, h.e.srv, "bqstore_grpc_open_streams") > before {
		if h.e.ctx.Err() != nil {
			h.t.Fatalf("%s: %v streams still open after the connections closed, %v before",
				kind, metricValue(h.t, h.e.srv, "bqstore_grpc_open_streams"), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
