package arrowenc

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

func fieldNames(s *arrow.Schema) string {
	var out []string
	var walk func(prefix string, fs []arrow.Field)
	walk = func(prefix string, fs []arrow.Field) {
		for _, f := range fs {
			out = append(out, prefix+f.Name)
			t := f.Type
			if l, ok := t.(*arrow.ListType); ok {
				t = l.Elem()
			}
			if st, ok := t.(*arrow.StructType); ok {
				walk(prefix+f.Name+".", st.Fields())
			}
		}
	}
	walk("", s.Fields())
	return strings.Join(out, ",")
}

func TestProjectionSchema(t *testing.T) {
	s := testSchema()
	for _, tc := range []struct {
		sel  []string
		want string
	}{
		{[]string{"string", "int64"}, "int64,string"},
		{[]string{"REC.inner.X", "json"}, "json,rec,rec.inner,rec.inner.x"},
		{[]string{"recs.b", "recs.inner.y", "rec.tags"}, "rec,rec.tags,recs,recs.b,recs.inner,recs.inner.y"},
		{[]string{"rec.a", "rec"}, "rec,rec.a,rec.b,rec.inner,rec.inner.x,rec.inner.y,rec.tags"},
		{[]string{"range_ts.end"}, "range_ts,range_ts.end"},
	} {
		p, err := NewProjection(s, tc.sel)
		if err != nil {
			t.Fatalf("%v: %v", tc.sel, err)
		}
		if got := fieldNames(p.Schema()); got != tc.want {
			t.Errorf("%v:\n got %s\nwant %s", tc.sel, got, tc.want)
		}
	}
	// Metadata of kept fields survives projection.
	p, _ := NewProjection(s, []string{"datetime"})
	if v, _ := p.Schema().Field(0).Metadata.GetValue("ARROW:extension:name"); v != "google:sqlType:datetime" {
		t.Fatalf("metadata lost: %v", p.Schema().Field(0))
	}
}

func TestProjectionErrors(t *testing.T) {
	s := testSchema()
	for _, tc := range []struct {
		sel  []string
		want string
	}{
		{[]string{"nope"}, `"nope"`},
		{[]string{"int64", "rec.zz"}, `"rec.zz"`},
		{[]string{"int64.x"}, `"int64.x"`},
		{[]string{"ints.x"}, `"ints.x"`},
		{[]string{""}, "empty"},
		{[]string{"rec..a"}, `"rec..a"`},
	} {
		_, err := NewProjection(s, tc.sel)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want it to name %s", tc.sel, err, tc.want)
		}
	}
}

// TestProjectionValues checks that the projected columns hold the same
// values as the source, that they share its buffers, and that projected
// slices encode and read back equal.
func TestProjectionValues(t *testing.T) {
	s := testSchema()
	rec := randomRecord(s, rand.New(rand.NewPCG(5, 0)), 120)
	defer rec.Release()
	p, err := NewProjection(s, []string{"recs.inner.x", "rec.b", "rec.inner", "int64", "range_ts.start"})
	if err != nil {
		t.Fatal(err)
	}
	enc, err := NewEncoder(p.Schema(), nil)
	if err != nil {
		t.Fatal(err)
	}
	schemaMsg, err := SchemaMessage(p.Schema())
	if err != nil {
		t.Fatal(err)
	}
	for _, sl := range [][2]int64{{0, 120}, {5, 77}, {119, 120}} {
		part := rec.NewSlice(sl[0], sl[1])
		got, err := p.Record(part)
		if err != nil {
			t.Fatal(err)
		}
		if got.NumRows() != part.NumRows() || got.NumCols() != 4 {
			t.Fatalf("shape %dx%d", got.NumRows(), got.NumCols())
		}
		idx := func(name string) int { return part.Schema().FieldIndices(name)[0] }
		// int64: whole column, same array data.
		if !array.Equal(got.Column(0), part.Column(idx("int64"))) {
			t.Fatalf("int64 differs")
		}
		// range_ts.start
		srcRange := part.Column(idx("range_ts")).(*array.Struct)
		gotRange := got.Column(1).(*array.Struct)
		if gotRange.NumField() != 1 || !array.Equal(gotRange.Field(0), srcRange.Field(0)) {
			t.Fatalf("range_ts.start differs")
		}
		for i := 0; i < int(part.NumRows()); i++ {
			if gotRange.IsNull(i) != srcRange.IsNull(i) {
				t.Fatalf("range_ts validity differs at %d", i)
			}
		}
		// rec.{b, inner}
		srcRec := part.Column(idx("rec")).(*array.Struct)
		gotRec := got.Column(2).(*array.Struct)
		if !array.Equal(gotRec.Field(0), srcRec.Field(1)) || !array.Equal(gotRec.Field(1), srcRec.Field(2)) {
			t.Fatalf("rec fields differ")
		}
		if gotRec.Data().Buffers()[0] != srcRec.Data().Buffers()[0] {
			t.Fatalf("rec validity bitmap was copied")
		}
		// recs.inner.x through the list
		srcRecs := part.Column(idx("recs")).(*array.List)
		gotRecs := got.Column(3).(*array.List)
		srcOff, gotOff := srcRecs.Offsets(), gotRecs.Offsets()
		for i := range srcOff {
			if srcOff[i] != gotOff[i] {
				t.Fatalf("recs offsets differ")
			}
		}
		srcX := srcRecs.ListValues().(*array.Struct).Field(2).(*array.Struct).Field(0)
		gotX := gotRecs.ListValues().(*array.Struct).Field(0).(*array.Struct).Field(0)
		if !array.Equal(srcX, gotX) {
			t.Fatalf("recs.inner.x differs")
		}
		for _, codec := range codecs {
			checkRoundTrip(t, enc, schemaMsg, got, codec)
		}
		got.Release()
		part.Release()
	}
}

func TestProjectionIdentity(t *testing.T) {
	s := testSchema()
	p, err := NewProjection(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Identity() || p.Schema() != s {
		t.Fatalf("empty selection is not the identity")
	}
	rec := randomRecord(s, rand.New(rand.NewPCG(6, 0)), 3)
	defer rec.Release()
	got, err := p.Record(rec)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	if got != rec {
		t.Fatalf("identity projection copied the record")
	}
	other := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	orec := randomRecord(other, rand.New(rand.NewPCG(6, 0)), 3)
	defer orec.Release()
	if _, err := p.Record(orec); err == nil {
		t.Fatalf("record of another schema accepted")
	}
}
