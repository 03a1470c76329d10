package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/bigquery/storage/managedwriter"
	"google.golang.org/api/option"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/bqstore/bqstore/internal/testkit"
)

// TestReceiveBudgetLargeAppends: honest managedwriter writers at the
// server's defaults (96 MiB receive budget, 10 s grace at 1 MiB/s), on
// one gRPC connection, each pipelining three appends of about 9.5 MB
// (28.5 MB in flight a stream, the client's default limit being 100 MB):
// at most three such messages are admitted at once (3 x their size
// each), the rest wait for the budget with their windows closed, and
// every append succeeds without a stream reset or a flow-control error.
func TestReceiveBudgetLargeAppends(t *testing.T) {
	const (
		rowBytes = 950_000
		perReq   = 10 // about 9.5 MB a request, under the 10 MB the real service takes
		writers  = 3
		appends  = 3
	)
	srv := testkit.Start(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	e := dial(t, ctx, srv)
	tp := e.table("t_recv_large", simpleSchema)
	mw, err := managedwriter.NewClient(ctx, project, append(testkit.GRPCOptions(srv.GRPCAddr()), option.WithGRPCConnectionPool(1))...)
	if err != nil {
		t.Fatal(err)
	}
	defer mw.Close()
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
			ms, err := mw.NewManagedStream(ctx, managedwriter.WithDestinationTable(tp),
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
	wg.Wait()
	for _, m := range []string{"bqstore_grpc_receive_stalled_total", "bqstore_grpc_flow_control_errors_total"} {
		if n := metricValue(t, srv, m); n != 0 {
			t.Errorf("%s = %v, want 0 for honest clients", m, n)
		}
	}
	max, high, _ := srv.ReceiveBudget()
	if high > max || high == 0 {
		t.Errorf("admitted at most %d of %d", high, max)
	}
}
