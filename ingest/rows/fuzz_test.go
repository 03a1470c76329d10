package rows

import (
	"encoding/json"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"
)

// FuzzAppend checks that Append never panics, that it accepts only valid
// JSON, that every row it produces is decoded by the official protobuf
// runtime with the Mapper's own descriptor, and that failures are
// *RecordError with dst restored.
//
//	go test -run '^$' -fuzz FuzzAppend ./ingest/rows
func FuzzAppend(f *testing.F) {
	for _, s := range []string{
		`{"id":1}`,
		`{"id":"2","f":1.5,"b":true,"s":"x\u00e9","by":"aGk=","ts":"2024-01-02T03:04:05.6Z"}`,
		`{"id":1,"d":"2024-02-29","t":"12:00:00.5","dt":"2024-02-29 12:00:00","n":"-1.25","bn":"1e-38"}`,
		`{"id":1,"ints":[1,2],"tags":["a"],"rec":{"x":1,"ys":[{"z":"q"}]},"r":"[2024-01-01, UNBOUNDED)"}`,
		`{"id":1,"j":{"a":[true,null]},"g":"POINT(0 0)","unknown":[{}]}`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	mReject, err := New(testSchema(), UnknownReject)
	if err != nil {
		f.Fatal(err)
	}
	mIgnore, err := New(testSchema(), UnknownIgnore)
	if err != nil {
		f.Fatal(err)
	}
	md := messageDescriptor(f, mReject.Descriptor())
	f.Fuzz(func(t *testing.T, rec []byte, ignore bool) {
		if len(rec) > 1<<14 {
			return
		}
		m := mReject
		if ignore {
			m = mIgnore
		}
		dst := []byte{1, 2, 3}
		out, err := m.Append(dst, rec)
		if err != nil {
			var re *RecordError
			if !errors.As(err, &re) {
				t.Fatalf("error %v is not a *RecordError", err)
			}
			if len(out) != 3 {
				t.Fatalf("dst not restored after error")
			}
			return
		}
		if !json.Valid(rec) {
			t.Fatalf("accepted invalid JSON %q", rec)
		}
		msg := dynamicpb.NewMessage(md)
		if err := proto.Unmarshal(out[3:], msg); err != nil {
			t.Fatalf("row does not decode: %v (record %q)", err, rec)
		}
		if !msg.Has(md.Fields().ByName("id")) {
			t.Fatalf("REQUIRED id missing from an accepted row")
		}
	})
}
