package server_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bqstore/bqstore/internal/server"
	"github.com/bqstore/bqstore/internal/testkit"
)

func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestAdminPort: /admin/faults and /debug/pprof are served on the admin
// port only, never on the public HTTP port (issue 12, Access).
func TestAdminPort(t *testing.T) {
	srv := testkit.Start(t)
	for _, path := range []string{"/admin/faults", "/debug/pprof/"} {
		if code, _ := get(t, "http://"+srv.HTTPAddr()+path); code == http.StatusOK {
			t.Errorf("public port serves %s", path)
		}
		if code, body := get(t, "http://"+srv.AdminAddr()+path); code != http.StatusOK {
			t.Errorf("admin port %s = %d %s", path, code, body)
		}
	}
	if code, _ := get(t, "http://"+srv.AdminAddr()+"/metrics"); code != http.StatusOK {
		t.Errorf("admin port /metrics = %d", code)
	}
}

// TestHostAndOrigin: requests naming a foreign Host (DNS rebinding) and
// cross-origin browser requests (CSRF) are refused with 403 in BigQuery's
// shape; the official clients' requests (IP address or localhost, no
// Origin) and configured names pass.
func TestHostAndOrigin(t *testing.T) {
	srv := testkit.Start(t, func(c *server.Config) { c.AllowedHosts = []string{"bqstore.internal"} })
	base := "http://" + srv.HTTPAddr()
	_, port, _ := net.SplitHostPort(srv.HTTPAddr())
	create := func(host string, hdr map[string]string, ds string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, base+"/bigquery/v2/projects/local/datasets",
			strings.NewReader(`{"datasetReference":{"projectId":"local","datasetId":"`+ds+`"}}`))
		req.Header.Set("Content-Type", "application/json")
		if host != "" {
			req.Host = host
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		return do(t, req)
	}
	for _, tc := range []struct {
		name string
		host string
		hdr  map[string]string
		want int
	}{
		{"ip", "", nil, http.StatusOK},
		{"localhost", "localhost:" + port, nil, http.StatusOK},
		{"configured", "bqstore.internal:" + port, nil, http.StatusOK},
		{"same-origin", "", map[string]string{"Origin": base, "Sec-Fetch-Site": "same-origin"}, http.StatusOK},
		{"rebinding", "attacker.example:" + port, nil, http.StatusForbidden},
		{"cross-site", "", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"cross-origin", "", map[string]string{"Origin": "http://attacker.example"}, http.StatusForbidden},
		{"null-origin", "", map[string]string{"Origin": "null"}, http.StatusForbidden},
	} {
		code, body := create(tc.host, tc.hdr, "ds_"+strings.ReplaceAll(tc.name, "-", "_"))
		if code != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, code, body, tc.want)
		}
		if tc.want == http.StatusForbidden && !strings.Contains(body, `"PERMISSION_DENIED"`) {
			t.Errorf("%s: body %s, want BigQuery's error shape with PERMISSION_DENIED", tc.name, body)
		}
	}
	// A rebinding page must not read through GET either.
	req, _ := http.NewRequest(http.MethodGet, base+"/bigquery/v2/projects/local/datasets", nil)
	req.Host = "attacker.example"
	if code, _ := do(t, req); code != http.StatusForbidden {
		t.Errorf("GET with a foreign Host: %d, want 403", code)
	}
}

// TestHTTPConnLimit: connections beyond the limit are answered 503 at once,
// so that slow clients holding connections cannot exhaust the process's
// file descriptors (issue 12, finding 10).
func TestHTTPConnLimit(t *testing.T) {
	srv := testkit.Start(t, func(c *server.Config) { c.HTTPMaxConns = 2 })
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", srv.HTTPAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// A slow request: headers sent, body never.
		if _, err := io.WriteString(c, "POST /bigquery/v2/projects/local/datasets HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{"); err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	c, err := net.Dial("tcp", srv.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("third connection: %s, want 503", resp.Status)
	}
	// Closing a held connection frees its place.
	held[0].Close()
	for {
		// Until the server has seen the close, the answer is 503, which
		// may arrive before the request is written (a transport error).
		resp, err := http.Get("http://" + srv.HTTPAddr() + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		time.Sleep(time.Millisecond) // poll
	}
}

// TestHTTPSlowBody: a request whose body does not arrive is cut at the
// read timeout instead of holding its connection forever (issue 12,
// finding 10).
func TestHTTPSlowBody(t *testing.T) {
	srv := testkit.Start(t, func(c *server.Config) { c.HTTPReadTimeout = 200 * time.Millisecond })
	c, err := net.Dial("tcp", srv.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "POST /bigquery/v2/projects/local/datasets HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	// The server must end the connection; the deadline only keeps a
	// regression from hanging the test.
	_ = c.SetReadDeadline(time.Now().Add(time.Minute))
	_, err = io.Copy(io.Discard, c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the server kept a connection whose body never arrived")
	}
}

// TestCloseUnusedConn: a client connection that never sends a request
// (Go's and Node's HTTP clients open spares for concurrent requests) does
// not hold shutdown: net/http's Shutdown waits until such a connection is
// 5 s old before it counts as idle, so a SIGTERM took 5 s longer than
// needed and a deadline under 5 s was missed. Close ends as soon as no
// request is in flight.
func TestCloseUnusedConn(t *testing.T) {
	srv := testkit.Start(t)
	conn, err := net.Dial("tcp", srv.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Make sure the server has accepted it (a served request on another
	// connection comes after the accept loop took ours).
	if code, _ := get(t, "http://"+srv.HTTPAddr()+"/healthz"); code != http.StatusOK {
		t.Fatalf("healthz = %d", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	if err := srv.Close(ctx); err != nil {
		t.Fatalf("Close with an unused client connection open: %v", err)
	}
	// The connection was closed by the server.
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err == nil {
		t.Fatal("unused connection still open after Close")
	}
}
