package jobs

import (
	"errors"
	"fmt"
	"testing"

	"github.com/bqstore/bqstore/internal/catalog"
)

// TestReplaceAtomic: CREATE OR REPLACE TABLE|VIEW and a WRITE_TRUNCATE
// destination replace the table in one step. Right before the swap (the
// beforeReplace hook), a reader still finds the old table whole; a job
// cancelled there fails and leaves the old table as it was (before: the
// old table was already dropped there, and a failure or a crash from
// there on lost it); a job that goes on leaves the new table whole, and
// no staged table behind.
func TestReplaceAtomic(t *testing.T) {
	for _, tc := range []struct {
		name string
		q    Query
		view bool // the old table is a view
		// the new table's rows (-1: a view)
		rows int64
	}{
		{name: "ctas", q: Query{SQL: "CREATE OR REPLACE TABLE d.t AS SELECT 'a' AS s UNION ALL SELECT 'b' UNION ALL SELECT 'c'"}, rows: 3},
		{name: "columns", q: Query{SQL: "CREATE OR REPLACE TABLE d.t (s STRING)"}, rows: 0},
		{name: "view", q: Query{SQL: "CREATE OR REPLACE VIEW d.t AS SELECT 'v' AS s"}, view: true, rows: -1},
		{name: "truncate", q: Query{SQL: "SELECT 'a' AS s", Destination: &TableRef{"p", "d", "t"}, WriteDisposition: WriteTruncate}, rows: 1},
	} {
		for _, cancel := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/cancel=%v", tc.name, cancel), func(t *testing.T) {
				s, cat := newEngineStore(t)
				if tc.view {
					mustRun(t, s, "mk", "CREATE VIEW d.t AS SELECT 1 AS x")
				} else {
					mustRun(t, s, "mk", "CREATE TABLE d.t (x INT64); INSERT INTO d.t VALUES (1), (2)")
				}
				old, err := cat.Table("p", "d", "t")
				if err != nil {
					t.Fatal(err)
				}
				hooked := false
				s.opts.beforeReplace = func() {
					hooked = true
					got, err := cat.Table("p", "d", "t")
					if err != nil || got.ID != old.ID {
						t.Errorf("before the swap a reader finds %+v, %v; want the old table", got, err)
					} else if !tc.view {
						if n := tableRows(t, s, cat, "t"); n != 2 {
							t.Errorf("before the swap the old table has %d rows, want 2", n)
						}
					}
					if cancel {
						if _, err := s.Cancel("p", "job"); err != nil {
							t.Error(err)
						}
					}
				}
				j := runJob(t, s, "job", tc.q)
				if !hooked {
					t.Fatal("the job did not reach the swap")
				}
				got, err := cat.Table("p", "d", "t")
				if err != nil {
					t.Fatalf("after the job (err %v): %v", j.Err, err)
				}
				if cancel {
					var se *StoppedError
					if !errors.As(j.Err, &se) {
						t.Fatalf("job cancelled before the swap: %v, want stopped", j.Err)
					}
					if got.ID != old.ID || (!tc.view && tableRows(t, s, cat, "t") != 2) {
						t.Fatalf("cancelled before the swap: table %+v, want the old one whole", got)
					}
				} else {
					if j.Err != nil {
						t.Fatal(j.Err)
					}
					if got.ID == old.ID || got.Schema().Fields[0].Name != "s" {
						t.Fatalf("after the swap: %+v, want the new table", got)
					}
					if tc.rows >= 0 && tableRows(t, s, cat, "t") != tc.rows {
						t.Fatalf("new table rows %d, want %d", tableRows(t, s, cat, "t"), tc.rows)
					}
					if !cat.Dropped(old.ID) {
						t.Fatal("the old table was not dropped")
					}
				}
				// Nothing staged is left behind.
				if ts, err := cat.ListTables("p", AnonDataset("p", "US")); err == nil {
					for _, x := range ts {
						t.Errorf("left behind: %s", x.FullID())
					}
				} else if !errors.Is(err, catalog.ErrNotFound) {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestReplaceCreatedMeanwhile: CREATE OR REPLACE TABLE ... AS SELECT of
// a name that was free when the statement started and that another job
// took before its swap replaces that table (OR REPLACE) instead of
// failing "Already Exists".
func TestReplaceCreatedMeanwhile(t *testing.T) {
	s, _ := newEngineStore(t)
	s.opts.beforeReplace = func() {
		s.opts.beforeReplace = nil
		mustRun(t, s, "other", "CREATE TABLE d.m (x INT64)")
	}
	j := runJob(t, s, "ctas", Query{SQL: "CREATE OR REPLACE TABLE d.m AS SELECT 'a' AS s"})
	if j.Err != nil {
		t.Fatalf("CREATE OR REPLACE of a table created meanwhile: %v", j.Err)
	}
	if got := fmt.Sprint(readAll(t, s, mustRun(t, s, "r", "SELECT s FROM d.m"))); got != "[[a]]" {
		t.Fatalf("d.m is %s, want the statement's table", got)
	}
}

// TestConcurrentUpdateLogged: a job's conflict error is logged as such
// (not as an internal error) and reads back with its message.
func TestConcurrentUpdateLogged(t *testing.T) {
	err := concurrentUpdate(TableRef{"p", "d", "t"})
	var ce *ConcurrentUpdateError
	if back := encodeErr(err).decode(); !errors.As(back, &ce) || back.Error() != "Could not serialize access to table p:d.t due to concurrent update" {
		t.Fatalf("logged and read back: %#v", back)
	}
}
