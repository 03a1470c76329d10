package filter

import (
	"context"
	"errors"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/bqstore/bqstore/internal/schema"
)

// likeRegexp is an independent reference: the LIKE pattern as an anchored
// regular expression.
func likeRegexp(pat string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`(?s)^`)
	for i := 0; i < len(pat); i++ {
		switch c := pat[i]; c {
		case '%':
			b.WriteString(`.*`)
		case '_':
			b.WriteString(`.`)
		case '\\':
			i++
			b.WriteString(regexp.QuoteMeta(pat[i : i+1]))
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString(`$`)
	return regexp.MustCompile(b.String())
}

func TestLikeMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	atoms := []string{"a", "b", "ab", "%", "_", `\%`, `\_`, `\\`}
	chars := []string{"a", "b", "%", "_", `\`}
	for iter := 0; iter < 20000; iter++ {
		var p, s strings.Builder
		for k := r.IntN(6); k > 0; k-- {
			p.WriteString(atoms[r.IntN(len(atoms))])
		}
		for k := r.IntN(8); k > 0; k-- {
			s.WriteString(chars[r.IntN(len(chars))])
		}
		m, err := compileLike(p.String(), false)
		if err != nil {
			t.Fatal(err)
		}
		want := likeRegexp(p.String()).MatchString(s.String())
		if got := m.match(s.String()); got != want {
			t.Fatalf("%q LIKE %q = %v, want %v", s.String(), p.String(), got, want)
		}
	}
	// _ is one character for STRING and one byte for BYTES.
	for _, tc := range []struct {
		s, p  string
		bytes bool
		want  bool
	}{
		{"é", "_", false, true}, {"é", "_", true, false}, {"é", "__", true, true},
		{"xéy", "x_y", false, true}, {"abc", `a\`, false, false},
	} {
		m, err := compileLike(tc.p, tc.bytes)
		if err != nil {
			if tc.want {
				t.Errorf("%q: %v", tc.p, err)
			}
			continue
		}
		if got := m.match(tc.s); got != tc.want {
			t.Errorf("%q LIKE %q (bytes %v) = %v, want %v", tc.s, tc.p, tc.bytes, got, tc.want)
		}
	}
}

func TestContainsLit(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for iter := 0; iter < 50000; iter++ {
		var s strings.Builder
		for k := r.IntN(80); k > 0; k-- {
			s.WriteByte("abc\x00\xff"[r.IntN(5)])
		}
		var lit strings.Builder
		for k := r.IntN(5); k > 0; k-- {
			lit.WriteByte("abc\x00\xff"[r.IntN(5)])
		}
		if got, want := containsLit(s.String(), lit.String()), strings.Contains(s.String(), lit.String()); got != want {
			t.Fatalf("containsLit(%q, %q) = %v, want %v", s.String(), lit.String(), got, want)
		}
	}
}

// likeDP is a second reference, over units (bytes, or characters with
// each invalid byte one unit): the textbook dynamic program.
func likeDP(m *likeMatcher, s string) bool {
	var text []int32
	for i := 0; i < len(s); {
		k, w := m.unitKey(s, i)
		text = append(text, k)
		i += w
	}
	var pat []likeUnit // any with key -1<<31 marks %
	const pct = -1 << 31
	for _, it := range m.items {
		switch it.kind {
		case '%':
			pat = append(pat, likeUnit{key: pct})
		case '_':
			pat = append(pat, likeUnit{any: true})
		default:
			for i := 0; i < len(it.s); {
				k, w := m.unitKey(it.s, i)
				pat = append(pat, likeUnit{key: k})
				i += w
			}
		}
	}
	// ok[j]: pat[:p] matches text[:j].
	ok := make([]bool, len(text)+1)
	ok[0] = true
	for _, u := range pat {
		next := make([]bool, len(text)+1)
		for j := range next {
			switch {
			case u.key == pct && !u.any:
				next[j] = ok[j] || (j > 0 && next[j-1])
			case j > 0 && (u.any || u.key == text[j-1]):
				next[j] = ok[j-1]
			}
		}
		ok = next
	}
	return ok[len(text)]
}

// TestLikeGeneralMatchesDP covers the segment matcher: long _ runs
// (several Shift-And words), non-ASCII and invalid UTF-8, both modes.
func TestLikeGeneralMatchesDP(t *testing.T) {
	seed := uint64(7)
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, seed))
	atoms := []string{"a", "b", "é", "\xff", "%", "_", "_", `\%`, "aa"}
	chars := []string{"a", "b", "é", "\xff", "\xc3", "%"}
	for iter := 0; iter < 20000; iter++ {
		var p, s strings.Builder
		for k := r.IntN(10); k > 0; k-- {
			p.WriteString(atoms[r.IntN(len(atoms))])
		}
		if r.IntN(10) == 0 { // a segment of more than 64 units
			p.WriteString("%" + strings.Repeat("a_", 40+r.IntN(30)) + "%")
		}
		for k := r.IntN(20); k > 0; k-- {
			s.WriteString(chars[r.IntN(len(chars))])
		}
		if r.IntN(5) == 0 {
			s.WriteString(strings.Repeat("ab", r.IntN(120)))
		}
		for _, bytes := range []bool{false, true} {
			m, err := compileLike(p.String(), bytes)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := m.match(s.String()), likeDP(m, s.String()); got != want {
				t.Fatalf("iter %d: %q LIKE %q (bytes %v) = %v, want %v", iter, s.String(), p.String(), bytes, got, want)
			}
		}
	}
}

// TestLikeAdversarialIsLinear: patterns that made the backtracking
// matcher do len(text) x len(pattern) work examine each text unit a
// bounded number of times (one per 64 units of a segment holding _).
func TestLikeAdversarialIsLinear(t *testing.T) {
	text := strings.Repeat("a", 200000)
	for _, tc := range []struct {
		pat      string
		perUnit  int // work allowed per text unit
		wantDone bool
	}{
		{"%" + strings.Repeat("a_", 30) + "b%", 3, false},
		{"%" + strings.Repeat("a", 1000) + "_b%", 16 + 2, false},
		{"a%" + strings.Repeat("a", 5000) + "b%a", 3, false},
		{"%" + strings.Repeat("_a", 31) + "%" + strings.Repeat("a_", 31) + "%", 3, true},
	} {
		m, err := compileLike(tc.pat, false)
		if err != nil {
			t.Fatal(err)
		}
		work := 0
		m.work = &work
		if got := m.match(text); got != tc.wantDone {
			t.Errorf("%.20q...: match = %v, want %v", tc.pat, got, tc.wantDone)
		}
		if work > tc.perUnit*(len(text)+len(tc.pat)) {
			t.Errorf("%.20q... (%d bytes): %d units of work for %d bytes of text", tc.pat, len(tc.pat), work, len(text))
		}
	}
}

// TestEvalStopsWhenCanceled: an abandoned read must not keep evaluating.
func TestEvalStopsWhenCanceled(t *testing.T) {
	sch := &schema.Schema{Fields: []*schema.Field{{Name: "s", Type: schema.String}}}
	f, err := Compile("s LIKE '%a_b%' OR LENGTH(s) >= 0", sch)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewStringBuilder(memory.DefaultAllocator)
	for i := 0; i < 1000; i++ {
		b.Append(strings.Repeat("a", i))
	}
	arr := b.NewArray()
	defer arr.Release()
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil), []arrow.Array{arr}, 1000)
	defer rec.Release()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out, err := f.Apply(ctx, rec)
	if err == nil {
		out.Release()
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Apply with a canceled context: err = %v, want context.Canceled", err)
	}
}
