package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/bqstore/bqstore/internal/server"
	"github.com/bqstore/bqstore/internal/testkit"
)

// TestReceiveBudgetStalledPrefix: a client that sends only the 5-byte
// prefix of a large AppendRows message (announcing 16 MiB) and then
// nothing is admitted at once (3 x 16 MiB of the budget) though it holds
// no memory; two such streams take the whole 96 MiB budget. Once their
// windows are open and the grace has passed without their bytes, their
// streams are reset (RST_STREAM CANCEL) and the budget goes to the honest
// client's large append behind them. Before the stall limit, the append
// waited for as long as the stalling connection stayed open (issue 12).
func TestReceiveBudgetStalledPrefix(t *testing.T) {
	srv := testkit.Start(t, func(c *server.Config) {
		c.MaxReceiveBytes = 96 << 20
		c.ReceiveGrace, c.ReceiveMinRate = time.Second, 64<<20
	})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	e := dial(t, ctx, srv)
	tp := e.table("t_recv_stall", simpleSchema)

	// The stalling client: raw HTTP/2, two AppendRows streams, each with
	// a prefix announcing 16 MiB - 1 and nothing more.
	raw, err := net.Dial("tcp", srv.GRPCAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(raw, raw)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	resets := make(chan http2.RSTStreamFrame, 2)
	go func() { // read what the server sends; note its resets
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			if r, ok := f.(*http2.RSTStreamFrame); ok {
				resets <- *r
			}
		}
	}()
	for _, sid := range []uint32{1, 3} {
		var hb bytes.Buffer
		enc := hpack.NewEncoder(&hb)
		for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":authority", srv.GRPCAddr()},
			{":path", "/google.cloud.bigquery.storage.v1.BigQueryWrite/AppendRows"},
			{"content-type", "application/grpc"}, {"te", "trailers"}} {
			_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: sid, BlockFragment: hb.Bytes(), EndHeaders: true}); err != nil {
			t.Fatal(err)
		}
		if err := fr.WriteData(sid, false, binary.BigEndian.AppendUint32([]byte{0}, 16<<20-1)); err != nil {
			t.Fatal(err)
		}
	}

	// An honest client's 3 MiB append.
	ms, md := committedWriter(t, e, tp)
	m := dynamicpb.NewMessage(md)
	m.Set(md.Fields().ByName("id"), protoreflect.ValueOfInt64(1))
	m.Set(md.Fields().ByName("name"), protoreflect.ValueOfString(strings.Repeat("x", 3<<20)))
	row, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	actx, acancel := context.WithTimeout(ctx, 30*time.Second)
	defer acancel()
	r, err := ms.AppendRows(actx, [][]byte{row})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.GetResult(actx); err != nil {
		t.Fatalf("a 3 MiB append while another client stalls after two prefixes: %v (budget: %v admitted, %v waiting)",
			err, metricValue(t, srv, "bqstore_grpc_receive_admitted_bytes"), metricValue(t, srv, "bqstore_grpc_receive_waiting"))
	}
	if n := metricValue(t, srv, "bqstore_grpc_receive_stalled_total"); n != 2 {
		t.Errorf("%v streams reset for stalling, want 2", n)
	}
	for range 2 {
		select {
		case r := <-resets:
			if r.ErrCode != http2.ErrCodeCancel || (r.StreamID != 1 && r.StreamID != 3) {
				t.Errorf("the stalling client got RST_STREAM %v on stream %d, want CANCEL on 1 and 3", r.ErrCode, r.StreamID)
			}
		case <-actx.Done():
			t.Fatal("the stalling client was not sent RST_STREAM for both streams")
		}
	}
}

// TestReceiveBudgetWindowIgnored: a client that does not wait for the
// WINDOW_UPDATEs the budget holds back sends its message whole anyway,
// and grpc-go would accept it: once the AppendRows handler asks for the
// message, grpc-go accepts data up to its length on that stream
// (inFlow.maybeAdjust raises the limit it enforces as well as the update
// it sends). The wrapper enforces the window it let out instead, and
// closes the connection of a client that exceeds it (GOAWAY
// FLOW_CONTROL_ERROR, RFC 9113 section 6.9.1) before gRPC sees the
// excess. Eight connections each send a 15 MiB message at once without
// reading windows, as in TestReceiveBudget; before the fix the transport's
// buffers reached 43 MB, over the 26 MB bound (issue 12).
func TestReceiveBudgetWindowIgnored(t *testing.T) {
	const (
		conns  = 8
		size   = 15 << 20
		budget = 48 << 20
	)
	srv := testkit.Start(t, func(c *server.Config) { c.MaxReceiveBytes = budget })
	var wg sync.WaitGroup
	for range conns {
		raw, err := net.Dial("tcp", srv.GRPCAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := raw.Write([]byte(http2.ClientPreface)); err != nil {
				return
			}
			fr := http2.NewFramer(raw, raw)
			_ = fr.WriteSettings()
			go func() {
				for {
					if _, err := fr.ReadFrame(); err != nil {
						return
					}
				}
			}()
			var hb bytes.Buffer
			enc := hpack.NewEncoder(&hb)
			for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":authority", srv.GRPCAddr()},
				{":path", "/google.cloud.bigquery.storage.v1.BigQueryWrite/AppendRows"},
				{"content-type", "application/grpc"}, {"te", "trailers"}} {
				_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
			}
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndHeaders: true})
			msg := append(binary.BigEndian.AppendUint32([]byte{0}, size), make([]byte, size)...)
			for len(msg) > 0 {
				n := min(len(msg), 16<<10)
				if err := fr.WriteData(1, false, msg[:n]); err != nil {
					return
				}
				msg = msg[n:]
			}
		}()
	}
	wg.Wait()
	// Let the server take in what was sent: wait until the handlers have
	// answered (the streams are refused in-band: over 10 MB) or the
	// buffers pass the bound.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	max, _, _ := srv.ReceiveBudget()
	bound := int64(max/3 + conns*(1<<20+16<<10) + 1<<20)
	for {
		_, high, bufs := srv.ReceiveBudget()
		if bufs > bound {
			t.Fatalf("transport buffers reached %d bytes, over %d (budget %d; admitted at most %d)", bufs, bound, max, high)
		}
		if metricValue(t, srv, "bqstore_grpc_receive_admitted_bytes") == 0 && metricValue(t, srv, "bqstore_grpc_receive_waiting") == 0 && high > 0 {
			break
		}
		if ctx.Err() != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := metricValue(t, srv, "bqstore_grpc_flow_control_errors_total"); n < 1 {
		t.Errorf("no connection closed for a flow-control violation")
	}
}

// TestReceiveBudgetManyStreams: each stream lets its client push a window
// (1 MiB) ahead of its handler, outside the receive budget, so streams per
// connection are capped (Config.GRPCMaxStreams, SETTINGS_MAX_CONCURRENT_
// STREAMS). One connection opens four times the cap of AppendRows streams,
// each sending the prefix of a 2 MiB message and a window of its body
// without waiting for anything; the server refuses the streams over the
// cap (RST_STREAM REFUSED_STREAM) before their bytes are buffered, so the
// transport's buffers stay under the cap's windows. Without the cap
// (GRPCMaxStreams lifted, as grpc-go's default) they reached all four
// times (issue 12).
func TestReceiveBudgetManyStreams(t *testing.T) {
	const (
		maxStreams = 10
		streams    = 4 * maxStreams
		window     = 1 << 20
	)
	srv := testkit.Start(t, func(c *server.Config) {
		c.MaxReceiveBytes = 12 << 20
		c.GRPCMaxStreams = maxStreams
	})
	raw, err := net.Dial("tcp", srv.GRPCAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(raw, raw)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	refused := make(chan uint32, streams)
	pong := make(chan struct{}, 1)
	go func() {
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			switch f := f.(type) {
			case *http2.RSTStreamFrame:
				if f.ErrCode == http2.ErrCodeRefusedStream {
					refused <- f.StreamID
				}
			case *http2.PingFrame:
				if f.IsAck() {
					pong <- struct{}{}
				}
			}
		}
	}()
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":authority", srv.GRPCAddr()},
		{":path", "/google.cloud.bigquery.storage.v1.BigQueryWrite/AppendRows"},
		{"content-type", "application/grpc"}, {"te", "trailers"}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	block := hb.Bytes() // the same fields each time: the encoder's table does not change
	// A window of a 2 MiB message: its prefix and the body that fits.
	msg := append(binary.BigEndian.AppendUint32([]byte{0}, 2<<20), make([]byte, window-5)...)
	for i := range streams {
		sid := uint32(2*i + 1)
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: sid, BlockFragment: block, EndHeaders: true}); err != nil {
			t.Fatal(err)
		}
		for rest := msg; len(rest) > 0; {
			n := min(len(rest), 16<<10)
			if err := fr.WriteData(sid, false, rest[:n]); err != nil {
				t.Fatal(err)
			}
			rest = rest[n:]
		}
	}
	// gRPC reads frames in order: once it answers this PING it has taken
	// in every DATA frame before it.
	if err := fr.WritePing(false, [8]byte{1}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	select {
	case <-pong:
	case <-ctx.Done():
		t.Fatal("no PING answer")
	}
	if n := len(refused); n != streams-maxStreams {
		t.Errorf("%d streams refused, want %d", n, streams-maxStreams)
	}
	max, high, bufs := srv.ReceiveBudget()
	if bound := int64(maxStreams*(window+16<<10) + 2<<20); bufs > bound {
		t.Fatalf("transport buffers reached %d bytes, over %d for %d streams of a connection (budget %d; admitted at most %d)", bufs, bound, maxStreams, max, high)
	}
}
