package arrowenc

import (
	"math/rand/v2"
	"testing"
)

// fuzzPaths are the selections FuzzArrowEncode combines (bit i of sel picks
// fuzzPaths[i]).
var fuzzPaths = []string{"int64", "bignumeric", "rec.inner.y", "recs.tags", "recs.inner", "range_ts.end", "interval", "rec.a", "json", "ints"}

// FuzzArrowEncode builds a random record of the all-types schema from seed,
// slices and projects it as the input says, encodes it with the chosen codec
// and checks that arrow-go's IPC stream reader, reading schema+batch as the Go
// bigquery client does, returns equal records.
func FuzzArrowEncode(f *testing.F) {
	f.Add(uint64(1), uint8(10), uint8(0), uint8(10), uint8(0), uint16(0))
	f.Add(uint64(2), uint8(40), uint8(3), uint8(17), uint8(1), uint16(0x0155))
	f.Add(uint64(3), uint8(64), uint8(63), uint8(1), uint8(2), uint16(0x03ff))
	f.Add(uint64(4), uint8(0), uint8(0), uint8(0), uint8(2), uint16(0x0010))
	s := testSchema()
	full, err := SchemaMessage(NewProjectionMust(s).Schema())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, seed uint64, rows, off, length, codec uint8, sel uint16) {
		n := int(rows % 65)
		rec := randomRecord(s, rand.New(rand.NewPCG(seed, 0)), n)
		defer rec.Release()
		lo := int64(off) % int64(n+1)
		hi := lo + int64(length)%(int64(n)-lo+1)
		part := rec.NewSlice(lo, hi)
		defer part.Release()
		var paths []string
		for i, p := range fuzzPaths {
			if sel&(1<<i) != 0 {
				paths = append(paths, p)
			}
		}
		proj, err := NewProjection(s, paths)
		if err != nil {
			t.Fatal(err)
		}
		out, err := proj.Record(part)
		if err != nil {
			t.Fatal(err)
		}
		defer out.Release()
		schemaMsg := full
		if proj.Schema() != s {
			if schemaMsg, err = SchemaMessage(proj.Schema()); err != nil {
				t.Fatal(err)
			}
		}
		enc, err := NewEncoder(proj.Schema(), nil)
		if err != nil {
			t.Fatal(err)
		}
		checkRoundTrip(t, enc, schemaMsg, out, Compression(codec%3))
	})
}
