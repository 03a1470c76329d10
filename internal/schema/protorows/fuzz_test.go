package protorows

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/apache/arrow-go/v18/arrow"
)

// maxFuzzInput caps inputs so the targets stay fast.
const maxFuzzInput = 1 << 16

// checkRecord touches every value so that a structurally broken record
// (lengths, offsets, validity) fails loudly.
func checkRecord(t *testing.T, rec arrow.Record, rows int) {
	if int(rec.NumRows()) != rows {
		t.Fatalf("record has %d rows, want %d", rec.NumRows(), rows)
	}
	for _, c := range rec.Columns() {
		if c.Len() != rows {
			t.Fatalf("column of %d values, want %d", c.Len(), rows)
		}
		for i := 0; i < c.Len(); i++ {
			_ = c.ValueStr(i)
		}
	}
}

// FuzzCompile compiles arbitrary descriptors against a table with every
// type, and decodes a few rows with whatever compiles: errors, never
// panics.
//
//	go test -run '^$' -fuzz FuzzCompile ./internal/schema/protorows/
func FuzzCompile(f *testing.F) {
	_, dp := adaptDescriptor(f, allTypes(), false)
	b, _ := proto.Marshal(dp)
	f.Add(b)
	_, dp3 := adaptDescriptor(f, allTypes(), true)
	b, _ = proto.Marshal(dp3)
	f.Add(b)
	tbl := allTypes()
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			return
		}
		desc := &descriptorpb.DescriptorProto{}
		if err := proto.Unmarshal(data, desc); err != nil {
			return
		}
		d, err := Compile(desc, tbl)
		if err != nil {
			return
		}
		rows := [][]byte{nil, data, {0x08, 0x01}, {0x0a, 0x00}}
		rec, rowErrs, err := d.Decode(rows, MissingValues{Default: DefaultValue})
		if err != nil || rowErrs != nil {
			return
		}
		checkRecord(t, rec, len(rows))
		rec.Release()
	})
}

// FuzzProtoRowsDecode decodes arbitrary bytes as rows of the every-type
// table's adapt descriptor: a row error or a consistent record, never a
// panic.
//
//	go test -run '^$' -fuzz FuzzProtoRowsDecode ./internal/schema/protorows/
func FuzzProtoRowsDecode(f *testing.F) {
	tbl := allTypes()
	md, dp := adaptDescriptor(f, tbl, false)
	d, err := Compile(dp, tbl)
	if err != nil {
		f.Fatal(err)
	}
	m := newMsg(f, md).set("s", "x").set("i", int64(3)).set("g", "POINT(1 2)").set("j", "{}").set("n", []byte{1})
	m.add("rep", int64(1))
	m.addSub("rec").set("x", "y").sub("inner").add("y", int64(5))
	f.Add(m.bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			return
		}
		rec, rowErrs, err := d.Decode([][]byte{data, data}, MissingValues{})
		if err != nil {
			t.Fatal(err)
		}
		if rowErrs != nil {
			if rec != nil || len(rowErrs) != 2 {
				t.Fatalf("row errors %v with a record", rowErrs)
			}
			return
		}
		checkRecord(t, rec, 2)
		rec.Release()
	})
}
