package arrowenc

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
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

// NewProjectionMust is the projection of every column of s.
func NewProjectionMust(s *arrow.Schema) *Projection {
	p, err := NewProjection(s, nil)
	if err != nil {
		panic(err)
	}
	return p
}

// TestProjectionIntervalText: an INTERVAL column (month_day_nano_interval,
// also inside a RECORD) goes out as utf8 in BigQuery's canonical text,
// which the Go client's Arrow reader parses; before, it went out as
// month_day_nano_interval and the client failed ("unknown arrow type").
func TestProjectionIntervalText(t *testing.T) {
	iv := arrow.FixedWidthTypes.MonthDayNanoInterval
	s := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: iv, Nullable: true},
		{Name: "r", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int64}, arrow.Field{Name: "j", Type: iv, Nullable: true})},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	ib := b.Field(0).(*array.MonthDayNanoIntervalBuilder)
	ib.Append(arrow.MonthDayNanoInterval{Months: 14, Days: 3, Nanoseconds: 14706789000000})
	ib.AppendNull()
	ib.Append(arrow.MonthDayNanoInterval{Months: -2, Nanoseconds: -1000})
	rb := b.Field(1).(*array.StructBuilder)
	for k := 0; k < 3; k++ {
		rb.Append(true)
		rb.FieldBuilder(0).(*array.Int64Builder).Append(int64(k))
		rb.FieldBuilder(1).(*array.MonthDayNanoIntervalBuilder).Append(arrow.MonthDayNanoInterval{Days: int32(k)})
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	for _, sel := range [][]string{nil, {"i", "r.j"}} {
		p, err := NewProjection(s, sel)
		if err != nil {
			t.Fatal(err)
		}
		if p.Identity() || p.Schema().Field(0).Type.ID() != arrow.STRING {
			t.Fatalf("%v: schema %s", sel, p.Schema())
		}
		got, err := p.Record(rec)
		if err != nil {
			t.Fatal(err)
		}
		col := got.Column(0).(*array.String)
		if col.Value(0) != "1-2 3 4:5:6.789" || !col.IsNull(1) || col.Value(2) != "-0-2 0 -0:0:0.000001" {
			t.Fatalf("%v: %s", sel, col)
		}
		r := got.Column(1).(*array.Struct)
		j := r.Field(r.NumField() - 1).(*array.String)
		if j.Value(2) != "0-0 2 0:0:0" {
			t.Fatalf("%v: r.j %s", sel, j)
		}
		got.Release()
	}
}

func TestProjectionIdentity(t *testing.T) {
	s := noIntervals(testSchema())
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

// noIntervals is s without its top-level INTERVAL columns (which a
// projection turns into text: never the identity).
func noIntervals(s *arrow.Schema) *arrow.Schema {
	var fs []arrow.Field
	for _, f := range s.Fields() {
		if f.Type.ID() != arrow.INTERVAL_MONTH_DAY_NANO {
			fs = append(fs, f)
		}
	}
	return arrow.NewSchema(fs, nil)
}
