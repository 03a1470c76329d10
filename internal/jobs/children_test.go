package jobs

import (
	"context"
	"errors"
	"sort"
	"testing"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/storage"
)

// TestScriptChildJobs: each statement of a script is a child job of the
// script's job (BigQuery's parentJobId, scriptStatistics): DONE, with its
// statement's text and position, statistics and, for a SELECT, its own
// rows (the result statement's child reads the script's result); they
// survive a restart; a child cannot be deleted alone, and deleting the
// script deletes them with their result tables.
func TestScriptChildJobs(t *testing.T) {
	ctx := context.Background()
	db, err := storage.Open(t.TempDir(), &storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cat, err := catalog.Open(t.TempDir(), catalog.Options{Observer: engineObserver{db}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cat.CreateDataset(ctx, catalog.Dataset{ProjectID: "p", DatasetID: "d", Location: "US"}); err != nil {
		t.Fatal(err)
	}
	fillTable(t, cat, db, "t", 10)
	dir := t.TempDir()
	s, err := Open(cat, Options{DB: db, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	const script = "CREATE TEMP TABLE tt AS SELECT x FROM d.t WHERE x < 4;\n" +
		"SELECT x FROM tt WHERE x < 2 ;\n" +
		"  INSERT INTO d.t (x) VALUES (100); -- a comment; with a semicolon\n" +
		"SELECT COUNT(*) AS n FROM d.t"
	parent := runJob(t, s, "script", Query{SQL: script})
	if parent.Err != nil {
		t.Fatal(parent.Err)
	}
	if parent.Stats.NumChildJobs != 4 || parent.Parent != "" {
		t.Fatalf("script: %d child jobs, parent %q; want 4, none", parent.Stats.NumChildJobs, parent.Parent)
	}
	children := func(s *Store) []Job {
		var out []Job
		for _, j := range s.List("p") {
			if j.Parent == "script" {
				out = append(out, j)
			}
		}
		sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
		return out
	}
	type want struct {
		text           string
		line, col, end int // end: EndColumn, on the same line
		typ            string
		rows           int
	}
	wants := []want{
		{"CREATE TEMP TABLE tt AS SELECT x FROM d.t WHERE x < 4;", 1, 1, 54, "CREATE_TABLE_AS_SELECT", -1},
		{"SELECT x FROM tt WHERE x < 2 ;", 2, 1, 30, "SELECT", 2},
		{"INSERT INTO d.t (x) VALUES (100);", 3, 3, 35, "INSERT", -1},
		{"SELECT COUNT(*) AS n FROM d.t", 4, 1, 29, "SELECT", 1},
	}
	check := func(s *Store, when string) {
		t.Helper()
		got := children(s)
		if len(got) != len(wants) {
			t.Fatalf("%s: %d children, want %d: %+v", when, len(got), len(wants), got)
		}
		for i, c := range got {
			w := wants[i]
			if c.ID != childID("p", "script", i) || c.State != StateDone || c.Err != nil || c.Location != "US" {
				t.Errorf("%s: child %d: %+v", when, i, c)
			}
			f := c.Frame
			if f == nil || f.Text != w.text || f.StartLine != w.line || f.StartColumn != w.col || f.EndLine != w.line || f.EndColumn != w.end || c.Query.SQL != w.text {
				t.Errorf("%s: child %d frame %+v, query %q; want %q at [%d:%d]-[%d:%d]", when, i, f, c.Query.SQL, w.text, w.line, w.col, w.line, w.end)
			}
			if c.Stats.StatementType != w.typ || c.Created.Before(parent.Created) {
				t.Errorf("%s: child %d: statementType %s created %v, want %s after %v", when, i, c.Stats.StatementType, c.Created, w.typ, parent.Created)
			}
			if w.rows >= 0 {
				if rows := readAll(t, s, c); len(rows) != w.rows {
					t.Errorf("%s: child %d: %d rows %v, want %d", when, i, len(rows), rows, w.rows)
				}
			}
		}
		if r := got[1].Referenced; len(r) != 1 || r[0].Dataset != AnonDataset("p", "US") {
			t.Errorf("%s: child 1 referenced %+v, want the temp table", when, r)
		}
		if rows := readAll(t, s, got[3]); len(rows) != 1 || rows[0][0] != int64(11) {
			t.Errorf("%s: the result statement's child's rows %v, want [[11]]", when, rows)
		}
	}
	check(s, "after the run")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(cat, Options{DB: db, Dir: dir}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check(s, "after a restart")

	kids := children(s)
	if err := s.Delete("p", kids[1].ID); !errors.Is(err, ErrChildJob) {
		t.Fatalf("delete a child job: %v, want ErrChildJob", err)
	}
	if err := s.Delete("p", "script"); err != nil {
		t.Fatal(err)
	}
	if got := children(s); len(got) != 0 {
		t.Fatalf("children after the script's delete: %+v", got)
	}
	if _, err := cat.Table("p", kids[1].Destination.Dataset, kids[1].Destination.Table); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("child's result table after the script's delete: %v", err)
	}
}

// TestScriptChildFailed: a script whose second statement fails has two
// children, the second DONE with the statement's error; numChildJobs
// says two.
func TestScriptChildFailed(t *testing.T) {
	s, _ := newEngineStore(t)
	j := runJob(t, s, "f", Query{SQL: "SELECT 1; SELECT nope FROM d.missing; SELECT 3"})
	if j.Err == nil || j.Stats.NumChildJobs != 2 {
		t.Fatalf("script: err %v, %d children; want an error, 2", j.Err, j.Stats.NumChildJobs)
	}
	var kids []Job
	for _, c := range s.List("p") {
		if c.Parent == "f" {
			kids = append(kids, c)
		}
	}
	sort.Slice(kids, func(a, b int) bool { return kids[a].ID < kids[b].ID })
	if len(kids) != 2 || kids[0].Err != nil || kids[1].Err == nil || kids[1].Err.Error() != j.Err.Error() {
		t.Fatalf("children %+v", kids)
	}
}
