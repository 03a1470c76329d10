package schema

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func mustParse(t testing.TB, js string) *Schema {
	t.Helper()
	var s Schema
	if err := json.Unmarshal([]byte(js), &s); err != nil {
		t.Fatalf("parse %s: %v", js, err)
	}
	return &s
}

// nested returns a schema with RECORD columns nested depth levels deep.
func nested(depth int) string {
	s := `{"name":"leaf","type":"STRING"}`
	for i := depth - 1; i >= 1; i-- {
		s = `{"name":"r` + strings.Repeat("x", i) + `","type":"RECORD","fields":[` + s + `]}`
	}
	return `{"fields":[` + s + `]}`
}

func TestNormalize(t *testing.T) {
	in := mustParse(t, `{"fields":[
		{"name":"a","type":"int64"},
		{"name":"b","type":"STRUCT","mode":"repeated","fields":[{"name":"c","type":"bool","mode":"REQUIRED"}]},
		{"name":"r","type":"RANGE","rangeElementType":{"type":"date"}},
		{"name":"n","type":"DECIMAL","precision":"10","scale":2}]}`)
	out, err := Normalize(in)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(out)
	want := `{"fields":[{"name":"a","type":"INTEGER","mode":"NULLABLE"},` +
		`{"name":"b","type":"RECORD","mode":"REPEATED","fields":[{"name":"c","type":"BOOLEAN","mode":"REQUIRED"}]},` +
		`{"name":"r","type":"RANGE","mode":"NULLABLE","rangeElementType":{"type":"DATE"}},` +
		`{"name":"n","type":"NUMERIC","mode":"NULLABLE","precision":"10","scale":"2"}]}`
	if string(got) != want {
		t.Errorf("Normalize:\n got %s\nwant %s", got, want)
	}
	if in.Fields[0].Type != "int64" {
		t.Errorf("Normalize modified its input")
	}
	if s, err := Normalize(nil); err != nil || s == nil || len(s.Fields) != 0 {
		t.Errorf("Normalize(nil) = %v, %v", s, err)
	}
}

func TestValidateErrors(t *testing.T) {
	for _, tc := range []struct {
		name, schema, path, msg string
	}{
		{"ok every type", `{"fields":[{"name":"s","type":"STRING","maxLength":"10"},{"name":"b","type":"BYTES","maxLength":5},
			{"name":"i","type":"INTEGER"},{"name":"f","type":"FLOAT"},{"name":"n","type":"NUMERIC","precision":38,"scale":9},
			{"name":"bn","type":"BIGNUMERIC","precision":76,"scale":38},{"name":"bo","type":"BOOLEAN"},{"name":"ts","type":"TIMESTAMP"},
			{"name":"d","type":"DATE"},{"name":"t","type":"TIME"},{"name":"dt","type":"DATETIME"},{"name":"g","type":"GEOGRAPHY"},
			{"name":"j","type":"JSON"},{"name":"iv","type":"INTERVAL"},{"name":"r","type":"RANGE","rangeElementType":{"type":"TIMESTAMP"}},
			{"name":"_x1","type":"RECORD","fields":[{"name":"y","type":"STRING"}]}]}`, "", ""},
		{"max nesting", nested(15), "", ""},
		{"too deep", nested(16), "rx.rxx.rxxx.rxxxx.rxxxxx.rxxxxxx.rxxxxxxx.rxxxxxxxx.rxxxxxxxxx.rxxxxxxxxxx.rxxxxxxxxxxx.rxxxxxxxxxxxx.rxxxxxxxxxxxxx.rxxxxxxxxxxxxxx.rxxxxxxxxxxxxxxx", "nest at most 15"},
		{"unknown type", `{"fields":[{"name":"a","type":"VARCHAR"}]}`, "a", `invalid type "VARCHAR"`},
		{"missing type", `{"fields":[{"name":"a"}]}`, "a", "type is missing"},
		{"bad mode", `{"fields":[{"name":"a","type":"STRING","mode":"OPTIONAL"}]}`, "a", `invalid mode "OPTIONAL"`},
		{"missing name", `{"fields":[{"type":"STRING"}]}`, "", "fields[0]: name is missing"},
		{"digit first", `{"fields":[{"name":"1a","type":"STRING"}]}`, "1a", "Invalid field name"},
		{"dash", `{"fields":[{"name":"a-b","type":"STRING"}]}`, "a-b", "Invalid field name"},
		{"nul", "{\"fields\":[{\"name\":\"a\\u0000\",\"type\":\"STRING\"}]}", "a\x00", "Invalid field name"},
		{"too long", `{"fields":[{"name":"` + strings.Repeat("a", 301) + `","type":"STRING"}]}`, strings.Repeat("a", 301), "longer than 300"},
		{"300 ok", `{"fields":[{"name":"` + strings.Repeat("a", 300) + `","type":"STRING"}]}`, "", ""},
		{"reserved", `{"fields":[{"name":"_partitiontime","type":"TIMESTAMP"}]}`, "_partitiontime", "reserved prefix _PARTITION"},
		{"duplicate fold", `{"fields":[{"name":"a","type":"STRING"},{"name":"A","type":"STRING"}]}`, "A", "already exists"},
		{"nested duplicate", `{"fields":[{"name":"r","type":"RECORD","fields":[{"name":"x","type":"STRING"},{"name":"X","type":"INTEGER"}]}]}`, "r.X", "already exists"},
		{"same name other record", `{"fields":[{"name":"x","type":"STRING"},{"name":"r","type":"RECORD","fields":[{"name":"x","type":"STRING"}]}]}`, "", ""},
		{"empty record", `{"fields":[{"name":"r","type":"RECORD"}]}`, "r", "has no schema"},
		{"fields on string", `{"fields":[{"name":"s","type":"STRING","fields":[{"name":"x","type":"STRING"}]}]}`, "s", "only RECORD"},
		{"maxLength int", `{"fields":[{"name":"i","type":"INTEGER","maxLength":3}]}`, "i", "maxLength is only allowed"},
		{"maxLength negative", `{"fields":[{"name":"s","type":"STRING","maxLength":-3}]}`, "s", "must be positive"},
		{"numeric scale too big", `{"fields":[{"name":"n","type":"NUMERIC","precision":20,"scale":10}]}`, "n", "invalid scale 10"},
		{"numeric too wide", `{"fields":[{"name":"n","type":"NUMERIC","precision":31,"scale":1}]}`, "n", "precision - scale <= 29"},
		{"numeric p==s", `{"fields":[{"name":"n","type":"NUMERIC","precision":5,"scale":5}]}`, "n", "precision - scale"},
		{"scale only", `{"fields":[{"name":"n","type":"NUMERIC","scale":2}]}`, "n", "without precision"},
		{"bignumeric ok", `{"fields":[{"name":"n","type":"BIGNUMERIC","precision":38}]}`, "", ""},
		{"bignumeric too wide", `{"fields":[{"name":"n","type":"BIGNUMERIC","precision":39,"scale":0}]}`, "n", "precision - scale <= 38"},
		{"bignumeric too wide 2", `{"fields":[{"name":"n","type":"BIGNUMERIC","precision":40,"scale":1}]}`, "n", "precision - scale <= 38"},
		{"precision on float", `{"fields":[{"name":"f","type":"FLOAT","precision":5}]}`, "f", "only allowed for NUMERIC"},
		{"range no element", `{"fields":[{"name":"r","type":"RANGE"}]}`, "r", "need a rangeElementType"},
		{"range bad element", `{"fields":[{"name":"r","type":"RANGE","rangeElementType":{"type":"INTEGER"}}]}`, "r", "invalid rangeElementType"},
		{"range repeated", `{"fields":[{"name":"r","type":"RANGE","mode":"REPEATED","rangeElementType":{"type":"DATE"}}]}`, "r", "cannot be REPEATED"},
		{"element on string", `{"fields":[{"name":"s","type":"STRING","rangeElementType":{"type":"DATE"}}]}`, "s", "only allowed for RANGE"},
		{"description", `{"fields":[{"name":"s","type":"STRING","description":"` + strings.Repeat("é", 1025) + `"}]}`, "s", "description is longer"},
		{"null field", `{"fields":[null]}`, "", "fields[0] is null"},
	} {
		t.Run("case="+tc.name, func(t *testing.T) {
			_, err := Normalize(mustParse(t, tc.schema))
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
			if ie.Path != tc.path {
				t.Errorf("path = %q, want %q", ie.Path, tc.path)
			}
			if !strings.Contains(ie.Msg, tc.msg) {
				t.Errorf("message %q does not contain %q", ie.Msg, tc.msg)
			}
		})
	}
}

func TestValidateTooManyColumns(t *testing.T) {
	s := &Schema{}
	for i := range MaxColumns + 1 {
		s.Fields = append(s.Fields, &Field{Name: "c" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + itoa(i), Type: String})
	}
	if _, err := Normalize(s); err == nil || !strings.Contains(err.Error(), "Too many columns") {
		t.Fatalf("got %v", err)
	}
	s.Fields = s.Fields[:MaxColumns]
	if _, err := Normalize(s); err != nil {
		t.Fatal(err)
	}
}

func itoa(i int) string {
	b, _ := Int64(i).MarshalJSON()
	return strings.Trim(string(b), `"`)
}

// FuzzNormalize feeds arbitrary JSON to the schema decoder and Normalize:
// no panics, and a normalized schema is a fixed point (it survives a JSON
// round trip and normalizes to itself).
func FuzzNormalize(f *testing.F) {
	f.Add([]byte(`{"fields":[{"name":"a","type":"INT64"}]}`))
	f.Add([]byte(nested(3)))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<16 {
			return
		}
		var s Schema
		if json.Unmarshal(b, &s) != nil {
			return
		}
		n, err := Normalize(&s)
		if err != nil {
			var ie *InvalidError
			if !errors.As(err, &ie) {
				t.Fatalf("error is not an *InvalidError: %v", err)
			}
			return
		}
		js, err := json.Marshal(n)
		if err != nil {
			t.Fatal(err)
		}
		var again Schema
		if err := json.Unmarshal(js, &again); err != nil {
			t.Fatalf("re-parse %s: %v", js, err)
		}
		n2, err := Normalize(&again)
		if err != nil {
			t.Fatalf("normalized schema %s is invalid: %v", js, err)
		}
		js2, _ := json.Marshal(n2)
		if string(js) != string(js2) {
			t.Fatalf("not a fixed point:\n%s\n%s", js, js2)
		}
		if err := CheckEvolution(n, n2); err != nil {
			t.Fatalf("a schema must evolve to itself: %v", err)
		}
	})
}
