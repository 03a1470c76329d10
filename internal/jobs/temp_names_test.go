package jobs

import (
	"strings"
	"testing"
)

// TestTempNamesHidden: a script's temporary table is a table of the
// job's hidden dataset under an internal name ("temp", 40 hex digits,
// "_" and the name); the user named it tt, and that is the name errors,
// referencedTables and a child job's ddlTargetTable give (BigQuery names
// a script's temporary table by its name, in the script's hidden
// dataset). Before, the internal name showed in each of them.
func TestTempNamesHidden(t *testing.T) {
	s, _ := newEngineStore(t)
	for i, c := range []struct{ sql, msg string }{
		{"CREATE TEMP TABLE tt (a INT64); INSERT INTO tt (b) VALUES (1)", "Column b is not present in table tt"},
		{"CREATE TEMP TABLE tt (a INT64); SELECT * FROM tt FOR SYSTEM_TIME AS OF TIMESTAMP '2000-01-01'", "for table tt@946684800000"},
		{"CREATE TEMP TABLE tt (a INT64); DROP TABLE tt; SELECT * FROM tt", "Not found: Table tt"},
	} {
		j := runJob(t, s, string(rune('a'+i)), Query{SQL: c.sql})
		if j.Err == nil || !strings.Contains(j.Err.Error(), c.msg) || strings.Contains(j.Err.Error(), "temp") {
			t.Errorf("%s: error %v, want it to name the table tt (%q)", c.sql, j.Err, c.msg)
		}
	}
	j := mustRun(t, s, "ok", "CREATE TEMP TABLE tt (a INT64); SELECT * FROM tt")
	if len(j.Referenced) != 1 || j.Referenced[0] != (TableRef{"p", AnonDataset("p", "US"), "tt"}) {
		t.Errorf("referenced %+v, want tt in the hidden dataset", j.Referenced)
	}
	for _, c := range s.List("p") {
		if c.Parent != "ok" {
			continue
		}
		if r := c.Stats.DDLTargetTable; r != nil && r.Table != "tt" {
			t.Errorf("child %s: ddlTargetTable %+v, want tt", c.ID, r)
		}
		for _, r := range c.Referenced {
			if r.Table != "tt" {
				t.Errorf("child %s: referenced %+v, want tt", c.ID, r)
			}
		}
	}
}
