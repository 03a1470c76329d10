package storage

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The format-2 fixture (testdata/format2) is a data directory written by
// the engine before ROWS_SPARSE records and version 2 footers: dense ROWS
// frames (type 5, every column in the Arrow message and a zone map per
// column) in a sealed file with a version 1 footer and in the active file.
// Regenerate only to change what it holds, with the engine of that format
// (BQSTORE_WRITE_FORMAT2=1 on a checkout before the change).

// fixtureSchema is the fixture table's schema at version v (1 or 2).
func fixtureSchema(v int) *arrow.Schema {
	fs := []arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}
	if v == 2 {
		fs = append(fs, arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true})
	}
	return arrow.NewSchema(fs, nil)
}

// fixtureBatch is batch k of the fixture (4 rows, ids 4k..4k+3): column
// a is all null in odd batches, name in batches k%3 == 1, b (version 2)
// set only in batches k%4 == 0.
func fixtureBatch(v, k int) arrow.Record {
	b := array.NewRecordBuilder(memory.DefaultAllocator, fixtureSchema(v))
	defer b.Release()
	for i := 4 * k; i < 4*k+4; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if k%3 == 1 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("row-%d", i))
		}
		if k%2 == 1 {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.Int64Builder).Append(int64(10 * i))
		}
		if v == 2 {
			if k%4 == 0 {
				b.Field(3).(*array.StringBuilder).Append(fmt.Sprintf("b%d", i))
			} else {
				b.Field(3).AppendNull()
			}
		}
	}
	return b.NewRecordBatch()
}

// fixtureWant renders batches [0, n) as read at schema version 2.
func fixtureWant(n int) []string {
	var out []string
	for k := range n {
		v := 1
		if k >= 6 {
			v = 2
		}
		rec := fixtureBatch(v, k)
		rec = conform(rec, fixtureSchema(2))
		out = append(out, renderRows(rec)...)
		rec.Release()
	}
	return out
}

func renderRows(rec arrow.Record) []string {
	var out []string
	for i := range int(rec.NumRows()) {
		var sb strings.Builder
		for j, c := range rec.Columns() {
			if j > 0 {
				sb.WriteByte(' ')
			}
			fmt.Fprintf(&sb, "%s=%s", rec.Schema().Field(j).Name, c.ValueStr(i))
		}
		out = append(out, sb.String())
	}
	return out
}

// readRendered renders every visible row of tb (all columns).
func readRendered(t *testing.T, tb *Table) []string {
	t.Helper()
	s, err := tb.Snapshot(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	var out []string
	for _, c := range s.Chunks() {
		rec, err := s.ReadChunk(context.Background(), c, 0, c.NumRows, nil)
		if err != nil {
			t.Fatalf("ReadChunk: %v", err)
		}
		out = append(out, renderRows(rec)...)
		rec.Release()
	}
	return out
}

const fixtureSegmentSize = 2048

// TestWriteFormat2Fixture writes testdata/format2 (see above).
func TestWriteFormat2Fixture(t *testing.T) {
	if os.Getenv("BQSTORE_WRITE_FORMAT2") == "" {
		t.Skip("set BQSTORE_WRITE_FORMAT2=1 to regenerate testdata/format2 (with the engine of that format)")
	}
	ctx := context.Background()
	dir := filepath.Join("testdata", "format2")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	clk := newFakeClock()
	db, err := Open(dir, &Options{Clock: clk.Now, SegmentSize: fixtureSegmentSize})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := db.CreateTable(ctx, "old", fixtureSchema(1))
	if err != nil {
		t.Fatal(err)
	}
	for k := range 12 {
		clk.Advance(time.Second)
		v := 1
		if k == 6 {
			if err := tb.SetSchema(ctx, 2, fixtureSchema(2)); err != nil {
				t.Fatal(err)
			}
		}
		if k >= 6 {
			v = 2
		}
		rec := fixtureBatch(v, k)
		_, err := tb.Append(ctx, AppendRequest{Stream: DefaultStreamID, Offset: -1, Batch: rec, SchemaVersion: v})
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// copyDir copies the fixture to a fresh directory (opening changes it).
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestFormat2Fixture: a data directory of the previous layout (dense
// ROWS frames, version 1 footers) opens and reads back every value; new
// appends to it, a restart and a compaction that merges old and new
// batches keep every row.
func TestFormat2Fixture(t *testing.T) {
	ctx := context.Background()
	dir := copyDir(t, filepath.Join("testdata", "format2"))
	matches, _ := filepath.Glob(filepath.Join(dir, "tables", "*", "L-*.log"))
	if len(matches) < 2 {
		t.Fatalf("fixture has %d log files, want a sealed one and an active one", len(matches))
	}
	open := func() (*DB, *Table) {
		db, err := Open(dir, &Options{SegmentSize: fixtureSegmentSize})
		if err != nil {
			t.Fatal(err)
		}
		tb, err := db.Table("old")
		if err != nil {
			db.Close()
			t.Fatal(err)
		}
		return db, tb
	}
	check := func(tb *Table, n int, when string) {
		t.Helper()
		got, want := readRendered(t, tb), fixtureWant(n)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("%s: read\n%s\nwant\n%s", when, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	db, tb := open()
	check(tb, 12, "fixture")
	for k := 12; k < 16; k++ {
		rec := fixtureBatch(2, k)
		_, err := tb.Append(ctx, AppendRequest{Stream: DefaultStreamID, Offset: -1, Batch: rec, SchemaVersion: 2})
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	check(tb, 16, "after appends")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, tb = open()
	defer func() { db.Close() }()
	check(tb, 16, "after restart")
	if _, err := tb.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	check(tb, 16, "after compaction")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, tb = open()
	check(tb, 16, "after compaction and restart")
}
