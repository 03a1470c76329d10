package storage

import (
	"context"
	"sync"
)

// Fence holds the table's writes: once it returns, every request that
// changes the table (appends, flushes, commits, schema changes, new
// streams, compaction's steps) waits until release is called (or its
// ctx ends: it fails with ctx's error, nothing done), and every
// request taken before it is durable and applied. A snapshot taken while
// the table is fenced is its latest state until release. Readers are
// not held. One fence at a time: a second Fence waits for the first's
// release.
//
// A caller that replaces the table (internal/jobs: CREATE OR REPLACE
// TABLE t AS SELECT ... FROM t) fences it, checks that it is still what
// its query read, and drops it before the release: the requests held
// then fail as requests after the drop do (ErrTableNotFound), none
// committed in between and lost with the table. A failed check releases
// the fence and the held requests go on. The fence is in memory only: a
// crash ends it with the process.
//
// Lock order: a caller takes the fence only while holding the catalog's
// write lock and releases it before that lock (internal/jobs fences in
// catalog.MoveSpec.Hold), since the catalog's changes call the engine
// (an ALTER TABLE's SetSchema waits here) with that lock held: a fence
// holder must never wait for the catalog.
func (t *Table) Fence(ctx context.Context) (release func(), err error) {
	t.mu.Lock()
	if err := t.usableLocked(ctx); err != nil {
		t.mu.Unlock()
		return nil, err
	}
	t.mu.fenced = true
	o := t.submitLocked(nil) // a barrier: acknowledged after every earlier record
	t.mu.Unlock()
	release = sync.OnceFunc(func() {
		t.mu.Lock()
		t.mu.fenced = false
		t.applied.Broadcast()
		t.mu.Unlock()
	})
	<-o.done
	if o.err != nil {
		release()
		return nil, o.err
	}
	return release, nil
}
