package storage

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/bqstore/bqstore/internal/storage/vfs"
)

// TestBatchCommitIfEmpty: a conditional commit commits a PENDING stream
// into a table without rows, and refuses (ErrTableNotEmpty, nothing
// committed, the stream still committable) a table with rows, however
// they came: the default stream, a COMMITTED stream, a BUFFERED flush, a
// PENDING commit, before or after a reopen. Rows not visible (an open
// PENDING stream, a BUFFERED stream not flushed) leave the table empty.
// A crash after the call (unsynced bytes lost) keeps what it answered.
func TestBatchCommitIfEmpty(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		fill   func(t *testing.T, tb *Table)
		reopen bool
		empty  bool
	}{
		{"none", func(*testing.T, *Table) {}, false, true},
		{"pending-open", func(t *testing.T, tb *Table) {
			ps, _ := tb.CreateStream(ctx, StreamPending)
			appendRows(t, tb, ps.ID, 0, 0, 2)
		}, false, true},
		{"buffered-unflushed", func(t *testing.T, tb *Table) {
			bs, _ := tb.CreateStream(ctx, StreamBuffered)
			appendRows(t, tb, bs.ID, 0, 0, 2)
		}, false, true},
		{"committed-no-rows", func(t *testing.T, tb *Table) {
			if _, err := tb.CreateStream(ctx, StreamCommitted); err != nil {
				t.Fatal(err)
			}
		}, false, true},
		{"default", func(t *testing.T, tb *Table) { appendRows(t, tb, DefaultStreamID, -1, 0, 1) }, false, false},
		{"committed", func(t *testing.T, tb *Table) {
			cs, _ := tb.CreateStream(ctx, StreamCommitted)
			appendRows(t, tb, cs.ID, 0, 0, 1)
		}, false, false},
		{"buffered-flushed", func(t *testing.T, tb *Table) {
			bs, _ := tb.CreateStream(ctx, StreamBuffered)
			appendRows(t, tb, bs.ID, 0, 0, 2)
			if _, err := tb.Flush(ctx, bs.ID, 0); err != nil {
				t.Fatal(err)
			}
		}, false, false},
		{"pending-committed", func(t *testing.T, tb *Table) {
			ps, _ := tb.CreateStream(ctx, StreamPending)
			appendRows(t, tb, ps.ID, 0, 0, 1)
			tb.Finalize(ctx, ps.ID)
			if _, serrs, err := tb.BatchCommit(ctx, []string{ps.ID}); err != nil || len(serrs) > 0 {
				t.Fatal(serrs, err)
			}
		}, false, false},
		{"default-reopened", func(t *testing.T, tb *Table) { appendRows(t, tb, DefaultStreamID, -1, 0, 1) }, true, false},
		{"pending-committed-reopened", func(t *testing.T, tb *Table) {
			ps, _ := tb.CreateStream(ctx, StreamPending)
			appendRows(t, tb, ps.ID, 0, 0, 1)
			tb.Finalize(ctx, ps.ID)
			tb.BatchCommit(ctx, []string{ps.ID})
		}, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			clk := newFakeClock()
			fs, dir := vfs.NewMem(), "db"
			db, err := Open(dir, &Options{FS: fs, Clock: clk.Now})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { db.Close() }()
			tb, err := db.CreateTable(ctx, "t", testSchema)
			if err != nil {
				t.Fatal(err)
			}
			c.fill(t, tb)
			before := len(tableIDs(t, tb, time.Time{}))
			if c.reopen {
				db.Close()
				if db, err = Open(dir, &Options{FS: fs, Clock: clk.Now}); err != nil {
					t.Fatal(err)
				}
				if tb, err = db.Table("t"); err != nil {
					t.Fatal(err)
				}
			}
			ps, err := tb.CreateStream(ctx, StreamPending)
			if err != nil {
				t.Fatal(err)
			}
			appendRows(t, tb, ps.ID, 0, 100, 3)
			if _, err := tb.Finalize(ctx, ps.ID); err != nil {
				t.Fatal(err)
			}
			_, serrs, err := tb.BatchCommitIfEmpty(ctx, []string{ps.ID})
			if len(serrs) > 0 {
				t.Fatal(serrs)
			}
			got := len(tableIDs(t, tb, time.Time{}))
			want := before
			if c.empty {
				want += 3
				if err != nil || got != want {
					t.Fatalf("empty table: %v, %d rows visible, want %d", err, got, want)
				}
			} else if !errors.Is(err, ErrTableNotEmpty) || got != want {
				t.Fatalf("table with rows: %v, %d rows visible, want ErrTableNotEmpty and %d", err, got, want)
			}
			crashed, err := Open(dir, &Options{FS: fs.CrashClone(nil), Clock: clk.Now})
			if err != nil {
				t.Fatal(err)
			}
			ctb, err := crashed.Table("t")
			if err != nil {
				t.Fatal(err)
			}
			got = len(tableIDs(t, ctb, time.Time{}))
			crashed.Close()
			if got != want {
				t.Fatalf("after a crash: %d rows visible, want %d", got, want)
			}
			if c.empty {
				return
			}
			// Nothing changed: the stream can still be committed.
			if _, serrs, err := tb.BatchCommit(ctx, []string{ps.ID}); err != nil || len(serrs) > 0 {
				t.Fatalf("commit after a refused conditional commit: %v %v", serrs, err)
			}
			if got := fmt.Sprint(len(tableIDs(t, tb, time.Time{}))); got != fmt.Sprint(before+3) {
				t.Fatalf("%s rows visible, want %d", got, before+3)
			}
		})
	}
}
