package jobs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/storage"
	"github.com/bqstore/bqstore/internal/storage/vfs"
)

// Findings of review-j (jobs API, DDL, DML, scripts; issue 16). Each test
// failed on main when it was written. A test's comment
// describes what it found, as it was before the fix (the fix's commit
// names the test); the test now asserts BigQuery's behaviour.

// TestReviewJReplaceLosesConcurrentInsert: a statement that rewrites a
// table from its own rows (CREATE OR REPLACE TABLE t AS SELECT ... FROM t,
// or a query over t with destination t and WRITE_TRUNCATE: the usual
// "dedupe in place") reads t at its start and swaps its stage over t at
// its end. An INSERT into t committed in between succeeds (DONE, no
// error, numDmlAffectedRows 1) and its row is then silently dropped by
// the swap: neither serial order explains the outcome (INSERT first: the
// rewrite would have read the row; rewrite first: the row would be in the
// new table). Both jobs say they succeeded; a row is lost. Either job
// failing (BigQuery's answer to conflicting writes is "Could not
// serialize access to table ... due to concurrent update"; its exact
// behaviour for this pair was not confirmed from its documentation) or
// the row surviving would be correct; both succeeding without it is not.
// Suspect:
// createTable / writeDestination + swap (replace.go): nothing checks that
// the table being replaced is still the snapshot the query read.
func TestReviewJReplaceLosesConcurrentInsert(t *testing.T) {
	for _, tc := range []struct {
		name string
		q    Query
	}{
		{"ctas", Query{SQL: "CREATE OR REPLACE TABLE d.t AS SELECT DISTINCT x FROM d.t"}},
		{"truncate", Query{SQL: "SELECT DISTINCT x FROM d.t", Destination: &TableRef{"p", "d", "t"}, WriteDisposition: WriteTruncate}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, cat := newEngineStore(t)
			mustRun(t, s, "mk", "CREATE TABLE d.t (x INT64); INSERT INTO d.t VALUES (1), (1), (2)")
			var ins Job
			s.opts.beforeReplace = func() {
				s.opts.beforeReplace = nil
				ins = runJob(t, s, "ins", Query{SQL: "INSERT INTO d.t (x) VALUES (100)"})
			}
			j := runJob(t, s, "rewrite", tc.q)
			if ins.ID == "" {
				t.Fatal("the rewrite did not reach its swap")
			}
			got := fmt.Sprint(readAll(t, s, mustRun(t, s, "r", "SELECT x FROM d.t ORDER BY x")))
			if ins.Err == nil && j.Err == nil && got != "[[1] [2] [100]]" {
				t.Fatalf("INSERT succeeded (%d rows affected) and the rewrite succeeded, but d.t is %s: the inserted row is lost", ins.Stats.AffectedRows, got)
			}
			// fix-jobs2: the rewrite fails as BigQuery fails a write
			// conflicting with another ("Could not serialize access
			// to table ... due to concurrent update", 400
			// invalidQuery), the table as the INSERT left it.
			var ce *ConcurrentUpdateError
			if ins.Err != nil || !errors.As(j.Err, &ce) || got != "[[1] [1] [2] [100]]" {
				t.Fatalf("INSERT: %v; rewrite: %v; d.t %s; want the rewrite's conflict and the table with the row", ins.Err, j.Err, got)
			}
			if ts, err := cat.ListTables("p", AnonDataset("p", "US")); err == nil {
				for _, x := range ts {
					if strings.HasPrefix(x.TableID, "stage") {
						t.Errorf("left behind: %s", x.FullID())
					}
				}
			}
		})
	}
}

// TestReplaceConflicts: a rewrite of a table in place fails, the table as
// it was, when between its read and its swap the table was altered (a
// new column: the catalog's etag and the engine's schema version),
// replaced or dropped, and succeeds when only another table changed or
// when it read the table AS OF a time (a restore, no condition).
func TestReplaceConflicts(t *testing.T) {
	for _, c := range []struct {
		name, meanwhile, rewrite string
		conflict                 bool
	}{
		{"alter", "ALTER TABLE d.t ADD COLUMN y STRING", "CREATE OR REPLACE TABLE d.t AS SELECT DISTINCT x FROM d.t", true},
		{"options", "ALTER TABLE d.t SET OPTIONS(description = 'kept')", "CREATE OR REPLACE TABLE d.t AS SELECT DISTINCT x FROM d.t", true},
		{"replaced", "CREATE OR REPLACE TABLE d.t (x INT64)", "CREATE OR REPLACE TABLE d.t AS SELECT DISTINCT x FROM d.t", true},
		{"dropped", "DROP TABLE d.t", "CREATE OR REPLACE TABLE d.t AS SELECT DISTINCT x FROM d.t", true},
		{"other", "INSERT INTO d.o (x) VALUES (5)", "CREATE OR REPLACE TABLE d.t AS SELECT DISTINCT x FROM d.t", false},
		{"not-read", "INSERT INTO d.t (x) VALUES (5)", "CREATE OR REPLACE TABLE d.t AS SELECT DISTINCT x FROM d.o", false},
		{"as-of", "INSERT INTO d.t (x) VALUES (5)", "CREATE OR REPLACE TABLE d.t AS SELECT DISTINCT x FROM d.t FOR SYSTEM_TIME AS OF CURRENT_TIMESTAMP()", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, _ := newEngineStore(t)
			mustRun(t, s, "mk", "CREATE TABLE d.t (x INT64); INSERT INTO d.t VALUES (1), (1), (2); CREATE TABLE d.o (x INT64)")
			s.opts.beforeReplace = func() {
				s.opts.beforeReplace = nil
				mustRun(t, s, "meanwhile", c.meanwhile)
			}
			j := runJob(t, s, "rewrite", Query{SQL: c.rewrite})
			var ce *ConcurrentUpdateError
			if c.conflict != errors.As(j.Err, &ce) || !c.conflict && j.Err != nil {
				t.Fatalf("rewrite after %s: %v, want conflict %v", c.meanwhile, j.Err, c.conflict)
			}
		})
	}
}

// TestReviewJScriptKeyResultLast: the result of a script job is its
// "key result statement", by default the LAST statement
// (JobConfigurationQuery.scriptOptions.keyResultStatement: "LAST" |
// "FIRST_SELECT", "Determines which statement in the script represents
// the 'key result', used to populate the schema and query results of the
// script job. Default is LAST."). bqstore answers the rows of the last
// SELECT, even when DDL or DML follows it: a script "SELECT ...; CREATE
// TABLE ..." reads back the SELECT's rows and schema where BigQuery has
// none. Suspect: runScript (statements.go) keeps res across statements
// ("if r != nil { res = r }"), and scriptOptions is accepted and ignored
// (rest/jobs.go).
func TestReviewJScriptKeyResultLast(t *testing.T) {
	s, _ := newEngineStore(t)
	for i, q := range []string{
		"SELECT 1 AS a; CREATE TABLE d.z (a INT64)",
		"CREATE TABLE d.y (a INT64); SELECT 1 AS a; INSERT INTO d.y (a) VALUES (2)",
		"SELECT 1 AS a; DROP TABLE IF EXISTS d.nothing",
	} {
		j := mustRun(t, s, fmt.Sprintf("s%d", i), q)
		if j.Schema != nil || j.NumRows != 0 {
			t.Errorf("%s: result has schema %v and %d rows, want none (the last statement's)", q, j.Schema, j.NumRows)
		}
	}
	// fix-jobs3: the last statement's rows when it is a query, not an
	// earlier one's; with FIRST_SELECT the first query's, whatever follows.
	for i, c := range []struct{ sql, key, want string }{
		{"SELECT 1 AS a; SELECT 2 AS b", "", "[[2]]"},
		{"SELECT 1 AS a; SELECT 2 AS b", KeyResultLast, "[[2]]"},
		{"SELECT 1 AS a; SELECT 2 AS b", KeyResultFirstSelect, "[[1]]"},
		{"CREATE TABLE d.x (a INT64); SELECT 3 AS a; INSERT INTO d.x (a) VALUES (2); SELECT 4 AS a", KeyResultFirstSelect, "[[3]]"},
	} {
		j := runJob(t, s, fmt.Sprintf("k%d", i), Query{SQL: c.sql, KeyResult: c.key})
		if j.Err != nil {
			t.Fatalf("%s: %v", c.sql, j.Err)
		}
		if got := fmt.Sprint(readAll(t, s, j)); got != c.want {
			t.Errorf("%s (keyResultStatement %q): %s, want %s", c.sql, c.key, got, c.want)
		}
	}
	j := mustRun(t, s, "none", "CREATE TABLE d.w (a INT64); INSERT INTO d.w (a) VALUES (1)")
	if j.Schema != nil || j.NumRows != 0 {
		t.Errorf("a script without a query: result %v, %d rows", j.Schema, j.NumRows)
	}
}

// TestReviewJTempTableReferenced: a script reading its temporary table
// reports it in referencedTables as {project, "", name}: a TableReference
// with an empty datasetId (the REST answer carries "datasetId": "" in
// statistics.query.referencedTables; the Go client builds a Table with
// DatasetID "" from it). Suspect: resolveRef (run.go) does not resolve
// the script's temps (q.temp) as qualify does.
func TestReviewJTempTableReferenced(t *testing.T) {
	s, _ := newEngineStore(t)
	j := mustRun(t, s, "s", "CREATE TEMP TABLE tt (a INT64); INSERT INTO tt VALUES (1); SELECT * FROM tt")
	for _, r := range j.Referenced {
		if r.Project == "" || r.Dataset == "" || r.Table == "" {
			t.Errorf("referenced table %+v has an empty part", r)
		}
	}
	// fix-jobs3: reported, in the job's hidden dataset.
	if len(j.Referenced) != 1 || j.Referenced[0].Dataset != AnonDataset("p", "US") {
		t.Errorf("referenced %+v, want the temp table in %s", j.Referenced, AnonDataset("p", "US"))
	}
}

// TestReviewJCreateIfNotExistsRace: CREATE TABLE IF NOT EXISTS ... AS
// SELECT checks for the table at its start and creates it at its end (a
// stage moved over the name); a table created by another job in between
// makes it fail "Already Exists", which IF NOT EXISTS promises never
// happens (BigQuery: "IF NOT EXISTS: If any table exists with the same
// name, the CREATE statement has no effect"; the job succeeds with
// ddlOperationPerformed SKIP). Two pipelines doing "CREATE TABLE IF NOT
// EXISTS x AS SELECT ..." at start-up fail at random. Suspect:
// createTable (statements.go) -> swap(replace=false): the catalog's
// "exists" error is not turned into a SKIP when ct.IfNotExists.
func TestReviewJCreateIfNotExistsRace(t *testing.T) {
	s, _ := newEngineStore(t)
	var other Job
	s.opts.beforeReplace = func() {
		s.opts.beforeReplace = nil
		other = mustRun(t, s, "other", "CREATE TABLE d.n (a INT64)")
	}
	j := runJob(t, s, "ctas", Query{SQL: "CREATE TABLE IF NOT EXISTS d.n AS SELECT 1 AS a"})
	if other.ID == "" {
		t.Fatal("the CTAS did not reach its swap")
	}
	if j.Err != nil {
		t.Fatalf("CREATE TABLE IF NOT EXISTS failed with %v; want success (SKIP or CREATE)", j.Err)
	}
	// The other job's (empty) table stays: the statement had no effect.
	if j.Stats.DDLOperation != "SKIP" {
		t.Errorf("ddlOperationPerformed %q, want SKIP", j.Stats.DDLOperation)
	}
	if got := fmt.Sprint(readAll(t, s, mustRun(t, s, "r", "SELECT COUNT(*) FROM d.n"))); got != "[[0]]" {
		t.Errorf("d.n has %s rows, want the other job's empty table", got)
	}
}

// TestReviewJDryRunDML: a dry run of an INSERT (or of CREATE TABLE AS
// SELECT) is only parsed: it succeeds for a target table or a source
// table that does not exist, or a column that does not exist, and
// reports 0 bytes where the run reads the source's columns. BigQuery's
// dry run validates DML and CTAS as it does a query ("dryRun: If set,
// don't actually run this job. A valid query will return a mostly empty
// response with some processing statistics, while an invalid query will
// return the same error it would if it wasn't a dry run"; the bq CLI's
// --dry_run prints the bytes an INSERT ... SELECT would process). A CI
// step that dry-runs its DML to validate it passes, and the run fails.
// Suspect: DryRun (dryrun.go) returns at "len(sts) != 1 || sts[0].Type
// != SELECT".
func TestReviewJDryRunDML(t *testing.T) {
	s, cat := newEngineStore(t)
	fillTable(t, cat, s.opts.DB, "t", 3)
	for i, q := range []string{
		"INSERT INTO d.nope (x) VALUES (1)",
		"INSERT INTO d.t (nope) VALUES (1)",
		"INSERT INTO d.t (x) SELECT x FROM d.nope",
		"CREATE TABLE d.c AS SELECT nope FROM d.t",
	} {
		run := runJob(t, s, fmt.Sprintf("r%d", i), Query{SQL: q})
		if run.Err == nil {
			t.Fatalf("%s: the run succeeded; the test expects it to fail", q)
		}
		if _, err := s.DryRun(t.Context(), "p", "US", Query{SQL: q}); err == nil {
			t.Errorf("%s: dry run succeeds, the run fails with %v", q, run.Err)
		}
	}
	q := "INSERT INTO d.t (x) SELECT x FROM d.t"
	dry, err := s.DryRun(t.Context(), "p", "US", Query{SQL: q})
	run := mustRun(t, s, "ins", q)
	if err != nil || dry.BytesProcessed != run.BytesProcessed {
		t.Errorf("%s: dry run says %d bytes (err %v), the run processed %d", q, dry.BytesProcessed, err, run.BytesProcessed)
	}
	// fix-jobs3: its statementType, and nothing written or created.
	if dry.Stats.StatementType != "INSERT" {
		t.Errorf("%s: dry run statementType %q, want INSERT", q, dry.Stats.StatementType)
	}
	before := fmt.Sprint(readAll(t, s, mustRun(t, s, "c0", "SELECT COUNT(*) FROM d.t")))
	if _, err := s.DryRun(t.Context(), "p", "US", Query{SQL: "CREATE TABLE d.made AS SELECT x FROM d.t"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DryRun(t.Context(), "p", "US", Query{SQL: q}); err != nil {
		t.Fatal(err)
	}
	if after := fmt.Sprint(readAll(t, s, mustRun(t, s, "c1", "SELECT COUNT(*) FROM d.t"))); after != before {
		t.Errorf("a dry run of %s changed d.t: %s rows, then %s", q, before, after)
	}
	if j := runJob(t, s, "made", Query{SQL: "SELECT * FROM d.made"}); j.Err == nil {
		t.Error("a dry run of CREATE TABLE d.made AS SELECT created it")
	}
}

// TestReviewJDDLCrashBeforeDone: a crash after a DDL statement's catalog
// change is durable and before its job's DONE record (any DDL but the
// CTAS/replace move, which commit.go's commitMove covers, and which is
// being fixed separately) recovers the job as failed, "The job was
// running when the server stopped: it did not complete; run it again",
// although the change is there; the rerun the message asks for then
// fails ("Already Exists: Table", "Column already exists: c", "Not
// found: Table"). The same reasoning that made INSERT log its intent
// (commit.go: "a client that reruns it duplicates the rows") applies: a
// job must not say it did not happen when it did. Suspect: Open's
// recovery (jobs.go, recoverCommit) knows only INSERT, destination and
// move commits; CREATE TABLE (no AS), CREATE VIEW, ALTER, DROP, CREATE
// and DROP SCHEMA log no intent.
//
// fix-jobs2: the crash image was the jobs log as it was at BeforeRun,
// before the job did anything, next to the catalog after the change;
// that was what a kill -9 between the catalog commit and the DONE record
// left while nothing was logged in between. A DDL statement now logs its
// intent (ddlcommit.go) before its catalog change, so the image is taken
// where the finding's crash is: at the write of the job's DONE record,
// after the change. The recovered job must have the outcome the job had
// (no error, the same ddlOperationPerformed and statementType).
func TestReviewJDDLCrashBeforeDone(t *testing.T) {
	for _, c := range []struct{ setup, ddl string }{
		{"", "CREATE TABLE d.n (a INT64)"},
		{"CREATE TABLE d.n (a INT64)", "ALTER TABLE d.n ADD COLUMN c STRING"},
		{"CREATE TABLE d.n (a INT64)", "ALTER TABLE d.n SET OPTIONS(description = 'x')"},
		{"CREATE TABLE d.n (a INT64)", "ALTER TABLE d.n RENAME TO m"},
		{"CREATE TABLE d.n (a INT64)", "DROP TABLE d.n"},
		{"CREATE VIEW d.v AS SELECT 1 AS a", "DROP VIEW d.v"},
		{"", "CREATE SCHEMA d2"},
		{"CREATE SCHEMA d2", "DROP SCHEMA d2"},
		{"CREATE SCHEMA d2", "ALTER SCHEMA d2 SET OPTIONS(description = 'x')"},
		{"", "CREATE VIEW d.v AS SELECT 1 AS a"},
		{"", "CREATE TABLE d.a (x INT64); CREATE TABLE d.b (x INT64)"},
	} {
		_, cat, db := engineStore(t, Options{})
		mem := vfs.NewMem()
		var crashed *vfs.MemFS
		fs := gateFS{MemFS: mem, hold: func(p []byte) {
			if crashed == nil && bytes.Contains(p, []byte(`"id":"ddl"`)) && bytes.Contains(p, []byte(`"state":"DONE"`)) {
				crashed = mem.CrashClone(nil) // the DONE record not written
			}
		}}
		s, err := Open(cat, Options{FS: fs, Dir: "jobs", DB: db})
		if err != nil {
			t.Fatal(err)
		}
		if c.setup != "" {
			mustRun(t, s, "setup", c.setup)
		}
		live := mustRun(t, s, "ddl", c.ddl)
		s.Close()
		if crashed == nil {
			t.Fatalf("%s: no DONE record written", c.ddl)
		}
		s2, err := Open(cat, Options{FS: crashed, Dir: "jobs", DB: db})
		if err != nil {
			t.Fatal(err)
		}
		j, err := s2.Get("p", "ddl")
		if err != nil {
			t.Fatal(err)
		}
		if j.Err != nil {
			rerun := runJob(t, s2, "rerun", Query{SQL: c.ddl})
			t.Errorf("%s: its change is durable, the recovered job says %q; the rerun it asks for: %v", c.ddl, j.Err, rerun.Err)
		} else if j.Stats.DDLOperation != live.Stats.DDLOperation || j.Stats.StatementType != live.Stats.StatementType || j.Stats.NumChildJobs != live.Stats.NumChildJobs {
			t.Errorf("%s: recovered with statistics %+v, the job had %+v", c.ddl, j.Stats, live.Stats)
		}
		s2.Close()
	}
}

// gateFS is a MemFS whose appended files call hold with the bytes of
// each Write before writing them (tests stop a log record there).
type gateFS struct {
	*vfs.MemFS
	hold func(p []byte)
}

func (g gateFS) OpenAppend(name string) (vfs.File, error) {
	f, err := g.MemFS.OpenAppend(name)
	return gateFile{f, g.hold}, err
}

type gateFile struct {
	vfs.File
	hold func(p []byte)
}

func (f gateFile) Write(p []byte) (int, error) {
	f.hold(p)
	return f.File.Write(p)
}

// TestReviewJDonePublishedBeforeLogged: finish (run.go) sets the job
// DONE under Store.mu, releases it, and only then logs the DONE record
// ("Logged before it is published: a client that saw DONE sees it after
// a crash too"); only e.done waits for the log. Get, List and Delete
// read e.job directly, so jobs.get, jobs.list and getQueryResults (which
// starts with Get and, seeing DONE, serves the rows at once) answer DONE
// with the job's outcome before it is durable. A crash in that window
// (the DONE record's write and fsync) recovers the job as failed ("was
// running when the server stopped"): a client that saw DONE and read its
// rows then sees a failed job. The same window lets a jobs.delete
// (which needs DONE) log its Delete record before finish logs its Put,
// which the replay then resurrects (last record wins), without its
// anonymous table. Suspect: finish (run.go) publishes State before
// persist; Get/Delete/List should see the durable state only.
func TestReviewJDonePublishedBeforeLogged(t *testing.T) {
	_, cat, db := engineStore(t, Options{})
	mem := vfs.NewMem()
	blocked, release := make(chan struct{}), make(chan struct{})
	armed := true
	fs := gateFS{MemFS: mem, hold: func(p []byte) {
		if armed && bytes.Contains(p, []byte(`"id":"q"`)) && bytes.Contains(p, []byte(`"state":"DONE"`)) {
			armed = false
			close(blocked)
			<-release
		}
	}}
	s, err := Open(cat, Options{FS: fs, Dir: "jobs", DB: db})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Insert("p", "q", "US", Query{SQL: "SELECT 1 AS a"}); err != nil {
		t.Fatal(err)
	}
	<-blocked
	seen, err := s.Get("p", "q")
	crashed := mem.CrashClone(nil) // the DONE record is not in the log yet
	// fix-jobs2: nor does jobs.list see it DONE, and so jobs.delete
	// (which needs DONE; called here it would wait for the log on the
	// old code) cannot log a Delete that the replay of a later DONE
	// record would undo.
	for _, l := range s.List("p") {
		if l.ID == "q" && l.State == StateDone {
			t.Errorf("jobs.list answered DONE before the DONE record was logged")
		}
	}
	if seen.State == StateDone {
		t.Errorf("jobs.get answered DONE before the DONE record was logged")
	}
	close(release)
	wait(t, s, "q")
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	s2, err := Open(cat, Options{FS: crashed, Dir: "jobs", DB: db})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	after, err := s2.Get("p", "q")
	if err != nil {
		t.Fatal(err)
	}
	if seen.State == StateDone && seen.Err == nil && after.Err != nil {
		t.Fatalf("jobs.get answered DONE (success, %d rows) before the DONE record was logged; after a crash there the job is %v", seen.NumRows, after.Err)
	}
}

// TestReviewJAppendRenamedColumnMessage: a WRITE_APPEND query whose
// column is named differently from the table's (same type) fails with
// "Provided Schema does not match Table p:d.dst. Field b has changed type
// from INTEGER to INTEGER": the message claims a type change between two
// equal types and never names the query's column. BigQuery's messages
// for this check name what differs: "Cannot add fields (field: a)" for a
// column the table lacks, "Field b has changed type from X to Y" only for
// a real type change. Suspect: appendable (destination.go) reports every
// mismatch, names included, as a type change.
func TestReviewJAppendRenamedColumnMessage(t *testing.T) {
	s, _ := newEngineStore(t)
	mustRun(t, s, "mk", "CREATE TABLE d.dst (b INT64)")
	j := runJob(t, s, "app", Query{SQL: "SELECT 1 AS a", Destination: &TableRef{"p", "d", "dst"}, WriteDisposition: WriteAppend})
	if j.Err == nil {
		t.Skip("the append succeeded")
	}
	if msg := j.Err.Error(); strings.Contains(msg, "from INTEGER to INTEGER") {
		t.Fatalf("append of column a to a table of column b: %q", msg)
	}
	// fix-jobs3: the column the table lacks is named; a column the
	// table has elsewhere is said to be out of place.
	if msg := j.Err.Error(); !strings.Contains(msg, "Cannot add fields (field: a)") {
		t.Errorf("append of column a to a table of column b: %q, want Cannot add fields (field: a)", msg)
	}
	mustRun(t, s, "mk2", "CREATE TABLE d.two (a INT64, b INT64)")
	j = runJob(t, s, "app2", Query{SQL: "SELECT 1 AS b, 2 AS a", Destination: &TableRef{"p", "d", "two"}, WriteDisposition: WriteAppend})
	if j.Err == nil || !strings.Contains(j.Err.Error(), "Field b is column 2 of the table and column 1 of the query's result") {
		t.Errorf("append of (b, a) to a table of (a, b): %v", j.Err)
	}
}

// TestReviewJWallClockStepBack: a job reads every table at its start time
// by the wall clock (execute -> runScript(at = j.Started), later
// statements at s.opts.Clock()), while the engine stamps commits
// monotonically (storage commit.go: ts = max(now, lastTS+1, readTS+1)):
// a commit can carry a time later than the wall clock, and after the
// wall clock steps back (NTP, a VM resumed) every commit of the last
// moments is. Then a query misses rows committed before it started, a
// script's SELECT misses the rows its own INSERT just committed, and a
// table created in that window cannot be read at all ("storage: snapshot
// at ... before the table's creation ...: snapshot time before the
// time-travel window", an internal error). Read-your-writes should not
// depend on the wall clock moving forward. Modelled with a clock stepped
// back by one second after the writes. Suspect: the snapshot time of a
// query that is not FOR SYSTEM_TIME AS OF (Store.open: st.Snapshot(at));
// reading at the engine's latest (time.Time{}) or max(at, engine's last
// commit) would not depend on it.
func TestReviewJWallClockStepBack(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	db, err := storage.Open(t.TempDir(), &storage.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cat, err := catalog.Open(t.TempDir(), catalog.Options{Observer: engineObserver{db}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cat.CreateDataset(context.Background(), catalog.Dataset{ProjectID: "p", DatasetID: "d", Location: "US"}); err != nil {
		t.Fatal(err)
	}
	s := New(cat, Options{DB: db, Clock: clock})
	t.Cleanup(func() { s.Close() })
	mustRun(t, s, "mk", "CREATE TABLE d.t (x INT64)")
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	mustRun(t, s, "ins", "INSERT INTO d.t (x) VALUES (1)")
	mu.Lock()
	now = now.Add(-time.Second) // the wall clock steps back
	mu.Unlock()
	for i, c := range []struct{ sql, want string }{
		{"SELECT COUNT(*) AS c FROM d.t", "[[1]]"},
		{"INSERT INTO d.t (x) VALUES (2); SELECT COUNT(*) AS c FROM d.t", "[[2]]"},
		{"CREATE TABLE d.u (x INT64); INSERT INTO d.u (x) VALUES (1); SELECT COUNT(*) AS c FROM d.u", "[[1]]"},
	} {
		j := runJob(t, s, fmt.Sprintf("q%d", i), Query{SQL: c.sql})
		if j.Err != nil {
			t.Errorf("%s: %v", c.sql, j.Err)
			continue
		}
		if got := fmt.Sprint(readAll(t, s, j)); got != c.want {
			t.Errorf("%s: %s, want %s", c.sql, got, c.want)
		}
	}
	// A table created just before the step cannot be read.
	mustRun(t, s, "mkw", "CREATE TABLE d.w (x INT64)")
	mu.Lock()
	now = now.Add(-time.Second)
	mu.Unlock()
	if j := runJob(t, s, "w", Query{SQL: "SELECT COUNT(*) AS c FROM d.w"}); j.Err != nil {
		t.Errorf("a table created a moment before the clock stepped back: %v", j.Err)
	}
}

// TestReviewJSelfReferencingView: CREATE OR REPLACE VIEW d.v AS SELECT
// ... FROM d.v succeeds (its query is checked against the old d.v), and
// leaves a view that reads itself: every query of it then runs the
// view's query 16 times over and fails with "in view p:d.v: in view
// p:d.v: ..." sixteen times, then "views nest more than 16 levels deep".
// BigQuery analyzes a view's references when it is created; a cycle is
// an error of the CREATE, and the message of a too-deep nesting names
// the view once. Suspect: createView (views.go) checks the new query
// with the old definition; openView wraps each level's error
// ("in view %s: %w").
func TestReviewJSelfReferencingView(t *testing.T) {
	s, cat := newEngineStore(t)
	fillTable(t, cat, s.opts.DB, "t", 3)
	mustRun(t, s, "v", "CREATE VIEW d.v AS SELECT x FROM d.t")
	mk := runJob(t, s, "self", Query{SQL: "CREATE OR REPLACE VIEW d.v AS SELECT x FROM d.v"})
	// fix-jobs3: refused at creation, also through another view; the
	// view keeps its definition.
	if mk.Err == nil || !strings.Contains(mk.Err.Error(), "cannot read itself") {
		t.Errorf("CREATE OR REPLACE VIEW d.v AS SELECT x FROM d.v: %v, want refused", mk.Err)
	}
	mustRun(t, s, "w", "CREATE VIEW d.w AS SELECT x FROM d.v")
	if j := runJob(t, s, "self2", Query{SQL: "CREATE OR REPLACE VIEW d.v AS SELECT x FROM d.w"}); j.Err == nil || !strings.Contains(j.Err.Error(), "cannot read itself") {
		t.Errorf("a view through another view reading itself: %v, want refused", j.Err)
	}
	if got := fmt.Sprint(readAll(t, s, mustRun(t, s, "r0", "SELECT COUNT(*) FROM d.w"))); got != "[[3]]" {
		t.Errorf("d.w after the refused replaces: %s", got)
	}
	if mk.Err != nil {
		return
	}
	j := runJob(t, s, "read", Query{SQL: "SELECT * FROM d.v"})
	if j.Err == nil {
		t.Fatal("a view reading itself answered rows")
	}
	if n := strings.Count(j.Err.Error(), "in view"); n > 1 {
		t.Fatalf("CREATE of a view reading itself succeeded; reading it fails with %q repeated %d times (%d bytes)", "in view p:d.v: ", n, len(j.Err.Error()))
	}
}

// TestReviewJConcurrentIfNotExists: several jobs running CREATE TABLE IF
// NOT EXISTS (or CREATE SCHEMA / CREATE VIEW IF NOT EXISTS) for the same
// name at once: all but one fail "Already Exists". IF NOT EXISTS must
// never fail because the object exists (BigQuery: "If any table exists
// with the same name, the CREATE statement has no effect"); parallel test
// suites or workers that each "CREATE TABLE IF NOT EXISTS" their shared
// table at start-up hit this at once (probing it, 150 of 200 jobs
// failed). Suspect: createTable, createSchema and createView
// (statements.go, views.go) check existence, then create, and do not
// turn the catalog's ErrExists into a SKIP when IfNotExists. Whatever
// the interleaving, correct code passes; the jobs are released together
// from BeforeRun to make the race likely.
func TestReviewJConcurrentIfNotExists(t *testing.T) {
	const n = 4
	for _, stmt := range []string{
		"CREATE TABLE IF NOT EXISTS d.n%d (a INT64)",
		"CREATE SCHEMA IF NOT EXISTS s%d",
		"CREATE VIEW IF NOT EXISTS d.v%d AS SELECT 1 AS a",
	} {
		var arrived sync.WaitGroup
		gate := make(chan struct{})
		s, _, _ := engineStore(t, Options{BeforeRun: func(ctx context.Context, project, id string) {
			arrived.Done()
			<-gate
		}})
		failed := 0
		for r := range 10 {
			arrived.Add(n)
			for i := range n {
				if _, err := s.Insert("p", fmt.Sprintf("c%d_%d", r, i), "US", Query{SQL: fmt.Sprintf(stmt, r)}); err != nil {
					t.Fatal(err)
				}
			}
			arrived.Wait()
			gate <- struct{}{} // release them one right after another
			for range n - 1 {
				gate <- struct{}{}
			}
			for i := range n {
				if j := wait(t, s, fmt.Sprintf("c%d_%d", r, i)); j.Err != nil {
					failed++
					if failed == 1 {
						t.Errorf("%s: %v", fmt.Sprintf(stmt, r), j.Err)
					}
				}
			}
		}
		if failed > 0 {
			t.Errorf("%q: %d of %d jobs failed", stmt, failed, 10*n)
		}
	}
}

// TestDropTableOfView (fix-jobs3, review-j's unconfirmed note): DROP
// TABLE naming a view fails, the view kept, as DROP VIEW naming a table
// does (third-party BigQuery guides: "Does DROP TABLE remove views? No.
// Use DROP VIEW for views."; BigQuery's exact message unverified).
func TestDropTableOfView(t *testing.T) {
	s, cat := newEngineStore(t)
	fillTable(t, cat, s.opts.DB, "t", 3)
	mustRun(t, s, "v", "CREATE VIEW d.v AS SELECT x FROM d.t")
	for i, q := range []string{"DROP TABLE d.v", "DROP TABLE IF EXISTS d.v"} {
		if j := runJob(t, s, fmt.Sprintf("d%d", i), Query{SQL: q}); j.Err == nil || !strings.Contains(j.Err.Error(), "p:d.v is a view, not a table") {
			t.Errorf("%s: %v, want refused", q, j.Err)
		}
	}
	if got := fmt.Sprint(readAll(t, s, mustRun(t, s, "r", "SELECT COUNT(*) FROM d.v"))); got != "[[3]]" {
		t.Errorf("d.v after DROP TABLE: %s", got)
	}
	mustRun(t, s, "dv", "DROP VIEW d.v")
}

// TestFailedJobStatementType (fix-jobs3, review-j's note): a job whose
// statement fails still reports its statementType (SCRIPT for a script).
func TestFailedJobStatementType(t *testing.T) {
	s, _ := newEngineStore(t)
	for i, c := range []struct{ sql, want string }{
		{"INSERT INTO d.nope (a) VALUES (1)", "INSERT"},
		{"SELECT * FROM d.nope", "SELECT"},
		{"CREATE TABLE d.a (x INT64); INSERT INTO d.nope (a) VALUES (1)", "SCRIPT"},
	} {
		j := runJob(t, s, fmt.Sprintf("f%d", i), Query{SQL: c.sql})
		if j.Err == nil || j.Stats.StatementType != c.want {
			t.Errorf("%s: err %v, statementType %q, want a failure and %s", c.sql, j.Err, j.Stats.StatementType, c.want)
		}
	}
}

// TestDestinationWithDDLOrDML (fix-jobs3, review-j's note): a
// destinationTable with a DDL or DML statement or a script is refused
// with BigQuery's messages, and nothing runs.
func TestDestinationWithDDLOrDML(t *testing.T) {
	s, _ := newEngineStore(t)
	mustRun(t, s, "mk", "CREATE TABLE d.t (a INT64)")
	dst := &TableRef{"p", "d", "x"}
	for i, c := range []struct{ sql, want string }{
		{"CREATE TABLE d.n (a INT64)", "Cannot set destination table in jobs with DDL statements"},
		{"INSERT INTO d.t (a) VALUES (1)", "Cannot set destination table in jobs with DML statements"},
		{"SELECT 1 AS a; SELECT 2 AS a", "configuration.query.destinationTable cannot be set for scripts"},
	} {
		j := runJob(t, s, fmt.Sprintf("d%d", i), Query{SQL: c.sql, Destination: dst})
		if j.Err == nil || !strings.Contains(j.Err.Error(), c.want) {
			t.Errorf("%s with a destinationTable: %v, want %q", c.sql, j.Err, c.want)
		}
	}
	if got := fmt.Sprint(readAll(t, s, mustRun(t, s, "r", "SELECT COUNT(*) FROM d.t"))); got != "[[0]]" {
		t.Errorf("d.t: %s rows, want the INSERT not run", got)
	}
}
