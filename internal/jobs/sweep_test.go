package jobs

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/bqstore/bqstore/internal/storage/vfs"
)

// TestSweepForgetsExpiredJobs: a server that gets no new job still
// forgets the jobs past Retention, and drops their anonymous tables, at
// its periodic sweep (before, only Insert and Open expired jobs): the
// job is gone from Get and List, its result table from the catalog, and
// its record from the log (a reopened store does not have it). A job
// within Retention stays.
func TestSweepForgetsExpiredJobs(t *testing.T) {
	_, cat, db := engineStore(t, Options{})
	var mu sync.Mutex
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	tick := make(chan time.Time) // unbuffered: see Options.sweepTick
	fs := vfs.NewMem()
	s, err := Open(cat, Options{FS: fs, Dir: "jobs", DB: db, Clock: clock, sweepTick: tick})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	old := mustRun(t, s, "old", "SELECT 1 AS a")
	if !old.anonymous() {
		t.Fatalf("job without an anonymous table: %+v", old)
	}
	advance(Retention - time.Hour)
	mustRun(t, s, "young", "SELECT 2 AS a")
	advance(2 * time.Hour) // old is past Retention, young is not
	tick <- now
	tick <- now // received once the first sweep is done
	if _, err := s.Get("p", "old"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("expired job after a sweep: %v, want ErrNotFound", err)
	}
	if l := s.List("p"); len(l) != 1 || l[0].ID != "young" {
		t.Fatalf("jobs after a sweep: %+v", l)
	}
	d := old.Destination
	if _, err := cat.Table(d.Project, d.Dataset, d.Table); err == nil {
		t.Fatalf("the expired job's anonymous table %v is still there", d)
	}
	s.Close()
	s2, err := Open(cat, Options{FS: fs, Dir: "jobs", DB: db, Clock: func() time.Time { return time.Time{} }})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if _, err := s2.Get("p", "old"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("expired job after a reopen: %v, want ErrNotFound (its removal logged)", err)
	}
	if _, err := s2.Get("p", "young"); err != nil {
		t.Fatal(err)
	}
}
