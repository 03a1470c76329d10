package jobs

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/storage/vfs"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	cat, err := catalog.Open(t.TempDir(), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// held is a BeforeRun hook that holds every job RUNNING until its context
// ends, and reports each job it holds.
func held(started chan<- string) func(ctx context.Context, project, id string) {
	return func(ctx context.Context, project, id string) {
		started <- id
		<-ctx.Done()
	}
}

func wait(t *testing.T, s *Store, id string) Job {
	t.Helper()
	j, err := s.Wait(context.Background(), "p", id, time.Minute)
	if err != nil || j.State != StateDone {
		t.Fatalf("wait %s: %+v %v", id, j, err)
	}
	return j
}

// TestCancel: a RUNNING job cancelled ends DONE with a StoppedError; one
// stopped by Close ends DONE with a BackendError; Close waits for it.
func TestCancel(t *testing.T) {
	started := make(chan string, 1)
	s := New(newCatalog(t), Options{BeforeRun: held(started)})
	if _, err := s.Insert("p", "a", "US", Query{SQL: "SELECT 1"}); err != nil {
		t.Fatal(err)
	}
	<-started
	j, err := s.Get("p", "a")
	if err != nil || j.State != StateRunning || j.Started.IsZero() {
		t.Fatalf("a: %+v %v, want RUNNING", j, err)
	}
	if err := s.Delete("p", "a"); !errors.Is(err, ErrRunning) {
		t.Fatalf("delete a running job: %v", err)
	}
	if _, err := s.Cancel("p", "a"); err != nil {
		t.Fatal(err)
	}
	j = wait(t, s, "a")
	var se *StoppedError
	if !errors.As(j.Err, &se) || se.Msg != cancelledMsg {
		t.Fatalf("cancelled job's error %v, want %q", j.Err, cancelledMsg)
	}
	if _, err := s.Insert("p", "b", "US", Query{SQL: "SELECT 1"}); err != nil {
		t.Fatal(err)
	}
	<-started
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	j, _ = s.Get("p", "b")
	var be *BackendError
	if j.State != StateDone || !errors.As(j.Err, &be) {
		t.Fatalf("job stopped by Close: %+v", j)
	}
	if _, err := s.Insert("p", "c", "US", Query{SQL: "SELECT 1"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("insert after Close: %v", err)
	}
}

// TestReplayRunning: a job RUNNING when the machine crashed is DONE with a
// BackendError after the log is replayed; DONE jobs keep their outcome.
func TestReplayRunning(t *testing.T) {
	fs := vfs.NewMem()
	cat := newCatalog(t)
	started := make(chan string, 1)
	hold := true
	s, err := Open(cat, Options{FS: fs, Dir: "jobs", BeforeRun: func(ctx context.Context, project, id string) {
		if hold {
			held(started)(ctx, project, id)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	hold = false
	if _, err := s.Insert("p", "ok", "US", Query{SQL: "SELECT 1"}); err != nil {
		t.Fatal(err)
	}
	wait(t, s, "ok")
	if _, err := s.Insert("p", "bad", "US", Query{SQL: "SELECT nope"}); err != nil {
		t.Fatal(err)
	}
	wait(t, s, "bad")
	hold = true
	if _, err := s.Insert("p", "running", "US", Query{SQL: "SELECT 1"}); err != nil {
		t.Fatal(err)
	}
	<-started
	crashed := fs.CrashClone(nil)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s2, err := Open(cat, Options{FS: crashed, Dir: "jobs"})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	j, err := s2.Get("p", "running")
	var be *BackendError
	if err != nil || j.State != StateDone || !errors.As(j.Err, &be) || j.End.IsZero() {
		t.Fatalf("job running at the crash: %+v %v, want DONE with a BackendError", j, err)
	}
	if j, err := s2.Get("p", "ok"); err != nil || j.State != StateDone || j.Err != nil || j.Stats.StatementType != "SELECT" || j.NumRows != 1 {
		t.Fatalf("done job after replay: %+v %v", j, err)
	}
	j, err = s2.Get("p", "bad")
	if err != nil || j.Err == nil || j.Err.Error() != "Unrecognized name: nope at [1:8]" {
		t.Fatalf("failed job after replay: %+v %v", j, err)
	}
	if _, err := s2.Insert("p", "ok", "US", Query{SQL: "SELECT 1"}); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("a replayed id again: %v, want ErrDuplicate", err)
	}
}

// TestReplayExpires: jobs older than Retention are gone after a replay.
func TestReplayExpires(t *testing.T) {
	fs := vfs.NewMem()
	cat := newCatalog(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	s, err := Open(cat, Options{FS: fs, Dir: "jobs", Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"old", "new"} {
		if _, err := s.Insert("p", id, "US", Query{SQL: "SELECT 1"}); err != nil {
			t.Fatal(err)
		}
		wait(t, s, id)
		now = now.Add(Retention)
	}
	s.Close()
	s2, err := Open(cat, Options{FS: fs, Dir: "jobs", Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if _, err := s2.Get("p", "old"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("expired job: %v", err)
	}
	if _, err := s2.Get("p", "new"); err != nil {
		t.Fatalf("live job: %v", err)
	}
}

// TestLogCrashAtEveryWrite: the file system fails from its k-th mutating
// operation on, for every k, and loses what was not synced (with a torn
// unsynced tail); the reopened store has every job whose creation was
// acknowledged, and every job acknowledged DONE is DONE with its outcome.
func TestLogCrashAtEveryWrite(t *testing.T) {
	cat := newCatalog(t)
	for k := 0; ; k++ {
		seed := uint64(k)
		fs := vfs.NewMem()
		s, err := Open(cat, Options{FS: fs, Dir: "jobs"})
		if err != nil {
			t.Fatal(err)
		}
		fs.SetCrashAfter(k)
		created := map[string]bool{}
		done := map[string]bool{}
		for i := range 4 {
			id := fmt.Sprintf("j%d", i)
			if _, err := s.Insert("p", id, "US", Query{SQL: "SELECT 1"}); err != nil {
				continue
			}
			created[id] = true
			wait(t, s, id)
		}
		// DONE is acknowledged once its record is synced.
		fs.SetCrashAfter(-1)
		clone := fs.CrashClone(rand.New(rand.NewPCG(seed, 1)))
		synced := fs.CrashClone(nil)
		s.Close()
		for id := range created {
			if logHasDone(t, synced, id) {
				done[id] = true
			}
		}
		s2, err := Open(cat, Options{FS: clone, Dir: "jobs"})
		if err != nil {
			t.Fatalf("k=%d seed=%d: reopen: %v", k, seed, err)
		}
		for id := range created {
			j, err := s2.Get("p", id)
			if err != nil {
				t.Fatalf("k=%d: acknowledged job %s lost: %v", k, id, err)
			}
			var be *BackendError
			if done[id] && (j.State != StateDone || j.Err != nil) || !done[id] && (j.State != StateDone || !errors.As(j.Err, &be)) {
				t.Fatalf("k=%d: job %s (DONE synced: %v) is %+v", k, id, done[id], j)
			}
		}
		s2.Close()
		if len(done) == 4 {
			return // every write succeeded: all k covered
		}
	}
}

// logHasDone reports whether fs's jobs log has job id DONE and
// succeeded.
func logHasDone(t *testing.T, fs *vfs.MemFS, id string) bool {
	t.Helper()
	f, err := fs.Open("jobs/" + logName)
	if err != nil {
		return false
	}
	defer f.Close()
	size, _ := f.Size()
	b := make([]byte, size)
	_, _ = f.ReadAt(b, 0)
	recs, _, err := parseLog(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Put != nil && r.Put.ID == id && r.Put.State == "DONE" && r.Put.Err == nil {
			return true
		}
	}
	return false
}

// TestParseLogCorruption: a damaged record followed by a valid one is
// corruption; a damaged last record is a torn tail, cut.
func TestParseLogCorruption(t *testing.T) {
	var b []byte
	for _, id := range []string{"a", "b", "c"} {
		b = frame(b, []byte(fmt.Sprintf(`{"delete":{"project":"p","id":%q}}`, id)))
	}
	one := len(b) / 3
	torn := append([]byte(nil), b[:len(b)-12]...)
	recs, n, err := parseLog(torn)
	if err != nil || len(recs) != 2 || n != 2*one {
		t.Fatalf("torn tail: %d records, valid prefix %d, %v", len(recs), n, err)
	}
	bad := append([]byte(nil), b...)
	bad[one+logHeaderLen+2] ^= 0xff
	if _, _, err := parseLog(bad); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("damaged middle record: %v, want ErrCorrupt", err)
	}
}

// TestJobTimeout: a job with Query.TimeoutMs still running at its limit
// ends DONE with a StoppedError marked Timeout, which the log keeps
// across a restart; a job without a limit is not stopped.
func TestJobTimeout(t *testing.T) {
	fs := vfs.NewMem()
	cat := newCatalog(t)
	started := make(chan string, 2)
	s, err := Open(cat, Options{FS: fs, Dir: "jobs", BeforeRun: held(started)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Insert("p", "t", "US", Query{SQL: "SELECT 1", TimeoutMs: 1}); err != nil {
		t.Fatal(err)
	}
	j := wait(t, s, "t")
	var se *StoppedError
	if !errors.As(j.Err, &se) || !se.Timeout || j.Query.TimeoutMs != 1 {
		t.Fatalf("job past its timeout: %+v (%v), want a StoppedError with Timeout", j, j.Err)
	}
	if _, err := s.Insert("p", "c", "US", Query{SQL: "SELECT 1"}); err != nil {
		t.Fatal(err)
	}
	for id := range started { // "t" may have timed out before it started
		if id == "c" {
			break
		}
	}
	if _, err := s.Cancel("p", "c"); err != nil {
		t.Fatal(err)
	}
	if j := wait(t, s, "c"); !errors.As(j.Err, &se) || se.Timeout {
		t.Fatalf("cancelled job: %v, want a StoppedError without Timeout", j.Err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(cat, Options{FS: fs, Dir: "jobs"})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if j, err := s2.Get("p", "t"); err != nil || !errors.As(j.Err, &se) || !se.Timeout || se.Msg != j.Err.Error() || j.Query.TimeoutMs != 1 {
		t.Fatalf("timed-out job after replay: %+v %v", j, err)
	}
}
