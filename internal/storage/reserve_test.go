package storage

import (
	"context"
	"testing"

	"github.com/bqstore/bqstore/internal/storage/vfs"
)

// TestReservation: budget reserved ahead of an append is what the append
// uses (the surplus goes back at once, a shortfall is topped up), and
// everything is returned when the append is durable or the reservation is
// released unused.
func TestReservation(t *testing.T) {
	ctx := context.Background()
	db, err := Open("db", &Options{FS: vfs.NewMem(), MaxInflightBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tb, err := db.CreateTable(ctx, "t", testSchema)
	if err != nil {
		t.Fatal(err)
	}
	for _, reserve := range []int64{0, 16, 512 << 10, 1 << 20, 4 << 20} {
		res, err := db.Reserve(ctx, reserve)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := db.Metrics().InflightBytes, min(reserve, 1<<20); got != want {
			t.Fatalf("reserve=%d: InflightBytes = %d, want %d", reserve, got, want)
		}
		rec := makeBatch(testSchema, 10, 1)
		p, err := tb.AppendAsync(ctx, AppendRequest{Stream: DefaultStreamID, Offset: -1, Batch: rec, Reservation: res})
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		if got := db.Metrics().InflightBytes; got > p.bytes {
			t.Fatalf("reserve=%d: InflightBytes = %d while the append waits, more than its frame (%d)", reserve, got, p.bytes)
		}
		res.Release() // after the hand-over: a no-op
		if _, err := p.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if got := db.Metrics().InflightBytes; got != 0 {
			t.Fatalf("reserve=%d: InflightBytes = %d after the append, want 0", reserve, got)
		}
	}
	res, err := db.Reserve(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	res.Release()
	res.Release()
	if got := db.Metrics().InflightBytes; got != 0 {
		t.Fatalf("InflightBytes = %d after Release, want 0", got)
	}
}
