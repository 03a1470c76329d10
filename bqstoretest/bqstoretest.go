// Package bqstoretest runs a bqstore server inside a Go test, the way
// net/http/httptest runs an HTTP server: Start listens on loopback ports
// chosen at random, keeps its data in a temporary directory, stops when the
// test ends, and hands back the client options that point Google's official
// clients at it.
//
//	func TestEvents(t *testing.T) {
//		ctx := context.Background()
//		srv := bqstoretest.Start(t) // stopped by t.Cleanup
//		bq, _ := bigquery.NewClient(ctx, srv.Project, srv.RESTOptions()...)
//		defer bq.Close()
//		mw, _ := managedwriter.NewClient(ctx, srv.Project, srv.StorageOptions()...)
//		defer mw.Close()
//		rc, _ := storage.NewBigQueryReadClient(ctx, srv.StorageOptions()...)
//		defer rc.Close()
//		// ... create tables with bq, write with mw, read with rc
//	}
//
// The server is the same one `bqstore serve` runs (the Storage Write and
// Read APIs over gRPC, REST v2 over HTTP), in plaintext and without
// authentication. This package is a thin public wrapper: its options are
// the few a test needs, not the server's full configuration.
package bqstoretest

import (
	"cmp"
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

// Options configure a server. The zero value is a server for project
// "local" with its data in a new temporary directory.
type Options struct {
	// Project is a project that exists from the start (default "local").
	// Any project named in a request is created on first use.
	Project string
	// DataDir holds the server's data. Empty: a temporary directory
	// (Start: the test's t.TempDir(); New: removed by Close). Give the
	// same directory to a second server, after the first is closed, to
	// test a restart.
	DataDir string
	// Logger receives the server's log (default: discarded).
	Logger *slog.Logger
}

// Server is a running bqstore server on loopback ports.
type Server struct {
	// Project is the project that exists from the start: pass it to
	// bigquery.NewClient and managedwriter.NewClient.
	Project string
	// GRPCAddr is the Storage API's address (HOST:PORT), HTTPAddr the
	// REST API's (HOST:PORT; its URL is "http://" + HTTPAddr).
	GRPCAddr string
	HTTPAddr string
	// DataDir is the directory that holds the server's data.
	DataDir string

	srv     *server.Server
	tempDir string // removed by Close; "" when the caller owns DataDir
}

// Start starts a server for the test t and closes it when the test and
// its subtests have finished (t.Cleanup). It fails the test if the server
// does not start.
//
// Clients created after Start are closed first when they are closed with
// t.Cleanup or defer, as they should be: cleanups run last-in first-out.
func Start(t testing.TB, opts ...Options) *Server {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.DataDir == "" {
		o.DataDir = t.TempDir()
	}
	s, err := New(o)
	if err != nil {
		t.Fatalf("bqstoretest: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("bqstoretest: %v", err)
		}
	})
	return s
}

// New starts a server outside of a test's lifetime, for example in
// TestMain to share one server between the tests of a package. The caller
// must Close it.
func New(o Options) (*Server, error) {
	s := &Server{Project: cmp.Or(o.Project, server.DefaultProject), DataDir: o.DataDir}
	if s.DataDir == "" {
		dir, err := os.MkdirTemp("", "bqstoretest-")
		if err != nil {
			return nil, err
		}
		s.DataDir, s.tempDir = dir, dir
	}
	srv, err := server.Start(server.Config{
		DataDir:  s.DataDir,
		GRPCAddr: "127.0.0.1:0",
		HTTPAddr: "127.0.0.1:0",
		Project:  s.Project,
		Logger:   o.Logger,
	})
	if err != nil {
		if s.tempDir != "" {
			_ = os.RemoveAll(s.tempDir)
		}
		return nil, err
	}
	s.srv = srv
	s.GRPCAddr, s.HTTPAddr = srv.GRPCAddr(), srv.HTTPAddr()
	return s, nil
}

// StorageOptions point the official Storage API clients at the server:
// managedwriter.NewClient, storage.NewBigQueryWriteClient and
// storage.NewBigQueryReadClient (cloud.google.com/go/bigquery/storage),
// in plaintext without credentials.
func (s *Server) StorageOptions() []option.ClientOption {
	return []option.ClientOption{
		option.WithEndpoint(s.GRPCAddr),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
	}
}

// RESTOptions point the official BigQuery REST client
// (bigquery.NewClient, cloud.google.com/go/bigquery) at the server,
// without credentials.
func (s *Server) RESTOptions() []option.ClientOption {
	return []option.ClientOption{
		option.WithEndpoint("http://" + s.HTTPAddr),
		option.WithoutAuthentication(),
	}
}

// Close stops the server: it lets calls in flight finish (for up to 30
// seconds), syncs its data and, when New created the data directory,
// removes it. Close is idempotent.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := s.srv.Close(ctx)
	if s.tempDir != "" {
		err = cmp.Or(err, os.RemoveAll(s.tempDir))
		s.tempDir = ""
	}
	return err
}
