package server_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/bqstore/bqstore/internal/testkit"
)

func TestMain(m *testing.M) {
	testkit.RunChildIfRequested()
	goleak.VerifyTestMain(m,
		// Started by an init of a Google client dependency, once per process.
		goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"))
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestHealthAndMetrics(t *testing.T) {
	srv := testkit.Start(t)
	if code, body := get(t, "http://"+srv.HTTPAddr()+"/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz = %d %q", code, body)
	}
	code, body := get(t, "http://"+srv.HTTPAddr()+"/metrics")
	if code != 200 || !strings.Contains(body, "go_goroutines") {
		t.Fatalf("/metrics = %d, want Prometheus text with go_goroutines", code)
	}

	conn, err := grpc.NewClient(srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health = %v", resp.GetStatus())
	}
}

// TestChildSIGTERM runs the real command as a child process and checks the
// graceful stop: SIGTERM exits 0.
func TestChildSIGTERM(t *testing.T) {
	c := testkit.StartChild(t, t.TempDir())
	if code, _ := get(t, "http://"+c.HTTPAddr+"/healthz"); code != 200 {
		t.Fatalf("/healthz = %d", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Terminate(ctx); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, c.Log())
	}
}

func TestPortInUse(t *testing.T) {
	srv := testkit.Start(t)
	_, err := testkitStartErr(t, srv.GRPCAddr())
	if err == nil {
		t.Fatal("second server on the same gRPC port started")
	}
}
