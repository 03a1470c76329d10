package storage

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bqstore/bqstore/internal/storage/vfs"
)

// TestFence: a fence waits for the writes taken before it (a pending
// AppendAsync is visible once Fence returns), holds the writes after it
// (a snapshot while fenced shows none of them), and then lets them go
// on at its release, or fails them as after a drop when the table is
// dropped before the release. Whether a writer is already waiting at
// the fence or arrives after the drop, the outcome is the same; no
// timing is assumed.
func TestFence(t *testing.T) {
	ctx := context.Background()
	for _, drop := range []bool{false, true} {
		db, err := Open("db", &Options{FS: vfs.NewMem(), Clock: newFakeClock().Now})
		if err != nil {
			t.Fatal(err)
		}
		tb, err := db.CreateTable(ctx, "t1", testSchema)
		if err != nil {
			t.Fatal(err)
		}
		rec := makeBatch(testSchema, 0, 2)
		pa, err := tb.AppendAsync(ctx, AppendRequest{Stream: DefaultStreamID, Offset: -1, Batch: rec, SchemaVersion: 1})
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		release, err := tb.Fence(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(tableIDs(t, tb, time.Time{})); got != 2 {
			t.Fatalf("drop=%v: fenced after an append: %d rows visible, want 2", drop, got)
		}
		if _, err := pa.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		held := make(chan error, 1)
		go func() {
			rec := makeBatch(testSchema, 2, 1)
			defer rec.Release()
			_, err := tb.Append(ctx, AppendRequest{Stream: DefaultStreamID, Offset: -1, Batch: rec, SchemaVersion: 1})
			held <- err
		}()
		if got := len(tableIDs(t, tb, time.Time{})); got != 2 {
			t.Fatalf("drop=%v: an append went through the fence: %d rows", drop, got)
		}
		if drop {
			if err := db.DropTable(ctx, "t1"); err != nil {
				t.Fatal(err)
			}
		}
		release()
		release() // once only
		err = <-held
		switch {
		case drop && !errors.Is(err, ErrTableNotFound):
			t.Fatalf("append held at the fence of a dropped table: %v, want ErrTableNotFound", err)
		case !drop && err != nil:
			t.Fatalf("append held at a released fence: %v", err)
		case !drop:
			if got := len(tableIDs(t, tb, time.Time{})); got != 3 {
				t.Fatalf("after the release: %d rows, want 3", got)
			}
		}
		db.Close()
	}
}

// TestFenceWaitHonoursContext: a request held at a fence gives up when
// its context ends (the fence holder's release may be far off), with the
// context's error, and the table is unchanged.
func TestFenceWaitHonoursContext(t *testing.T) {
	ctx := context.Background()
	db, err := Open("db", &Options{FS: vfs.NewMem(), Clock: newFakeClock().Now})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tb, err := db.CreateTable(ctx, "t1", testSchema)
	if err != nil {
		t.Fatal(err)
	}
	release, err := tb.Fence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	held := make(chan error, 1)
	go func() {
		rec := makeBatch(testSchema, 0, 1)
		defer rec.Release()
		_, err := tb.Append(cctx, AppendRequest{Stream: DefaultStreamID, Offset: -1, Batch: rec, SchemaVersion: 1})
		held <- err
	}()
	cancel() // before or after the append reaches the fence: the same outcome
	select {
	case err := <-held:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("append held at a fence, its context cancelled: %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second): // a hang, not a timing threshold
		t.Fatal("append held at a fence did not return after its context was cancelled")
	}
	release()
	if got := len(tableIDs(t, tb, time.Time{})); got != 0 {
		t.Fatalf("%d rows after a cancelled append, want 0", got)
	}
}
