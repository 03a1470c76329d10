package filter

import (
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

var (
	fuzzOnce sync.Once
	fuzzRec  arrow.RecordBatch
)

// FuzzFilterParse: parsing never panics; printing a parsed expression and
// parsing it again gives the same tree (the same printed form); compiling
// and evaluating whatever parses never panics.
func FuzzFilterParse(f *testing.F) {
	for _, s := range []string{
		"int_field > 5", "date_field = CAST('2014-9-27' as DATE)", "nullable_field is not NULL",
		`st_equals(geo_field, st_geofromtext("POINT(2, 2)"))`, "numeric_field BETWEEN 1.0 AND 5.0",
		"int_field NOT IN UNNEST(@ids) AND string_field = ?", "@x + ? * @Y",
		"JSON_TYPE(PARSE_JSON(string_field, `wide_number_mode` => 'round')) = 'object'",
	} {
		f.Add(s)
	}
	sch := testSchema()
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4096 {
			return
		}
		e, err := Parse(s)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("Parse(%q): error %T is not *Error", s, err)
			}
			return
		}
		p1 := e.String()
		e2, err := Parse(p1)
		if err != nil {
			t.Fatalf("Parse(%q) ok, but its printed form %q does not parse: %v", s, p1, err)
		}
		if p2 := e2.String(); p2 != p1 {
			t.Fatalf("unstable printing of %q:\n first %s\nsecond %s", s, p1, p2)
		}
		fl, err := Compile(s, sch)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("Compile(%q): error %T is not *Error", s, err)
			}
			return
		}
		// The printed form compiles too, with the same columns.
		fl2, err := Compile(p1, sch)
		if err != nil {
			t.Fatalf("Compile(%q) ok but Compile(%q): %v", s, p1, err)
		}
		if len(fl.Columns()) != len(fl2.Columns()) {
			t.Fatalf("columns differ: %v vs %v", fl.Columns(), fl2.Columns())
		}
		fuzzOnce.Do(func() { fuzzRec = testRecord(t) })
		m1, err1 := fl.Mask(fuzzRec)
		m2, err2 := fl2.Mask(fuzzRec)
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("%q: eval error %v, printed form %v", s, err1, err2)
		}
		for i := range m1 {
			if m1[i] != m2[i] {
				t.Fatalf("%q and its printed form %q select different rows: %v vs %v", s, p1, m1, m2)
			}
		}
	})
}
