package bench

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"testing"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// The loopback gRPC ceiling: the Storage API's own message shapes carried
// between a trivial server (no storage, no encoding) and a client in one
// process over 127.0.0.1 TCP, with the same server options as bqstore
// serve. docs/PERFORMANCE.md sets the end-to-end figures beside these, as
// ratios measured in the same run.
//
//	go test -run '^$' -bench Loopback -benchmem -count 5 ./internal/bench/

const ceilingMsg = 1 << 20

type ceilingServer struct {
	storagepb.UnimplementedBigQueryReadServer
	storagepb.UnimplementedBigQueryWriteServer
	batch []byte
}

func (s *ceilingServer) ReadRows(req *storagepb.ReadRowsRequest, srv storagepb.BigQueryRead_ReadRowsServer) error {
	resp := &storagepb.ReadRowsResponse{
		RowCount: 1000,
		Rows:     &storagepb.ReadRowsResponse_ArrowRecordBatch{ArrowRecordBatch: &storagepb.ArrowRecordBatch{SerializedRecordBatch: s.batch}},
	}
	for i := int64(0); i < req.GetOffset(); i++ { // offset = number of messages
		if err := srv.Send(resp); err != nil {
			return err
		}
	}
	return nil
}

func (s *ceilingServer) AppendRows(srv storagepb.BigQueryWrite_AppendRowsServer) error {
	resp := &storagepb.AppendRowsResponse{Response: &storagepb.AppendRowsResponse_AppendResult_{AppendResult: &storagepb.AppendRowsResponse_AppendResult{}}}
	for {
		if _, err := srv.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if err := srv.Send(resp); err != nil {
			return err
		}
	}
}

func startCeiling(b *testing.B) (*grpc.ClientConn, func()) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(64<<20), grpc.MaxSendMsgSize(128<<20),
		grpc.InitialWindowSize(16<<20), grpc.InitialConnWindowSize(64<<20),
		grpc.ReadBufferSize(1<<20), grpc.WriteBufferSize(1<<20))
	cs := &ceilingServer{batch: make([]byte, ceilingMsg)}
	storagepb.RegisterBigQueryReadServer(srv, cs)
	storagepb.RegisterBigQueryWriteServer(srv, cs)
	go func() { _ = srv.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(128<<20), grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		b.Fatal(err)
	}
	return conn, func() { conn.Close(); srv.Stop() }
}

// BenchmarkLoopbackReadRows: 1 MiB ReadRows responses, server to client,
// on 1 and 4 concurrent streams of one connection, with grpc-go's default
// client windows (as the official read client dials).
func BenchmarkLoopbackReadRows(b *testing.B) {
	for _, streams := range []int{1, 4} {
		b.Run("streams="+strconv.Itoa(streams), func(b *testing.B) {
			conn, stop := startCeiling(b)
			defer stop()
			c := storagepb.NewBigQueryReadClient(conn)
			const perStream = 64
			b.SetBytes(int64(streams * perStream * ceilingMsg))
			b.ReportAllocs()
			for b.Loop() {
				errc := make(chan error, streams)
				for range streams {
					go func() {
						rs, err := c.ReadRows(context.Background(), &storagepb.ReadRowsRequest{ReadStream: "x", Offset: perStream})
						if err != nil {
							errc <- err
							return
						}
						for {
							if _, err := rs.Recv(); err != nil {
								if errors.Is(err, io.EOF) {
									err = nil
								}
								errc <- err
								return
							}
						}
					}()
				}
				for range streams {
					if err := <-errc; err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkLoopbackAppendRows: 1 MiB AppendRows requests, client to
// server, pipelined (the client does not wait for each response), on 1 and
// 4 connections' worth of streams.
func BenchmarkLoopbackAppendRows(b *testing.B) {
	for _, streams := range []int{1, 4} {
		b.Run("streams="+strconv.Itoa(streams), func(b *testing.B) {
			conn, stop := startCeiling(b)
			defer stop()
			c := storagepb.NewBigQueryWriteClient(conn)
			const perStream = 64
			req := &storagepb.AppendRowsRequest{WriteStream: "x", Rows: &storagepb.AppendRowsRequest_ProtoRows{ProtoRows: &storagepb.AppendRowsRequest_ProtoData{
				Rows: &storagepb.ProtoRows{SerializedRows: [][]byte{make([]byte, ceilingMsg)}},
			}}}
			b.SetBytes(int64(streams * perStream * ceilingMsg))
			b.ReportAllocs()
			for b.Loop() {
				errc := make(chan error, streams)
				for range streams {
					go func() {
						as, err := c.AppendRows(context.Background())
						if err != nil {
							errc <- err
							return
						}
						recvd := make(chan error, 1)
						go func() {
							for i := 0; i < perStream; i++ {
								if _, err := as.Recv(); err != nil {
									recvd <- err
									return
								}
							}
							recvd <- nil
						}()
						for i := 0; i < perStream; i++ {
							if err := as.Send(req); err != nil {
								errc <- err
								return
							}
						}
						_ = as.CloseSend()
						errc <- <-recvd
					}()
				}
				for range streams {
					if err := <-errc; err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
