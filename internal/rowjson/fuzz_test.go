package rowjson

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/bqstore/bqstore/internal/testkit/arrowgen"
)

// FuzzJSONString checks that string cells are valid JSON and decode to what
// encoding/json makes of the same Go string (invalid UTF-8 replaced by
// U+FFFD).
func FuzzJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", "quote\" backslash\\ \n\t\r\x00\x1f", "é漢🙂", "\xff\xfe", "\u2028\u2029", "<&>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4096 {
			return
		}
		b := AppendJSONString(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%q -> %s: %v", s, b, err)
		}
		ref, _ := json.Marshal(s)
		var want string
		if err := json.Unmarshal(ref, &want); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("%q: got %q, want %q", s, got, want)
		}
	})
}

// FuzzRows formats random records of every type and checks the page is
// valid JSON with one {"f":[...]} per row and one cell per column.
func FuzzRows(f *testing.F) {
	f.Add(uint64(1), uint8(5), false)
	f.Add(uint64(2), uint8(30), true)
	s := arrowgen.AllTypes()
	f.Fuzz(func(t *testing.T, seed uint64, rows uint8, int64TS bool) {
		n := int(rows % 33)
		rec := arrowgen.Record(s, rand.New(rand.NewPCG(seed, 0)), n)
		defer rec.Release()
		b, err := NewFormatter(s, Options{UseInt64Timestamp: int64TS}).AppendRows(nil, rec, 0, n)
		if err != nil {
			t.Fatal(err)
		}
		page := AppendPage(nil, Page{TotalRows: int64(n), Rows: b})
		var got struct {
			Kind      string `json:"kind"`
			TotalRows string `json:"totalRows"`
			Rows      []struct {
				F []map[string]any `json:"f"`
			} `json:"rows"`
		}
		if err := json.Unmarshal(page, &got); err != nil {
			t.Fatalf("invalid page: %v\n%s", err, page)
		}
		if len(got.Rows) != n {
			t.Fatalf("%d rows, want %d", len(got.Rows), n)
		}
		for i, r := range got.Rows {
			if len(r.F) != len(s.Fields) {
				t.Fatalf("row %d: %d cells", i, len(r.F))
			}
			for j, c := range r.F {
				if _, ok := c["v"]; !ok || len(c) != 1 {
					t.Fatalf("row %d cell %d: %v", i, j, c)
				}
			}
		}
	})
}
