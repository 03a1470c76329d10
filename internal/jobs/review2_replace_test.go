package jobs

import "testing"

// Findings of review2 (issue 16), fixed by 73fca19: each comment describes
// what the test found before that fix; the test asserts the behaviour now
// required.

// TestReview2ScriptOwnWriteIsConflict: a script's reads are remembered
// for the whole job ("the last read of a name wins"), so a script that
// reads t, then changes t itself, then replaces t without reading it
// again fails with "Could not serialize access to table ... due to
// concurrent update": the "concurrent" update is its own INSERT. Nothing
// else runs. Suspect: reads (replace.go) is per job, not per statement,
// and is not refreshed by the job's own writes.
func TestReview2ScriptOwnWriteIsConflict(t *testing.T) {
	for _, q := range []string{
		"SELECT COUNT(*) AS n FROM d.t; INSERT INTO d.t (x) VALUES (9); CREATE OR REPLACE TABLE d.t AS SELECT 1 AS x",
		"SELECT COUNT(*) AS n FROM d.t; ALTER TABLE d.t ADD COLUMN y STRING; CREATE OR REPLACE TABLE d.t AS SELECT 1 AS x",
	} {
		s, _ := newEngineStore(t)
		mustRun(t, s, "mk", "CREATE TABLE d.t (x INT64); INSERT INTO d.t VALUES (1), (1), (2)")
		j := runJob(t, s, "script", Query{SQL: q})
		if j.Err != nil {
			t.Errorf("%s: %v, want success (no other job ran)", q, j.Err)
		}
	}
}
