package readapi_test

import (
	"bytes"
	"testing"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// TestRowRestrictionRuntimeErrorsAreInvalidArgument: an error raised while
// evaluating row_restriction is the caller's fault and permanent, so it
// must not come back as INTERNAL (which the official clients retry
// forever), but as INVALID_ARGUMENT with the filter's message.
func TestRowRestrictionRuntimeErrorsAreInvalidArgument(t *testing.T) {
	e := newEnv(t)
	tp := e.fill("t", 1000)
	for _, expr := range []string{
		"1/(id-500) > 0",                    // division by zero
		"CAST(name AS INT64) > 0",           // failed CAST
		"id + 9223372036854775807 > 0",      // overflow
		"ST_GEOGFROMTEXT(name) IS NOT NULL", // invalid WKT
		"PARSE_DATE('%Y', name) IS NOT NULL OR id / 0 > 1",
	} {
		sess, err := e.session(tp, 1, &storagepb.ReadSession_TableReadOptions{RowRestriction: expr})
		if err != nil {
			if c := code(err); c != codes.InvalidArgument {
				t.Errorf("%s: CreateReadSession: got %v (%v), want InvalidArgument", expr, c, err)
			}
			continue
		}
		_, err = e.readStream(sess.GetStreams()[0].GetName(), 0)
		if c := code(err); c != codes.InvalidArgument {
			t.Errorf("%s: ReadRows: got %v (%v), want InvalidArgument", expr, c, err)
		} else if err.Error() == "" {
			t.Errorf("%s: no message", expr)
		}
	}
}

// rawCodec sends pre-encoded bytes, as a hostile or foreign client can.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// TestInvalidUTF8RequestIsInvalidArgument: a request whose string fields
// are not valid UTF-8 (which proto3 forbids) is the caller's fault:
// INVALID_ARGUMENT, not the INTERNAL grpc-go answers for a message it
// cannot decode (which clients retry).
func TestInvalidUTF8RequestIsInvalidArgument(t *testing.T) {
	e := newEnv(t)
	tp := e.fill("t", 10)
	conn, err := grpc.NewClient(e.srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	corrupt := func(m proto.Message) []byte {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return bytes.Replace(b, []byte("XXXX"), []byte("\xff\xfe\xfd\xfc"), 1)
	}
	req := corrupt(&storagepb.CreateReadSessionRequest{
		Parent: "projects/local",
		ReadSession: &storagepb.ReadSession{Table: tp, DataFormat: storagepb.DataFormat_ARROW,
			ReadOptions: &storagepb.ReadSession_TableReadOptions{RowRestriction: "name = 'XXXX'"}},
	})
	var out []byte
	err = conn.Invoke(e.ctx, "/google.cloud.bigquery.storage.v1.BigQueryRead/CreateReadSession", &req, &out, grpc.ForceCodec(rawCodec{}))
	if c := status.Code(err); c != codes.InvalidArgument {
		t.Errorf("CreateReadSession: got %v (%v), want InvalidArgument", c, err)
	}

	// A server-streaming call decodes its request inside the handler.
	sess, err := e.session(tp, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	req = corrupt(&storagepb.ReadRowsRequest{ReadStream: sess.GetStreams()[0].GetName() + "XXXX"})
	st, err := conn.NewStream(e.ctx, &grpc.StreamDesc{ServerStreams: true}, "/google.cloud.bigquery.storage.v1.BigQueryRead/ReadRows", grpc.ForceCodec(rawCodec{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SendMsg(&req); err != nil {
		t.Fatal(err)
	}
	_ = st.CloseSend()
	err = st.RecvMsg(&out)
	if c := status.Code(err); c != codes.InvalidArgument {
		t.Errorf("ReadRows: got %v (%v), want InvalidArgument", c, err)
	}
}
