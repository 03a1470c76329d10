package filter

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bqstore/bqstore/internal/schema"
)

// TestCompositeTypeBounds: a hostile query cannot make the type registry
// (process-wide, append-only) or one type's name grow without bound:
// nesting is limited, and so are the bytes of all names interned.
func TestCompositeTypeBounds(t *testing.T) {
	deep := strings.Repeat("ARRAY<STRUCT<", 2000) + "INT64" + strings.Repeat(">>", 2000)
	start := time.Now()
	if _, err := CompileScalar(deep+"[]", &schema.Schema{}); err == nil || !strings.Contains(err.Error(), "nested too deeply") {
		t.Fatalf("a type nested 4000 levels: %v, want nested too deeply", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("refusing a deep type took %v", d)
	}

	if _, err := CompileScalar("[1, 2]", &schema.Schema{}); err != nil {
		t.Fatal(err)
	}
	defer func(old int) { maxCompBytes = old }(maxCompBytes)
	comps.mu.Lock()
	maxCompBytes = comps.bytes + 200
	comps.mu.Unlock()
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		_, err = CompileScalar("STRUCT(1 AS f"+strings.Repeat("x", i)+")", &schema.Schema{})
	}
	if err == nil || !strings.Contains(err.Error(), "too many distinct ARRAY and STRUCT types") {
		t.Fatalf("100 new struct types over a 200-byte budget: %v", err)
	}
	// Types seen before still work.
	maxCompBytes = 0
	x, err := CompileScalar("[1, 2]", &schema.Schema{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.Values(context.Background(), nil, 1); err != nil {
		t.Fatal(err)
	}
}

// TestArrayKeywordLiteral: the ARRAY keyword before a bracketed array
// literal is optional, with or without an element type (GoogleSQL
// lexical structure, "Array literals": [1, 2, 3], ARRAY[1, 2, 3] and
// ARRAY<string>['x', 'y', 'xy'] are all array literals).
func TestArrayKeywordLiteral(t *testing.T) {
	for _, tc := range []struct{ expr, typ, val string }{
		{"ARRAY[1, 2, 3]", "ARRAY<INT64>", "[1 2 3]"},
		{"array['x', 'y', 'xy']", "ARRAY<STRING>", "[x y xy]"},
		{"ARRAY[]", "ARRAY<INT64>", "[]"},
		{"ARRAY<FLOAT64>[1, 2]", "ARRAY<FLOAT64>", "[1 2]"},
		{"ARRAY[1, 2][OFFSET(1)]", "INT64", "2"},
	} {
		x, err := CompileScalar(tc.expr, &schema.Schema{})
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		if got := x.Type(); got != tc.typ {
			t.Errorf("%s: type %s, want %s", tc.expr, got, tc.typ)
		}
		v, err := x.Values(context.Background(), nil, 1)
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		if got := fmt.Sprint(v[0]); got != tc.val {
			t.Errorf("%s: %s, want %s", tc.expr, got, tc.val)
		}
	}
	// Anything else after ARRAY is still a syntax error naming what may follow.
	if _, err := CompileScalar("ARRAY 1", &schema.Schema{}); err == nil || !strings.Contains(err.Error(), `Expected "(" or "<" or "[" but got integer literal "1"`) {
		t.Errorf("ARRAY 1: %v", err)
	}
}
