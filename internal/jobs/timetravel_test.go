package jobs

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/storage"
)

// testClock is a clock the test moves.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestForSystemTimeAsOf: FOR SYSTEM_TIME AS OF reads a table as it was
// at a time (rows committed after it are not seen), CURRENT_TIMESTAMP()
// being the job's time; a time before the table's creation, or in the
// future, is BigQuery's "Invalid snapshot time" error. Before, the
// clause was "not supported yet".
func TestForSystemTimeAsOf(t *testing.T) {
	ctx := context.Background()
	clock := &testClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	db, err := storage.Open(t.TempDir(), &storage.Options{Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cat, err := catalog.Open(t.TempDir(), catalog.Options{Observer: engineObserver{db}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cat.CreateDataset(ctx, catalog.Dataset{ProjectID: "p", DatasetID: "d", Location: "US"}); err != nil {
		t.Fatal(err)
	}
	s := New(cat, Options{DB: db, Clock: clock.Now})
	t.Cleanup(func() { s.Close() })

	mustRun(t, s, "mk", "CREATE TABLE d.t (x INT64)")
	clock.Add(time.Minute) // 00:01
	mustRun(t, s, "ins1", "INSERT INTO d.t VALUES (1), (2)")
	clock.Add(time.Minute) // 00:02
	mustRun(t, s, "ins2", "INSERT INTO d.t VALUES (3)")
	clock.Add(time.Minute) // 00:03

	for _, tc := range []struct {
		asOf string
		want int64
	}{
		{"TIMESTAMP '2026-01-01 00:00:30+00'", 0},
		{"TIMESTAMP '2026-01-01 00:01:30+00'", 2},
		{"'2026-01-01 00:02:30+00'", 3},
		{"TIMESTAMP_SUB(CURRENT_TIMESTAMP(), INTERVAL 90 SECOND)", 2},
		{"CURRENT_TIMESTAMP()", 3},
	} {
		j := mustRun(t, s, "q"+tc.asOf, "SELECT COUNT(*) FROM d.t FOR SYSTEM_TIME AS OF "+tc.asOf)
		if got := readAll(t, s, j); len(got) != 1 || got[0][0] != tc.want {
			t.Errorf("AS OF %s: %v, want %d", tc.asOf, got, tc.want)
		}
	}
	// The same table at two times, and with an alias.
	j := mustRun(t, s, "two", "SELECT (SELECT COUNT(*) FROM d.t FOR SYSTEM_TIME AS OF TIMESTAMP '2026-01-01 00:01:30+00'), COUNT(*) FROM d.t AS now_t")
	if got := readAll(t, s, j); len(got) != 1 || got[0][0] != int64(2) || got[0][1] != int64(3) {
		t.Errorf("two times: %v", got)
	}
	j = mustRun(t, s, "alias", "SELECT SUM(x) FROM d.t AS old FOR SYSTEM_TIME AS OF TIMESTAMP '2026-01-01 00:01:30+00' WHERE old.x > 1")
	if got := readAll(t, s, j); len(got) != 1 || got[0][0] != int64(2) {
		t.Errorf("alias: %v", got)
	}

	for _, tc := range []struct{ asOf, want string }{
		{"TIMESTAMP '2025-12-31 23:00:00+00'", "Invalid snapshot time 1767222000000 for table p:d.t@1767222000000. Cannot read before 1767225600000."},
		{"TIMESTAMP '2026-01-01 01:00:00+00'", "Invalid snapshot time 1767229200000 for table p:d.t@1767229200000. Cannot read after 1767225780000."},
		{"1", "FOR SYSTEM_TIME AS OF must be of type TIMESTAMP but was of type INT64"},
	} {
		j := runJob(t, s, "bad"+tc.asOf, Query{SQL: "SELECT * FROM d.t FOR SYSTEM_TIME AS OF " + tc.asOf})
		if j.Err == nil || !strings.Contains(j.Err.Error(), tc.want) {
			t.Errorf("AS OF %s: %v, want %q", tc.asOf, j.Err, tc.want)
		}
	}
}

// TestWildcardTable: a query over `d.prefix*` reads the dataset's tables
// whose names start with prefix (not views, not other tables), with
// _TABLE_SUFFIX; before, wildcard tables were "not supported yet".
func TestWildcardTable(t *testing.T) {
	s, _ := newEngineStore(t)
	mustRun(t, s, "mk", `CREATE TABLE d.ev_1 (x INT64); CREATE TABLE d.ev_2 (x INT64, y STRING);
		CREATE TABLE d.other (x INT64); CREATE VIEW d.ev_view AS SELECT 100 AS x;
		INSERT INTO d.ev_1 VALUES (1), (2); INSERT INTO d.ev_2 VALUES (3, 'c'); INSERT INTO d.other VALUES (9)`)
	j := mustRun(t, s, "q", "SELECT _TABLE_SUFFIX AS sfx, SUM(x) AS s, COUNT(y) AS ny FROM `p.d.ev_*` GROUP BY 1 ORDER BY 1")
	got := readAll(t, s, j)
	if len(got) != 2 || got[0][0] != "1" || got[0][1] != int64(3) || got[0][2] != int64(0) || got[1][0] != "2" || got[1][1] != int64(3) || got[1][2] != int64(1) {
		t.Errorf("rows: %v", got)
	}
	j = runJob(t, s, "none", Query{SQL: "SELECT * FROM `p.nosuch.ev_*`"})
	if j.Err == nil || !strings.Contains(j.Err.Error(), "Not found: Dataset p:nosuch") {
		t.Errorf("missing dataset: %v", j.Err)
	}
}
