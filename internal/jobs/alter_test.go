package jobs

import (
	"errors"
	"strings"
	"testing"

	"github.com/bqstore/bqstore/internal/catalog"
)

// TestAlterRenameTo: ALTER TABLE RENAME TO gives the table (its rows,
// schema and metadata) the new name in its dataset; the old name is gone;
// an existing name, or another dataset, is refused and changes nothing;
// IF EXISTS on a missing table skips.
func TestAlterRenameTo(t *testing.T) {
	s, cat := newEngineStore(t)
	mustRun(t, s, "mk", "CREATE TABLE d.t (x INT64) OPTIONS(description='dt'); INSERT INTO d.t VALUES (1), (2); CREATE TABLE d.other (y STRING); CREATE SCHEMA e")
	old, err := cat.Table("p", "d", "t")
	if err != nil {
		t.Fatal(err)
	}
	j := mustRun(t, s, "ren", "ALTER TABLE d.t RENAME TO u")
	if j.Stats.StatementType != "ALTER_TABLE" || j.Stats.DDLOperation != "ALTER" || j.Stats.DDLTargetTable == nil || *j.Stats.DDLTargetTable != (TableRef{"p", "d", "t"}) {
		t.Fatalf("stats %+v", j.Stats)
	}
	u, err := cat.Table("p", "d", "u")
	if err != nil || u.ID != old.ID || u.Description != "dt" || tableRows(t, s, cat, "u") != 2 {
		t.Fatalf("renamed table: %+v %v", u, err)
	}
	if _, err := cat.Table("p", "d", "t"); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("old name: %v, want not found", err)
	}
	for _, tc := range []struct{ sql, want string }{
		{"ALTER TABLE d.u RENAME TO other", "Already Exists: Table p:d.other"},
		{"ALTER TABLE d.u RENAME TO e.u", "ALTER TABLE RENAME TO cannot move table p:d.u to another dataset at [1:27]"},
		{"ALTER TABLE d.t RENAME TO v", "Not found: Table p:d.t"},
	} {
		j := runJob(t, s, "bad", Query{SQL: tc.sql})
		if j.Err == nil || !strings.Contains(j.Err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.sql, j.Err, tc.want)
		}
		if err := s.Delete("p", "bad"); err != nil {
			t.Fatal(err)
		}
	}
	if tableRows(t, s, cat, "u") != 2 {
		t.Fatal("a refused rename changed the table")
	}
	if j := mustRun(t, s, "skip", "ALTER TABLE IF EXISTS d.t RENAME TO w"); j.Stats.DDLOperation != "SKIP" {
		t.Fatalf("IF EXISTS on a missing table: %+v", j.Stats)
	}
}
