package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/bqstore/bqstore/internal/storage/codec"
	"github.com/bqstore/bqstore/internal/storage/segment"
	"github.com/bqstore/bqstore/internal/storage/stream"
	"github.com/bqstore/bqstore/internal/storage/wal"
)

// fuzzSeeds are valid payloads of every record type.
func fuzzSeeds(t testing.TB) map[wal.Type][]byte {
	sipc, err := encodeSchema(testSchema)
	if err != nil {
		t.Fatal(err)
	}
	rec := makeBatch(testSchema, 0, 3)
	defer rec.Release()
	// ROWS: the dense layout of format 2 files.
	rows, err := appendBatchIPC(nil, rec)
	if err != nil {
		t.Fatal(err)
	}
	ipcEnd := len(rows)
	rows = encodeDenseRowsMeta(rows, "s1", segment.MakeStats(3, []segment.ColumnStats{{Kind: segment.KindInt, MinI: 0, MaxI: 2}, {NullCount: 0}}))
	trailer := make([]byte, rowsTrailerLen)
	putRowsTrailer(trailer, 0, 3, 1, len(rows)-ipcEnd)
	rows = append(rows, trailer...)
	// ROWS_SPARSE of a batch whose second column is all null.
	b := array.NewRecordBuilder(memory.DefaultAllocator, testSchema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{4, 5}, nil)
	b.Field(1).AppendNulls(2)
	half := b.NewRecordBatch()
	defer half.Release()
	m, err := encodeRows(half)
	if err != nil {
		t.Fatal(err)
	}
	sparse, err := m.appendTo(nil)
	m.release()
	if err != nil {
		t.Fatal(err)
	}
	ipcEnd = len(sparse)
	sparse = encodeRowsMeta(sparse, "s1", m.stats)
	putRowsTrailer(trailer, 3, 2, 1, len(sparse)-ipcEnd)
	sparse = append(sparse, trailer...)
	set := stream.NewSet()
	_ = set.Create("s1", stream.Buffered, 5, 1)
	_, _ = set.Append("s1", 0, 4)
	_, _ = set.Flush("s1", 1, 6)
	ck := &checkpoint{tableID: "t", createTS: 1, lastTS: 6, streams: set,
		schemas: []schemaVer{{version: 1, ts: 1, schema: testSchema, ipc: sipc}}}
	return map[wal.Type][]byte{
		recRows:         rows,
		recRowsSparse:   sparse,
		recSchema:       (&rec1{typ: recSchema, schemaVersion: 2, schemaIPC: sipc}).encode(),
		recStreamCreate: (&rec1{typ: recStreamCreate, stream: "s1", streamType: stream.Pending, schemaVersion: 1}).encode(),
		recFlush:        (&rec1{typ: recFlush, stream: "s1", first: 3}).encode(),
		recBatchCommit:  (&rec1{typ: recBatchCommit, ids: []string{"a", "b"}}).encode(),
		recAbandon:      (&rec1{typ: recAbandon, ids: []string{"a"}}).encode(),
		recCheckpoint:   ck.encode(),
		recHeader:       encodeHeader("t", 3, 1),
	}
}

// encodeDenseRowsMeta is the meta part of a ROWS payload (the dense
// layout written before ROWS_SPARSE: a zone map per column).
func encodeDenseRowsMeta(dst []byte, streamID string, stats segment.Stats) []byte {
	e := codec.Encoder{Buf: dst}
	start := len(dst)
	e.String(streamID)
	stats.Encode(&e)
	for (len(e.Buf)-start)%8 != 0 {
		e.Buf = append(e.Buf, 0)
	}
	return e.Buf
}

type rec1 rec

func (r *rec1) encode() []byte { return (*rec)(r).encodeMeta() }

// FuzzRecordDecode feeds arbitrary payloads to the decoders recovery and
// reads use (record payloads, checkpoints, headers, the ROWS layout and
// Arrow batch messages against a known schema): they must return errors,
// never panic. Arrow schema messages are not fuzzed: arrow-go's flatbuffer
// schema reader allocates what the input says (found by this target), so
// the engine only parses schema bytes that passed a frame CRC.
func FuzzRecordDecode(f *testing.F) {
	for typ, p := range fuzzSeeds(f) {
		f.Add(byte(typ), p)
	}
	sipc, err := encodeSchema(testSchema)
	if err != nil {
		f.Fatal(err)
	}
	sv := schemaVer{version: 1, schema: testSchema, ipc: sipc}
	f.Fuzz(func(t *testing.T, typ byte, p []byte) {
		if len(p) > 1<<16 {
			return
		}
		switch wal.Type(typ) {
		case recCheckpoint:
			_, _ = decodeCheckpoint("fuzz", p, nil)
		case recHeader:
			_, _, _, _ = decodeHeader("fuzz", p)
		case recRows, recRowsSparse:
			msg, r, err := splitRows(wal.Type(typ), p)
			if err == nil {
				if rec, err := decodeRows(sv, wal.Type(typ), r, memory.NewBufferBytes(p), len(msg), 0, r.rows); err == nil {
					rec.Release()
				}
			}
		default:
			_, _ = decodeRec(wal.Type(typ), p, nil)
		}
	})
}

func TestWriteRecordSeeds(t *testing.T) {
	if os.Getenv("BQSTORE_WRITE_SEEDS") == "" {
		t.Skip("set BQSTORE_WRITE_SEEDS=1 to regenerate testdata/fuzz seeds")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzRecordDecode")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for typ, p := range fuzzSeeds(t) {
		s := fmt.Sprintf("go test fuzz v1\nbyte(%d)\n[]byte(%s)\n", typ, strconv.Quote(string(p)))
		if err := os.WriteFile(filepath.Join(dir, "seed-"+recName(typ)), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// appendBatchIPC (the ROWS layout: every column) appends rec as one encapsulated Arrow IPC record batch
// message (8-byte aligned buffers, uncompressed) to dst.
func appendBatchIPC(dst []byte, rec arrow.Record) ([]byte, error) {
	if schemaHasDictionary(rec.Schema()) {
		return nil, errDictionary
	}
	m, err := encodeBatch(rec)
	if err != nil {
		return nil, err
	}
	defer m.release()
	return m.appendTo(slices.Grow(dst, m.size))
}
