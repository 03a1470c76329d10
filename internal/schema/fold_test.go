package schema

import (
	"strings"
	"testing"
)

func TestFoldKeyMatchesEqualFold(t *testing.T) {
	names := []string{"a", "A", "k", "K", "\u212a", "s", "S", "\u017f", "straße", "STRASSE", "Straße", "ǅ", "ǆ", "Ǆ", "µ", "μ", "Μ", "col_1", "COL_1", "", "é", "É"}
	for _, x := range names {
		for _, y := range names {
			if got, want := FoldKey(x) == FoldKey(y), strings.EqualFold(x, y); got != want {
				t.Errorf("FoldKey(%q)==FoldKey(%q) is %v, EqualFold says %v", x, y, got, want)
			}
		}
	}
}

func FuzzFoldKey(f *testing.F) {
	f.Add("abc", "ABC")
	f.Add("\u212a", "k")
	f.Add("\u017f", "S")
	f.Fuzz(func(t *testing.T, x, y string) {
		if got, want := FoldKey(x) == FoldKey(y), strings.EqualFold(x, y); got != want {
			t.Fatalf("FoldKey(%q)==FoldKey(%q) is %v, EqualFold says %v", x, y, got, want)
		}
	})
}
