package sql

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestDeepCallsLinear: nested calls are refused (nested too deeply) after
// work linear in the query: every "(" used to scan the text after it for
// its closing parenthesis (and OVER) several times, quadratic in the
// nesting: 100,000 levels took 163 s (review-q #3). The bound counts the
// tokens scanned, not time.
func TestDeepCallsLinear(t *testing.T) {
	resolve := func(context.Context, TableName) (Table, error) { return nil, errors.New("no tables") }
	for _, n := range []int{1000, 20000} {
		q := "SELECT " + strings.Repeat("ABS(", n) + "1" + strings.Repeat(")", n) + " AS x, " +
			"(SELECT " + strings.Repeat("ABS(", n) + "1" + strings.Repeat(")", n) + ")"
		before := closingScanned.Load()
		_, err := Run(context.Background(), q, resolve, Options{})
		scanned := closingScanned.Load() - before
		if err == nil || !strings.Contains(err.Error(), "nested too deeply") {
			t.Fatalf("n=%d: err = %v", n, err)
		}
		if tokens := int64(4*n + 16); scanned > tokens {
			t.Fatalf("n=%d: closing scanned %d tokens to refuse a query of about %d", n, scanned, tokens)
		}
	}
}
