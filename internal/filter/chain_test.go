package filter

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/bqstore/bqstore/internal/schema"
)

// TestLongChains: a flat chain of left-associative operators, as ORMs
// write them ("x = 1 OR x = 2 OR ...", sums of many terms), is not
// nesting: thousands of terms parse, compile and evaluate, and print as a
// form that parses back to the same tree. Nesting (parentheses, calls)
// stays bounded by maxDepth, and a chain by maxHeight.
func TestLongChains(t *testing.T) {
	terms := func(n int, f func(i int) string, sep string) string {
		s := make([]string, n)
		for i := range s {
			s[i] = f(i)
		}
		return strings.Join(s, sep)
	}
	for _, tc := range []struct {
		expr, want string
	}{
		{terms(300, func(i int) string { return fmt.Sprintf("x = %d", i) }, " OR "), "true"},
		{terms(1000, func(int) string { return "1" }, " + "), "1000"},
		{terms(999, func(int) string { return "1" }, " - ") + " + 1", "-996"},
		{terms(500, func(int) string { return "TRUE" }, " AND ") + " OR " + terms(500, func(int) string { return "FALSE" }, " OR "), "true"},
		{terms(2000, func(int) string { return "'a'" }, " || "), strings.Repeat("a", 2000)},
		{"1 + " + terms(150, func(int) string { return "(1 * 2" }, " + ") + strings.Repeat(")", 150), "301"},
	} {
		e, err := parse(tc.expr, true)
		if err != nil {
			t.Fatalf("%.60s...: %v", tc.expr, err)
		}
		p1 := e.String()
		e2, err := parse(p1, true)
		if err != nil {
			t.Fatalf("%.60s...: printed form %.60s... does not parse: %v", tc.expr, p1, err)
		}
		if p2 := e2.String(); p2 != p1 {
			t.Fatalf("%.60s...: unstable printing", tc.expr)
		}
		sch := &schema.Schema{Fields: []*schema.Field{{Name: "x", Type: schema.Integer, Mode: schema.Nullable}}}
		x, err := CompileScalar(strings.ReplaceAll(tc.expr, "x", "7"), sch)
		if err != nil {
			t.Fatalf("%.60s...: %v", tc.expr, err)
		}
		v, err := x.Values(context.Background(), nil, 1)
		if err != nil {
			t.Fatalf("%.60s...: %v", tc.expr, err)
		}
		if got := fmt.Sprint(v[0]); got != tc.want {
			t.Fatalf("%.60s... = %s, want %s", tc.expr, got, tc.want)
		}
	}
	for _, deep := range []string{
		strings.Repeat("ABS(", maxDepth+1) + "1" + strings.Repeat(")", maxDepth+1),
		strings.Repeat("1 + (", maxDepth+1) + "1" + strings.Repeat(")", maxDepth+1),
		strings.Repeat("- ", maxDepth+1) + "1",
		terms(maxHeight+1, func(int) string { return "1" }, " + "),
		terms(maxHeight/2+1, func(int) string { return "1" }, " * ") + " + " + terms(maxHeight/2+1, func(int) string { return "1" }, " + "),
	} {
		if _, err := parse(deep, true); err == nil || !strings.Contains(err.Error(), "nested too deeply") {
			t.Fatalf("%.60s...: %v, want nested too deeply", deep, err)
		}
	}
}
