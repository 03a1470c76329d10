package server

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/bqstore/bqstore/internal/rest"
)

// Defaults of the HTTP servers' limits (Config.HTTP*).
const (
	// DefaultHTTPMaxConns bounds the public HTTP port's open connections:
	// beyond it a new connection is answered 503 and closed, so slow
	// clients cannot exhaust the process's file descriptors (which the
	// gRPC port needs too).
	DefaultHTTPMaxConns = 512
	// DefaultGRPCMaxConns bounds the gRPC port's open connections: beyond
	// it a new connection is closed at once. Each connection holds about
	// 2 MiB of buffers from its start (grpc.ReadBufferSize and
	// WriteBufferSize) whatever it sends, so this also bounds that
	// memory: 256 x 2 MiB = 512 MiB (docs/memory.md).
	DefaultGRPCMaxConns = 256
	// DefaultHTTPReadTimeout bounds reading a request, body included (a
	// 10 MB insertAll body over a slow link still fits).
	DefaultHTTPReadTimeout = 2 * time.Minute
	// DefaultHTTPWriteTimeout bounds writing a response (the largest
	// tabledata.list pages).
	DefaultHTTPWriteTimeout = 10 * time.Minute
	// DefaultHTTPIdleTimeout closes idle keep-alive connections.
	DefaultHTTPIdleTimeout = 2 * time.Minute
)

// publicHandler guards the public HTTP port: it refuses requests whose Host
// names neither an IP address, localhost, nor one of allowed (DNS
// rebinding: a web page whose name resolves to 127.0.0.1 must not reach
// the API), and cross-origin browser requests (CSRF: a page open on a
// developer's machine must not create or delete datasets), both with
// BigQuery's 403 error shape.
func publicHandler(next http.Handler, rh *rest.Handler, allowed []string) http.Handler {
	anyHost := false
	names := make(map[string]bool, len(allowed))
	for _, h := range allowed {
		if h == "*" {
			anyHost = true
		}
		names[strings.ToLower(h)] = true
	}
	deny := func(w http.ResponseWriter, r *http.Request, msg string) {
		rh.WriteError(w, r, &rest.Error{Code: http.StatusForbidden, Reason: "accessDenied", Msg: msg})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !anyHost && !hostAllowed(r.Host, names) {
			deny(w, r, fmt.Sprintf("Access Denied: host %q is not served here; start bqstore with --allowed-hosts to admit it", r.Host))
			return
		}
		if crossOrigin(r) {
			deny(w, r, "Access Denied: cross-origin browser requests are refused")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hostAllowed reports whether a Host header names an IP address (a page
// loaded from an IP address is same-origin only with that address, so DNS
// rebinding needs a name), localhost, or a configured name.
func hostAllowed(host string, names map[string]bool) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.ToLower(strings.TrimSuffix(strings.Trim(h, "[]"), "."))
	if net.ParseIP(h) != nil || h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	return names[h] || names[strings.ToLower(host)]
}

// crossOrigin reports a request a browser sent on behalf of another origin
// (Sec-Fetch-Site, or else Origin compared with Host). Requests without
// either header come from non-browser clients and pass.
func crossOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "":
	case "same-origin", "none":
		return false
	default:
		return true
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return true // "null" and other opaque origins
	}
	return !strings.EqualFold(u.Host, r.Host)
}

// adminHandler serves the admin port: fault injection, profiles, metrics
// and health. It is meant for loopback only (the default --admin-addr).
func (s *Server) adminHandler(metrics, health http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/admin/faults", s.faults.AdminHandler())
	// Profiles, for `go tool pprof http://127.0.0.1:9070/debug/pprof/profile`.
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	mux.Handle("GET /metrics", metrics)
	mux.Handle("GET /healthz", health)
	// The admin port is loopback, but a browser can still be pointed at
	// it: the same Host and cross-origin checks apply.
	return publicHandler(mux, s.rest, nil)
}

// limitListener refuses connections beyond max at once (refuse answers
// them, then they are closed) instead of serving them or leaving them
// queued: a client that holds connections open cannot take the process's
// file descriptors or the memory each connection holds, and the refusal
// is visible to the client at once. The HTTP port answers 503; the gRPC
// port just closes (the client sees UNAVAILABLE and retries).
type limitListener struct {
	net.Listener
	max    int
	refuse func(net.Conn) // nil: close without a word
	mu     sync.Mutex
	open   int // accepted and not yet closed; guarded by mu
}

// refuseHTTP answers a refused HTTP connection 503, best effort, without
// waiting for the client.
func refuseHTTP(c net.Conn) {
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.Write([]byte("HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: 33\r\n\r\ntoo many connections; retry later"))
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		ok := l.open < l.max
		if ok {
			l.open++
		}
		l.mu.Unlock()
		if ok {
			return &limitConn{Conn: c, l: l}, nil
		}
		if l.refuse != nil {
			l.refuse(c)
		}
		_ = c.Close()
	}
}

type limitConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		c.l.mu.Unlock()
	})
	return err
}
