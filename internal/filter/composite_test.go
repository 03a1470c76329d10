package filter

import (
	"context"
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
