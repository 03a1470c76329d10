// Package testkit starts bqstore servers for tests: in process (fast, for
// behaviour tests through the official clients) or as a child process
// (for crash tests with real kill -9), always on 127.0.0.1 ports chosen at
// random, and dials the official Google clients against them.
package testkit

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/bqstore/bqstore/internal/server"
)

// Server is an in-process server for one test.
type Server struct {
	*server.Server
	DataDir string
}

// Start starts an in-process server on loopback ports chosen at random,
// with a fresh data directory, and closes it when the test ends.
func Start(t testing.TB, mutate ...func(*server.Config)) *Server {
	t.Helper()
	return StartDir(t, t.TempDir(), mutate...)
}

// StartDir is Start on a given data directory (to test restarts).
func StartDir(t testing.TB, dir string, mutate ...func(*server.Config)) *Server {
	t.Helper()
	cfg := server.Config{
		DataDir:  dir,
		GRPCAddr: "127.0.0.1:0",
		HTTPAddr: "127.0.0.1:0",
		// The admin port (/admin/faults, /debug/pprof) too.
		AdminAddr: "127.0.0.1:0",
		Project:   "local",
	}
	if testing.Verbose() {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	for _, m := range mutate {
		m(&cfg)
	}
	srv, err := server.Start(cfg)
	if err != nil {
		t.Fatalf("testkit: start server: %v", err)
	}
	s := &Server{Server: srv, DataDir: dir}
	t.Cleanup(func() { s.Stop(t) })
	return s
}

// Stop closes the server gracefully (idempotent).
func (s *Server) Stop(t testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Errorf("testkit: close server: %v", err)
	}
}

// GRPCOptions are the client options that point the official Storage API
// clients (managedwriter, the read client) at addr, in plaintext without
// credentials.
func GRPCOptions(addr string) []option.ClientOption {
	return []option.ClientOption{
		option.WithEndpoint(addr),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
	}
}

// RESTOptions point the official BigQuery REST client at addr.
func RESTOptions(addr string) []option.ClientOption {
	return []option.ClientOption{
		option.WithEndpoint("http://" + addr),
		option.WithoutAuthentication(),
	}
}
