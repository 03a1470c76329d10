package server

import (
	"io/fs"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/bqstore/bqstore/internal/apierr"
	"github.com/bqstore/bqstore/internal/storage"
)

// diskQuota bounds the data directory's size for appends
// (Config.MaxDiskBytes): an append that would take the directory past the
// limit is refused RESOURCE_EXHAUSTED before anything of it is stored.
//
// The size is the directory's file sizes, measured by walking it, plus
// what the engine has acknowledged since (its log frames), plus the
// appends in flight (the in-flight budget, which counts the request
// being checked): so concurrent appends each count the others, and the
// estimate never lags behind appends. Other writes (seals, checkpoints,
// compaction, the catalog) are seen at the next walk: one every
// walkEvery, and at most once a second while appends are being refused,
// so that dropped tables and compactions free room promptly.
type diskQuota struct {
	dir string
	max int64
	db  *storage.DB
	now func() time.Time

	mu struct {
		sync.Mutex
		walked     int64     // the directory's size at the last walk
		appendedAt int64     // the engine's AppendedBytes before that walk
		at         time.Time // when it was taken
	}
}

const (
	diskWalkEvery    = 10 * time.Second
	diskWalkWhenFull = time.Second
)

func newDiskQuota(dir string, max int64, db *storage.DB) *diskQuota {
	q := &diskQuota{dir: dir, max: max, db: db, now: time.Now}
	q.walk()
	return q
}

// walk measures the directory. The engine's counter is read first: an
// append acknowledged during the walk is counted twice, never missed.
func (q *diskQuota) walk() {
	appended := q.db.Metrics().AppendedBytes
	var size int64
	_ = filepath.WalkDir(q.dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil // a file removed during the walk
		}
		if info, err := d.Info(); err == nil {
			size += info.Size()
		}
		return nil
	})
	q.mu.Lock()
	q.mu.walked, q.mu.appendedAt, q.mu.at = size, appended, q.now()
	q.mu.Unlock()
}

func (q *diskQuota) estimate() (int64, time.Time) {
	m := q.db.Metrics()
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.mu.walked + (m.AppendedBytes - q.mu.appendedAt) + m.InflightBytes, q.mu.at
}

// check answers whether one more append, already holding its in-flight
// budget, may be stored.
func (q *diskQuota) check() error {
	used, at := q.estimate()
	age := q.now().Sub(at)
	if age >= diskWalkEvery || (used > q.max && age >= diskWalkWhenFull) {
		q.walk()
		used, _ = q.estimate()
	}
	if used <= q.max {
		return nil
	}
	return apierr.New(codes.ResourceExhausted, 0, "",
		"Exceeds 'disk' limit: the data directory would hold about %d bytes, over the limit of %d bytes (serve --max-disk-bytes); nothing of this request was stored; drop tables or raise the limit, then retry",
		used, q.max)
}
