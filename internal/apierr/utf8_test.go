package apierr

import (
	"testing"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// TestInvalidUTF8MessagesMarshal: a message quoting a client's bytes (a
// field name from a forged Arrow schema or descriptor) that are not UTF-8
// must still marshal; grpc-go answered INTERNAL "error while marshaling:
// string field contains invalid UTF-8" and ended the connection.
func TestInvalidUTF8MessagesMarshal(t *testing.T) {
	bad := "field \xff\xfe"
	for _, err := range []*Error{
		InvalidArgument("writer_schema: %s", bad),
		New(codes.InvalidArgument, storagepb.StorageError_SCHEMA_MISMATCH_EXTRA_FIELDS, "stream \xc3", "extra field %s", bad),
	} {
		st := Status(err, "")
		if _, merr := proto.Marshal(st.Proto()); merr != nil {
			t.Errorf("%q: %v", err.Msg, merr)
		}
		if st.Code() != codes.InvalidArgument {
			t.Errorf("code %v", st.Code())
		}
	}
}
