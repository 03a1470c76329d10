package ingest

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Backoff is capped exponential backoff with full jitter: the n-th wait is
// uniform in [0, min(Max, Base·2^n)).
type Backoff struct {
	Base, Max time.Duration
	// Rand returns a uniform float in [0, 1); nil uses math/rand/v2.
	Rand func() float64
}

// Delay returns the wait before retry number attempt (0-based).
func (b Backoff) Delay(attempt int) time.Duration {
	base, maxD := b.Base, b.Max
	if base <= 0 {
		base = 100 * time.Millisecond
	}
	if maxD <= 0 {
		maxD = 10 * time.Second
	}
	ceil := maxD
	if attempt < 40 {
		if c := base << uint(attempt); c > 0 && c < maxD {
			ceil = c
		}
	}
	r := rand.Float64
	if b.Rand != nil {
		r = b.Rand
	}
	return time.Duration(r() * float64(ceil))
}

// Wait sleeps for Delay(attempt) or until ctx ends.
func (b Backoff) Wait(ctx context.Context, attempt int) error {
	t := time.NewTimer(b.Delay(attempt))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// retryable reports whether an RPC error is a quota or availability error
// worth retrying with backoff: RESOURCE_EXHAUSTED and UNAVAILABLE, plus
// ABORTED and INTERNAL, which the managedwriter client also retries.
func retryable(err error) bool {
	switch status.Code(err) {
	case codes.ResourceExhausted, codes.Unavailable, codes.Aborted, codes.Internal:
		return true
	}
	return false
}

// TokenBucket limits a rate (CreateWriteStream calls per second). It is safe
// for concurrent use. A rate of math.Inf(1) never waits.
type TokenBucket struct {
	mu     sync.Mutex
	rate   float64 // tokens per second
	burst  float64
	tokens float64
	last   time.Time
	now    func() time.Time
}

// NewTokenBucket allows rate events per second with bursts of burst.
func NewTokenBucket(rate float64, burst int) *TokenBucket {
	return &TokenBucket{rate: rate, burst: float64(burst), tokens: float64(burst), now: time.Now}
}

// reserve takes a token and returns how long the caller must wait before
// using it.
func (tb *TokenBucket) reserve() time.Duration {
	if math.IsInf(tb.rate, 1) {
		return 0 // unlimited (tokens would turn NaN: Inf times no time passed)
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	now := tb.now()
	if !tb.last.IsZero() {
		tb.tokens += now.Sub(tb.last).Seconds() * tb.rate
		if tb.tokens > tb.burst {
			tb.tokens = tb.burst
		}
	}
	tb.last = now
	tb.tokens--
	if tb.tokens >= 0 {
		return 0
	}
	return time.Duration(-tb.tokens / tb.rate * float64(time.Second))
}

// Wait blocks until a token is available or ctx ends.
func (tb *TokenBucket) Wait(ctx context.Context) error {
	d := tb.reserve()
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// leaseOver reports whether err ended a batch because its lease ran out:
// the lease's context is done, or its deadline has passed, or err is a
// deadline. After a pause (GC, SIGSTOP, a stalled VM) gRPC can fail a call
// with DEADLINE_EXCEEDED before the lease's own timer has closed its
// context; that batch is abandoned and replayed like any other whose
// lease ran out, it does not stop the run.
func leaseOver(lease context.Context, err error) bool {
	if lease.Err() != nil {
		return true
	}
	if dl, ok := lease.Deadline(); ok && !time.Now().Before(dl) {
		return true
	}
	return errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded
}
