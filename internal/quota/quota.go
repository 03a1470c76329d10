// Package quota enforces the Storage Write API's project quotas as gRPC
// interceptors in front of the service: concurrent active
// application-created write streams, the CreateWriteStream rate, and
// AppendRows throughput per connection and per project. Each is off unless
// configured, so that local use is never slowed; each answers
// RESOURCE_EXHAUSTED with the real service's message (messages.go).
//
// Active streams are counted by the engine when the server provides a
// Counter (open, unexpired application-created streams, which survives
// restarts), plus the CreateWriteStream calls admitted and not yet
// answered. Without one they are counted here from the outcomes of
// CreateWriteStream (+1) and FinalizeWriteStream (-1).
//
// An AppendRows request over a throughput limit ends the connection with
// RESOURCE_EXHAUSTED (the real service's behaviour as clients report it);
// the requests before it are answered first, the request and any later
// ones are not processed, and managedwriter retries them on a new
// connection.
package quota

import (
	"context"
	"sync"
	"time"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/bqstore/bqstore/internal/resource"
)

// Limits are the quotas. The zero value of each field turns it off.
type Limits struct {
	// MaxActiveStreams caps the concurrent active (created, not finalized)
	// application-created write streams per project (the real default is
	// 2,000 per project and region).
	MaxActiveStreams int
	// CreateStreamRate is the sustained CreateWriteStream calls per second
	// per project, with bursts of CreateStreamBurst (default: one second's
	// worth, at least 1). The real service slows sharply above 40-50/s.
	CreateStreamRate  float64
	CreateStreamBurst int
	// CreateStreamDelay makes CreateWriteStream calls over the rate wait
	// for their turn (as the real service slows down) instead of failing
	// with RESOURCE_EXHAUSTED.
	CreateStreamDelay bool
	// ConnBytesPerSec and ProjectBytesPerSec cap AppendRows throughput in
	// request bytes per second per connection and per project, with
	// bursts of one second's worth.
	ConnBytesPerSec    int64
	ProjectBytesPerSec int64
}

// Enabled reports whether any quota is configured.
func (l Limits) Enabled() bool {
	return l.MaxActiveStreams > 0 || l.CreateStreamRate > 0 || l.ConnBytesPerSec > 0 || l.ProjectBytesPerSec > 0
}

// Counter reports a project's active (open, unexpired)
// application-created write streams; the server asks the engine.
type Counter func(project string) int

// Options configure a Limiter. The zero value of each field means its
// default.
type Options struct {
	// Registerer receives bqstore_quota_rejections_total and
	// bqstore_quota_active_streams. Default: none.
	Registerer prometheus.Registerer
	// Now is the clock of the rate limits. Default: time.Now.
	Now func() time.Time
	// Count counts active streams. Default: the Limiter's own count from
	// RPC outcomes, which starts at zero.
	Count Counter
}

// The values of the quota label of bqstore_quota_rejections_total.
const (
	QuotaActiveStreams     = "active_streams"
	QuotaCreateStreamRate  = "create_stream_rate"
	QuotaConnThroughput    = "connection_throughput"
	QuotaProjectThroughput = "project_throughput"
)

// Limiter enforces Limits. It is safe for concurrent use.
type Limiter struct {
	limits     Limits
	now        func() time.Time
	count      Counter
	rejections *prometheus.CounterVec
	delayed    prometheus.Counter
	activeG    *prometheus.GaugeVec

	mu struct {
		sync.Mutex
		// active holds each project's active streams by name.
		active map[string]map[string]struct{}
		// reserved counts CreateWriteStream calls admitted but not yet
		// answered, per project (Invariant: len(active[p])+reserved[p] <=
		// MaxActiveStreams when it is set).
		reserved   map[string]int
		create     map[string]*bucket // per project
		throughput map[string]*bucket // per project
	}
}

// New returns a Limiter for limits.
func New(limits Limits, opts Options) *Limiter {
	l := &Limiter{limits: limits, now: opts.Now, count: opts.Count}
	if l.now == nil {
		l.now = time.Now
	}
	l.rejections = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bqstore_quota_rejections_total",
		Help: "Requests answered RESOURCE_EXHAUSTED by a quota, by quota.",
	}, []string{"quota"})
	for _, q := range []string{QuotaActiveStreams, QuotaCreateStreamRate, QuotaConnThroughput, QuotaProjectThroughput} {
		l.rejections.WithLabelValues(q)
	}
	l.delayed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "bqstore_quota_create_stream_delays_total",
		Help: "CreateWriteStream calls held back by the stream-creation rate limit (delay mode).",
	})
	l.activeG = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "bqstore_quota_active_streams",
		Help: "Active application-created write streams counted against the quota, by project.",
	}, []string{"project"})
	if opts.Registerer != nil {
		opts.Registerer.MustRegister(l.rejections, l.delayed, l.activeG)
	}
	l.mu.active = make(map[string]map[string]struct{})
	l.mu.reserved = make(map[string]int)
	l.mu.create = make(map[string]*bucket)
	l.mu.throughput = make(map[string]*bucket)
	return l
}

// activeLocked returns project p's active set. REQUIRES: l.mu held.
func (l *Limiter) activeLocked(p string) map[string]struct{} {
	m := l.mu.active[p]
	if m == nil {
		m = make(map[string]struct{})
		l.mu.active[p] = m
	}
	return m
}

// Active is the number of active streams counted for project p.
func (l *Limiter) Active(p string) int {
	if l.count != nil {
		return l.count(p)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.mu.active[p])
}

// bucket is a token bucket: tokens refill at rate per second up to burst.
// A request is admitted when the bucket holds its cost, or, for a request
// larger than the burst, when the bucket is full; it then takes its cost,
// possibly into debt, which is repaid before the next request passes.
type bucket struct {
	rate, burst, tokens float64
	last                time.Time
}

func newBucket(rate, burst float64, now time.Time) *bucket {
	return &bucket{rate: rate, burst: burst, tokens: burst, last: now}
}

func (b *bucket) refill(now time.Time) {
	if dt := now.Sub(b.last).Seconds(); dt > 0 {
		b.tokens = min(b.burst, b.tokens+dt*b.rate)
		b.last = now
	}
}

// take admits cost if the bucket holds min(cost, burst) tokens.
func (b *bucket) take(cost float64, now time.Time) bool {
	b.refill(now)
	if b.tokens < min(cost, b.burst) {
		return false
	}
	b.tokens -= cost
	return true
}

// reserve takes cost unconditionally and returns how long the caller must
// wait for the bucket to be out of debt (delay mode).
func (b *bucket) reserve(cost float64, now time.Time) time.Duration {
	b.refill(now)
	b.tokens -= cost
	if b.tokens >= 0 {
		return 0
	}
	return time.Duration(-b.tokens / b.rate * float64(time.Second))
}

// UnaryServerInterceptor enforces the stream quotas on CreateWriteStream
// and counts finalized streams.
func (l *Limiter) UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		switch r := req.(type) {
		case *storagepb.CreateWriteStreamRequest:
			return l.createWriteStream(ctx, r, handler)
		case *storagepb.FinalizeWriteStreamRequest:
			resp, err := handler(ctx, req)
			if err == nil && l.limits.MaxActiveStreams > 0 {
				if ws, perr := resource.ParseWriteStream("name", r.GetName()); perr == nil {
					l.release(ws.Project, ws.String())
				}
			}
			return resp, err
		}
		return handler(ctx, req)
	}
}

func (l *Limiter) createWriteStream(ctx context.Context, r *storagepb.CreateWriteStreamRequest, handler grpc.UnaryHandler) (any, error) {
	t, err := resource.ParseTable("parent", r.GetParent())
	if err != nil {
		return handler(ctx, r) // the service names the bad field
	}
	if l.limits.CreateStreamRate > 0 {
		burst := float64(l.limits.CreateStreamBurst)
		if burst <= 0 {
			burst = max(1, l.limits.CreateStreamRate)
		}
		l.mu.Lock()
		now := l.now()
		b := l.mu.create[t.Project]
		if b == nil {
			b = newBucket(l.limits.CreateStreamRate, burst, now)
			l.mu.create[t.Project] = b
		}
		var wait time.Duration
		ok := true
		if l.limits.CreateStreamDelay {
			wait = b.reserve(1, now)
		} else {
			ok = b.take(1, now)
		}
		l.mu.Unlock()
		if !ok {
			l.rejections.WithLabelValues(QuotaCreateStreamRate).Inc()
			return nil, CreateWriteStreamError(t.Project, r.GetParent())
		}
		if wait > 0 {
			l.delayed.Inc()
			tm := time.NewTimer(wait)
			select {
			case <-tm.C:
			case <-ctx.Done():
				tm.Stop()
				return nil, status.FromContextError(ctx.Err()).Err()
			}
		}
	}
	if l.limits.MaxActiveStreams <= 0 {
		return handler(ctx, r)
	}
	// The engine's count is taken outside l.mu (it walks the project's
	// tables); calls admitted meanwhile are in reserved, and a stream
	// created between the count and the check is counted in both, which
	// errs on the side of the limit.
	counted := -1
	if l.count != nil {
		counted = l.count(t.Project)
	}
	l.mu.Lock()
	if counted < 0 {
		counted = len(l.mu.active[t.Project])
	}
	n := counted + l.mu.reserved[t.Project]
	if n >= l.limits.MaxActiveStreams {
		l.mu.Unlock()
		l.rejections.WithLabelValues(QuotaActiveStreams).Inc()
		return nil, ActiveStreamsError(t.Project, r.GetParent(), n, l.limits.MaxActiveStreams)
	}
	l.mu.reserved[t.Project]++
	l.mu.Unlock()
	resp, err := handler(ctx, r)
	l.mu.Lock()
	l.mu.reserved[t.Project]--
	if ws, ok := resp.(*storagepb.WriteStream); ok && err == nil && l.count == nil {
		l.activeLocked(t.Project)[canonical(ws.GetName())] = struct{}{}
	}
	l.mu.Unlock()
	l.activeG.WithLabelValues(t.Project).Set(float64(l.Active(t.Project)))
	return resp, err
}

// canonical is a write stream's resource name as resource forms it (the
// key of the active sets).
func canonical(name string) string {
	ws, err := resource.ParseWriteStream("name", name)
	if err != nil {
		return name
	}
	return ws.String()
}

func (l *Limiter) release(project, name string) {
	l.mu.Lock()
	delete(l.mu.active[project], name)
	l.mu.Unlock()
	l.activeG.WithLabelValues(project).Set(float64(l.Active(project)))
}

// StreamServerInterceptor enforces the AppendRows throughput limits.
func (l *Limiter) StreamServerInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if info.FullMethod != storagepb.BigQueryWrite_AppendRows_FullMethodName ||
			(l.limits.ConnBytesPerSec <= 0 && l.limits.ProjectBytesPerSec <= 0) {
			return handler(srv, ss)
		}
		ts := &throttledStream{ServerStream: ss, l: l}
		err := handler(srv, ts)
		if ts.err != nil {
			return ts.err
		}
		return err
	}
}

// throttledStream is an AppendRows stream under throughput limits. Its
// fields belong to the handler's receiving goroutine.
type throttledStream struct {
	grpc.ServerStream
	l      *Limiter
	conn   *bucket
	stream string
	ws     resource.WriteStream
	err    error
}

func (ts *throttledStream) RecvMsg(m any) error {
	if ts.err != nil {
		return ts.err
	}
	if err := ts.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	req, ok := m.(*storagepb.AppendRowsRequest)
	if !ok {
		return nil
	}
	if name := req.GetWriteStream(); name != "" && name != ts.stream {
		ts.stream = name
		ts.ws, _ = resource.ParseWriteStream("write_stream", name)
	}
	cost := float64(proto.Size(req))
	l := ts.l
	now := l.now()
	if l.limits.ConnBytesPerSec > 0 {
		if ts.conn == nil {
			r := float64(l.limits.ConnBytesPerSec)
			ts.conn = newBucket(r, r, now)
		}
		if !ts.conn.take(cost, now) {
			l.rejections.WithLabelValues(QuotaConnThroughput).Inc()
			ts.err = AppendRowsThroughputError(ts.ws.Project, ts.stream)
			return ts.err
		}
	}
	if l.limits.ProjectBytesPerSec > 0 {
		l.mu.Lock()
		b := l.mu.throughput[ts.ws.Project]
		if b == nil {
			r := float64(l.limits.ProjectBytesPerSec)
			b = newBucket(r, r, now)
			l.mu.throughput[ts.ws.Project] = b
		}
		ok := b.take(cost, now)
		l.mu.Unlock()
		if !ok {
			l.rejections.WithLabelValues(QuotaProjectThroughput).Inc()
			ts.err = AppendRowsThroughputError(ts.ws.Project, ts.stream)
			return ts.err
		}
	}
	return nil
}
