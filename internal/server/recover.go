package server

import (
	"context"
	"runtime/debug"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// recoverUnary and recoverStream turn a panic in a handler into an
// INTERNAL error for that call, logged with its stack, instead of a crash
// of the whole server. They are a safety net: every panic they catch is a
// bug (decoders and parsers are fuzzed to return errors instead).
func (s *Server) recoverUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = s.panicked(info.FullMethod, p)
		}
	}()
	return handler(ctx, req)
}

func (s *Server) recoverStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = s.panicked(info.FullMethod, p)
		}
	}()
	return handler(srv, ss)
}

func (s *Server) panicked(method string, p any) error {
	s.log.Error("handler panic (a bug)", "method", method, "panic", p, "stack", string(debug.Stack()))
	return status.Error(codes.Internal, "internal error")
}
