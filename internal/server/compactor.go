package server

import (
	"context"
	"log/slog"
	"runtime/pprof"
	"time"

	"github.com/bqstore/bqstore/internal/storage"
)

// DefaultCompactInterval is how often every table is offered a compaction.
const DefaultCompactInterval = 5 * time.Minute

// compactor runs storage compaction in the background: every interval it
// offers each table a compaction (a no-op when nothing would change), one
// table at a time.
//
// Goroutine lifetime: started by startCompactor, stopped by stop, which
// cancels a compaction in progress and waits for the goroutine.
type compactor struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func startCompactor(db *storage.DB, interval time.Duration, log *slog.Logger) *compactor {
	ctx, cancel := context.WithCancel(context.Background())
	c := &compactor{cancel: cancel, done: make(chan struct{})}
	go pprof.Do(ctx, pprof.Labels("server", "compactor"), func(ctx context.Context) {
		defer close(c.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			for _, id := range db.TableIDs() {
				tbl, err := db.Table(id)
				if err != nil {
					continue
				}
				st, err := tbl.Compact(ctx)
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					log.Warn("compaction failed", "table", id, "err", err)
					continue
				}
				log.Debug("compaction", "table", id, "stats", st)
			}
		}
	})
	return c
}

func (c *compactor) stop() {
	c.cancel()
	<-c.done
}
