package ingest

import (
	"context"
	"fmt"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"google.golang.org/api/option"
	gtransport "google.golang.org/api/transport/grpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Conn is a pool of gRPC connections to the Storage API, reused by every
// partition (round-robin per call; an AppendRows stream stays on its
// connection).
type Conn struct {
	pool gtransport.ConnPool
	// Write is the Storage Write API client over the pool.
	Write storagepb.BigQueryWriteClient
}

// Dial connects to endpoint ("bigquerystorage.googleapis.com:443", or
// "127.0.0.1:9060" for bqstore serve). With plaintext it uses no TLS and no
// credentials; otherwise TLS and Application Default Credentials. conns is
// the pool size (default 4).
func Dial(ctx context.Context, endpoint string, plaintext bool, conns int) (*Conn, error) {
	if conns <= 0 {
		conns = 4
	}
	opts := []option.ClientOption{
		option.WithEndpoint(endpoint),
		option.WithGRPCConnectionPool(conns),
		option.WithUserAgent("bqstore-ingest"),
		// AppendRows requests are up to 10 MB.
		option.WithGRPCDialOption(grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(16 << 20))),
	}
	if plaintext {
		opts = append(opts,
			option.WithoutAuthentication(),
			option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	} else {
		opts = append(opts, option.WithScopes(
			"https://www.googleapis.com/auth/bigquery.insertdata",
			"https://www.googleapis.com/auth/bigquery",
			"https://www.googleapis.com/auth/cloud-platform"))
	}
	pool, err := gtransport.DialPool(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("ingest: dial %s: %w", endpoint, err)
	}
	return &Conn{pool: pool, Write: storagepb.NewBigQueryWriteClient(pool)}, nil
}

// Close closes every connection of the pool.
func (c *Conn) Close() error { return c.pool.Close() }
