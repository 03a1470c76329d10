package jobs

import (
	"context"
	"errors"
	"testing"

	"github.com/bqstore/bqstore/internal/storage/vfs"
)

// errCrash stands for a process killed at a hook.
var errCrash = errors.New("crash")

// TestInsertCrashAroundCommit: a crash right after an INSERT committed
// its rows, before the job's DONE record, leaves a job that recovers
// DONE with its numDmlAffectedRows (the rows are there: reporting it
// failed would make a rerun duplicate them); a crash right before the
// commit leaves a failed job and no rows. A script cut after its INSERT
// committed did not complete: it stays failed.
func TestInsertCrashAroundCommit(t *testing.T) {
	const ins = "INSERT INTO d.t (x, s) VALUES (1, 'a'), (2, 'b'), (3, 'c')"
	for _, c := range []struct {
		sql   string
		after bool // the crash is after the commit
		done  bool // the recovered job succeeded
	}{
		{ins, true, true},
		{ins, false, false},
		{ins + "; SELECT 1", true, false},
	} {
		after := c.after
		_, cat, db := engineStore(t, Options{})
		fillTable(t, cat, db, "t", 0)
		fs := vfs.NewMem()
		var crashed *vfs.MemFS
		s, err := Open(cat, Options{FS: fs, Dir: "jobs", DB: db})
		if err != nil {
			t.Fatal(err)
		}
		s.opts.rowsCommit = func(a bool) error {
			if a != after {
				return nil
			}
			crashed = fs.CrashClone(nil)
			if !a {
				return errCrash // the process dies here: no commit
			}
			return nil
		}
		if _, err := s.Insert("p", "ins", "US", Query{SQL: c.sql, DefaultProject: "p"}); err != nil {
			t.Fatal(err)
		}
		if j := wait(t, s, "ins"); after && j.Err != nil {
			t.Fatalf("insert: %+v", j)
		}
		s.Close()
		if crashed == nil {
			t.Fatal("the INSERT did not reach its commit")
		}
		// The engine keeps what it committed; the jobs log is as the
		// crash left it.
		ct, err := cat.Table("p", "d", "t")
		if err != nil {
			t.Fatal(err)
		}
		want := int64(0)
		if after {
			want = 3
		}
		if n, err := s.numRows(ct); err != nil || n != want {
			t.Fatalf("after=%v: %d rows (%v), want %d", after, n, err, want)
		}
		s2, err := Open(cat, Options{FS: crashed, Dir: "jobs", DB: db})
		if err != nil {
			t.Fatal(err)
		}
		j, err := s2.Get("p", "ins")
		s2.Close()
		if err != nil || j.State != StateDone {
			t.Fatalf("after=%v: %+v %v", after, j, err)
		}
		if c.done {
			if j.Err != nil || !j.Stats.DML || j.Stats.AffectedRows != 3 || j.Stats.StatementType != "INSERT" {
				t.Fatalf("committed INSERT cut by a crash: %+v, want DONE with 3 rows affected", j)
			}
		} else {
			var be *BackendError
			if !errors.As(j.Err, &be) {
				t.Fatalf("%q cut (after its commit: %v): %+v, want a BackendError", c.sql, after, j)
			}
		}
	}
}

// TestDestinationAppendCrashAfterCommit: a crash right after a query
// job appended its rows to its WRITE_APPEND destination table, before
// the job's DONE record, leaves a job that recovers DONE with its result
// in the destination (a rerun would append the rows again).
func TestDestinationAppendCrashAfterCommit(t *testing.T) {
	_, cat, db := engineStore(t, Options{})
	fillTable(t, cat, db, "t", 2)
	fs := vfs.NewMem()
	var crashed *vfs.MemFS
	s, err := Open(cat, Options{FS: fs, Dir: "jobs", DB: db})
	if err != nil {
		t.Fatal(err)
	}
	s.opts.rowsCommit = func(after bool) error {
		if after {
			crashed = fs.CrashClone(nil)
		}
		return nil
	}
	dest := TableRef{Project: "p", Dataset: "d", Table: "t"}
	q := Query{SQL: "SELECT x + 10 AS x, s FROM d.t", DefaultProject: "p", Destination: &dest, WriteDisposition: WriteAppend}
	if _, err := s.Insert("p", "app", "US", q); err != nil {
		t.Fatal(err)
	}
	if j := wait(t, s, "app"); j.Err != nil || j.Destination != dest {
		t.Fatalf("append: %+v", j)
	}
	s.Close()
	if crashed == nil {
		t.Fatal("the job did not reach the commit of its destination rows")
	}
	ct, err := cat.Table("p", "d", "t")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.numRows(ct); err != nil || n != 4 {
		t.Fatalf("%d rows (%v), want 4", n, err)
	}
	s2, err := Open(cat, Options{FS: crashed, Dir: "jobs", DB: db})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	j, err := s2.Get("p", "app")
	if err != nil || j.State != StateDone || j.Err != nil || j.Destination != dest || j.NumRows != 2 || j.Schema == nil || j.Stats.StatementType != "SELECT" || len(j.Referenced) != 1 {
		t.Fatalf("append cut by a crash after its commit: %+v %v, want DONE with 2 rows in p:d.t", j, err)
	}
	r, err := s2.Rows(j)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
}

// TestDestinationCreateCrashAfterMove: a crash right after a query job
// moved its new destination table (WRITE_APPEND creating it) over the
// name, before the job's DONE record, leaves a job that recovers DONE
// (a rerun would append the rows to the table it created); a crash
// before the move leaves the job failed and no table.
func TestDestinationCreateCrashAfterMove(t *testing.T) {
	for _, after := range []bool{true, false} {
		_, cat, db := engineStore(t, Options{})
		fillTable(t, cat, db, "src", 2)
		fs := vfs.NewMem()
		var crashed *vfs.MemFS
		s, err := Open(cat, Options{FS: fs, Dir: "jobs", DB: db})
		if err != nil {
			t.Fatal(err)
		}
		if after {
			s.opts.afterMove = func() { crashed = fs.CrashClone(nil) }
		} else {
			s.opts.beforeReplace = func() { crashed = fs.CrashClone(nil) }
		}
		dest := TableRef{Project: "p", Dataset: "d", Table: "new"}
		q := Query{SQL: "SELECT x, s FROM d.src", DefaultProject: "p", Destination: &dest, WriteDisposition: WriteAppend}
		if _, err := s.Insert("p", "mk", "US", q); err != nil {
			t.Fatal(err)
		}
		if j := wait(t, s, "mk"); j.Err != nil || j.Destination != dest {
			t.Fatalf("create: %+v", j)
		}
		s.Close()
		if crashed == nil {
			t.Fatal("the job did not reach the move of its destination")
		}
		if !after {
			// The move the crash image does not know of did not
			// happen: undone.
			if err := cat.DeleteTable(context.Background(), "p", "d", "new"); err != nil {
				t.Fatal(err)
			}
		}
		s2, err := Open(cat, Options{FS: crashed, Dir: "jobs", DB: db})
		if err != nil {
			t.Fatal(err)
		}
		j, err := s2.Get("p", "mk")
		s2.Close()
		if err != nil || j.State != StateDone {
			t.Fatalf("after=%v: %+v %v", after, j, err)
		}
		if after {
			if j.Err != nil || j.Destination != dest || j.NumRows != 2 || j.Schema == nil {
				t.Fatalf("create cut by a crash after its move: %+v, want DONE with 2 rows in p:d.new", j)
			}
		} else if j.Err == nil {
			t.Fatalf("create cut by a crash before its move: %+v, want failed", j)
		}
	}
}
