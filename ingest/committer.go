package ingest

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// committer issues one BatchCommitWriteStreams per window for its table
// (one committer per table: routed topics sharing a table share it),
// over every sealed stream that is ready (in calls of at most
// Config.MaxCommitStreams streams). It never waits for a worker: it
// only ever sees streams that are already sealed, and a window closes on a
// timer whether or not more streams arrive.
//
// Goroutine lifetime: run is started by pipeline.Run and returns when its
// context ends; commit callers give up when their own context ends.
type committer struct {
	p     *pipeline
	table string // the parent of every stream it commits
	req   chan *commitReq
	// workers counts the running partitions that send it requests (those
	// routed to its table; every partition for the dead-letter table).
	workers *atomic.Int64
}

// commitReq is one partition's sealed batch: its streams must all end up
// committed (by this call or any earlier one).
type commitReq struct {
	names []string
	rows  int64
	bytes int64
	start time.Time // first record read, for event-to-visible latency
	// commitTime is the latest commit_time of the request's streams, set
	// before done is signalled with nil.
	commitTime time.Time
	done       chan error      // buffered(1)
	left       map[string]bool // stream names not yet known to be committed
}

func newCommitter(p *pipeline, table string) *committer {
	return &committer{p: p, table: table, req: make(chan *commitReq), workers: &p.workers}
}

// commit hands the sealed streams to the committer and waits for them to be
// committed.
func (c *committer) commit(ctx context.Context, r *commitReq) error {
	if err := ctx.Err(); err != nil {
		return err // never hand over after the end (select picks at random)
	}
	r.done = make(chan error, 1)
	select {
	case c.req <- r:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *committer) run(ctx context.Context) {
	for {
		var batch []*commitReq
		select {
		case r := <-c.req:
			batch = append(batch, r)
		case <-ctx.Done():
			return
		}
		// The window closes early once every running worker that sends
		// to this table (c.workers) has a request in it: each has at
		// most one at a time, so no other can come (a single file would
		// otherwise wait CommitWindow per batch).
		window := time.NewTimer(c.p.cfg.CommitWindow)
	collect:
		for int64(len(batch)) < c.workers.Load() {
			select {
			case r := <-c.req:
				batch = append(batch, r)
			case <-window.C:
				break collect
			case <-ctx.Done():
				window.Stop()
				for _, r := range batch {
					r.done <- ctx.Err()
				}
				return
			}
		}
		window.Stop()
		c.commitAll(ctx, batch)
	}
}

// commitAll commits the streams of every request in one call, sorting out
// per-stream errors: STREAM_ALREADY_COMMITTED is confirmed through
// GetWriteStream.commit_time and dropped, other stream errors fail only the
// request that owns the stream, and the rest is retried (the failed call
// committed nothing).
func (c *committer) commitAll(ctx context.Context, reqs []*commitReq) {
	p := c.p
	owner := map[string]*commitReq{}
	for _, r := range reqs {
		r.left = map[string]bool{}
		for _, n := range r.names {
			r.left[n] = true
			owner[n] = r
		}
	}
	finish := func(r *commitReq, err error) {
		for n := range r.left {
			delete(owner, n)
		}
		if err == nil {
			p.metrics.RowsCommitted.Add(float64(r.rows))
			p.metrics.BytesCommitted.Add(float64(r.bytes))
			p.metrics.ActiveStreams.Sub(float64(len(r.names)))
			if !r.start.IsZero() {
				p.metrics.EventToVisible.Observe(time.Since(r.start).Seconds())
			}
		}
		r.done <- err
	}
	doneIfEmpty := func(r *commitReq) {
		if len(r.left) == 0 {
			finish(r, nil)
		}
	}
	for _, r := range reqs {
		doneIfEmpty(r) // a request without streams
	}
	for attempt := 0; len(owner) > 0; attempt++ {
		// At most MaxCommitStreams per call: a window of many partitions
		// (or a recovery naming many streams) takes several calls.
		names := make([]string, 0, min(len(owner), p.cfg.MaxCommitStreams))
		for n := range owner {
			if len(names) == p.cfg.MaxCommitStreams {
				break
			}
			names = append(names, n)
		}
		t0 := time.Now()
		resp, err := p.cfg.Client.BatchCommitWriteStreams(ctx, &storagepb.BatchCommitWriteStreamsRequest{
			Parent: c.table, WriteStreams: names,
		})
		p.metrics.CommitLatency.Observe(time.Since(t0).Seconds())
		if err == nil && len(resp.GetStreamErrors()) == 0 && resp.GetCommitTime() != nil {
			ct := resp.GetCommitTime().AsTime()
			for _, n := range names {
				r := owner[n]
				if ct.After(r.commitTime) {
					r.commitTime = ct
				}
				delete(r.left, n)
				delete(owner, n)
				doneIfEmpty(r)
			}
			attempt = -1 // the next call starts a fresh backoff
			continue
		}
		p.metrics.CommitFailures.Inc()
		if err != nil {
			code := status.Code(err)
			if ctx.Err() != nil {
				for _, r := range reqs {
					if len(r.left) > 0 {
						finish(r, ctx.Err())
					}
				}
				return
			}
			if !retryable(err) && code != codes.DeadlineExceeded && code != codes.Canceled {
				for _, r := range uniqueOwners(owner) {
					finish(r, fmt.Errorf("ingest: BatchCommitWriteStreams: %w", err))
				}
				return
			}
			// Ambiguous or transient: retry; a stream that did commit comes
			// back as STREAM_ALREADY_COMMITTED.
			p.log.Warn("BatchCommitWriteStreams failed, retrying", "streams", len(names), "attempt", attempt, "err", err)
			if werr := p.cfg.Backoff.Wait(ctx, attempt); werr != nil {
				continue // ctx ended: handled at the top of the next attempt's error path
			}
			continue
		}
		// Stream errors: nothing was committed by this call.
		progress := false
		for _, se := range resp.GetStreamErrors() {
			n := se.GetEntity()
			r, ok := owner[n]
			if !ok {
				continue
			}
			switch se.GetCode() {
			case storagepb.StorageError_STREAM_ALREADY_COMMITTED:
				ws, gerr := p.getStream(ctx, n, storagepb.WriteStreamView_BASIC)
				if gerr != nil {
					finish(r, gerr)
					progress = true
					continue
				}
				if ws.GetCommitTime() == nil {
					finish(r, fmt.Errorf("ingest: %s reported STREAM_ALREADY_COMMITTED but has no commit_time", n))
					progress = true
					continue
				}
				if ct := ws.GetCommitTime().AsTime(); ct.After(r.commitTime) {
					r.commitTime = ct
				}
				delete(r.left, n)
				delete(owner, n)
				doneIfEmpty(r)
				progress = true
			case storagepb.StorageError_STREAM_NOT_FOUND:
				finish(r, fmt.Errorf("%w: %s", errFailClosed, n))
				progress = true
			default:
				finish(r, fmt.Errorf("ingest: commit %s: %s: %s", n, se.GetCode(), se.GetErrorMessage()))
				progress = true
			}
		}
		if !progress {
			// Errors that name no stream of ours: nothing to drop, so fail
			// everything rather than loop.
			for _, r := range uniqueOwners(owner) {
				finish(r, fmt.Errorf("ingest: BatchCommitWriteStreams: stream errors %v", resp.GetStreamErrors()))
			}
			return
		}
	}
}

// commitSealed commits a seal's streams, one BatchCommit per table in
// table order (data first), and returns the latest commit_time. Each
// commit is idempotent: a crash between two leaves the seal, and its
// recovery commits what is left (BetweenCommits). bytes and start feed
// the data table's metrics.
func (w *worker) commitSealed(ctx context.Context, b uint64, streams []SealedStream, bytes int64, start time.Time) (time.Time, error) {
	var latest time.Time
	for t := range w.d.tables {
		req := &commitReq{}
		for _, s := range streams {
			if s.Table == t {
				req.names = append(req.names, streamName(w.d.tables[t], s.ID))
				if t == 0 {
					req.rows += s.Rows
				}
			}
		}
		if len(req.names) == 0 {
			continue
		}
		if t > 0 {
			if err := hook(w.p.cfg.Hooks, BetweenCommits, w.key, b); err != nil {
				return latest, err
			}
		} else {
			req.bytes, req.start = bytes, start
		}
		if err := w.d.committers[t].commit(ctx, req); err != nil {
			return latest, err
		}
		if err := ctx.Err(); err != nil {
			return latest, err
		}
		if req.commitTime.After(latest) {
			latest = req.commitTime
		}
	}
	return latest, nil
}

func uniqueOwners(owner map[string]*commitReq) []*commitReq {
	seen := map[*commitReq]bool{}
	var out []*commitReq
	for _, r := range owner {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}
