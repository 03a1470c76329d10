package rows

import (
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// benchRecord is about 1.2 KB, the postmortem's event size.
func benchRecord() []byte {
	return []byte(`{"id":123456789,"f":3.14159,"b":true,"s":"` + strings.Repeat("payload-", 110) +
		`","ts":"2026-11-30T02:36:54.123456Z","d":"2026-11-30","n":"12345.678901234","tags":["a","bb","ccc"],` +
		`"ints":[1,2,3,4,5,6,7,8],"rec":{"x":42,"ys":[{"z":"nested-one"},{"z":"nested-two"}]},"j":{"k":[1,2,{"v":null}]}}`)
}

// BenchmarkAppend measures JSON -> proto row mapping.
//
//	go test -run '^$' -bench BenchmarkAppend -benchmem ./ingest/rows
func BenchmarkAppend(b *testing.B) {
	rec := benchRecord()
	b.Run("impl=rows", func(b *testing.B) {
		m, err := New(testSchema(), UnknownReject)
		if err != nil {
			b.Fatal(err)
		}
		dst := make([]byte, 0, 4096)
		b.SetBytes(int64(len(rec)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := m.Append(dst[:0], rec); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The baseline a generic pipeline would use: encoding/json into a map,
	// then dynamicpb + proto.Marshal (only the scalar columns, so it does less work).
	b.Run("impl=json+dynamicpb", func(b *testing.B) {
		m, err := New(testSchema(), UnknownReject)
		if err != nil {
			b.Fatal(err)
		}
		md := messageDescriptor(b, m.Descriptor())
		fid, fs, ff := md.Fields().ByName("id"), md.Fields().ByName("s"), md.Fields().ByName("f")
		b.SetBytes(int64(len(rec)))
		b.ReportAllocs()
		for b.Loop() {
			var v map[string]any
			if err := json.Unmarshal(rec, &v); err != nil {
				b.Fatal(err)
			}
			msg := dynamicpb.NewMessage(md)
			msg.Set(fid, protoreflectInt(int64(v["id"].(float64))))
			msg.Set(fs, protoreflectString(v["s"].(string)))
			msg.Set(ff, protoreflectFloat(v["f"].(float64)))
			if _, err := proto.Marshal(msg); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func protoreflectInt(v int64) protoreflect.Value     { return protoreflect.ValueOfInt64(v) }
func protoreflectString(v string) protoreflect.Value { return protoreflect.ValueOfString(v) }
func protoreflectFloat(v float64) protoreflect.Value { return protoreflect.ValueOfFloat64(v) }
