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
//
// They also count the calls in flight other than AppendRows (s.busy), so
// that Close knows when only idle AppendRows connections remain.
func (s *Server) recoverUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	s.busy.Add(1)
	defer s.busy.Add(-1)
	defer func() {
		if p := recover(); p != nil {
			err = s.panicked(info.FullMethod, p)
		}
	}()
	return handler(ctx, req)
}

func (s *Server) recoverStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	if info.FullMethod != appendRowsMethod {
		s.busy.Add(1)
		defer s.busy.Add(-1)
	}
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

// appendRowsMethod is the one long-lived call Close does not wait for.
const appendRowsMethod = "/google.cloud.bigquery.storage.v1.BigQueryWrite/AppendRows"
