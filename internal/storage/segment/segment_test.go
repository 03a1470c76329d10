package segment

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	"github.com/bqstore/bqstore/internal/storage/base"
	"github.com/bqstore/bqstore/internal/storage/codec"
)

func sampleFooter() *Footer {
	return &Footer{
		CheckpointOffset: 4096,
		Batches: []Batch{
			{Offset: 24, Len: 1000, Stream: "_default", First: 0, Rows: 10, TS: 1_700_000_000_000_000, SchemaVersion: 1,
				Stats: MakeStats(10, []ColumnStats{
					{NullCount: 0, Kind: KindInt, MinI: -5, MaxI: 99},
					{NullCount: 2, Kind: KindBytes, MinB: []byte("a"), MaxB: []byte("zz")},
					{NullCount: 10},
				})},
			{Offset: 1024, Len: 2048, Stream: "abc", First: 7, Rows: 3, TS: 1_700_000_000_000_001, SchemaVersion: 2,
				Stats: MakeStats(3, []ColumnStats{
					{Kind: KindFloat, MinF: -1.5, MaxF: 2.25},
					{Kind: KindBool, MinI: 0, MaxI: 1},
				}),
				Runs: []Run{{Rows: 1, TS: 5}, {Rows: 2, TS: 9}}},
		},
	}
}

func TestRoundTrip(t *testing.T) {
	f := sampleFooter()
	got, err := Decode("seg", f.Encode(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, f) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, f)
	}
	off, err := ParseTrailer("seg", Trailer(12345))
	if err != nil || off != 12345 {
		t.Fatalf("trailer: %d, %v", off, err)
	}
}

// encodeV1 is the version 1 footer encoding (a zone map per column), as
// written before version 2.
func encodeV1(f *Footer) []byte {
	e := codec.Encoder{}
	e.Uvarint(footerVersionDense)
	e.Varint(f.CheckpointOffset)
	e.Uvarint(uint64(len(f.Batches)))
	for i := range f.Batches {
		b := &f.Batches[i]
		e.Varint(b.Offset)
		e.Varint(b.Len)
		e.String(b.Stream)
		e.Varint(b.First)
		e.Varint(b.Rows)
		e.Varint(b.TS)
		e.Uvarint(uint64(b.SchemaVersion))
		b.Stats.Encode(&e)
		e.Uvarint(uint64(len(b.Runs)))
		for _, r := range b.Runs {
			e.Varint(r.Rows)
			e.Varint(r.TS)
		}
	}
	return e.Buf
}

// TestDecodeV1: version 1 footers (sealed files written before sparse
// zone maps) still decode to the same index.
func TestDecodeV1(t *testing.T) {
	f := sampleFooter()
	got, err := Decode("seg", encodeV1(f))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, f) {
		t.Fatalf("v1 decode:\n got %+v\nwant %+v", got, f)
	}
}

// TestFooterSparse: a version 2 footer entry of a batch with one non-null
// column among thousands costs a few bytes, not a zone map per column.
func TestFooterSparse(t *testing.T) {
	const cols = 5000
	all := make([]ColumnStats, cols)
	for j := range all {
		all[j] = ColumnStats{NullCount: 1}
	}
	all[4321] = ColumnStats{Kind: KindInt, MinI: 7, MaxI: 7}
	f := &Footer{Batches: []Batch{{Offset: 24, Len: 512, Stream: "_default", Rows: 1, SchemaVersion: 1, Stats: MakeStats(1, all)}}}
	enc := f.Encode(nil)
	if len(enc) > 64 {
		t.Errorf("footer of one batch with 1 of %d columns set: %d bytes, want <= 64", cols, len(enc))
	}
	got, err := Decode("seg", enc)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, f) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, f)
	}
}

func TestDecodeErrors(t *testing.T) {
	enc := sampleFooter().Encode(nil)
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"truncated", enc[:len(enc)-3]},
		{"trailing bytes", append(append([]byte(nil), enc...), 0)},
		{"bad version", append([]byte{9}, enc[1:]...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Decode("seg", tc.b); !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("Decode = %v, want ErrCorruption", err)
			}
		})
	}
	if _, err := ParseTrailer("seg", []byte("short")); !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("ParseTrailer = %v", err)
	}
}

// FuzzSegmentDecode: decoding arbitrary bytes never panics, and whatever
// decodes survives an encode/decode round trip unchanged.
func FuzzSegmentDecode(f *testing.F) {
	f.Add(sampleFooter().Encode(nil))
	f.Add((&Footer{}).Encode(nil))
	f.Add([]byte{1, 0, 1})
	f.Add(encodeV1(sampleFooter()))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<16 {
			return
		}
		ft, err := Decode("fuzz", b)
		if err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("error %v does not wrap ErrCorruption", err)
			}
			return
		}
		enc := ft.Encode(nil)
		again, err := Decode("fuzz", enc)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		// Compare encodings (a float bound may be NaN, which DeepEqual
		// never equals).
		if !bytes.Equal(enc, again.Encode(nil)) || len(again.Batches) != len(ft.Batches) {
			t.Fatalf("round trip changed the footer")
		}
	})
}

func TestWriteSeeds(t *testing.T) {
	if os.Getenv("BQSTORE_WRITE_SEEDS") == "" {
		t.Skip("set BQSTORE_WRITE_SEEDS=1 to regenerate testdata/fuzz seeds")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzSegmentDecode")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	enc := sampleFooter().Encode(nil)
	for i, b := range [][]byte{enc, (&Footer{}).Encode(nil), enc[:len(enc)/2]} {
		s := "go test fuzz v1\n[]byte(" + strconv.Quote(string(b)) + ")\n"
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%d", i)), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
