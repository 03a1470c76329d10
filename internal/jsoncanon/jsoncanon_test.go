package jsoncanon

import "testing"

func TestCanonical(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{` { "b" : 1, "a" : 2 } `, `{"a":2,"b":1}`},
		{`{"k":1,"k":2}`, `{"k":1}`}, // the first of duplicate keys
		{`[3, 1, {"y": [], "x": {}}]`, `[3,1,{"x":{},"y":[]}]`},
		{`[1.50, 2e2, 1E-7, 18446744073709551615, 9223372036854775807, 123456789012345678901]`,
			`[1.5,200,1e-7,18446744073709551615,9223372036854775807,1.2345678901234568e+20]`},
		{`"<\u00e9\n>"`, `"<é\n>"`},
		{`null`, `null`},
		{`true`, `true`},
	} {
		got, err := Canonical([]byte(c.in))
		if err != nil || string(got) != c.want {
			t.Errorf("Canonical(%s) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{``, `{`, `{"a":1} x`, `[1,]`, `nul`} {
		if got, err := Canonical([]byte(bad)); err == nil {
			t.Errorf("Canonical(%q) = %s, want an error", bad, got)
		}
	}
}
