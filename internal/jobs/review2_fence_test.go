package jobs

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/storage"
)

// schemaObserver is the server's observer (internal/server backend.go):
// a schema change is applied to the engine table (SetSchema) inside the
// catalog's change, with the catalog's writeMu held. onSchema, if set,
// runs first.
type schemaObserver struct {
	engineObserver
	onSchema func()
}

func (o *schemaObserver) TableSchemaChanged(t *catalog.Table) error {
	if o.onSchema != nil {
		o.onSchema()
	}
	tbl, err := o.db.Table(t.ID)
	if err != nil {
		return err
	}
	have, _ := tbl.Schema()
	for _, sv := range t.Schemas {
		if sv.Version > have {
			if err := tbl.SetSchema(context.Background(), sv.Version, schema.ToArrow(sv.Schema)); err != nil {
				return err
			}
		}
	}
	return nil
}

func calledFrom(fn string) bool {
	pc := make([]uintptr, 64)
	fr := runtime.CallersFrames(pc[:runtime.Callers(2, pc)])
	for {
		f, more := fr.Next()
		if strings.Contains(f.Function, fn) {
			return true
		}
		if !more {
			return false
		}
	}
}

// goroutineIn reports whether some goroutine's stack has function fn.
func goroutineIn(fn string) bool {
	buf := make([]byte, 1<<20)
	return strings.Contains(string(buf[:runtime.Stack(buf, true)]), fn)
}

// Findings of review2 (issue 16), fixed by 7976ac9: each comment describes
// what the test found before that fix; the test asserts the behaviour now
// required.

// TestReview2FenceDeadlocksWithAlter: the conditional replace
// (replace.go move) fences the engine table and then calls
// catalog.MoveTable, which takes the catalog's writeMu. An ALTER TABLE
// of the same table holds writeMu across its observer call, and the
// server's observer applies the new schema to the engine (SetSchema),
// which waits at the fence (usableLocked). Fence-then-writeMu in one
// goroutine, writeMu-then-fence in the other: both jobs hang forever,
// and with them every later catalog change of the whole server (writeMu
// is global). The interleaving is forced here: the ALTER is parked
// inside its observer call (writeMu held) until the replace has fenced
// (its snapshot's clock read from move). Suspect: replace.go move
// (fence taken before the catalog lock; lock order), storage fence.go
// (a fenced SetSchema waits with no ctx and no bound).
func TestReview2FenceDeadlocksWithAlter(t *testing.T) {
	ctx := context.Background()
	var armed atomic.Bool
	proceed := make(chan struct{})
	var once sync.Once
	db, err := storage.Open(t.TempDir(), &storage.Options{Clock: func() time.Time {
		if armed.Load() && calledFrom("jobs.(*Store).move") {
			once.Do(func() { close(proceed) })
		}
		return time.Now()
	}})
	if err != nil {
		t.Fatal(err)
	}
	obs := &schemaObserver{engineObserver: engineObserver{db}}
	cat, err := catalog.Open(t.TempDir(), catalog.Options{Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cat.CreateDataset(ctx, catalog.Dataset{ProjectID: "p", DatasetID: "d", Location: "US"}); err != nil {
		t.Fatal(err)
	}
	s := New(cat, Options{DB: db}) // not closed: a deadlocked store cannot be
	mustRun(t, s, "mk", "CREATE TABLE d.t (x INT64); INSERT INTO d.t VALUES (1), (1), (2)")

	inObserver := make(chan struct{})
	obs.onSchema = func() {
		obs.onSchema = nil
		close(inObserver)
		// writeMu held, until the replace has fenced d.t (the old lock
		// order: fence, then writeMu) or waits for writeMu in MoveTable
		// (the order now: writeMu, then the fence, taken in
		// MoveSpec.Hold). Waits on a state, not a time.
		for {
			select {
			case <-proceed:
				return
			default:
			}
			if goroutineIn("catalog.(*Catalog).MoveTable") {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	s.opts.beforeReplace = func() {
		s.opts.beforeReplace = nil
		if _, err := s.Insert("p", "alter", "US", Query{SQL: "ALTER TABLE d.t ADD COLUMN y STRING"}); err != nil {
			t.Error(err)
		}
		<-inObserver
		armed.Store(true)
	}
	if _, err := s.Insert("p", "rewrite", "US", Query{SQL: "CREATE OR REPLACE TABLE d.t AS SELECT DISTINCT x FROM d.t"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second) // a hang, not a timing threshold: both wait forever
	for _, id := range []string{"rewrite", "alter"} {
		for {
			j, err := s.Get("p", id)
			if err != nil {
				t.Fatal(err)
			}
			if j.State == StateDone {
				break
			}
			if time.Now().After(deadline) {
				select {
				case <-proceed:
				default:
					t.Fatalf("setup: the replace never read the clock from move after its fence")
				}
				t.Fatalf("job %s still %s after 30 s: the replace's fence and the ALTER's catalog lock wait for each other", id, j.State)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	s.Close()
	db.Close()
}
