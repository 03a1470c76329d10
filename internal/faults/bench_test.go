package faults

import (
	"context"
	"testing"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// loopStream is an AppendRows server stream that receives the same
// request forever and discards responses.
type loopStream struct {
	grpc.ServerStream
	req *storagepb.AppendRowsRequest
}

func (s *loopStream) Context() context.Context { return context.Background() }
func (s *loopStream) RecvMsg(m any) error {
	m.(*storagepb.AppendRowsRequest).WriteStream = s.req.WriteStream
	return nil
}
func (s *loopStream) SendMsg(any) error { return nil }

// BenchmarkAppendStream measures the per-request cost of the fault layer
// on an AppendRows connection: one receive and one send, with no faults
// installed (pass-through) and with an installed fault that does not match
// (the receiver goroutine hand-off and one trigger evaluation).
//
//	go test -run '^$' -bench AppendStream -benchmem ./internal/faults/
func BenchmarkAppendStream(b *testing.B) {
	req := &storagepb.AppendRowsRequest{WriteStream: "projects/p/datasets/d/tables/t/_default"}
	for _, tc := range []struct{ name, spec string }{
		{"faults=none", ""},
		{"faults=unmatched", "append.reset:table=other.table"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			in := New(Options{})
			spec, err := Parse(tc.spec)
			if err != nil {
				b.Fatal(err)
			}
			if err := in.Set(spec, 1); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(proto.Size(req)))
			b.ReportAllocs()
			err = in.StreamServerInterceptor()(nil, &loopStream{req: req},
				&grpc.StreamServerInfo{FullMethod: storagepb.BigQueryWrite_AppendRows_FullMethodName},
				func(srv any, ss grpc.ServerStream) error {
					var m storagepb.AppendRowsRequest
					resp := &storagepb.AppendRowsResponse{}
					for b.Loop() {
						if err := ss.RecvMsg(&m); err != nil {
							return err
						}
						if err := ss.SendMsg(resp); err != nil {
							return err
						}
					}
					return nil
				})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}
