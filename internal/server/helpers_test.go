package server_test

import (
	"testing"

	"github.com/bqstore/bqstore/internal/server"
)

func testkitStartErr(t *testing.T, grpcAddr string) (*server.Server, error) {
	s, err := server.Start(server.Config{DataDir: t.TempDir(), GRPCAddr: grpcAddr, HTTPAddr: "127.0.0.1:0"})
	if err == nil {
		t.Cleanup(func() { _ = s.Close(t.Context()) })
	}
	return s, err
}
