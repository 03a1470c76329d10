package faults

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
)

// Kind names a fault.
type Kind string

// The fault kinds (docs/faults.md describes each one's effect).
const (
	// AppendReset breaks an AppendRows connection: before the request's
	// rows reach the engine (When "before": nothing written) or after they
	// are durable, dropping the acknowledgement (When "after").
	AppendReset Kind = "append.reset"
	// AppendStall holds the responses of a connection for Duration.
	AppendStall Kind = "append.stall"
	// AppendLatency delays one response by a sample of a distribution.
	AppendLatency Kind = "append.latency"
	// CommitDropReply commits, then answers UNAVAILABLE.
	CommitDropReply Kind = "commit.drop_reply"
	// CommitFail fails BatchCommitWriteStreams before anything is committed.
	CommitFail Kind = "commit.fail"
	// FinalizeDropReply finalizes, then answers UNAVAILABLE.
	FinalizeDropReply Kind = "finalize.drop_reply"
	// FinalizeFail fails FinalizeWriteStream before it runs.
	FinalizeFail Kind = "finalize.fail"
	// FlushDropReply flushes, then answers UNAVAILABLE.
	FlushDropReply Kind = "flush.drop_reply"
	// FlushFail fails FlushRows before it runs.
	FlushFail Kind = "flush.fail"
	// Quota answers CreateWriteStream or AppendRows (RPC) with
	// RESOURCE_EXHAUSTED and the real service's message.
	Quota Kind = "quota"
	// ReadReset breaks a ReadRows stream after Messages responses.
	ReadReset Kind = "read.reset"
)

var kinds = []Kind{AppendReset, AppendStall, AppendLatency, CommitDropReply, CommitFail,
	FinalizeDropReply, FinalizeFail, FlushDropReply, FlushFail, Quota, ReadReset}

// RPC method names a fault may be scoped to.
const (
	RPCCreateWriteStream = "CreateWriteStream"
	RPCAppendRows        = "AppendRows"
)

// Distributions of AppendLatency.
const (
	DistFixed       = "fixed"
	DistUniform     = "uniform"
	DistExponential = "exponential"
)

// Duration is a time.Duration written as Go duration text ("250ms") in
// JSON.
type Duration time.Duration

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration string ("1.5s").
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string such as \"250ms\", got %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Fault is one injected failure: a kind, a trigger, a scope and the kind's
// parameters. The zero value of each trigger and scope field means "any".
type Fault struct {
	Kind Kind `json:"kind"`

	// Trigger. A call that matches the scope fires the fault when all of
	// these hold: it is in the window [From, From+For) measured from when
	// the faults were installed (For 0: no end); it is the Every-th
	// matching call (0 or 1: every call); a draw from the fault's PRNG is
	// below Probability (0 means 1); fewer than Times injections so far (0:
	// no limit).
	Probability float64  `json:"probability,omitempty"`
	Every       int64    `json:"every,omitempty"`
	From        Duration `json:"from,omitempty"`
	For         Duration `json:"for,omitempty"`
	Times       int64    `json:"times,omitempty"`

	// Scope. Table is "dataset.table", "project.dataset.table" or a
	// table's resource name. StreamType is _default, COMMITTED, PENDING or
	// BUFFERED (AppendRows, FinalizeWriteStream, FlushRows). RPC selects
	// CreateWriteStream or AppendRows for Quota (default AppendRows).
	Table      string `json:"table,omitempty"`
	StreamType string `json:"stream_type,omitempty"`
	RPC        string `json:"rpc,omitempty"`

	// When is "before" (default) or "after" for AppendReset.
	When string `json:"when,omitempty"`
	// Duration is AppendStall's hold (default 30s).
	Duration Duration `json:"duration,omitempty"`
	// Dist, Min, Max and Mean describe AppendLatency's distribution:
	// fixed (Mean), uniform (Min..Max) or exponential (Mean, capped at Max
	// when set).
	Dist string   `json:"dist,omitempty"`
	Min  Duration `json:"min,omitempty"`
	Max  Duration `json:"max,omitempty"`
	Mean Duration `json:"mean,omitempty"`
	// Messages is how many ReadRows responses go out before ReadReset
	// breaks the stream (default 1).
	Messages int64 `json:"messages,omitempty"`
	// Code is the gRPC code the *.fail kinds answer (default UNAVAILABLE).
	Code string `json:"code,omitempty"`
}

// Spec is a set of faults, in the order they are evaluated.
type Spec struct {
	Faults []Fault `json:"faults"`
}

// Parse reads a spec in either form (docs/faults.md):
//
//	JSON: {"faults":[{"kind":"append.reset","when":"after","every":3}]} or a bare array
//	text: append.reset:when=after,every=3;commit.drop_reply:p=0.5,table=d.t
//
// An empty string is an empty spec. The result is validated.
func Parse(s string) (Spec, error) {
	s = strings.TrimSpace(s)
	var spec Spec
	switch {
	case s == "":
	case s[0] == '{':
		dec := json.NewDecoder(strings.NewReader(s))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&spec); err != nil {
			return Spec{}, fmt.Errorf("faults: JSON spec: %w", err)
		}
	case s[0] == '[':
		dec := json.NewDecoder(strings.NewReader(s))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&spec.Faults); err != nil {
			return Spec{}, fmt.Errorf("faults: JSON spec: %w", err)
		}
	default:
		var err error
		if spec, err = parseText(s); err != nil {
			return Spec{}, err
		}
	}
	if err := spec.Validate(); err != nil {
		return Spec{}, err
	}
	return spec, nil
}

func parseText(s string) (Spec, error) {
	var spec Spec
	for i, item := range strings.Split(s, ";") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		kind, params, _ := strings.Cut(item, ":")
		f := Fault{Kind: Kind(strings.TrimSpace(kind))}
		if params = strings.TrimSpace(params); params != "" {
			for _, kv := range strings.Split(params, ",") {
				k, v, ok := strings.Cut(kv, "=")
				k, v = strings.TrimSpace(k), strings.TrimSpace(v)
				if !ok || k == "" {
					return Spec{}, fmt.Errorf("faults: fault %d (%s): parameter %q is not key=value", i+1, kind, kv)
				}
				if err := f.set(k, v); err != nil {
					return Spec{}, fmt.Errorf("faults: fault %d (%s): %s: %w", i+1, kind, k, err)
				}
			}
		}
		spec.Faults = append(spec.Faults, f)
	}
	return spec, nil
}

func (f *Fault) set(k, v string) error {
	dur := func(d *Duration) error {
		x, err := time.ParseDuration(v)
		*d = Duration(x)
		return err
	}
	integer := func(n *int64) error {
		x, err := strconv.ParseInt(v, 10, 64)
		*n = x
		return err
	}
	switch k {
	case "p", "probability":
		x, err := strconv.ParseFloat(v, 64)
		f.Probability = x
		return err
	case "every":
		return integer(&f.Every)
	case "from":
		return dur(&f.From)
	case "for":
		return dur(&f.For)
	case "times":
		return integer(&f.Times)
	case "table":
		f.Table = v
	case "stream_type", "type":
		f.StreamType = v
	case "rpc":
		f.RPC = v
	case "when":
		f.When = v
	case "duration":
		return dur(&f.Duration)
	case "dist":
		f.Dist = v
	case "min":
		return dur(&f.Min)
	case "max":
		return dur(&f.Max)
	case "mean":
		return dur(&f.Mean)
	case "messages":
		return integer(&f.Messages)
	case "code":
		f.Code = v
	default:
		return fmt.Errorf("unknown parameter")
	}
	return nil
}

// Validate checks every fault and fills in defaults.
func (s *Spec) Validate() error {
	for i := range s.Faults {
		if err := s.Faults[i].validate(); err != nil {
			return fmt.Errorf("faults: fault %d (%s): %w", i+1, s.Faults[i].Kind, err)
		}
	}
	return nil
}

func (f *Fault) validate() error {
	known := false
	for _, k := range kinds {
		known = known || f.Kind == k
	}
	if !known {
		names := make([]string, len(kinds))
		for i, k := range kinds {
			names[i] = string(k)
		}
		return fmt.Errorf("unknown kind %q (%s)", f.Kind, strings.Join(names, ", "))
	}
	if f.Probability < 0 || f.Probability > 1 || math.IsNaN(f.Probability) {
		return fmt.Errorf("probability %v is not in [0, 1]", f.Probability)
	}
	if f.Every < 0 || f.Times < 0 || f.Messages < 0 {
		return fmt.Errorf("every, times and messages must not be negative")
	}
	if f.From < 0 || f.For < 0 || f.Duration < 0 || f.Min < 0 || f.Max < 0 || f.Mean < 0 {
		return fmt.Errorf("durations must not be negative")
	}
	if f.Table != "" {
		if _, err := parseTableScope(f.Table); err != nil {
			return err
		}
	}
	if f.StreamType != "" {
		t, ok := normalizeStreamType(f.StreamType)
		if !ok {
			return fmt.Errorf("stream_type %q is not _default, COMMITTED, PENDING or BUFFERED", f.StreamType)
		}
		switch f.Kind {
		case AppendReset, AppendStall, AppendLatency, FinalizeDropReply, FinalizeFail, FlushDropReply, FlushFail, Quota:
		default:
			return fmt.Errorf("stream_type does not apply to %s", f.Kind)
		}
		f.StreamType = t
	}
	switch f.Kind {
	case Quota:
		switch f.RPC {
		case "":
			f.RPC = RPCAppendRows
		case RPCAppendRows, RPCCreateWriteStream:
		default:
			return fmt.Errorf("rpc %q: quota storms apply to %s or %s", f.RPC, RPCCreateWriteStream, RPCAppendRows)
		}
	default:
		if f.RPC != "" && f.RPC != f.Kind.rpc() {
			return fmt.Errorf("rpc %q: %s applies to %s only", f.RPC, f.Kind, f.Kind.rpc())
		}
	}
	switch f.Kind {
	case AppendReset:
		switch f.When {
		case "":
			f.When = "before"
		case "before", "after":
		default:
			return fmt.Errorf("when %q is not before or after", f.When)
		}
	case AppendStall:
		if f.Duration == 0 {
			f.Duration = Duration(30 * time.Second)
		}
	case AppendLatency:
		switch f.Dist {
		case "", DistFixed:
			f.Dist = DistFixed
			if f.Mean == 0 {
				return fmt.Errorf("fixed latency needs mean")
			}
		case DistUniform:
			if f.Max <= f.Min {
				return fmt.Errorf("uniform latency needs min < max")
			}
		case DistExponential:
			if f.Mean == 0 {
				return fmt.Errorf("exponential latency needs mean")
			}
		default:
			return fmt.Errorf("dist %q is not fixed, uniform or exponential", f.Dist)
		}
	case ReadReset:
		if f.Messages == 0 {
			f.Messages = 1
		}
	case CommitFail, FinalizeFail, FlushFail:
		if f.Code == "" {
			f.Code = codeUpper(codes.Unavailable)
		}
		c, ok := codeByName(f.Code)
		if !ok || c == codes.OK {
			return fmt.Errorf("code %q is not a gRPC error code name such as UNAVAILABLE", f.Code)
		}
		f.Code = codeUpper(c)
	}
	if f.Code != "" && f.Kind != CommitFail && f.Kind != FinalizeFail && f.Kind != FlushFail {
		return fmt.Errorf("code applies to the *.fail kinds only")
	}
	return nil
}

// rpc is the method a kind applies to (Quota: f.RPC).
func (k Kind) rpc() string {
	switch k {
	case AppendReset, AppendStall, AppendLatency:
		return RPCAppendRows
	case CommitDropReply, CommitFail:
		return "BatchCommitWriteStreams"
	case FinalizeDropReply, FinalizeFail:
		return "FinalizeWriteStream"
	case FlushDropReply, FlushFail:
		return "FlushRows"
	case ReadReset:
		return "ReadRows"
	}
	return ""
}

// String writes the spec in the text form (Parse reads it back).
func (s Spec) String() string {
	var b bytes.Buffer
	for i, f := range s.Faults {
		if i > 0 {
			b.WriteByte(';')
		}
		b.WriteString(string(f.Kind))
		sep := byte(':')
		add := func(k, v string) {
			b.WriteByte(sep)
			sep = ','
			b.WriteString(k + "=" + v)
		}
		d := func(k string, v Duration) {
			if v != 0 {
				add(k, time.Duration(v).String())
			}
		}
		n := func(k string, v int64) {
			if v != 0 {
				add(k, strconv.FormatInt(v, 10))
			}
		}
		if f.Probability != 0 {
			add("p", strconv.FormatFloat(f.Probability, 'g', -1, 64))
		}
		n("every", f.Every)
		d("from", f.From)
		d("for", f.For)
		n("times", f.Times)
		for _, kv := range [][2]string{{"table", f.Table}, {"stream_type", f.StreamType}, {"rpc", f.RPC}, {"when", f.When}} {
			if kv[1] != "" {
				add(kv[0], kv[1])
			}
		}
		d("duration", f.Duration)
		if f.Dist != "" {
			add("dist", f.Dist)
		}
		d("min", f.Min)
		d("max", f.Max)
		d("mean", f.Mean)
		n("messages", f.Messages)
		if f.Code != "" {
			add("code", f.Code)
		}
	}
	return b.String()
}

// tableScope is a parsed Table scope; an empty Project matches any.
type tableScope struct{ project, dataset, table string }

func parseTableScope(s string) (tableScope, error) {
	if strings.ContainsAny(s, ",;= \t\r\n") {
		return tableScope{}, fmt.Errorf("table %q has a character that is not in table names", s)
	}
	if strings.HasPrefix(s, "projects/") {
		p := strings.Split(s, "/")
		if len(p) == 6 && p[2] == "datasets" && p[4] == "tables" && p[1] != "" && p[3] != "" && p[5] != "" {
			return tableScope{p[1], p[3], p[5]}, nil
		}
		return tableScope{}, fmt.Errorf("table %q is not projects/{project}/datasets/{dataset}/tables/{table}", s)
	}
	p := strings.Split(s, ".")
	for _, x := range p {
		if x == "" {
			return tableScope{}, fmt.Errorf("table %q is not dataset.table or project.dataset.table", s)
		}
	}
	switch len(p) {
	case 2:
		return tableScope{"", p[0], p[1]}, nil
	case 3:
		return tableScope{p[0], p[1], p[2]}, nil
	}
	return tableScope{}, fmt.Errorf("table %q is not dataset.table or project.dataset.table", s)
}

func normalizeStreamType(s string) (string, bool) {
	switch strings.ToUpper(strings.TrimPrefix(s, "_")) {
	case "DEFAULT":
		return "_default", true
	case "COMMITTED":
		return "COMMITTED", true
	case "PENDING":
		return "PENDING", true
	case "BUFFERED":
		return "BUFFERED", true
	}
	return "", false
}

func codeByName(name string) (codes.Code, bool) {
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		if strings.EqualFold(c.String(), name) || strings.EqualFold(strings.ReplaceAll(codeUpper(c), "_", ""), strings.ReplaceAll(name, "_", "")) {
			return c, true
		}
	}
	return 0, false
}

// codeUpper is a code's canonical upper-case name (UNAVAILABLE).
func codeUpper(c codes.Code) string {
	var b strings.Builder
	for i, r := range c.String() {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return strings.ToUpper(b.String())
}
