package storage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/cockroachdb/datadriven"

	"github.com/bqstore/bqstore/internal/storage/vfs"
)

// errName prints an error as the sentinel it wraps.
func errName(err error) string {
	for _, e := range []struct {
		err  error
		name string
	}{
		{ErrClosed, "ErrClosed"},
		{ErrTableNotFound, "ErrTableNotFound"},
		{ErrStreamNotFound, "ErrStreamNotFound"},
		{ErrStreamFinalized, "ErrStreamFinalized"},
		{ErrStreamCommitted, "ErrStreamCommitted"},
		{ErrOffsetExists, "ErrOffsetExists"},
		{ErrOffsetOutOfRange, "ErrOffsetOutOfRange"},
		{ErrInvalidStreamType, "ErrInvalidStreamType"},
		{ErrInvalidStreamState, "ErrInvalidStreamState"},
		{ErrSnapshotTooOld, "ErrSnapshotTooOld"},
		{ErrSnapshotInFuture, "ErrSnapshotInFuture"},
		{ErrSchemaMismatch, "ErrSchemaMismatch"},
		{ErrInvalidArgument, "ErrInvalidArgument"},
		{ErrCorruption, "ErrCorruption"},
		{ErrFailStop, "ErrFailStop"},
	} {
		if errors.Is(err, e.err) {
			return e.name
		}
	}
	return "unexpected: " + err.Error()
}

// TestScenarios drives the engine facade from golden files
// (testdata/scenario_*) with a manual clock on a mem FS: the stream
// lifecycle, visibility by time, time travel, schema evolution and
// restarts. Regenerate with -rewrite and review the diff.
//
// Commands (times print as seconds after the clock's start):
//
//	stream name=<n> type=<TYPE>          create a stream, aliased n
//	append stream=<n> [offset=<o>] rows=<k> [version=<v>]
//	                                     append k rows with the next ids
//	finalize|flush stream=<n> [offset=<o>]
//	commit streams=(<n>,...)
//	advance by=<duration>
//	mark name=<m>                        remember now
//	read [at=<m>|at-offset=<duration>] [columns=(<i>,...)]
//	                                     print the visible ids / columns
//	info stream=<n>
//	add-column name=<c>                  SetSchema: a new nullable string column
//	restart                              close and reopen the DB
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if !strings.HasPrefix(path[strings.LastIndex(path, "/")+1:], "scenario_") {
			t.Skip()
		}
		ctx := context.Background()
		fs := vfs.NewMem()
		clk := newFakeClock()
		start := clk.Now()
		opts := &Options{FS: fs, Clock: clk.Now, TimeTravel: time.Hour, PendingStreamTTL: 30 * time.Minute}
		db, err := Open("db", opts)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { db.Close() }()
		tb, err := db.CreateTable(ctx, "t", testSchema)
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]string{"_default": DefaultStreamID}
		marks := map[string]time.Time{}
		var nextID int64
		rel := func(ts time.Time) string { return fmt.Sprintf("%.6fs", ts.Sub(start).Seconds()) }
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			var sname string
			if d.HasArg("stream") {
				d.ScanArgs(t, "stream", &sname)
			}
			sid, ok := names[sname]
			if !ok {
				sid = sname
			}
			offset := int64(-1)
			if d.HasArg("offset") {
				d.ScanArgs(t, "offset", &offset)
			}
			switch d.Cmd {
			case "stream":
				var name, typ string
				d.ScanArgs(t, "name", &name)
				d.ScanArgs(t, "type", &typ)
				st := map[string]StreamType{"COMMITTED": StreamCommitted, "PENDING": StreamPending, "BUFFERED": StreamBuffered, "DEFAULT": StreamDefault}[typ]
				info, err := tb.CreateStream(ctx, st)
				if err != nil {
					return errName(err)
				}
				names[name] = info.ID
				return fmt.Sprintf("%v %v created=%s", info.Type, info.State, rel(info.CreateTime))
			case "append":
				var rows int64
				d.ScanArgs(t, "rows", &rows)
				version := 0
				if d.HasArg("version") {
					d.ScanArgs(t, "version", &version)
				}
				sv, schema := tb.Schema()
				if version != 0 && version != sv {
					s, err := tb.Snapshot(time.Time{})
					if err != nil {
						return errName(err)
					}
					s.Release()
					schema = testSchema
				}
				rec := makeBatch(schema, nextID, rows)
				defer rec.Release()
				res, err := tb.Append(ctx, AppendRequest{Stream: sid, Offset: offset, Batch: rec, SchemaVersion: version})
				if err != nil {
					return errName(err)
				}
				nextID += rows
				return fmt.Sprintf("offset=%d time=%s ids=[%d,%d)", res.Offset, rel(res.Time), nextID-rows, nextID)
			case "finalize":
				n, err := tb.Finalize(ctx, sid)
				if err != nil {
					return errName(err)
				}
				return fmt.Sprintf("rows=%d", n)
			case "flush":
				n, err := tb.Flush(ctx, sid, offset)
				if err != nil {
					return errName(err)
				}
				return fmt.Sprintf("flushed=%d", n)
			case "commit":
				var list []string
				d.ScanArgs(t, "streams", &list)
				list = slices.DeleteFunc(list, func(s string) bool { return s == "" })
				for i, n := range list {
					if id, ok := names[n]; ok {
						list[i] = id
					}
				}
				ct, serrs, err := tb.BatchCommit(ctx, list)
				if err != nil {
					return errName(err)
				}
				if len(serrs) > 0 {
					var b strings.Builder
					for _, e := range serrs {
						name := e.Stream
						for k, v := range names {
							if v == e.Stream {
								name = k
							}
						}
						fmt.Fprintf(&b, "%s: %s\n", name, errName(e.Err))
					}
					return b.String()
				}
				return "committed at " + rel(ct)
			case "advance":
				var by string
				d.ScanArgs(t, "by", &by)
				dur, err := time.ParseDuration(by)
				if err != nil {
					t.Fatal(err)
				}
				clk.Advance(dur)
				return "now " + rel(clk.Now())
			case "mark":
				var name string
				d.ScanArgs(t, "name", &name)
				marks[name] = clk.Now()
				return rel(clk.Now())
			case "read":
				var at time.Time
				if d.HasArg("at") {
					var m string
					d.ScanArgs(t, "at", &m)
					at = marks[m]
				}
				if d.HasArg("at-offset") {
					var o string
					d.ScanArgs(t, "at-offset", &o)
					dur, _ := time.ParseDuration(o)
					at = start.Add(dur)
				}
				var cols []int
				if d.HasArg("columns") {
					d.ScanArgs(t, "columns", &cols)
				}
				s, err := tb.Snapshot(at)
				if err != nil {
					return errName(err)
				}
				defer s.Release()
				var b strings.Builder
				fmt.Fprintf(&b, "schema v%d:", s.SchemaVersion())
				for _, f := range s.Schema().Fields() {
					fmt.Fprintf(&b, " %s", f.Name)
				}
				fmt.Fprintf(&b, "\nrows=%d chunks=%d\n", s.NumRows(), len(s.Chunks()))
				for _, c := range s.Chunks() {
					rec, err := s.ReadChunk(ctx, c, 0, c.NumRows, cols)
					if err != nil {
						return errName(err)
					}
					fmt.Fprintf(&b, "[%d,%d):", c.RowStart, c.RowEnd)
					for r := range int(rec.NumRows()) {
						b.WriteString(" (")
						for ci, col := range rec.Columns() {
							if ci > 0 {
								b.WriteString(",")
							}
							b.WriteString(cellString(col, r))
						}
						b.WriteString(")")
					}
					b.WriteString("\n")
					rec.Release()
				}
				return b.String()
			case "info":
				info, err := tb.Stream(sid)
				if err != nil {
					return errName(err)
				}
				return fmt.Sprintf("%v %v next=%d flushed=%d finalized=%v committed=%v", info.Type, info.State,
					info.NextOffset, info.FlushedOffset, !info.FinalizeTime.IsZero(), !info.CommitTime.IsZero())
			case "add-column":
				var name string
				d.ScanArgs(t, "name", &name)
				v, s := tb.Schema()
				fields := append(s.Fields(), arrow.Field{Name: name, Type: arrow.BinaryTypes.String, Nullable: true})
				if err := tb.SetSchema(ctx, v+1, arrow.NewSchema(fields, nil)); err != nil {
					return errName(err)
				}
				return fmt.Sprintf("schema v%d", v+1)
			case "restart":
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
				db, err = Open("db", opts)
				if err != nil {
					return "open: " + err.Error()
				}
				tb, err = db.Table("t")
				if err != nil {
					return errName(err)
				}
				return "ok"
			}
			t.Fatalf("unknown command %q", d.Cmd)
			return ""
		})
	})
}

func cellString(col arrow.Array, r int) string {
	if col.IsNull(r) {
		return "null"
	}
	switch c := col.(type) {
	case *array.Int64:
		return fmt.Sprint(c.Value(r))
	case *array.String:
		return c.Value(r)
	}
	return col.ValueStr(r)
}
