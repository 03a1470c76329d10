package schema

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckEvolution(t *testing.T) {
	const base = `{"fields":[{"name":"a","type":"STRING","mode":"REQUIRED","maxLength":10},{"name":"r","type":"RECORD","fields":[{"name":"x","type":"INTEGER"},{"name":"n","type":"NUMERIC","precision":10,"scale":2}]},{"name":"g","type":"RANGE","rangeElementType":{"type":"DATE"}}]}`
	for _, tc := range []struct {
		name, new, path, msg string
	}{
		{"same", base, "", ""},
		{"add nullable", `{"fields":[{"name":"a","type":"STRING","mode":"REQUIRED","maxLength":10},{"name":"r","type":"RECORD","fields":[{"name":"x","type":"INTEGER"},{"name":"n","type":"NUMERIC","precision":10,"scale":2}]},{"name":"g","type":"RANGE","rangeElementType":{"type":"DATE"}},{"name":"b","type":"BYTES"},{"name":"c","type":"STRING","mode":"REPEATED"}]}`, "", ""},
		{"add nested", `{"fields":[{"name":"a","type":"STRING","mode":"REQUIRED","maxLength":10},{"name":"r","type":"RECORD","fields":[{"name":"x","type":"INTEGER"},{"name":"n","type":"NUMERIC","precision":10,"scale":2},{"name":"y","type":"RECORD","mode":"REPEATED","fields":[{"name":"z","type":"JSON","mode":"REQUIRED"}]}]},{"name":"g","type":"RANGE","rangeElementType":{"type":"DATE"}}]}`, "", ""},
		{"relax", `{"fields":[{"name":"a","type":"STRING","description":"now nullable"},{"name":"r","type":"RECORD","fields":[{"name":"x","type":"INTEGER"},{"name":"n","type":"NUMERIC","precision":10,"scale":2}]},{"name":"g","type":"RANGE","rangeElementType":{"type":"DATE"}}]}`, "", ""},
		{"widen maxLength", `{"fields":[{"name":"a","type":"STRING","mode":"REQUIRED","maxLength":20},{"name":"r","type":"RECORD","fields":[{"name":"x","type":"INTEGER"},{"name":"n","type":"NUMERIC","precision":10,"scale":2}]},{"name":"g","type":"RANGE","rangeElementType":{"type":"DATE"}}]}`, "", ""},
		{"narrow maxLength", `{"fields":[{"name":"a","type":"STRING","mode":"REQUIRED","maxLength":5},{"name":"r","type":"RECORD","fields":[{"name":"x","type":"INTEGER"},{"name":"n","type":"NUMERIC","precision":10,"scale":2}]},{"name":"g","type":"RANGE","rangeElementType":{"type":"DATE"}}]}`, "a", "maxLength cannot be narrowed"},
		{"drop top", `{"fields":[{"name":"a","type":"STRING","mode":"REQUIRED","maxLength":10},{"name":"r","type":"RECORD","fields":[{"name":"x","type":"INTEGER"},{"name":"n","type":"NUMERIC","precision":10,"scale":2}]}]}`, "g", "is missing"},
		{"drop nested", `{"fields":[{"name":"a","type":"STRING","mode":"REQUIRED","maxLength":10},{"name":"r","type":"RECORD","fields":[{"name":"n","type":"NUMERIC","precision":10,"scale":2}]},{"name":"g","type":"RANGE","rangeElementType":{"type":"DATE"}}]}`, "r.x", "is missing"},
		{"rename", `{"fields":[{"name":"A","type":"STRING","mode":"REQUIRED","maxLength":10},{"name":"r","type":"RECORD","fields":[{"name":"x","type":"INTEGER"},{"name":"n","type":"NUMERIC","precision":10,"scale":2}]},{"name":"g","type":"RANGE","rangeElementType":{"type":"DATE"}}]}`, "a", "cannot be renamed"},
		{"retype nested", `{"fields":[{"name":"a","type":"STRING","mode":"REQUIRED","maxLength":10},{"name":"r","type":"RECORD","fields":[{"name":"x","type":"STRING"},{"name":"n","type":"NUMERIC","precision":10,"scale":2}]},{"name":"g","type":"RANGE","rangeElementType":{"type":"DATE"}}]}`, "r.x", "changed type from INTEGER to STRING"},
		{"tighten", `{"fields":[{"name":"a","type":"STRING","mode":"REQUIRED","maxLength":10},{"name":"r","type":"RECORD","fields":[{"name":"x","type":"INTEGER","mode":"REQUIRED"},{"name":"n","type":"NUMERIC","precision":10,"scale":2}]},{"name":"g","type":"RANGE","rangeElementType":{"type":"DATE"}}]}`, "r.x", "changed mode from NULLABLE to REQUIRED"},
		{"to repeated", `{"fields":[{"name":"a","type":"STRING","mode":"REQUIRED","maxLength":10},{"name":"r","type":"RECORD","mode":"REPEATED","fields":[{"name":"x","type":"INTEGER"},{"name":"n","type":"NUMERIC","precision":10,"scale":2}]},{"name":"g","type":"RANGE","rangeElementType":{"type":"DATE"}}]}`, "r", "changed mode from NULLABLE to REPEATED"},
		{"precision", `{"fields":[{"name":"a","type":"STRING","mode":"REQUIRED","maxLength":10},{"name":"r","type":"RECORD","fields":[{"name":"x","type":"INTEGER"},{"name":"n","type":"NUMERIC","precision":12,"scale":2}]},{"name":"g","type":"RANGE","rangeElementType":{"type":"DATE"}}]}`, "r.n", "precision/scale"},
		{"range element", `{"fields":[{"name":"a","type":"STRING","mode":"REQUIRED","maxLength":10},{"name":"r","type":"RECORD","fields":[{"name":"x","type":"INTEGER"},{"name":"n","type":"NUMERIC","precision":10,"scale":2}]},{"name":"g","type":"RANGE","rangeElementType":{"type":"TIMESTAMP"}}]}`, "g", "rangeElementType"},
		{"add required", `{"fields":[{"name":"a","type":"STRING","mode":"REQUIRED","maxLength":10},{"name":"r","type":"RECORD","fields":[{"name":"x","type":"INTEGER"},{"name":"n","type":"NUMERIC","precision":10,"scale":2}]},{"name":"g","type":"RANGE","rangeElementType":{"type":"DATE"}},{"name":"q","type":"STRING","mode":"REQUIRED"}]}`, "q", "Cannot add required fields to an existing schema. (field: q)"},
		{"add required nested", `{"fields":[{"name":"a","type":"STRING","mode":"REQUIRED","maxLength":10},{"name":"r","type":"RECORD","fields":[{"name":"x","type":"INTEGER"},{"name":"n","type":"NUMERIC","precision":10,"scale":2},{"name":"q","type":"BOOLEAN","mode":"REQUIRED"}]},{"name":"g","type":"RANGE","rangeElementType":{"type":"DATE"}}]}`, "r.q", "Cannot add required fields to an existing schema. (field: r.q)"},
		// "you can create a nested REQUIRED column as part of a new RECORD
		// field" (Modifying table schemas).
		{"new record with required child", `{"fields":[{"name":"a","type":"STRING","mode":"REQUIRED","maxLength":10},{"name":"r","type":"RECORD","fields":[{"name":"x","type":"INTEGER"},{"name":"n","type":"NUMERIC","precision":10,"scale":2}]},{"name":"g","type":"RANGE","rangeElementType":{"type":"DATE"}},{"name":"nr","type":"RECORD","fields":[{"name":"req","type":"STRING","mode":"REQUIRED"}]}]}`, "", ""},
		{"insert in the middle", `{"fields":[{"name":"new","type":"STRING"},{"name":"a","type":"STRING","mode":"REQUIRED","maxLength":10},{"name":"r","type":"RECORD","fields":[{"name":"x","type":"INTEGER"},{"name":"n","type":"NUMERIC","precision":10,"scale":2}]},{"name":"g","type":"RANGE","rangeElementType":{"type":"DATE"}}]}`, "a", "changed position"},
	} {
		t.Run("case="+tc.name, func(t *testing.T) {
			old, err := Normalize(mustParse(t, base))
			if err != nil {
				t.Fatal(err)
			}
			nw, err := Normalize(mustParse(t, tc.new))
			if err != nil {
				t.Fatal(err)
			}
			err = CheckEvolution(old, nw)
			if tc.msg == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var ie *InvalidError
			if !errors.As(err, &ie) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("got %v, want an *InvalidError", err)
			}
			if ie.Path != tc.path || !strings.Contains(ie.Msg, tc.msg) {
				t.Errorf("got path %q message %q, want path %q containing %q", ie.Path, ie.Msg, tc.path, tc.msg)
			}
		})
	}
}

func TestCheckEvolutionFromEmpty(t *testing.T) {
	nw, err := Normalize(mustParse(t, `{"fields":[{"name":"a","type":"STRING"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckEvolution(nil, nw); err != nil {
		t.Fatal(err)
	}
	req, _ := Normalize(mustParse(t, `{"fields":[{"name":"a","type":"STRING","mode":"REQUIRED"}]}`))
	if err := CheckEvolution(&Schema{}, req); err != nil {
		t.Fatalf("a table without columns takes any schema: %v", err)
	}
}
