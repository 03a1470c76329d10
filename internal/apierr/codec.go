package apierr

import (
	"context"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the "proto" codec Decode wraps
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// DecodeGuard maps requests that do not decode (a proto3 string that is
// not valid UTF-8, a truncated field) to INVALID_ARGUMENT. grpc-go answers
// a decode failure with INTERNAL, which the official clients retry
// forever; the request is the caller's fault and will never succeed.
//
// grpc-go turns any error from the codec into INTERNAL, so the codec
// reports success with an empty message and records the failure; the
// interceptors, which see every decoded request, answer it. Install all
// three: grpc.ForceServerCodecV2(g.Codec()) and g.UnaryInterceptor /
// g.StreamInterceptor first in their chains.
type DecodeGuard struct {
	base encoding.CodecV2
	bad  sync.Map // decoded message (pointer) -> decode error; taken by the interceptors
}

// NewDecodeGuard wraps grpc-go's proto codec.
func NewDecodeGuard() *DecodeGuard {
	return &DecodeGuard{base: encoding.GetCodecV2("proto")}
}

// Codec is the server codec to install.
func (g *DecodeGuard) Codec() encoding.CodecV2 { return guardCodec{g} }

type guardCodec struct{ g *DecodeGuard }

func (c guardCodec) Name() string { return c.g.base.Name() }

func (c guardCodec) Marshal(v any) (mem.BufferSlice, error) { return c.g.base.Marshal(v) }

func (c guardCodec) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.g.base.Unmarshal(data, v)
	if err == nil {
		return nil
	}
	m, ok := v.(proto.Message)
	if !ok {
		return err
	}
	proto.Reset(m)
	c.g.bad.Store(m, err)
	return nil
}

// take returns the decode error recorded for m, if any, and forgets it.
func (g *DecodeGuard) take(m any) error {
	if m == nil {
		return nil
	}
	if err, ok := g.bad.LoadAndDelete(m); ok {
		return status.Errorf(codes.InvalidArgument, "the request could not be decoded: %v", err)
	}
	return nil
}

// UnaryInterceptor answers a request that did not decode.
func (g *DecodeGuard) UnaryInterceptor(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err := g.take(req); err != nil {
		return nil, err
	}
	return h(ctx, req)
}

// StreamInterceptor answers a stream message that did not decode.
func (g *DecodeGuard) StreamInterceptor(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	return h(srv, guardStream{ss, g})
}

type guardStream struct {
	grpc.ServerStream
	g *DecodeGuard
}

func (s guardStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return s.g.take(m)
}
