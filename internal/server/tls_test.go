package server_test

import (
	"context"
	"crypto/tls"
	"net/http"
	"testing"
	"time"

	"github.com/bqstore/bqstore/internal/testkit/testcert"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/bqstore/bqstore/internal/server"
	"github.com/bqstore/bqstore/internal/testkit"
)

// TestTLS: with --tls-cert/--tls-key both ports speak TLS, and plaintext
// clients are refused.
func TestTLS(t *testing.T) {
	certFile, keyFile, pool := testcert.Write(t, t.TempDir())
	srv := testkit.Start(t, func(c *server.Config) { c.TLSCertFile, c.TLSKeyFile = certFile, keyFile })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("https://" + srv.HTTPAddr() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("https /healthz = %s", resp.Status)
	}
	if resp, err := http.Get("http://" + srv.HTTPAddr() + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("plaintext HTTP served on the TLS port")
		}
	}

	conn, err := grpc.NewClient(srv.GRPCAddr(), grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool})))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if r, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("gRPC health over TLS: %v %v", r, err)
	}
	plain, err := grpc.NewClient(srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
	defer pcancel()
	if _, err := healthpb.NewHealthClient(plain).Check(pctx, &healthpb.HealthCheckRequest{}); err == nil {
		t.Fatal("plaintext gRPC served on the TLS port")
	}
}

// TestTLSNeedsBoth: a certificate without a key is a start-up error.
func TestTLSNeedsBoth(t *testing.T) {
	_, err := server.Start(server.Config{DataDir: t.TempDir(), GRPCAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", TLSCertFile: "cert.pem"})
	if err == nil {
		t.Fatal("started with a certificate and no key")
	}
}
