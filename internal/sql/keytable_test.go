package sql

import (
	"fmt"
	"math/rand"
	"testing"
)

// TestKeyTable: keys are numbered densely in order of first insertion,
// found again across rehashes, and kept byte for byte (the empty key,
// keys that are prefixes of others). The seed is logged.
func TestKeyTable(t *testing.T) {
	const seed = 16
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	var kt keyTable
	want := map[string]int{}
	var order []string
	for i := 0; i < 20000; i++ {
		s := fmt.Sprintf("%x", rng.Intn(5000))
		k := s[:rng.Intn(len(s)+1)]
		idx, added, err := kt.insert([]byte(k))
		if err != nil {
			t.Fatal(err)
		}
		w, seen := want[k]
		if !seen {
			w = len(order)
			want[k] = w
			order = append(order, k)
		}
		if idx != w || added == seen {
			t.Fatalf("insert %q: %d, added %v; want %d, added %v", k, idx, added, w, !seen)
		}
	}
	if kt.len() != len(order) {
		t.Fatalf("len %d, want %d", kt.len(), len(order))
	}
	for i, k := range order {
		if string(kt.key(i)) != k {
			t.Fatalf("key %d = %q, want %q", i, kt.key(i), k)
		}
	}
	if kt.bytes() < int64(len(order))*12 {
		t.Fatalf("bytes %d for %d keys", kt.bytes(), len(order))
	}
}
