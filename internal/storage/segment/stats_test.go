package segment

import (
	"reflect"
	"testing"

	"github.com/bqstore/bqstore/internal/storage/codec"
)

// TestStatsSparse: Stats stores only columns that are not all null, and
// At, WithLen and the encoding still describe every column.
func TestStatsSparse(t *testing.T) {
	const rows = 4
	all := []ColumnStats{
		{NullCount: rows}, // all null: implied
		{NullCount: 1, Kind: KindInt, MinI: 2, MaxI: 9}, // stored
		{NullCount: rows},
		{NullCount: rows},
		{Kind: KindBytes, MinB: []byte("a"), MaxB: []byte("b")},
		{NullCount: rows},
	}
	s := MakeStats(rows, all)
	if s.Len() != len(all) || s.Stored() != 2 {
		t.Fatalf("Len %d Stored %d, want %d, 2", s.Len(), s.Stored(), len(all))
	}
	for j := range all {
		if got := s.At(j); !reflect.DeepEqual(got, all[j]) {
			t.Errorf("At(%d) = %+v, want %+v", j, got, all[j])
		}
	}
	w := s.WithLen(len(all) + 3)
	for j := len(all); j < w.Len(); j++ {
		if got := w.At(j); !reflect.DeepEqual(got, ColumnStats{NullCount: rows}) {
			t.Errorf("padded At(%d) = %+v, want all null", j, got)
		}
	}
	if got := s.WithLen(2); got.Len() != 2 || !reflect.DeepEqual(got.At(1), all[1]) {
		t.Errorf("WithLen(2) = %+v", got)
	}
	var e codec.Encoder
	s.Encode(&e)
	d := codec.NewDecoder(e.Buf)
	back := DecodeStatsList(d, rows)
	if err := d.Done(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, s) {
		t.Fatalf("round trip: got %+v, want %+v", back, s)
	}
	e = codec.Encoder{}
	s.EncodeSparse(&e)
	d = codec.NewDecoder(e.Buf)
	back = DecodeSparseStats(d, rows)
	if err := d.Done(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, s) {
		t.Fatalf("sparse round trip: got %+v, want %+v", back, s)
	}
	if got := s.StoredCols(nil); !reflect.DeepEqual(got, []int{1, 4}) {
		t.Errorf("StoredCols = %v, want [1 4]", got)
	}
	// Dense (narrow) batches pay no index.
	dense := MakeStats(rows, all[1:2])
	if dense.d.cols != nil {
		t.Errorf("dense stats carry a column index")
	}
	// No stored column at all.
	if none := MakeStats(rows, []ColumnStats{{NullCount: rows}, {NullCount: rows}}); none.Stored() != 0 || none.At(1).NullCount != rows {
		t.Errorf("all-null stats: %+v", none)
	}
}

// TestSparseStatsErrors: the sparse decoder rejects what its writer
// never writes.
func TestSparseStatsErrors(t *testing.T) {
	enc := func(f func(e *codec.Encoder)) []byte {
		var e codec.Encoder
		f(&e)
		return e.Buf
	}
	allNull := ColumnStats{NullCount: 2}
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"stored count above column count", enc(func(e *codec.Encoder) { e.Uvarint(1); e.Uvarint(2) })},
		{"index past the end", enc(func(e *codec.Encoder) { e.Uvarint(3); e.Uvarint(1); e.Uvarint(3); e.Varint(0); e.Uvarint(0) })},
		{"stored all-null column", enc(func(e *codec.Encoder) { e.Uvarint(1); e.Uvarint(1); AppendStats(e, &allNull) })},
		{"truncated", enc(func(e *codec.Encoder) { e.Uvarint(4); e.Uvarint(2); e.Uvarint(0) })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := codec.NewDecoder(tc.b)
			DecodeSparseStats(d, 2)
			if d.Done() == nil {
				t.Fatalf("decoded %x without error", tc.b)
			}
		})
	}
}
