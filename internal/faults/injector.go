// Package faults injects failures into the Storage API as gRPC
// interceptors in front of the services: broken and stalled AppendRows
// connections, lost acknowledgements, lost commit replies, quota storms and
// broken ReadRows streams (docs/faults.md).
//
// The interceptors see every request and response; the services do not
// know about them. A fault fires on a call that matches its scope when its
// trigger says so. Triggers are deterministic: each fault owns a PRNG
// seeded from the injector's seed and its position in the spec, advanced
// once per matching call, and a counter of matching calls; the same seed
// and the same sequence of calls fire the same faults. (Time windows are the
// exception: they depend on when calls arrive.)
//
// Goroutine lifetimes: an AppendRows connection opened while faults are
// installed gets one receiver goroutine (appendStream.pump), so that a
// fault can end the connection while the service waits for the client's
// next request. It exits when the RPC ends.
package faults

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bqstore/bqstore/internal/resource"
)

// StreamTypes resolves a write stream's type for stream_type scopes. The
// server satisfies it with the engine; without it only _default is known.
type StreamTypes interface {
	// WriteStreamType returns _default, COMMITTED, PENDING or BUFFERED.
	WriteStreamType(ctx context.Context, ws resource.WriteStream) (string, error)
}

// Options configure an Injector. The zero value of each field means its
// default.
type Options struct {
	// Logger receives one line per injected fault. Default: discard.
	Logger *slog.Logger
	// Registerer receives bqstore_faults_injected_total. Default: none.
	Registerer prometheus.Registerer
	// Now is the clock for time windows. Default: time.Now.
	Now func() time.Time
	// StreamTypes resolves stream types for stream_type scopes.
	StreamTypes StreamTypes
}

// Injector holds the installed faults and their trigger state. It is safe
// for concurrent use.
type Injector struct {
	log      *slog.Logger
	now      func() time.Time
	types    StreamTypes
	injected *prometheus.CounterVec

	// armed is set once any fault has been installed: from then on new
	// AppendRows connections get a receiver goroutine (see the package
	// comment). Connections opened before are passed through untouched.
	armed atomic.Bool
	// nfaults is len(mu.spec.Faults), read without the lock on hot paths.
	nfaults atomic.Int64
	// conns numbers RPCs for the log (the "conn" attribute).
	conns atomic.Int64

	mu struct {
		sync.Mutex
		seed      uint64
		spec      Spec
		state     []faultState // parallel to spec.Faults
		installed time.Time
	}

	sessions sessionTables
}

type faultState struct {
	calls    int64 // matching calls so far
	injected int64
	rng      *rand.Rand
	scope    tableScope
}

// New returns an injector with no faults installed.
func New(opts Options) *Injector {
	in := &Injector{log: opts.Logger, now: opts.Now, types: opts.StreamTypes}
	if in.log == nil {
		in.log = slog.New(slog.DiscardHandler)
	}
	if in.now == nil {
		in.now = time.Now
	}
	in.injected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bqstore_faults_injected_total",
		Help: "Faults injected by kind (docs/faults.md).",
	}, []string{"kind"})
	for _, k := range kinds {
		in.injected.WithLabelValues(string(k))
	}
	if opts.Registerer != nil {
		opts.Registerer.MustRegister(in.injected)
	}
	in.sessions.m = make(map[string]string)
	in.mu.installed = in.now()
	return in
}

// Set validates spec and installs it with seed, replacing the installed
// faults and restarting every trigger: counters at zero, PRNGs reseeded,
// windows measured from now.
func (in *Injector) Set(spec Spec, seed int64) error {
	spec = Spec{Faults: append([]Fault(nil), spec.Faults...)}
	if err := spec.Validate(); err != nil {
		return err
	}
	state := make([]faultState, len(spec.Faults))
	for i, f := range spec.Faults {
		state[i].rng = rand.New(rand.NewPCG(uint64(seed), uint64(i)))
		if f.Table != "" {
			state[i].scope, _ = parseTableScope(f.Table)
		}
	}
	in.mu.Lock()
	in.mu.seed = uint64(seed)
	in.mu.spec = spec
	in.mu.state = state
	in.mu.installed = in.now()
	prev := in.nfaults.Swap(int64(len(spec.Faults)))
	in.mu.Unlock()
	if len(spec.Faults) > 0 {
		in.armed.Store(true)
	}
	switch {
	case len(spec.Faults) > 0:
		in.log.Info("faults installed", "seed", seed, "spec", spec.String())
	case prev > 0:
		in.log.Info("faults cleared")
	}
	return nil
}

// Status is the installed faults and what they have done.
type Status struct {
	Seed      int64     `json:"seed"`
	Faults    []Fault   `json:"faults"`
	Installed time.Time `json:"installed"`
	// Stats is parallel to Faults.
	Stats []Stat `json:"stats"`
}

// Stat counts one fault's matching calls and injections.
type Stat struct {
	Calls    int64 `json:"calls"`
	Injected int64 `json:"injected"`
}

// Status reports the installed faults.
func (in *Injector) Status() Status {
	in.mu.Lock()
	defer in.mu.Unlock()
	st := Status{
		Seed:      int64(in.mu.seed),
		Faults:    append([]Fault{}, in.mu.spec.Faults...),
		Installed: in.mu.installed,
		Stats:     make([]Stat, len(in.mu.state)),
	}
	for i, s := range in.mu.state {
		st.Stats[i] = Stat{Calls: s.calls, Injected: s.injected}
	}
	return st
}

// call describes one RPC call (or one AppendRows request) to the triggers.
type call struct {
	ctx    context.Context
	rpc    string
	table  resource.Table // zero when unknown
	stream string         // write or read stream name, for the log
	// streamType is resolved lazily, once per call, only when a matching
	// fault has a stream_type scope.
	streamType     string
	streamTypeFunc func() string
	conn, request  int64 // RPC ordinal and request ordinal within it (1-based)
}

func (c *call) typ() string {
	if c.streamTypeFunc != nil {
		c.streamType = c.streamTypeFunc()
		c.streamTypeFunc = nil
	}
	return c.streamType
}

// fired is a fault whose trigger fired on a call.
type fired struct {
	Fault
	index int   // position in the spec
	call  int64 // the fault's matching-call ordinal
	draw  float64
}

// fire advances the triggers of every installed fault whose kind is in
// want (and, for Quota, whose RPC is c.rpc) and whose scope matches c, and
// returns those that fire, in spec order. It counts them as injected; the
// caller applies and reports them (report).
func (in *Injector) fire(c *call, want ...Kind) []fired {
	if in.nfaults.Load() == 0 {
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	var out []fired
	elapsed := in.now().Sub(in.mu.installed)
	for i := range in.mu.spec.Faults {
		f := &in.mu.spec.Faults[i]
		if !wanted(f.Kind, want) || (f.Kind == Quota && f.RPC != c.rpc) {
			continue
		}
		s := &in.mu.state[i]
		if !s.scope.matches(c.table) {
			continue
		}
		if f.StreamType != "" && f.StreamType != c.typ() {
			continue
		}
		s.calls++
		u := s.rng.Float64() // advanced once per matching call, fired or not
		if elapsed < time.Duration(f.From) || (f.For > 0 && elapsed >= time.Duration(f.From+f.For)) {
			continue
		}
		if f.Every > 1 && s.calls%f.Every != 0 {
			continue
		}
		if f.Probability > 0 && u >= f.Probability {
			continue
		}
		if f.Times > 0 && s.injected >= f.Times {
			continue
		}
		s.injected++
		out = append(out, fired{Fault: *f, index: i, call: s.calls, draw: u})
	}
	return out
}

func wanted(k Kind, want []Kind) bool {
	for _, w := range want {
		if k == w {
			return true
		}
	}
	return false
}

func (s tableScope) matches(t resource.Table) bool {
	if s.table == "" {
		return true
	}
	return s.table == t.Table && s.dataset == t.Dataset && (s.project == "" || s.project == t.Project)
}

// report counts an injected fault on /metrics and logs it with what a
// client's error can be correlated by.
func (in *Injector) report(f fired, c *call, effect string, attrs ...any) {
	in.injected.WithLabelValues(string(f.Kind)).Inc()
	table := ""
	if c.table.Table != "" {
		table = c.table.String()
	}
	in.log.Warn("fault injected", append([]any{
		"kind", string(f.Kind), "effect", effect, "rpc", c.rpc, "table", table, "stream", c.stream,
		"conn", c.conn, "request", c.request, "fault", f.index + 1, "fault_call", f.call,
	}, attrs...)...)
}

// latency samples an AppendLatency fault's distribution with the draw
// that fired it, so that the delay too is reproducible.
func (f fired) latency() time.Duration {
	switch f.Dist {
	case DistUniform:
		// Reuse the draw: it is uniform in [0, p) given that it fired; map
		// it back onto [0, 1).
		u := f.draw
		if f.Probability > 0 {
			u /= f.Probability
		}
		return time.Duration(f.Min) + time.Duration(u*float64(f.Max-f.Min))
	case DistExponential:
		u := f.draw
		if f.Probability > 0 {
			u /= f.Probability
		}
		d := time.Duration(-math.Log1p(-u) * float64(f.Mean))
		if f.Max > 0 && d > time.Duration(f.Max) {
			d = time.Duration(f.Max)
		}
		return d
	}
	return time.Duration(f.Mean)
}

// sessionTables remembers which table each read session reads (from
// CreateReadSession), so that read.reset can be scoped by table. It keeps
// the most recent maxSessions sessions.
type sessionTables struct {
	mu    sync.Mutex
	m     map[string]string
	order []string
}

const maxSessions = 4096

func (s *sessionTables) put(session, table string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[session]; ok {
		return
	}
	if len(s.order) >= maxSessions {
		delete(s.m, s.order[0])
		s.order = s.order[1:]
	}
	s.m[session] = table
	s.order = append(s.order, session)
}

func (s *sessionTables) get(session string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[session]
}

func (in *Injector) String() string {
	st := in.Status()
	return fmt.Sprintf("seed=%d %s", st.Seed, Spec{Faults: st.Faults})
}
