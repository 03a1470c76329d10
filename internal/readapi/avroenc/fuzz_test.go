package avroenc

import (
	"math/rand/v2"
	"testing"

	"github.com/bqstore/bqstore/internal/testkit/arrowgen"
)

// FuzzAvroEncode encodes a random slice of a random record of every type and
// decodes it with hamba/avro against the produced schema, comparing every
// value.
func FuzzAvroEncode(f *testing.F) {
	f.Add(uint64(1), uint8(10), uint8(0), uint8(10))
	f.Add(uint64(2), uint8(40), uint8(7), uint8(30))
	f.Add(uint64(3), uint8(0), uint8(0), uint8(0))
	s := arrowgen.AllTypes()
	sj, err := Schema(s)
	if err != nil {
		f.Fatal(err)
	}
	enc := NewEncoder(s)
	f.Fuzz(func(t *testing.T, seed uint64, rows, off, length uint8) {
		n := int(rows % 41)
		rec := arrowgen.Record(s, rand.New(rand.NewPCG(seed, 0)), n)
		defer rec.Release()
		lo := int64(off) % int64(n+1)
		hi := lo + int64(length)%(int64(n)-lo+1)
		part := rec.NewSlice(lo, hi)
		defer part.Release()
		data, err := enc.Encode(part, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := decodeRows(t, sj, data, int(part.NumRows()))
		for row := range got {
			for i, fld := range s.Fields {
				if err := compare(got[row][fld.Name], expectValue(fld, part.Column(i), row)); err != nil {
					t.Fatalf("row %d column %s: %v", row, fld.Name, err)
				}
			}
		}
	})
}
