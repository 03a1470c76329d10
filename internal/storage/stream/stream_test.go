package stream

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/bqstore/bqstore/internal/storage/base"
)

// errName prints an error as the sentinel it wraps.
func errName(err error) string {
	for _, e := range []struct {
		err  error
		name string
	}{
		{base.ErrStreamNotFound, "ErrStreamNotFound"},
		{base.ErrStreamFinalized, "ErrStreamFinalized"},
		{base.ErrStreamCommitted, "ErrStreamCommitted"},
		{base.ErrOffsetExists, "ErrOffsetExists"},
		{base.ErrOffsetOutOfRange, "ErrOffsetOutOfRange"},
		{base.ErrInvalidStreamType, "ErrInvalidStreamType"},
		{base.ErrInvalidStreamState, "ErrInvalidStreamState"},
		{base.ErrInvalidArgument, "ErrInvalidArgument"},
	} {
		if errors.Is(err, e.err) {
			return e.name
		}
	}
	return "unexpected: " + err.Error()
}

func parseType(t *testing.T, s string) Type {
	switch s {
	case "DEFAULT":
		return Default
	case "COMMITTED":
		return Committed
	case "PENDING":
		return Pending
	case "BUFFERED":
		return Buffered
	}
	t.Fatalf("unknown type %q", s)
	return 0
}

func show(s *Set) string {
	var b strings.Builder
	fmt.Fprintf(&b, "_default next=%d\n", s.DefaultNext)
	for _, id := range s.IDs() {
		st, _ := s.Lookup(id)
		fmt.Fprintf(&b, "%s %v %v next=%d created=%d", st.ID, st.Type, st.State, st.Next, st.CreateTS)
		if st.FinalizeTS != 0 {
			fmt.Fprintf(&b, " finalized=%d", st.FinalizeTS)
		}
		if st.CommitTS != 0 {
			fmt.Fprintf(&b, " committed=%d", st.CommitTS)
		}
		if len(st.Flushes) > 0 {
			fmt.Fprintf(&b, " flushes=%v", st.Flushes)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestStateMachine drives the stream state machine from golden scenario
// files (testdata/*); regenerate with -rewrite and review the diff.
//
// Commands:
//
//	create id=<id> type=<TYPE> [ts=<µs>]
//	append id=<id> [offset=<o>] rows=<n>
//	finalize id=<id> [ts=<µs>]
//	flush id=<id> offset=<o> [ts=<µs>]
//	commit ids=(<id>,...) [ts=<µs>]
//	expired id=<id> cutoff=<µs>
//	visible id=<id> batch-ts=<µs> first=<o> rows=<n> at=<µs>
//	show
func TestStateMachine(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		s := NewSet()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			var id string
			var ts, offset, rows int64
			offset = -1
			if d.HasArg("id") {
				d.ScanArgs(t, "id", &id)
			}
			if d.HasArg("ts") {
				d.ScanArgs(t, "ts", &ts)
			}
			if d.HasArg("offset") {
				d.ScanArgs(t, "offset", &offset)
			}
			if d.HasArg("rows") {
				d.ScanArgs(t, "rows", &rows)
			}
			switch d.Cmd {
			case "create":
				var typ string
				d.ScanArgs(t, "type", &typ)
				if err := s.Create(id, parseType(t, typ), ts, 1); err != nil {
					return errName(err)
				}
				return "ok"
			case "append":
				first, err := s.Append(id, offset, rows)
				if err != nil {
					return errName(err)
				}
				return fmt.Sprintf("first=%d", first)
			case "finalize":
				n, again, err := s.Finalize(id, ts)
				if err != nil {
					return errName(err)
				}
				return fmt.Sprintf("rows=%d again=%v", n, again)
			case "flush":
				w, err := s.Flush(id, offset, ts)
				if err != nil {
					return errName(err)
				}
				return fmt.Sprintf("flushed=%d", w)
			case "commit":
				var ids []string
				d.ScanArgs(t, "ids", &ids)
				errs := s.Commit(ids, ts)
				if len(errs) == 0 {
					return "ok"
				}
				var b strings.Builder
				for _, e := range errs {
					fmt.Fprintf(&b, "%s: %s\n", e.Stream, errName(e.Err))
				}
				return b.String()
			case "expired":
				var cutoff int64
				d.ScanArgs(t, "cutoff", &cutoff)
				st, err := s.Get(id)
				if err != nil {
					return errName(err)
				}
				return fmt.Sprint(Expired(st, cutoff))
			case "visible":
				var bts, first, at int64
				d.ScanArgs(t, "batch-ts", &bts)
				d.ScanArgs(t, "first", &first)
				d.ScanArgs(t, "at", &at)
				st, err := s.Get(id)
				if err != nil {
					return errName(err)
				}
				appended := int64(0)
				if bts <= at {
					appended = rows
				}
				lo, hi := VisibleRange(st, appended, first, rows, at)
				return fmt.Sprintf("[%d, %d)", lo, hi)
			case "show":
				return show(s)
			}
			t.Fatalf("unknown command %q", d.Cmd)
			return ""
		})
	})
}
