package filter

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
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
