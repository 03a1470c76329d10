package storage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/bqstore/bqstore/internal/storage/segment"
	"github.com/bqstore/bqstore/internal/storage/vfs"
)

// wideCols is the width of the table the wide-append tests write to
// (issue 12, finding 5: one-row appends to a 5,000-column table).
const wideCols = 5000

func wideSchema(n int) *arrow.Schema {
	fs := make([]arrow.Field, n)
	for i := range fs {
		fs[i] = arrow.Field{Name: fmt.Sprintf("c%d", i), Type: arrow.PrimitiveTypes.Int64, Nullable: true}
	}
	return arrow.NewSchema(fs, nil)
}

// wideRow is one row with column 0 set to v and every other column null.
func wideRow(s *arrow.Schema, v int64) arrow.Record {
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).Append(v)
	for j := 1; j < s.NumFields(); j++ {
		b.Field(j).AppendNull()
	}
	return b.NewRecordBatch()
}

func openWide(t *testing.T) (*DB, *Table, *arrow.Schema) {
	t.Helper()
	db, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s := wideSchema(wideCols)
	tb, err := db.CreateTable(context.Background(), "wide", s)
	if err != nil {
		t.Fatal(err)
	}
	return db, tb, s
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestWideAppendRetainedHeap: the in-memory metadata a one-row append to
// a 5,000-column table leaves behind (the batch index entry and its zone
// maps) is proportional to what the batch holds (one non-null value), not
// to the table's width: 96 bytes per column (480 KB) per append used to
// stay in memory until compaction.
func TestWideAppendRetainedHeap(t *testing.T) {
	ctx := context.Background()
	_, tb, s := openWide(t)
	const n = 40
	rec := wideRow(s, 7)
	defer rec.Release()
	appendOne := func() {
		if _, err := tb.Append(ctx, AppendRequest{Stream: DefaultStreamID, Offset: -1, Batch: rec}); err != nil {
			t.Fatal(err)
		}
	}
	// Warm up (schema caches, buffer pool classes) before measuring.
	appendOne()
	before := heapInUse()
	for range n - 1 {
		appendOne()
	}
	after := heapInUse()
	per := (int64(after) - int64(before)) / (n - 1)
	t.Logf("retained heap per one-row append to %d columns: %d bytes", wideCols, per)
	if per > 16<<10 {
		t.Errorf("retained heap per one-row append to %d columns = %d bytes, want <= 16 KiB", wideCols, per)
	}
	if got := tableIDs(t, tb, time.Time{}); len(got) != n {
		t.Fatalf("read back %d rows, want %d", len(got), n)
	}
}

// TestWideAppendAllocs: a one-row append to a 5,000-column table allocates
// in proportion to what it writes: it used to encode the table's schema
// (an Arrow IPC message of the whole schema, ~1.5 MB of garbage), a
// dense zone-map slice, every column's Arrow metadata and a copy of the
// schema's field list on every append.
func TestWideAppendAllocs(t *testing.T) {
	ctx := context.Background()
	db, tb, s := openWide(t)
	rec := wideRow(s, 1)
	defer rec.Release()
	appendOne := func() {
		if _, err := tb.Append(ctx, AppendRequest{Stream: DefaultStreamID, Offset: -1, Batch: rec}); err != nil {
			t.Fatal(err)
		}
	}
	appendOne()
	const n = 20
	var m0, m1 runtime.MemStats
	logBefore := db.Metrics().AppendedBytes
	runtime.ReadMemStats(&m0)
	for range n {
		appendOne()
	}
	runtime.ReadMemStats(&m1)
	t.Logf("log bytes per one-row append to %d columns: %d", wideCols, (db.Metrics().AppendedBytes-logBefore)/n)
	bytesPer := (m1.TotalAlloc - m0.TotalAlloc) / n
	allocsPer := (m1.Mallocs - m0.Mallocs) / n
	t.Logf("per one-row append to %d columns: %d bytes allocated in %d allocations", wideCols, bytesPer, allocsPer)
	// Measured: 7.6 MB in 20,117 allocations at first, 3.7 MB in
	// 10,085 once the schema message went, ~4 KB in 44 with ROWS_SPARSE
	// records (only the present column is encoded).
	if bytesPer > 256<<10 {
		t.Errorf("allocated %d bytes per one-row append to %d columns, want <= 256 KiB", bytesPer, wideCols)
	}
}

// TestWideZoneMaps: with all-null columns implied rather than stored, a
// snapshot's chunks still report every column's zone map: bounds for the
// set column, all null for the others, and all null for a column added
// after the batch was written; the same after a restart, which rebuilds
// the index from the log's records.
func TestWideZoneMaps(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := wideSchema(wideCols)
	tb, err := db.CreateTable(ctx, "wide", s)
	if err != nil {
		t.Fatal(err)
	}
	rec := wideRow(s, 7)
	defer rec.Release()
	if _, err := tb.Append(ctx, AppendRequest{Stream: DefaultStreamID, Offset: -1, Batch: rec}); err != nil {
		t.Fatal(err)
	}
	wider := arrow.NewSchema(append(s.Fields(), arrow.Field{Name: "added", Type: arrow.PrimitiveTypes.Int64, Nullable: true}), nil)
	if err := tb.SetSchema(ctx, 2, wider); err != nil {
		t.Fatal(err)
	}
	check := func(tb *Table) {
		t.Helper()
		snap, err := tb.Snapshot(time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		defer snap.Release()
		cs := snap.Chunks()
		if len(cs) != 1 || cs[0].Stats.Len() != wideCols+1 {
			t.Fatalf("chunks %d, want 1 chunk with stats of %d columns", len(cs), wideCols+1)
		}
		if got := cs[0].Stats.At(0); got.Kind != segment.KindInt || got.MinI != 7 || got.MaxI != 7 || got.NullCount != 0 {
			t.Errorf("column 0 zone map %+v, want int [7, 7] without nulls", got)
		}
		for _, j := range []int{1, wideCols - 1, wideCols} {
			if got := cs[0].Stats.At(j); got.Kind != segment.KindNone || got.NullCount != 1 {
				t.Errorf("column %d zone map %+v, want all null (1 of 1 rows)", j, got)
			}
		}
	}
	check(tb)
	// After a restart the index is rebuilt from the log's records.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if tb, err = db.Table("wide"); err != nil {
		t.Fatal(err)
	}
	check(tb)
}

// logBytes is the size of every log file of the data directory dir.
func logBytes(t *testing.T, dir string) int64 {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(dir, "tables", "*", "L-*.log"))
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, m := range matches {
		fi, err := os.Stat(m)
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

// TestWideAppendLogBytes: a one-row append to a 5,000-column table with
// one non-null value writes log bytes in proportion to that value, not
// to the table's width: all-null columns are absent from the ROWS
// record (issue 12, finding 5). Measured on disk: 610 KB per append
// before (every column's Arrow field node, buffers and zone map).
//
//	go test -run TestWideAppendLogBytes -v ./internal/storage/
func TestWideAppendLogBytes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := wideSchema(wideCols)
	tb, err := db.CreateTable(ctx, "wide", s)
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	before := logBytes(t, dir)
	for i := range n {
		rec := wideRow(s, int64(i))
		_, err := tb.Append(ctx, AppendRequest{Stream: DefaultStreamID, Offset: -1, Batch: rec})
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	per := (logBytes(t, dir) - before) / n
	t.Logf("log bytes per one-row append to %d columns: %d", wideCols, per)
	if per > 1024 {
		t.Errorf("log bytes per one-row append to %d columns = %d, want <= 1 KiB", wideCols, per)
	}
	if got := tableIDs(t, tb, time.Time{}); len(got) != n {
		t.Fatalf("read back %d rows, want %d", len(got), n)
	}
}

// TestSparseRowsRoundTrip: batches whose columns are all null, partly
// null or all set read back with the same values from the active file,
// after a restart (replay), after sealing (footer) and after a
// compaction that merges them.
func TestSparseRowsRoundTrip(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := wideSchema(6)
	open := func() (*DB, *Table) {
		db, err := Open(dir, &Options{SegmentSize: 1024})
		if err != nil {
			t.Fatal(err)
		}
		tb, err := db.Table("t")
		if err != nil {
			db.Close()
			t.Fatal(err)
		}
		return db, tb
	}
	db, err := Open(dir, &Options{SegmentSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := db.CreateTable(ctx, "t", s)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for k := range 30 {
		b := array.NewRecordBuilder(memory.DefaultAllocator, s)
		for i := range 3 {
			for j := range s.NumFields() {
				// k%3 == 0: every column null; else column j set
				// when (j+k)%3 == 0 (and in row 0 only for odd j).
				if k%3 == 0 || (j+k)%3 != 0 || (j%2 == 1 && i > 0) {
					b.Field(j).AppendNull()
				} else {
					b.Field(j).(*array.Int64Builder).Append(int64(100*k + 10*i + j))
				}
			}
		}
		rec := b.NewRecordBatch()
		b.Release()
		want = append(want, renderRows(rec)...)
		_, err := tb.Append(ctx, AppendRequest{Stream: DefaultStreamID, Offset: -1, Batch: rec})
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	check := func(tb *Table, when string) {
		t.Helper()
		if got := readRendered(t, tb); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("%s: read\n%s\nwant\n%s", when, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		// Row by row: absent columns are made as long as the rows read.
		snap, err := tb.Snapshot(time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		defer snap.Release()
		var got []string
		for _, c := range snap.Chunks() {
			for i := range c.NumRows {
				rec, err := snap.ReadChunk(ctx, c, i, i+1, nil)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, renderRows(rec)...)
				rec.Release()
			}
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("%s: read row by row\n%s\nwant\n%s", when, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	check(tb, "live")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, tb = open()
	check(tb, "after restart")
	st, err := tb.Compact(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.FilesIn < 2 || st.BatchesOut >= st.BatchesIn {
		t.Fatalf("compaction %+v: want several files whose batches merge", st)
	}
	check(tb, "after compaction")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, tb = open()
	check(tb, "after compaction and restart")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := Check(dir, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range rep.Tables {
		if tr.Err != nil {
			t.Fatalf("fsck: %v", tr.Err)
		}
	}
}

// TestAllNullRows: a batch of a million rows with every column null (the
// empty proto rows of issue 12, finding 5) costs a few bytes of log, and
// reading a page of it allocates in proportion to the page, not to the
// batch: absent columns are made as long as the rows read.
func TestAllNullRows(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := wideSchema(20)
	tb, err := db.CreateTable(ctx, "empty", s)
	if err != nil {
		t.Fatal(err)
	}
	const rows = 1_000_000
	cols := make([]arrow.Array, s.NumFields())
	for j := range cols {
		cols[j] = array.MakeArrayOfNull(memory.DefaultAllocator, s.Field(j).Type, rows)
	}
	rec := array.NewRecordBatch(s, cols, rows)
	for _, c := range cols {
		c.Release()
	}
	before := logBytes(t, dir)
	_, err = tb.Append(ctx, AppendRequest{Stream: DefaultStreamID, Offset: -1, Batch: rec})
	rec.Release()
	if err != nil {
		t.Fatal(err)
	}
	written := logBytes(t, dir) - before
	t.Logf("log bytes of %d all-null rows of %d columns: %d", rows, s.NumFields(), written)
	if written > 1024 {
		t.Errorf("log bytes of %d all-null rows = %d, want <= 1 KiB", rows, written)
	}
	snap, err := tb.Snapshot(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	cs := snap.Chunks()
	if len(cs) != 1 || cs[0].NumRows != rows {
		t.Fatalf("chunks %+v, want one of %d rows", cs, rows)
	}
	read := func() {
		out, err := snap.ReadChunk(ctx, cs[0], 500_000, 500_100, nil)
		if err != nil {
			t.Fatal(err)
		}
		if out.NumRows() != 100 || out.NumCols() != 20 || out.Column(7).NullN() != 100 {
			t.Fatalf("read %d rows x %d columns, %d nulls in column 7", out.NumRows(), out.NumCols(), out.Column(7).NullN())
		}
		out.Release()
	}
	read()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	read()
	runtime.ReadMemStats(&m1)
	alloc := m1.TotalAlloc - m0.TotalAlloc
	t.Logf("bytes allocated reading 100 of %d all-null rows: %d", rows, alloc)
	if alloc > 256<<10 {
		t.Errorf("reading 100 of %d all-null rows allocated %d bytes, want <= 256 KiB", rows, alloc)
	}
}

// TestSparseEveryType: every column type the API maps to reads back from
// a batch where it is absent (all null) as an all-null array of its type
// that validates, in whole batches and in pages, and present columns of
// those types in the same batch keep their values.
func TestSparseEveryType(t *testing.T) {
	ctx := context.Background()
	types := []arrow.DataType{
		arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Float64, arrow.BinaryTypes.String,
		arrow.BinaryTypes.Binary, arrow.FixedWidthTypes.Boolean, arrow.FixedWidthTypes.Date32,
		arrow.FixedWidthTypes.Time64us, &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"},
		&arrow.TimestampType{Unit: arrow.Microsecond}, &arrow.Decimal128Type{Precision: 38, Scale: 9},
		&arrow.Decimal256Type{Precision: 76, Scale: 38}, arrow.FixedWidthTypes.MonthDayNanoInterval,
		arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true}),
		arrow.ListOf(arrow.PrimitiveTypes.Int64),
		arrow.ListOf(arrow.StructOf(arrow.Field{Name: "x", Type: arrow.FixedWidthTypes.Boolean, Nullable: true})),
	}
	fields := []arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}
	for i, dt := range types {
		fields = append(fields, arrow.Field{Name: fmt.Sprintf("c%d", i), Type: dt, Nullable: true})
	}
	s := arrow.NewSchema(fields, nil)
	db, err := Open("db", &Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tb, err := db.CreateTable(ctx, "t", s)
	if err != nil {
		t.Fatal(err)
	}
	// Batch k sets column c_i (in row 1 only) when i%3 == k; the rest
	// of the batch is null.
	var want []string
	for k := range 4 {
		b := array.NewRecordBuilder(memory.DefaultAllocator, s)
		for r := range 3 {
			b.Field(0).(*array.Int64Builder).Append(int64(3*k + r))
			for i := range types {
				fb := b.Field(i + 1)
				if i%3 != k || r != 1 {
					fb.AppendNull()
					continue
				}
				switch fb := fb.(type) {
				case *array.Int64Builder:
					fb.Append(42)
				case *array.StringBuilder:
					fb.Append("s")
				case *array.BinaryBuilder:
					fb.Append([]byte{1, 2})
				case *array.BooleanBuilder:
					fb.Append(true)
				case *array.Float64Builder:
					fb.Append(1.5)
				case *array.StructBuilder:
					fb.Append(true)
					for j := range fb.NumField() {
						fb.FieldBuilder(j).AppendNull()
					}
				case *array.ListBuilder:
					fb.Append(true)
					fb.ValueBuilder().AppendNull()
				default:
					fb.AppendEmptyValue()
				}
			}
		}
		rec := b.NewRecordBatch()
		b.Release()
		want = append(want, renderRows(rec)...)
		_, err := tb.Append(ctx, AppendRequest{Stream: DefaultStreamID, Offset: -1, Batch: rec})
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	snap, err := tb.Snapshot(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	var got, paged []string
	for _, c := range snap.Chunks() {
		for _, rg := range [][2]int64{{0, c.NumRows}, {0, 1}, {1, 3}} {
			rec, err := snap.ReadChunk(ctx, c, rg[0], rg[1], nil)
			if err != nil {
				t.Fatal(err)
			}
			if !rec.Schema().Equal(s) {
				t.Fatalf("read schema %v, want %v", rec.Schema(), s)
			}
			for j, col := range rec.Columns() {
				if v, ok := col.(interface{ ValidateFull() error }); ok {
					if err := v.ValidateFull(); err != nil {
						t.Fatalf("column %d (%v): %v", j, col.DataType(), err)
					}
				}
				if col.Len() != int(rec.NumRows()) {
					t.Fatalf("column %d (%v): %d rows of %d", j, col.DataType(), col.Len(), rec.NumRows())
				}
			}
			if rg[1] == c.NumRows && rg[0] == 0 {
				got = append(got, renderRows(rec)...)
			} else {
				paged = append(paged, renderRows(rec)...)
			}
			rec.Release()
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("read\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if strings.Join(paged, "\n") != strings.Join(want, "\n") {
		t.Fatalf("read in pages\n%s\nwant\n%s", strings.Join(paged, "\n"), strings.Join(want, "\n"))
	}
}
