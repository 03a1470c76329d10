package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bqstore/bqstore/internal/testkit/testcert"

	"cloud.google.com/go/bigquery"
	storage "cloud.google.com/go/bigquery/storage/apiv1"
	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"cloud.google.com/go/bigquery/storage/managedwriter"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/bqstore/bqstore/internal/server"
	"github.com/bqstore/bqstore/internal/testkit"
)

// TestReceiveBudgetClients: the official Go clients through the receive
// budget (internal/recvbudget), in plaintext and over TLS, with a budget
// that admits two messages at a time: managedwriter streams each
// pipelining several 3 MiB appends over shared connections, while other
// clients open AppendRows streams, send a 3 MiB request and cancel at
// once (before or after it is admitted). Every append is acknowledged
// (nothing hangs: the context is the only bound), and once every stream
// has ended the budget has nothing admitted or waiting.
func TestReceiveBudgetClients(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run("tls="+map[bool]string{false: "off", true: "on"}[useTLS], func(t *testing.T) {
			const (
				rowBytes = 1 << 20
				perReq   = 3 // rows: a 3 MiB request
				writers  = 6
				appends  = 4
				cancels  = 12
			)
			var certFile, keyFile string
			var pool *x509.CertPool
			if useTLS {
				certFile, keyFile, pool = testcert.Write(t, t.TempDir())
			}
			srv := testkit.Start(t, func(c *server.Config) {
				c.MaxReceiveBytes = 2 * 3 * (perReq*rowBytes + 1<<10)
				c.TLSCertFile, c.TLSKeyFile = certFile, keyFile
			})
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			e := dialTLS(t, ctx, srv, pool)
			tp := e.table("t_recv_clients", simpleSchema)
			dp, md := descriptor(t, simpleSchema)
			rows := make([][]byte, perReq)
			for i := range rows {
				m := dynamicpb.NewMessage(md)
				m.Set(md.Fields().ByName("id"), protoreflect.ValueOfInt64(int64(i)))
				m.Set(md.Fields().ByName("name"), protoreflect.ValueOfString(strings.Repeat("x", rowBytes)))
				b, err := proto.Marshal(m)
				if err != nil {
					t.Fatal(err)
				}
				rows[i] = b
			}
			var wg sync.WaitGroup
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ms, err := e.mw.NewManagedStream(ctx, managedwriter.WithDestinationTable(tp),
						managedwriter.WithType(managedwriter.CommittedStream), managedwriter.WithSchemaDescriptor(dp))
					if err != nil {
						t.Errorf("writer %d: %v", w, err)
						return
					}
					defer ms.Close()
					var results []*managedwriter.AppendResult
					for i := range appends {
						r, err := ms.AppendRows(ctx, rows, managedwriter.WithOffset(int64(i*perReq)))
						if err != nil {
							t.Errorf("writer %d append %d: %v", w, i, err)
							return
						}
						results = append(results, r)
					}
					for i, r := range results {
						if _, err := r.GetResult(ctx); err != nil {
							t.Errorf("writer %d append %d: %v", w, i, err)
						}
					}
				}()
			}
			req := &storagepb.AppendRowsRequest{
				WriteStream: tp + "/streams/_default",
				Rows: &storagepb.AppendRowsRequest_ProtoRows{ProtoRows: &storagepb.AppendRowsRequest_ProtoData{
					WriterSchema: &storagepb.ProtoSchema{ProtoDescriptor: dp},
					Rows:         &storagepb.ProtoRows{SerializedRows: rows},
				}},
			}
			for i := range cancels {
				wg.Add(1)
				go func() {
					defer wg.Done()
					sctx, scancel := context.WithCancel(ctx)
					defer scancel()
					stream, err := e.wc.AppendRows(sctx)
					if err != nil {
						t.Errorf("cancelled stream %d: %v", i, err)
						return
					}
					_ = stream.Send(req)
					if i%2 == 0 {
						_, _ = stream.Recv() // some once answered, some at once
					}
					scancel()
				}()
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			// The cancelled streams' resets reach the server on their own
			// time: wait for the budget to drain (the context bounds it).
			for metricValue(t, srv, "bqstore_grpc_receive_admitted_bytes") != 0 || metricValue(t, srv, "bqstore_grpc_receive_waiting") != 0 {
				if ctx.Err() != nil {
					t.Fatalf("receive budget never drained: %v admitted, %v waiting",
						metricValue(t, srv, "bqstore_grpc_receive_admitted_bytes"), metricValue(t, srv, "bqstore_grpc_receive_waiting"))
				}
				time.Sleep(10 * time.Millisecond)
			}
			max, high, _ := srv.ReceiveBudget()
			if high > max || high == 0 {
				t.Errorf("admitted at most %d bytes, budget %d", high, max)
			}
		})
	}
}

// dialTLS is dial for a server whose ports speak TLS with a certificate
// in pool (plain dial when pool is nil).
func dialTLS(t *testing.T, ctx context.Context, srv *testkit.Server, pool *x509.CertPool) *env {
	t.Helper()
	if pool == nil {
		return dial(t, ctx, srv)
	}
	cfg := &tls.Config{RootCAs: pool}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
	bq, err := bigquery.NewClient(ctx, project, option.WithEndpoint("https://"+srv.HTTPAddr()), option.WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	gopts := []option.ClientOption{option.WithEndpoint(srv.GRPCAddr()), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(credentials.NewTLS(cfg)))}
	mw, err := managedwriter.NewClient(ctx, project, gopts...)
	if err != nil {
		t.Fatal(err)
	}
	wc, err := storage.NewBigQueryWriteClient(ctx, gopts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = wc.Close()
		_ = mw.Close()
		_ = bq.Close()
		hc.CloseIdleConnections()
	})
	return &env{t: t, ctx: ctx, srv: srv, bq: bq, mw: mw, wc: wc}
}
