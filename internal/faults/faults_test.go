package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bqstore/bqstore/internal/resource"
)

func TestParseForms(t *testing.T) {
	text := "append.reset:when=after,every=3,table=d.t;commit.drop_reply:p=0.5,times=2;" +
		"append.latency:dist=uniform,min=1ms,max=9ms,stream_type=pending;quota:rpc=CreateWriteStream,from=1s,for=5s;" +
		"read.reset:messages=4;commit.fail:code=internal"
	spec, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	want := "append.reset:every=3,table=d.t,when=after;commit.drop_reply:p=0.5,times=2;" +
		"append.latency:stream_type=PENDING,dist=uniform,min=1ms,max=9ms;quota:from=1s,for=5s,rpc=CreateWriteStream;" +
		"read.reset:messages=4;commit.fail:code=INTERNAL"
	if got := spec.String(); got != want {
		t.Fatalf("String:\n got %s\nwant %s", got, want)
	}
	// The text form round-trips, and so does JSON.
	again, err := Parse(spec.String())
	if err != nil || again.String() != want {
		t.Fatalf("text round trip: %v %s", err, again)
	}
	js, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := Parse(string(js))
	if err != nil || fromJSON.String() != want {
		t.Fatalf("JSON round trip of %s: %v %s", js, err, fromJSON)
	}
	arr, err := Parse(`[{"kind":"append.stall","duration":"2s"}]`)
	if err != nil || arr.String() != "append.stall:duration=2s" {
		t.Fatalf("bare JSON array: %v %s", err, arr)
	}
	if s, err := Parse("  "); err != nil || len(s.Faults) != 0 {
		t.Fatalf("empty spec: %v %v", s, err)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"append.explode", `unknown kind "append.explode"`},
		{"append.reset:when=later", `when "later"`},
		{"append.reset:p=1.5", "probability 1.5"},
		{"append.reset:every=-1", "negative"},
		{"append.reset:bogus=1", "bogus: unknown parameter"},
		{"append.reset:every", `"every" is not key=value`},
		{"append.stall:duration=soon", "duration"},
		{"append.latency:dist=uniform,min=5ms,max=1ms", "min < max"},
		{"append.latency:dist=pareto", `dist "pareto"`},
		{"append.latency", "needs mean"},
		{"quota:rpc=ReadRows", `rpc "ReadRows"`},
		{"commit.fail:code=SOMETIMES", `code "SOMETIMES"`},
		{"commit.drop_reply:code=INTERNAL", "code applies to the *.fail kinds only"},
		{"commit.drop_reply:stream_type=PENDING", "stream_type does not apply"},
		{"read.reset:table=a.b.c.d", `table "a.b.c.d"`},
		{`[{"kind":"read.reset","table":"d.t,x"}]`, `table "d.t,x"`},
		{"append.reset:stream_type=weird", `stream_type "weird"`},
		{`{"faults":[{"kind":"append.reset","unknown":1}]}`, "unknown field"},
		{`{"faults":[{"kind":"append.stall","duration":5}]}`, "duration must be a string"},
	} {
		_, err := Parse(tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tc.spec, err, tc.want)
		}
	}
}

// fireSeq runs n AppendRows calls on two tables through a fresh injector
// and records which faults fire on each.
func fireSeq(t *testing.T, spec string, seed int64, n int) []string {
	t.Helper()
	s, err := Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	in := New(Options{})
	if err := in.Set(s, seed); err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := 0; i < n; i++ {
		c := &call{rpc: RPCAppendRows, table: resource.Table{Project: "p", Dataset: "d", Table: fmt.Sprint("t", i%2)}}
		var fs []string
		for _, f := range in.fire(c, AppendReset, AppendLatency, Quota) {
			fs = append(fs, fmt.Sprintf("%s#%d", f.Kind, f.call))
			if f.Kind == AppendLatency {
				fs = append(fs, f.latency().String())
			}
		}
		out = append(out, strings.Join(fs, "+"))
	}
	return out
}

func TestDeterministicReplay(t *testing.T) {
	spec := "append.reset:p=0.3;append.latency:dist=exponential,mean=10ms,p=0.5,table=d.t1;quota:every=7,times=3"
	a, b := fireSeq(t, spec, 99, 500), fireSeq(t, spec, 99, 500)
	if strings.Join(a, ",") != strings.Join(b, ",") {
		t.Fatal("the same seed and calls fired different faults")
	}
	c := fireSeq(t, spec, 100, 500)
	if strings.Join(a, ",") == strings.Join(c, ",") {
		t.Fatal("seeds 99 and 100 fired the same faults")
	}
	// Trigger arithmetic: every=7 fires on calls 7, 14, 21 and then stops
	// (times=3); latency only on table t1 (odd calls).
	quotas := 0
	for i, s := range a {
		if strings.Contains(s, "quota") {
			quotas++
			if (i+1)%7 != 0 {
				t.Fatalf("quota fired on call %d", i+1)
			}
		}
		if strings.Contains(s, "append.latency") && i%2 == 0 {
			t.Fatalf("latency fired on call %d, outside its table scope", i+1)
		}
	}
	if quotas != 3 {
		t.Fatalf("quota fired %d times, want 3", quotas)
	}
	resets := 0
	for _, s := range a {
		if strings.Contains(s, "append.reset") {
			resets++
		}
	}
	if resets < 100 || resets > 200 { // p=0.3 of 500: 150 ± 50 is > 7 sigma
		t.Fatalf("append.reset fired %d of 500 times at p=0.3", resets)
	}
}

func TestWindow(t *testing.T) {
	now := time.Unix(1000, 0)
	in := New(Options{Now: func() time.Time { return now }})
	s, err := Parse("quota:from=10s,for=5s")
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Set(s, 1); err != nil {
		t.Fatal(err)
	}
	var got []bool
	for _, at := range []time.Duration{0, 9 * time.Second, 10 * time.Second, 14 * time.Second, 15 * time.Second} {
		now = time.Unix(1000, 0).Add(at)
		got = append(got, len(in.fire(&call{rpc: RPCAppendRows}, Quota)) > 0)
	}
	if fmt.Sprint(got) != "[false false true true false]" {
		t.Fatalf("window fired %v", got)
	}
	if st := in.Status(); st.Stats[0].Calls != 5 || st.Stats[0].Injected != 2 {
		t.Fatalf("stats %+v", st.Stats)
	}
}

func TestLatencyDistributions(t *testing.T) {
	for _, tc := range []struct {
		spec     string
		lo, hi   time.Duration
		meanNear time.Duration
	}{
		{"append.latency:mean=7ms", 7 * time.Millisecond, 7 * time.Millisecond, 7 * time.Millisecond},
		{"append.latency:dist=uniform,min=10ms,max=20ms", 10 * time.Millisecond, 20 * time.Millisecond, 15 * time.Millisecond},
		{"append.latency:dist=exponential,mean=5ms,max=1s", 0, time.Second, 5 * time.Millisecond},
	} {
		in := New(Options{})
		s, _ := Parse(tc.spec)
		if err := in.Set(s, 3); err != nil {
			t.Fatal(err)
		}
		var sum time.Duration
		const n = 4000
		for i := 0; i < n; i++ {
			fs := in.fire(&call{rpc: RPCAppendRows}, AppendLatency)
			if len(fs) != 1 {
				t.Fatalf("%s: fired %d", tc.spec, len(fs))
			}
			d := fs[0].latency()
			if d < tc.lo || d > tc.hi {
				t.Fatalf("%s: sample %v outside [%v, %v]", tc.spec, d, tc.lo, tc.hi)
			}
			sum += d
		}
		mean := sum / n
		if mean < tc.meanNear*9/10 || mean > tc.meanNear*11/10 {
			t.Fatalf("%s: mean %v, want about %v", tc.spec, mean, tc.meanNear)
		}
	}
}

type fakeTypes map[string]string

func (f fakeTypes) WriteStreamType(_ context.Context, ws resource.WriteStream) (string, error) {
	return f[ws.ID], nil
}

func TestStreamTypeScope(t *testing.T) {
	in := New(Options{StreamTypes: fakeTypes{"s1": "PENDING", "s2": "COMMITTED"}})
	s, _ := Parse("finalize.fail:stream_type=pending")
	if err := in.Set(s, 1); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		want int
	}{
		{"projects/p/datasets/d/tables/t/streams/s1", 1},
		{"projects/p/datasets/d/tables/t/streams/s2", 0},
		{"projects/p/datasets/d/tables/t/_default", 0},
	} {
		c := &call{ctx: context.Background(), rpc: "FinalizeWriteStream"}
		in.describeStream(c, tc.name)
		if got := len(in.fire(c, FinalizeFail)); got != tc.want {
			t.Errorf("%s: fired %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestAdminHandler(t *testing.T) {
	in := New(Options{})
	srv := httptest.NewServer(in.AdminHandler())
	defer srv.Close()
	do := func(method, query, body string) (int, Status) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+query, strings.NewReader(body))
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st Status
		_ = json.NewDecoder(resp.Body).Decode(&st)
		return resp.StatusCode, st
	}
	if code, st := do(http.MethodPut, "?seed=5", "append.stall:duration=1s"); code != 200 || st.Seed != 5 || len(st.Faults) != 1 {
		t.Fatalf("PUT text: %d %+v", code, st)
	}
	if !in.armed.Load() {
		t.Fatal("installing a fault did not arm the injector")
	}
	if code, st := do(http.MethodPut, "", `{"seed":9,"faults":[{"kind":"commit.fail"},{"kind":"read.reset"}]}`); code != 200 || st.Seed != 9 || len(st.Faults) != 2 || st.Faults[0].Code != "UNAVAILABLE" {
		t.Fatalf("PUT JSON: %d %+v", code, st)
	}
	if code, _ := do(http.MethodPut, "", "append.nope"); code != http.StatusBadRequest {
		t.Fatalf("bad spec answered %d", code)
	}
	code, st := do(http.MethodGet, "", "")
	if code != 200 || st.Seed != 9 || len(st.Faults) != 2 || len(st.Stats) != 2 {
		t.Fatalf("GET: %d %+v", code, st)
	}
	// GET's output can be PUT back.
	b, _ := json.Marshal(st)
	if code, st2 := do(http.MethodPut, "", string(b)); code != 200 || len(st2.Faults) != 2 {
		t.Fatalf("PUT of GET's output: %d %+v", code, st2)
	}
	if code, _ := do(http.MethodDelete, "", ""); code != http.StatusMethodNotAllowed {
		t.Fatalf("DELETE answered %d", code)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"append.reset:when=after,every=3,table=d.t",
		"commit.drop_reply:p=0.5;quota:rpc=CreateWriteStream,from=1s,for=5s",
		`{"faults":[{"kind":"append.latency","dist":"exponential","mean":"5ms"}]}`,
		`[{"kind":"read.reset","messages":2}]`,
		"append.latency:dist=uniform,min=1ms,max=2ms,stream_type=_default",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4096 {
			return
		}
		spec, err := Parse(s)
		if err != nil {
			return
		}
		// A valid spec prints to a text form that parses to the same text.
		again, err := Parse(spec.String())
		if err != nil {
			t.Fatalf("Parse(%q) ok, but its String %q does not parse: %v", s, spec.String(), err)
		}
		if again.String() != spec.String() {
			t.Fatalf("round trip: %q -> %q", spec.String(), again.String())
		}
	})
}
