package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/bqstore/bqstore/internal/recvbudget"
	"github.com/bqstore/bqstore/internal/server"
	"github.com/bqstore/bqstore/internal/testkit"
)

// TestReceiveBudgetManyConnections: the stream windows across connections.
// Each open stream lets its client push a window (1 MiB) ahead of its
// handler, outside the receive budget, and the per-connection cap
// (--max-grpc-streams) does nothing against a client that opens many
// connections: at the defaults, 256 connections x 100 streams x 1 MiB is
// 25 GiB. Several raw connections each open many AppendRows streams, each
// sending a window of a message it never completes (1 MiB, not over the
// window: nothing to admit), without waiting for anything. The server's
// streams are capped across all connections (--max-open-streams): those
// over the cap are refused (RST_STREAM REFUSED_STREAM) before their bytes
// are buffered, so the transport's buffers stay under the bound the
// server's limits give (server.Config.MaxOpenStreams x the window, plus
// what the receive budget admits). Without the cap every connection's
// streams were let in: 120 MiB of buffers against a 26 MiB bound (issue
// 12). Once the connections close, no stream is left counted open.
func TestReceiveBudgetManyConnections(t *testing.T) {
	const (
		conns      = 4
		perConn    = 30
		maxOpen    = 16
		window     = recvbudget.Threshold
		maxReceive = 12 << 20
	)
	srv := testkit.Start(t, func(c *server.Config) {
		c.MaxReceiveBytes = maxReceive
		c.GRPCMaxStreams = perConn
		c.MaxOpenStreams = maxOpen
	})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":authority", srv.GRPCAddr()},
		{":path", "/google.cloud.bigquery.storage.v1.BigQueryWrite/AppendRows"},
		{"content-type", "application/grpc"}, {"te", "trailers"}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	block := hb.Bytes() // the same fields each time: the encoder's table does not change
	// A window of a 1 MiB message: its prefix and all of the body that
	// fits, 5 bytes short of the whole message.
	msg := append(binary.BigEndian.AppendUint32([]byte{0}, window), make([]byte, window-5)...)
	var refused, goAways atomic.Int64
	var wg sync.WaitGroup
	var raws []net.Conn
	defer func() {
		for _, c := range raws {
			c.Close()
		}
	}()
	for range conns {
		raw, err := net.Dial("tcp", srv.GRPCAddr())
		if err != nil {
			t.Fatal(err)
		}
		raws = append(raws, raw)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := raw.Write([]byte(http2.ClientPreface)); err != nil {
				t.Error(err)
				return
			}
			fr := http2.NewFramer(raw, raw)
			if err := fr.WriteSettings(); err != nil {
				t.Error(err)
				return
			}
			pong := make(chan struct{})
			go func() {
				for {
					f, err := fr.ReadFrame()
					if err != nil {
						return
					}
					switch f := f.(type) {
					case *http2.RSTStreamFrame:
						if f.ErrCode == http2.ErrCodeRefusedStream {
							refused.Add(1)
						}
					case *http2.GoAwayFrame:
						goAways.Add(1)
					case *http2.PingFrame:
						if f.IsAck() {
							close(pong)
						}
					}
				}
			}()
			for i := range perConn {
				sid := uint32(2*i + 1)
				if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: sid, BlockFragment: block, EndHeaders: true}); err != nil {
					t.Error(err)
					return
				}
				for rest := msg; len(rest) > 0; {
					n := min(len(rest), 16<<10)
					if err := fr.WriteData(sid, false, rest[:n]); err != nil {
						t.Error(err)
						return
					}
					rest = rest[n:]
				}
			}
			// gRPC reads frames in order: once it answers this PING it
			// has taken in every DATA frame before it.
			if err := fr.WritePing(false, [8]byte{1}); err != nil {
				t.Error(err)
				return
			}
			select {
			case <-pong:
			case <-ctx.Done():
				t.Error("no PING answer")
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	max, high, bufs := srv.ReceiveBudget()
	if bound := int64(maxOpen*(window+16<<10) + max/recvbudget.CostFactor + 2<<20); bufs > bound {
		t.Errorf("transport buffers reached %d bytes, over %d for %d streams open at once over %d connections (budget %d; admitted at most %d)",
			bufs, bound, maxOpen, conns, max, high)
	}
	if n := refused.Load(); n != conns*perConn-maxOpen {
		t.Errorf("%d streams refused, want %d", n, conns*perConn-maxOpen)
	}
	if n := goAways.Load(); n != 0 {
		t.Errorf("%d connections sent GOAWAY, want none", n)
	}
	if n := metricValue(t, srv, "bqstore_grpc_open_streams"); n != maxOpen {
		t.Errorf("bqstore_grpc_open_streams %v, want %d", n, maxOpen)
	}
	if n := metricValue(t, srv, "bqstore_grpc_streams_refused_total"); n != conns*perConn-maxOpen {
		t.Errorf("bqstore_grpc_streams_refused_total %v, want %d", n, conns*perConn-maxOpen)
	}
	// The connections close: their streams are no longer counted.
	for _, c := range raws {
		c.Close()
	}
	for metricValue(t, srv, "bqstore_grpc_open_streams") != 0 {
		if ctx.Err() != nil {
			t.Fatalf("bqstore_grpc_open_streams %v after every connection closed", metricValue(t, srv, "bqstore_grpc_open_streams"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
