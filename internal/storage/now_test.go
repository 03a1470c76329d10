package storage

import (
	"context"
	"testing"
	"time"

	"github.com/bqstore/bqstore/internal/storage/vfs"
)

// TestNowClockStepBack: after the clock steps back, DB.Now is still at or
// after every acknowledged commit, of any table, and after a reopen; a
// snapshot of another table (idle, created earlier) at Now is valid and
// the committing table read at Now sees its commit.
func TestNowClockStepBack(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs, Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	idle, err := db.CreateTable(ctx, "idle", testSchema)
	if err != nil {
		t.Fatal(err)
	}
	busy, err := db.CreateTable(ctx, "busy", testSchema)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	appendRows(t, busy, DefaultStreamID, -1, 0, 1)
	clock.Advance(-time.Second) // the clock steps back
	check := func(db *DB, busy, idle *Table) {
		t.Helper()
		now := db.Now()
		if !now.After(clock.Now()) {
			t.Fatalf("Now %v is not after the stepped-back clock %v", now, clock.Now())
		}
		if got := len(tableIDs(t, busy, now)); got != 1 {
			t.Fatalf("busy at Now: %d rows, want 1", got)
		}
		s, err := idle.Snapshot(now)
		if err != nil {
			t.Fatalf("idle table at Now: %v", err)
		}
		s.Release()
	}
	check(db, busy, idle)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open("db", &Options{FS: fs, Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	busy, _ = db.Table("busy")
	idle, _ = db.Table("idle")
	check(db, busy, idle)
}
