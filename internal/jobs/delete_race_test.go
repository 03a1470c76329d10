package jobs

import (
	"context"
	"testing"
	"time"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/storage"
)

// TestDeleteRacesReinsert: jobs.delete of job "a" racing a jobs.insert
// of a new job "a". Delete takes the job out of the table under the
// lock, then logs its removal and drops its anonymous result table
// outside it; an Insert of the same id in between created a job whose
// result table (named from the project and id) that drop removed, and
// whose log record the removal's followed, so after a restart the new
// job was gone. The interleaving is forced by the beforeForget hook
// (no sleeps): the Insert runs right after the old job left the table
// and before its removal is done; it must wait for the removal.
func TestDeleteRacesReinsert(t *testing.T) {
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
	first := runJob(t, s, "a", Query{SQL: "SELECT x FROM d.t WHERE x < 3"})
	if first.Err != nil {
		t.Fatal(first.Err)
	}

	inserted := make(chan error, 1)
	waiting := make(chan struct{}, 1)
	s.opts.reinsertWait = func() { waiting <- struct{}{} }
	s.opts.beforeForget = func(j Job) {
		s.opts.beforeForget = nil
		go func() {
			_, err := s.Insert("p", "a", "US", Query{SQL: "SELECT x FROM d.t WHERE x < 5"})
			inserted <- err
		}()
		select {
		case err := <-inserted:
			// The Insert did not wait for the removal: let the new
			// job finish before the removal goes on.
			inserted <- err
			if err == nil {
				wait(t, s, "a")
			}
		case <-waiting:
		}
	}
	if err := s.Delete("p", "a"); err != nil {
		t.Fatal(err)
	}
	if err := <-inserted; err != nil {
		t.Fatalf("re-insert: %v", err)
	}
	second := wait(t, s, "a")
	if second.Err != nil {
		t.Fatalf("new job a: %v", second.Err)
	}
	if _, err := s.Rows(second); err != nil {
		t.Fatalf("new job a's result after the old one's delete: %v", err)
	}
	if got := readAll(t, s, second); len(got) != 5 {
		t.Fatalf("new job a's result: %d rows, want 5", len(got))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(cat, Options{DB: db, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if j, err := s.Get("p", "a"); err != nil || !j.Created.Equal(second.Created.Truncate(time.Microsecond)) {
		t.Fatalf("after a restart, job a: %+v %v, want the new job", j, err)
	}
}
