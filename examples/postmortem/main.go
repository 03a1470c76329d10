// Command postmortem replays the founding postmortem on a laptop in about a
// minute: a bqstore server with fault injection, a naive writer that commits
// with a barrier over all its PENDING streams, and the project's ingest
// pipeline, under the same two faults:
//
//   - append.stall: one AppendRows connection stops answering (a hung
//     append worker after a TCP reset). The naive writer's barrier waits
//     for every stream of the batch, so nothing at all is committed.
//   - commit.drop_reply: BatchCommitWriteStreams commits, then the reply
//     is lost. The client library retries, gets STREAM_ALREADY_COMMITTED,
//     the naive writer takes that for a failure and writes the batch again:
//     duplicates.
//
// The ingest pipeline (package ingest) seals each batch before committing,
// bounds every batch by a lease and confirms an ambiguous commit with
// GetWriteStream's commit_time: it finishes, with each row exactly once.
//
//	go run ./examples/postmortem
//
// It starts its own server in a temporary directory; docs/faults.md
// explains the faults and how to inject them into your own pipeline.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/bigquery"
	storage "cloud.google.com/go/bigquery/storage/apiv1"
	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"cloud.google.com/go/bigquery/storage/managedwriter"
	"cloud.google.com/go/bigquery/storage/managedwriter/adapt"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/bqstore/bqstore/ingest"
	"github.com/bqstore/bqstore/internal/server"
)

const project = "local"

var schema = bigquery.Schema{
	{Name: "id", Type: bigquery.IntegerFieldType, Required: true},
	{Name: "worker", Type: bigquery.IntegerFieldType},
}

func main() {
	workers := flag.Int("workers", 4, "streams per batch")
	rowsPer := flag.Int("rows", 250, "rows per stream per batch")
	batches := flag.Int("batches", 3, "batches")
	barrierWait := flag.Duration("barrier-wait", 5*time.Second, "how long to watch the naive writer's barrier before giving up")
	flag.Parse()
	if err := run(*workers, *rowsPer, *batches, *barrierWait); err != nil {
		log.Fatal(err)
	}
}

func run(workers, rowsPer, batches int, barrierWait time.Duration) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "bqstore-postmortem-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	srv, err := server.Start(server.Config{DataDir: filepath.Join(dir, "data"), GRPCAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", Project: project})
	if err != nil {
		return err
	}
	defer srv.Close(context.Background())
	fmt.Printf("bqstore serving: grpc %s, http %s (faults on http://%s/admin/faults)\n\n", srv.GRPCAddr(), srv.HTTPAddr(), srv.AdminAddr())

	grpcOpts := []option.ClientOption{option.WithEndpoint(srv.GRPCAddr()), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials()))}
	bq, err := bigquery.NewClient(ctx, project, option.WithEndpoint("http://"+srv.HTTPAddr()), option.WithoutAuthentication())
	if err != nil {
		return err
	}
	defer bq.Close()
	if err := bq.Dataset("pm").Create(ctx, &bigquery.DatasetMetadata{}); err != nil {
		return err
	}
	for _, t := range []string{"naive_stall", "naive_drop", "ingest"} {
		if err := bq.Dataset("pm").Table(t).Create(ctx, &bigquery.TableMetadata{Schema: schema}); err != nil {
			return err
		}
	}
	mw, err := managedwriter.NewClient(ctx, project, grpcOpts...)
	if err != nil {
		return err
	}
	defer mw.Close()
	rc, err := storage.NewBigQueryReadClient(ctx, grpcOpts...)
	if err != nil {
		return err
	}
	defer rc.Close()
	want := workers * rowsPer * batches
	n := &naive{mw: mw, workers: workers, rowsPer: rowsPer}

	// 1. A stalled append holds the naive writer's barrier.
	fmt.Println("1. naive writer, append.stall (one connection hangs)")
	if err := putFaults(srv.AdminAddr(), "append.stall:duration=1h,times=1,table=pm.naive_stall"); err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, barrierWait)
	err = n.write(sctx, table("naive_stall"), batches)
	cancel()
	got, dups, rerr := count(ctx, rc, table("naive_stall"))
	if rerr != nil {
		return rerr
	}
	fmt.Printf("   after %v at the barrier: %v\n   committed %d of %d rows (%d duplicates); every stream of the batch waits on the one that hangs\n\n",
		barrierWait, err, got, want, dups)

	// 2. A lost commit reply makes the naive writer write the batch again.
	fmt.Println("2. naive writer, commit.drop_reply (the commit happens, its reply is lost)")
	if err := putFaults(srv.AdminAddr(), "commit.drop_reply:times=1,table=pm.naive_drop"); err != nil {
		return err
	}
	err = n.write(ctx, table("naive_drop"), batches)
	got, dups, rerr = count(ctx, rc, table("naive_drop"))
	if rerr != nil {
		return rerr
	}
	fmt.Printf("   writer returned %v\n   table holds %d rows for %d written: %d duplicates\n\n", err, got, want, dups)

	// 3. The ingest pipeline under both faults.
	fmt.Println("3. bqstore's ingest pipeline, append.stall and commit.drop_reply")
	if err := putFaults(srv.AdminAddr(), "append.stall:duration=1h,times=1,table=pm.ingest;commit.drop_reply:times=1,table=pm.ingest"); err != nil {
		return err
	}
	start := time.Now()
	err = runIngest(ctx, dir, srv.GRPCAddr(), want)
	got, dups, rerr = count(ctx, rc, table("ingest"))
	if rerr != nil {
		return rerr
	}
	fmt.Printf("   ingest returned %v after %v\n   table holds %d rows for %d written: %d duplicates\n",
		err, time.Since(start).Round(time.Millisecond), got, want, dups)
	st := srv.Faults().Status()
	for i, f := range st.Faults {
		fmt.Printf("   %s: %d matching calls, %d injected\n", f.Kind, st.Stats[i].Calls, st.Stats[i].Injected)
	}
	return nil
}

func table(name string) string {
	return fmt.Sprintf("projects/%s/datasets/pm/tables/%s", project, name)
}

// putFaults installs a fault spec on the server's admin endpoint, as an
// operator would with curl -X PUT --data 'SPEC' http://host/admin/faults.
func putFaults(addr, spec string) error {
	req, err := http.NewRequest(http.MethodPut, "http://"+addr+"/admin/faults", strings.NewReader(spec))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("PUT /admin/faults: %s: %s", resp.Status, b)
	}
	fmt.Printf("   faults: %s\n", spec)
	return nil
}

// naive is the postmortem's writer: per batch, one PENDING stream per
// worker, a barrier over all appends, finalize, one BatchCommit; any
// failure writes the whole batch again on new streams.
type naive struct {
	mw               *managedwriter.Client
	workers, rowsPer int
}

func (n *naive) write(ctx context.Context, tbl string, batches int) error {
	dp, md, err := descriptor()
	if err != nil {
		return err
	}
	for b := 0; b < batches; b++ {
		for attempt := 1; ; attempt++ {
			err := n.batch(ctx, tbl, dp, md, b)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return fmt.Errorf("batch %d: %w", b, err)
			}
			fmt.Printf("   batch %d attempt %d failed (%v): writing it again\n", b, attempt, err)
			if attempt == 3 {
				return err
			}
		}
	}
	return nil
}

func (n *naive) batch(ctx context.Context, tbl string, dp *descriptorpb.DescriptorProto, md protoreflect.MessageDescriptor, b int) error {
	streams := make([]*managedwriter.ManagedStream, n.workers)
	defer func() {
		for _, ms := range streams {
			if ms != nil {
				ms.Close()
			}
		}
	}()
	errs := make([]error, n.workers)
	var wg sync.WaitGroup
	for w := range n.workers {
		ms, err := n.mw.NewManagedStream(ctx, managedwriter.WithDestinationTable(tbl),
			managedwriter.WithType(managedwriter.PendingStream), managedwriter.WithSchemaDescriptor(dp))
		if err != nil {
			return err
		}
		streams[w] = ms
		wg.Add(1)
		go func() {
			defer wg.Done()
			first := (b*n.workers + w) * n.rowsPer
			r, err := ms.AppendRows(ctx, encode(md, first, n.rowsPer, w), managedwriter.WithOffset(0))
			if err == nil {
				_, err = r.GetResult(ctx)
			}
			errs[w] = err
		}()
	}
	wg.Wait() // the barrier
	if err := errors.Join(errs...); err != nil {
		return err
	}
	names := make([]string, n.workers)
	for w, ms := range streams {
		if _, err := ms.Finalize(ctx); err != nil {
			return err
		}
		names[w] = ms.StreamName()
	}
	resp, err := n.mw.BatchCommitWriteStreams(ctx, &storagepb.BatchCommitWriteStreamsRequest{Parent: tbl, WriteStreams: names})
	if err != nil {
		return err
	}
	if se := resp.GetStreamErrors(); len(se) > 0 {
		return fmt.Errorf("commit: %v", se[0].GetCode())
	}
	return nil
}

// runIngest writes the same rows as NDJSON and ingests them.
func runIngest(ctx context.Context, dir, addr string, n int) error {
	path := filepath.Join(dir, "rows.ndjson")
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "{\"id\":%d,\"worker\":%d}\n", i, i%4)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return err
	}
	ledger, err := ingest.OpenFileLedger(filepath.Join(dir, "state"))
	if err != nil {
		return err
	}
	defer ledger.Close()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return ingest.Run(ctx, ingest.Config{
		Start:        ingest.StartEarliest,
		Client:       storagepb.NewBigQueryWriteClient(conn),
		Table:        table("ingest"),
		Source:       &ingest.FileSource{Path: path},
		Ledger:       ledger,
		MaxBatchRows: int64(n / 3),
		MaxBatchAge:  200 * time.Millisecond,
		// A batch that is not finalized within its lease is abandoned and
		// replayed: the hung connection costs one lease, not the pipeline.
		Lease: 3 * time.Second,
	})
}

func descriptor() (*descriptorpb.DescriptorProto, protoreflect.MessageDescriptor, error) {
	ts, err := adapt.BQSchemaToStorageTableSchema(schema)
	if err != nil {
		return nil, nil, err
	}
	d, err := adapt.StorageSchemaToProto2Descriptor(ts, "root")
	if err != nil {
		return nil, nil, err
	}
	md := d.(protoreflect.MessageDescriptor)
	dp, err := adapt.NormalizeDescriptor(md)
	if err != nil {
		return nil, nil, err
	}
	return dp, md, nil
}

func encode(md protoreflect.MessageDescriptor, first, n, worker int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		m := dynamicpb.NewMessage(md)
		m.Set(md.Fields().ByName("id"), protoreflect.ValueOfInt64(int64(first+i)))
		m.Set(md.Fields().ByName("worker"), protoreflect.ValueOfInt64(int64(worker)))
		out[i], _ = proto.Marshal(m)
	}
	return out
}

// count reads the table and returns its rows and how many of them repeat
// an id already seen.
func count(ctx context.Context, rc *storage.BigQueryReadClient, tbl string) (rows, dups int, err error) {
	sess, err := rc.CreateReadSession(ctx, &storagepb.CreateReadSessionRequest{
		Parent:      "projects/" + project,
		ReadSession: &storagepb.ReadSession{Table: tbl, DataFormat: storagepb.DataFormat_ARROW},
	})
	if err != nil {
		return 0, 0, err
	}
	seen := map[int64]bool{}
	for _, s := range sess.GetStreams() {
		rr, err := rc.ReadRows(ctx, &storagepb.ReadRowsRequest{ReadStream: s.GetName()})
		if err != nil {
			return 0, 0, err
		}
		for {
			resp, err := rr.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return 0, 0, err
			}
			msg := append(append([]byte{}, sess.GetArrowSchema().GetSerializedSchema()...), resp.GetArrowRecordBatch().GetSerializedRecordBatch()...)
			r, err := ipc.NewReader(strings.NewReader(string(msg)))
			if err != nil {
				return 0, 0, err
			}
			for r.Next() {
				for _, id := range r.RecordBatch().Column(0).(*array.Int64).Int64Values() {
					rows++
					if seen[id] {
						dups++
					}
					seen[id] = true
				}
			}
			r.Release()
		}
	}
	return rows, dups, nil
}
