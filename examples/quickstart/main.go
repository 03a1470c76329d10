// Command quickstart writes rows to a bqstore table with Google's official
// Go client (managedwriter) and reads them back with the official read
// client: the one-minute tour of the README. Nothing here is specific to
// bqstore except the endpoints: pointed at real BigQuery, it does the same.
//
//	go run ./cmd/bqstore serve &
//	go run ./cmd/bqstore mk --dataset local:demo
//	go run ./cmd/bqstore mk --table local:demo.events id:INTEGER,name:STRING
//	go run ./examples/quickstart
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"

	storage "cloud.google.com/go/bigquery/storage/apiv1"
	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"cloud.google.com/go/bigquery/storage/managedwriter"
	"cloud.google.com/go/bigquery/storage/managedwriter/adapt"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

func main() {
	def := "127.0.0.1:9060"
	if e := os.Getenv("BQSTORE_ENDPOINT"); e != "" {
		def = e
	}
	endpoint := flag.String("endpoint", def, "Storage API address (env BQSTORE_ENDPOINT)")
	table := flag.String("table", "projects/local/datasets/demo/tables/events", "table")
	flag.Parse()
	if err := run(context.Background(), *endpoint, *table); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, endpoint, table string) error {
	opts := []option.ClientOption{
		option.WithEndpoint(endpoint),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
	}
	mw, err := managedwriter.NewClient(ctx, "local", opts...)
	if err != nil {
		return err
	}
	defer mw.Close()

	// The table's schema, as a writer would get it, then a descriptor.
	ws, err := mw.GetWriteStream(ctx, &storagepb.GetWriteStreamRequest{Name: table + "/streams/_default", View: storagepb.WriteStreamView_FULL})
	if err != nil {
		return err
	}
	d, err := adapt.StorageSchemaToProto2Descriptor(ws.GetTableSchema(), "root")
	if err != nil {
		return err
	}
	md := d.(protoreflect.MessageDescriptor)
	dp, err := adapt.NormalizeDescriptor(md)
	if err != nil {
		return err
	}

	// A PENDING stream: invisible until committed, exactly once thanks to
	// explicit offsets.
	ms, err := mw.NewManagedStream(ctx, managedwriter.WithDestinationTable(table),
		managedwriter.WithType(managedwriter.PendingStream), managedwriter.WithSchemaDescriptor(dp))
	if err != nil {
		return err
	}
	defer ms.Close()
	var rows [][]byte
	for i := 0; i < 3; i++ {
		m := dynamicpb.NewMessage(md)
		m.Set(md.Fields().ByName("id"), protoreflect.ValueOfInt64(int64(i)))
		m.Set(md.Fields().ByName("name"), protoreflect.ValueOfString(fmt.Sprintf("event %d", i)))
		b, err := proto.Marshal(m)
		if err != nil {
			return err
		}
		rows = append(rows, b)
	}
	res, err := ms.AppendRows(ctx, rows, managedwriter.WithOffset(0))
	if err != nil {
		return err
	}
	if _, err := res.GetResult(ctx); err != nil {
		return err
	}
	if _, err := ms.Finalize(ctx); err != nil {
		return err
	}
	resp, err := mw.BatchCommitWriteStreams(ctx, &storagepb.BatchCommitWriteStreamsRequest{Parent: table, WriteStreams: []string{ms.StreamName()}})
	if err != nil {
		return err
	}
	if len(resp.GetStreamErrors()) > 0 {
		return fmt.Errorf("commit: %v", resp.GetStreamErrors())
	}
	fmt.Printf("committed 3 rows at %s\n", resp.GetCommitTime().AsTime())

	// Read everything back as Arrow.
	rc, err := storage.NewBigQueryReadClient(ctx, opts...)
	if err != nil {
		return err
	}
	defer rc.Close()
	sess, err := rc.CreateReadSession(ctx, &storagepb.CreateReadSessionRequest{
		Parent:      "projects/local",
		ReadSession: &storagepb.ReadSession{Table: table, DataFormat: storagepb.DataFormat_ARROW},
	})
	if err != nil {
		return err
	}
	for _, s := range sess.GetStreams() {
		stream, err := rc.ReadRows(ctx, &storagepb.ReadRowsRequest{ReadStream: s.GetName()})
		if err != nil {
			return err
		}
		for {
			r, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
			buf := append(append([]byte{}, sess.GetArrowSchema().GetSerializedSchema()...), r.GetArrowRecordBatch().GetSerializedRecordBatch()...)
			rd, err := ipc.NewReader(bytes.NewReader(buf))
			if err != nil {
				return err
			}
			for rd.Next() {
				fmt.Println(rd.RecordBatch())
			}
			rd.Release()
		}
	}
	return nil
}
