package filter

import (
	"errors"
	"testing"

	"github.com/bqstore/bqstore/internal/schema"
)

// TestAt: an expression compiled with At(prefix) reports the positions,
// lines and columns it reports when compiled at the end of prefix
// (blanked, as the query engine used to hand it over), and its tokens sit
// at the same offsets; only its own bytes are lexed.
func TestAt(t *testing.T) {
	s := &schema.Schema{Fields: []*schema.Field{{Name: "x", Type: schema.Integer}}}
	prefix := "SELECT 'é\té',\r\n  'ü' AS a,\n\t"
	b := []byte(prefix) // blanked byte for byte
	for i, c := range b {
		if c != '\n' && c != '\r' && c != '\t' {
			b[i] = ' '
		}
	}
	blank := string(b)
	for _, expr := range []string{"x + 'a'", "nope", "x +", "CAST('é' AS INT64)", "ARRAY<INT64>[1, 'a']", "x /* open"} {
		_, want := CompileScalar(blank+expr, s)
		before := LexedBytes()
		_, got := CompileScalar(expr, s, At(prefix))
		if n := LexedBytes() - before; n > int64(len(expr)) {
			t.Errorf("%q: lexed %d bytes", expr, n)
		}
		var we, ge *Error
		if !errors.As(want, &we) || !errors.As(got, &ge) {
			t.Fatalf("%q: errors %v, %v", expr, want, got)
		}
		// want's columns count the blanks, one per byte: the prefix's
		// characters are what At counts.
		ref := newError(prefix+expr, we.Pos, "%s", we.Msg)
		if *ge != *ref {
			t.Errorf("%q: got %+v, want %+v", expr, *ge, *ref)
		}
	}
	toks, err := TokensAt(prefix, "a + (b)")
	if err != nil {
		t.Fatal(err)
	}
	all, _ := Tokens(blank + "a + (b)")
	for i := range toks {
		if toks[i] != all[i] {
			t.Errorf("token %d: %+v, want %+v", i, toks[i], all[i])
		}
	}
}
