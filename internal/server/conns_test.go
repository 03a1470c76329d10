package server_test

import (
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/bqstore/bqstore/internal/server"
	"github.com/bqstore/bqstore/internal/testkit"
)

// TestGRPCConnLimit: gRPC connections beyond the limit are closed at once
// (the client sees UNAVAILABLE and retries), so that many clients cannot
// each hold their connection's buffers (about 2 MiB each, docs/memory.md)
// or the process's file descriptors (issue 12).
func TestGRPCConnLimit(t *testing.T) {
	srv := testkit.Start(t, func(c *server.Config) { c.GRPCMaxConns = 2 })
	check := func() (*grpc.ClientConn, error) {
		t.Helper()
		cc, err := grpc.NewClient(srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		_, err = healthpb.NewHealthClient(cc).Check(t.Context(), &healthpb.HealthCheckRequest{})
		return cc, err
	}
	var held []*grpc.ClientConn
	for i := range 2 {
		cc, err := check()
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		defer cc.Close()
		held = append(held, cc)
	}
	cc, err := check()
	cc.Close()
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("third connection: %v, want UNAVAILABLE", err)
	}
	// Closing a held connection frees its place.
	held[0].Close()
	for {
		cc, err := check()
		cc.Close()
		if err == nil {
			break
		}
		if status.Code(err) != codes.Unavailable {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond) // poll until the server has seen the close
	}
}
