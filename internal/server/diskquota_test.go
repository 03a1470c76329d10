package server

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/bqstore/bqstore/internal/apierr"
	"github.com/bqstore/bqstore/internal/storage"
)

// TestDiskQuotaWalks: the quota measures the data directory, and while it
// refuses appends it measures again at most once a second, so that room
// freed (a dropped table) is seen promptly but refused requests do not
// each walk the directory.
func TestDiskQuotaWalks(t *testing.T) {
	dir := t.TempDir()
	db, err := storage.Open(filepath.Join(dir, "tables"), &storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	q := &diskQuota{dir: dir, max: 512 << 10, db: db, now: func() time.Time { return now }}
	q.walk()
	err = q.check()
	if status.Code(apierr.Err(err, "")) != codes.ResourceExhausted {
		t.Fatalf("1 MiB in a 512 KiB quota: %v, want RESOURCE_EXHAUSTED", err)
	}
	if err := os.Remove(big); err != nil {
		t.Fatal(err)
	}
	if err := q.check(); err == nil {
		t.Fatal("walked again within the second")
	}
	now = now.Add(diskWalkWhenFull)
	if err := q.check(); err != nil {
		t.Fatalf("after the file was removed and a second passed: %v", err)
	}
}
