package storage

// The simulator's other tables: created, appended to and dropped next to
// the main one, so that crashes also hit table creation (a directory
// renamed into place) and deletion (renamed away, then removed). See
// sim_test.go.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// simOther is the model of one other table: acknowledged rows of its
// default stream.
type simOther struct {
	name string
	ids  []int64
}

// simOtherOp is an operation on another table whose acknowledgement a
// crash took: the table may or may not exist, the rows may or may not be
// there.
type simOtherOp struct {
	kind string // "create", "drop", "append"
	name string
	ids  []int64 // append
}

func (w *sim) otherNames() []string {
	var names []string
	for name := range w.others {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// opOther creates, drops or appends to another table.
func (w *sim) opOther() {
	ctx := context.Background()
	names := w.otherNames()
	switch p := w.rng.IntN(4); {
	case p == 0 || len(names) == 0:
		// Create a new table, or an existing one again (a no-op).
		name := fmt.Sprintf("p/d/other%d", w.rng.IntN(4))
		_, existed := w.others[name]
		_, err := w.db.CreateTable(ctx, name, testSchema)
		w.tracef("create table %s (existed %v): %v", name, existed, err)
		if err != nil {
			if !lost(err) {
				w.failf("create table %s: %v", name, err)
			}
			if !existed {
				w.otherInflight = &simOtherOp{kind: "create", name: name}
			}
			w.crash("crash point")
			return
		}
		if !existed {
			w.others[name] = &simOther{name: name}
		}
	case p == 1:
		name := names[w.rng.IntN(len(names))]
		err := w.db.DropTable(ctx, name)
		w.tracef("drop table %s: %v", name, err)
		if err != nil {
			if !lost(err) {
				w.failf("drop table %s: %v", name, err)
			}
			w.otherInflight = &simOtherOp{kind: "drop", name: name}
			w.crash("crash point")
			return
		}
		delete(w.others, name)
		// Dropping a missing table fails.
		if err := w.db.DropTable(ctx, name); !errors.Is(err, ErrTableNotFound) {
			w.failf("drop table %s again: %v, want not found", name, err)
		}
	default:
		name := names[w.rng.IntN(len(names))]
		o := w.others[name]
		tb, err := w.db.Table(name)
		if err != nil {
			w.failf("table %s: %v", name, err)
		}
		n := w.rows()
		from, ids := w.newIDs(n)
		rec := makeBatch(testSchema, from, n)
		defer rec.Release()
		_, err = tb.Append(ctx, AppendRequest{Stream: DefaultStreamID, Offset: -1, Batch: rec})
		w.tracef("append to table %s ids [%d,%d): %v", name, from, from+n, err)
		if err != nil {
			if !lost(err) {
				w.failf("append to table %s: %v", name, err)
			}
			w.otherInflight = &simOtherOp{kind: "append", name: name, ids: ids}
			w.crash("crash point")
			return
		}
		o.ids = append(o.ids, ids...)
	}
}

// verifyOthers checks after a recovery that exactly the acknowledged
// tables exist (an operation in flight either way) with exactly their
// acknowledged rows, and adopts what recovery found of the operation in
// flight.
func (w *sim) verifyOthers(what string) {
	p := w.otherInflight
	w.otherInflight = nil
	have := map[string]bool{}
	for _, id := range w.db.TableIDs() {
		have[id] = true
	}
	if !have[simTable] {
		w.failf("%s: table %s missing from %v", what, simTable, w.db.TableIDs())
	}
	delete(have, simTable)
	if p != nil {
		switch {
		case p.kind == "create" && have[p.name]:
			w.others[p.name] = &simOther{name: p.name}
		case p.kind == "drop" && !have[p.name]:
			delete(w.others, p.name)
		}
		w.tracef("in flight: %s table %s: exists %v", p.kind, p.name, have[p.name])
	}
	for _, name := range w.otherNames() {
		if !have[name] {
			w.failf("%s: acknowledged table %s lost (tables: %v)", what, name, w.db.TableIDs())
		}
		delete(have, name)
	}
	for name := range have {
		w.failf("%s: table %s exists, never acknowledged", what, name)
	}
	for _, name := range w.otherNames() {
		o := w.others[name]
		tb, err := w.db.Table(name)
		if err != nil {
			w.failf("%s: table %s: %v", what, name, err)
		}
		s, err := tb.Snapshot(time.Time{})
		if err != nil {
			w.failf("%s: table %s: snapshot: %v", what, name, err)
		}
		got := w.readSnapshot(s, what+": table "+name)
		s.Release()
		want := slices.Clone(o.ids)
		if p != nil && p.kind == "append" && p.name == name && len(got) == len(want)+len(p.ids) {
			want = append(want, p.ids...) // the append in flight is durable
			o.ids = slices.Clone(want)
		}
		slices.Sort(want)
		if d := diffIDs(got, want); d != "" {
			w.failf("%s: table %s: %s", what, name, d)
		}
	}
}
