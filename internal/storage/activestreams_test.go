package storage

import (
	"context"
	"testing"

	"github.com/bqstore/bqstore/internal/storage/vfs"
)

func TestActiveStreams(t *testing.T) {
	ctx := context.Background()
	db, err := Open("db", &Options{FS: vfs.NewMem(), Clock: newFakeClock().Now})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tbl, err := db.CreateTable(ctx, "t1", testSchema)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, typ := range []StreamType{StreamCommitted, StreamPending, StreamPending, StreamBuffered} {
		si, err := tbl.CreateStream(ctx, typ)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, si.ID)
	}
	got := db.ActiveStreams()
	if got[StreamCommitted] != 1 || got[StreamPending] != 2 || got[StreamBuffered] != 1 {
		t.Fatalf("active streams = %v", got)
	}
	if _, err := tbl.Finalize(ctx, ids[1]); err != nil {
		t.Fatal(err)
	}
	if got := tbl.ActiveStreams(); got[StreamPending] != 1 {
		t.Fatalf("after finalize: %v", got)
	}
}
