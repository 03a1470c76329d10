package jobs

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/bqstore/bqstore/internal/storage/vfs"
)

// TestSwapCrashAroundMove: a statement that builds its table aside and
// swaps it in (CREATE TABLE AS SELECT, CREATE OR REPLACE TABLE|VIEW,
// alone or as a script's last statement), cut by a crash after its
// swap, recovers DONE with the outcome it had (its table is in place);
// cut before the swap (the record logged, the move not made), it
// recovers failed and the target is as it was.
func TestSwapCrashAroundMove(t *testing.T) {
	for _, c := range []struct {
		name, sql string
		target    string // the table the statement creates or replaces
		old       int64  // rows of the target before the job; -1: none
	}{
		{"ctas", "CREATE TABLE d.n AS SELECT x, s FROM d.src", "n", -1},
		{"replace", "CREATE OR REPLACE TABLE d.old AS SELECT x, s FROM d.src", "old", 5},
		{"replace-empty", "CREATE OR REPLACE TABLE d.old (x INT64)", "old", 5},
		{"view", "CREATE OR REPLACE VIEW d.v AS SELECT x FROM d.src", "v", 0},
		{"script", "SELECT 1; CREATE TABLE d.n AS SELECT x, s FROM d.src", "n", -1},
	} {
		for _, after := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/after=%v", c.name, after), func(t *testing.T) {
				_, cat, db := engineStore(t, Options{})
				fillTable(t, cat, db, "src", 3)
				fillTable(t, cat, db, "old", 5)
				fs := vfs.NewMem()
				s, err := Open(cat, Options{FS: fs, Dir: "jobs", DB: db})
				if err != nil {
					t.Fatal(err)
				}
				mustRun(t, s, "mkview", "CREATE VIEW d.v AS SELECT s FROM d.src")
				before, _ := cat.Table("p", "d", c.target)
				var crashed *vfs.MemFS
				s.opts.beforeReplace = func() {
					crashed = fs.CrashClone(nil)
					if !after {
						s.Cancel("p", "j") // the process dies here: no move
					}
				}
				if _, err := s.Insert("p", "j", "US", Query{SQL: c.sql, DefaultProject: "p"}); err != nil {
					t.Fatal(err)
				}
				ran := wait(t, s, "j")
				if after && ran.Err != nil {
					t.Fatalf("%s: %v", c.sql, ran.Err)
				}
				s.Close()
				if crashed == nil {
					t.Fatal("no swap")
				}
				s2, err := Open(cat, Options{FS: crashed, Dir: "jobs", DB: db})
				if err != nil {
					t.Fatal(err)
				}
				defer s2.Close()
				j, err := s2.Get("p", "j")
				if err != nil || j.State != StateDone {
					t.Fatalf("recovered: %+v %v", j, err)
				}
				now, err := cat.Table("p", "d", c.target)
				if after {
					if j.Err != nil || !reflect.DeepEqual(j.Stats, ran.Stats) {
						t.Fatalf("crash after the swap: recovered %v %+v, want DONE with %+v", j.Err, j.Stats, ran.Stats)
					}
					return
				}
				if j.Err == nil {
					t.Fatalf("crash before the swap: recovered DONE %+v", j.Stats)
				}
				switch {
				case c.old < 0 && err == nil:
					t.Fatalf("crash before the swap: %s exists", c.target)
				case c.old >= 0 && (err != nil || now.ID != before.ID):
					t.Fatalf("crash before the swap: %s replaced (%v)", c.target, err)
				case c.old > 0 && tableRows(t, s2, cat, c.target) != c.old:
					t.Fatalf("crash before the swap: %s has %d rows, want %d", c.target, tableRows(t, s2, cat, c.target), c.old)
				}
			})
		}
	}
}

// TestScriptCrashAroundCommit: a script of two INSERTs cut by a crash
// around each commit. Only a crash after the last statement's commit
// recovers DONE (with the script's statistics); before it the script
// did not complete and recovers failed, keeping what its earlier
// statements committed (BigQuery's scripts are not atomic).
func TestScriptCrashAroundCommit(t *testing.T) {
	const script = "INSERT INTO d.t (x, s) VALUES (1, 'a'); INSERT INTO d.t (x, s) VALUES (2, 'b'), (3, 'c')"
	for _, c := range []struct {
		at   int   // the crash is at the at-th rowsCommit call (0: before the first commit, 1: after it, ...)
		done bool  // the recovered job succeeded
		rows int64 // rows in d.t after the crash
	}{
		{0, false, 0},
		{1, false, 1},
		{2, false, 1},
		{3, true, 3},
	} {
		t.Run(fmt.Sprintf("at=%d", c.at), func(t *testing.T) {
			_, cat, db := engineStore(t, Options{})
			fillTable(t, cat, db, "t", 0)
			fs := vfs.NewMem()
			s, err := Open(cat, Options{FS: fs, Dir: "jobs", DB: db})
			if err != nil {
				t.Fatal(err)
			}
			var crashed *vfs.MemFS
			calls := 0
			s.opts.rowsCommit = func(after bool) error {
				calls++
				if crashed != nil {
					return errCrash // the process is dead: nothing more commits
				}
				if calls-1 != c.at {
					return nil
				}
				crashed = fs.CrashClone(nil)
				if !after {
					return errCrash // the process dies here: no commit
				}
				return nil
			}
			if _, err := s.Insert("p", "sc", "US", Query{SQL: script, DefaultProject: "p"}); err != nil {
				t.Fatal(err)
			}
			ran := wait(t, s, "sc")
			s.Close()
			if crashed == nil {
				t.Fatal("no crash point")
			}
			if n := tableRows(t, s, cat, "t"); n != c.rows {
				t.Fatalf("d.t has %d rows, want %d", n, c.rows)
			}
			s2, err := Open(cat, Options{FS: crashed, Dir: "jobs", DB: db})
			if err != nil {
				t.Fatal(err)
			}
			defer s2.Close()
			j, err := s2.Get("p", "sc")
			if err != nil || j.State != StateDone || (j.Err == nil) != c.done {
				t.Fatalf("recovered %+v %v, want done=%v", j, err, c.done)
			}
			if c.done {
				want := Stats{StatementType: "SCRIPT", NumChildJobs: 2}
				if ran.Err != nil || !reflect.DeepEqual(j.Stats, want) || !reflect.DeepEqual(ran.Stats, want) {
					t.Fatalf("recovered stats %+v, ran %+v (%v), want %+v", j.Stats, ran.Stats, ran.Err, want)
				}
			}
		})
	}
}
