package readapi_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc/codes"

	"github.com/bqstore/bqstore/internal/server"
	"github.com/bqstore/bqstore/internal/testkit"
)

// gauge returns the value of a gauge of the server's registry.
func (e *env) gauge(name string) float64 {
	e.t.Helper()
	mfs, err := e.srv.Registry().Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && mf.GetType() == dto.MetricType_GAUGE && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	e.t.Fatalf("no gauge %s", name)
	return 0
}

// readAll reads every stream of a session and returns the row count.
func (e *env) readAll(sess *storagepb.ReadSession) int64 {
	e.t.Helper()
	var n int64
	for _, st := range sess.GetStreams() {
		k, err := e.readStream(st.GetName(), 0)
		if err != nil {
			e.t.Fatalf("read %s: %v", st.GetName(), err)
		}
		n += k
	}
	return n
}

// TestReadSessionSurvivesRestart: a session, its streams and the streams
// split from them are readable after a restart, at the same snapshot
// (rows appended after it stay invisible), from an offset as the client
// resumes. Before, every call answered NOT_FOUND after a restart.
func TestReadSessionSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	small := func(c *server.Config) { c.Read.MinStreamBytes = 1 }
	e := newEnvDir(t, dir, small)
	tp := e.fill("t", 1000)
	sess, err := e.session(tp, 2, &storagepb.ReadSession_TableReadOptions{RowRestriction: "id >= 100", SelectedFields: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(sess.GetStreams()) != 2 {
		t.Fatalf("%d streams, want 2", len(sess.GetStreams()))
	}
	s0, s1 := sess.GetStreams()[0].GetName(), sess.GetStreams()[1].GetName()
	n0, err := e.readStream(s0, 0)
	if err != nil {
		t.Fatal(err)
	}
	n1, err := e.readStream(s1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n0+n1 != 900 {
		t.Fatalf("read %d+%d rows, want 900", n0, n1)
	}
	split, err := e.rc.SplitReadStream(e.ctx, &storagepb.SplitReadStreamRequest{Name: s1, Fraction: 0.5})
	if err != nil || split.GetPrimaryStream() == nil {
		t.Fatalf("split: %v %v", split, err)
	}
	e.fill("t2", 10) // more writes, in another table
	e.srv.Stop(t)

	e = newEnvDir(t, dir, small)
	// Rows appended after the snapshot must not show.
	e.fill("t3", 5)
	for _, tc := range []struct {
		name   string
		offset int64
		want   int64
	}{
		{s0, 0, n0}, {s0, 7, n0 - 7}, {s1, 0, n1}, {s1, n1, 0},
	} {
		got, err := e.readStream(tc.name, tc.offset)
		if err != nil {
			t.Fatalf("after restart, ReadRows(%s, %d): %v (code %v)", tc.name, tc.offset, err, code(err))
		}
		if got != tc.want {
			t.Fatalf("after restart, ReadRows(%s, %d): %d rows, want %d", tc.name, tc.offset, got, tc.want)
		}
	}
	a, err := e.readStream(split.GetPrimaryStream().GetName(), 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.readStream(split.GetRemainderStream().GetName(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if a+b != n1 {
		t.Fatalf("split streams hold %d+%d rows after restart, want %d", a, b, n1)
	}
}

// TestReadSessionsPerProjectCap: past the cap, CreateReadSession is
// RESOURCE_EXHAUSTED (not retried by the read client).
func TestReadSessionsPerProjectCap(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.Read.MaxSessionsPerProject = 3 })
	tp := e.fill("t", 10)
	for i := 0; i < 3; i++ {
		if _, err := e.session(tp, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	_, err := e.session(tp, 1, nil)
	if c := code(err); c != codes.ResourceExhausted {
		t.Fatalf("4th session: got %v (%v), want ResourceExhausted", c, err)
	}
}

// TestReadSessionMemoryBound: open sessions never hold more than the
// memory bound (idle ones are closed to make room, and re-opened when
// read, reading the same rows), and a session whose streams have all been
// read releases its snapshot and filter.
func TestReadSessionMemoryBound(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.Read.MaxSessionMemory = 1 })
	tp := e.fill("t", 500)
	var sessions []*storagepb.ReadSession
	for i := 0; i < 5; i++ {
		sess, err := e.session(tp, 1, &storagepb.ReadSession_TableReadOptions{RowRestriction: "id < 300"})
		if err != nil {
			t.Fatal(err)
		}
		if open := e.gauge("bqstore_read_sessions_open"); open != 1 {
			t.Fatalf("after %d sessions: %v open, want 1", i+1, open)
		}
		sessions = append(sessions, sess)
	}
	e.fill("t_later", 1)
	for i, sess := range sessions {
		if n := e.readAll(sess); n != 300 {
			t.Fatalf("session %d: %d rows, want 300", i, n)
		}
		// Fully read and no reader: released.
		if open, b := e.gauge("bqstore_read_sessions_open"), e.gauge("bqstore_read_sessions_open_bytes"); open != 0 || b != 0 {
			t.Fatalf("session %d read to the end: %v sessions open holding %v bytes, want 0", i, open, b)
		}
	}
	if live := e.gauge("bqstore_read_sessions"); live != 5 {
		t.Fatalf("%v live sessions, want 5 (closed is not gone)", live)
	}
}

// TestSplitReadStreamBounded: splitting stops (an empty response, "can no
// longer be split") at the per-session stream bound, and splitting at the
// same point again returns the same streams instead of new ones.
func TestSplitReadStreamBounded(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.Read.MaxStreamsPerSession = 50 })
	tp := e.fill("t", 5000)
	sess, err := e.session(tp, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	name := sess.GetStreams()[0].GetName()
	first, err := e.rc.SplitReadStream(e.ctx, &storagepb.SplitReadStreamRequest{Name: name, Fraction: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	again, err := e.rc.SplitReadStream(e.ctx, &storagepb.SplitReadStreamRequest{Name: name, Fraction: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if first.GetPrimaryStream().GetName() != again.GetPrimaryStream().GetName() || first.GetRemainderStream().GetName() != again.GetRemainderStream().GetName() {
		t.Fatalf("the same split gave new streams: %v then %v", first, again)
	}
	streams := 3
	cur := first.GetRemainderStream().GetName()
	for i := 0; ; i++ {
		if i > 5000 {
			t.Fatal("SplitReadStream never stops")
		}
		resp, err := e.rc.SplitReadStream(e.ctx, &storagepb.SplitReadStreamRequest{Name: cur, Fraction: 0.001})
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetPrimaryStream() == nil {
			break
		}
		streams += 2
		cur = resp.GetRemainderStream().GetName()
	}
	if streams > 50 {
		t.Fatalf("%d streams in the session, bound 50", streams)
	}
	// Every stream still reads.
	if _, err := e.readStream(cur, 0); err != nil {
		t.Fatal(err)
	}
}

// TestReadSessionPastTimeTravelWindow: a session re-opened after its
// snapshot left a (short) time-travel window cannot be read: that is
// FAILED_PRECONDITION, as for an expired session, not the caller's
// INVALID_ARGUMENT.
func TestReadSessionPastTimeTravelWindow(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	var mu sync.Mutex
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	cfg := func(c *server.Config) {
		c.Storage.TimeTravel = time.Hour
		c.Storage.Clock = clock
		c.Read.Clock = clock
	}
	e := newEnvDir(t, dir, cfg)
	tp := e.fill("t", 10)
	sess, err := e.session(tp, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.srv.Stop(t)
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	e = newEnvDir(t, dir, cfg)
	_, err = e.readStream(sess.GetStreams()[0].GetName(), 0)
	if c := code(err); c != codes.FailedPrecondition {
		t.Fatalf("ReadRows past the time-travel window: got %v (%v), want FailedPrecondition", c, err)
	}
}

// TestReadSessionSurvivesKill9: a session acknowledged to the client is
// durable: after kill -9 and a restart its streams read the same rows.
func TestReadSessionSurvivesKill9(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := testkit.StartChild(t, dir)
	e := dialEnv(t, ctx, c.GRPCAddr, c.HTTPAddr)
	tp := e.fill("t", 300)
	sess, err := e.session(tp, 1, &storagepb.ReadSession_TableReadOptions{RowRestriction: "id < 200"})
	if err != nil {
		t.Fatal(err)
	}
	c.Kill()

	c = testkit.StartChild(t, dir)
	e = dialEnv(t, ctx, c.GRPCAddr, c.HTTPAddr)
	e.fill("t2", 1)
	n, err := e.readStream(sess.GetStreams()[0].GetName(), 0)
	if err != nil {
		t.Fatalf("after kill -9: %v (code %v)", err, code(err))
	}
	if n != 200 {
		t.Fatalf("after kill -9: %d rows, want 200", n)
	}
	c.Kill()
}
