package avroenc

import (
	"bytes"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/bqstore/bqstore/internal/testkit/arrowgen"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/hamba/avro/v2"

	"github.com/bqstore/bqstore/internal/rowjson"
	"github.com/bqstore/bqstore/internal/schema"
)

func TestSchemaJSON(t *testing.T) {
	s := &schema.Schema{Fields: []*schema.Field{
		{Name: "i", Type: schema.Integer, Mode: schema.Required},
		{Name: "n", Type: schema.Numeric},
		{Name: "bn", Type: schema.BigNumeric, Mode: schema.Nullable},
		{Name: "ts", Type: schema.Timestamp, Mode: schema.Nullable},
		{Name: "d", Type: schema.Date, Mode: schema.Nullable},
		{Name: "dt", Type: schema.DateTime, Mode: schema.Nullable},
		{Name: "t", Type: schema.Time, Mode: schema.Nullable},
		{Name: "g", Type: schema.Geography, Mode: schema.Nullable},
		{Name: "j", Type: schema.JSON, Mode: schema.Nullable},
		{Name: "iv", Type: schema.Interval, Mode: schema.Nullable},
		{Name: "tags", Type: schema.String, Mode: schema.Repeated},
		{Name: "r", Type: schema.Record, Mode: schema.Nullable, Fields: []*schema.Field{
			{Name: "x", Type: schema.Float, Mode: schema.Required},
			{Name: "r", Type: schema.Record, Mode: schema.Repeated, Fields: []*schema.Field{
				{Name: "b", Type: schema.Bytes, Mode: schema.Nullable},
			}},
		}},
		{Name: "rg", Type: schema.Range, Mode: schema.Nullable, RangeElementType: &schema.RangeElementType{Type: schema.Date}},
		{Name: "ok", Type: schema.Boolean, Mode: schema.Nullable},
	}}
	got, err := Schema(s)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"record","name":"__root__","fields":[` +
		`{"name":"i","type":"long"},` +
		`{"name":"n","type":["null",{"type":"bytes","logicalType":"decimal","precision":38,"scale":9}]},` +
		`{"name":"bn","type":["null",{"type":"bytes","logicalType":"decimal","precision":77,"scale":38}]},` +
		`{"name":"ts","type":["null",{"type":"long","logicalType":"timestamp-micros"}]},` +
		`{"name":"d","type":["null",{"type":"int","logicalType":"date"}]},` +
		`{"name":"dt","type":["null",{"type":"string","logicalType":"datetime"}]},` +
		`{"name":"t","type":["null",{"type":"long","logicalType":"time-micros"}]},` +
		`{"name":"g","type":["null",{"type":"string","sqlType":"GEOGRAPHY"}]},` +
		`{"name":"j","type":["null",{"type":"string","sqlType":"JSON"}]},` +
		`{"name":"iv","type":["null",{"type":"string","sqlType":"INTERVAL"}]},` +
		`{"name":"tags","type":{"type":"array","items":"string"}},` +
		`{"name":"r","type":["null",{"type":"record","name":"r","namespace":"__root__","fields":[` +
		`{"name":"x","type":"double"},` +
		`{"name":"r","type":{"type":"array","items":{"type":"record","name":"r","namespace":"__root__.r","fields":[` +
		`{"name":"b","type":["null","bytes"]}]}}}]}]},` +
		`{"name":"rg","type":["null",{"type":"record","name":"rg","namespace":"__root__","fields":[` +
		`{"name":"start","type":["null",{"type":"int","logicalType":"date"}]},` +
		`{"name":"end","type":["null",{"type":"int","logicalType":"date"}]}]}]},` +
		`{"name":"ok","type":["null","boolean"]}]}`
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	// Avro libraries accept it: nested records sharing a name get distinct
	// full names.
	if _, err := avro.Parse(got); err != nil {
		t.Fatalf("hamba/avro rejects the schema: %v", err)
	}
}

// decodeRows decodes n concatenated rows as a client does: one Decode per
// row against the session schema, then nothing left over.
func decodeRows(t testing.TB, schemaJSON string, data []byte, n int) []map[string]any {
	t.Helper()
	sch, err := avro.Parse(schemaJSON)
	if err != nil {
		t.Fatalf("parse schema: %v", err)
	}
	r := bytes.NewReader(data)
	dec := avro.NewDecoderForSchema(sch, r)
	out := make([]map[string]any, n)
	for i := range out {
		if err := dec.Decode(&out[i]); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
	}
	// Nothing may follow the n rows.
	var extra map[string]any
	if err := dec.Decode(&extra); err == nil {
		t.Fatalf("data left after %d rows: %v", n, extra)
	}
	return out
}

func TestRoundTripAllTypes(t *testing.T) {
	s := arrowgen.AllTypes()
	sj, err := Schema(s)
	if err != nil {
		t.Fatal(err)
	}
	const seed = 21
	t.Logf("seed %d", seed)
	rec := arrowgen.Record(s, rand.New(rand.NewPCG(seed, 0)), 300)
	defer rec.Release()
	enc := NewEncoder(s)
	for _, sl := range [][2]int64{{0, 300}, {17, 131}, {299, 300}, {5, 5}} {
		part := rec.NewSlice(sl[0], sl[1])
		data, err := enc.Encode(part, nil)
		if err != nil {
			t.Fatal(err)
		}
		rows := decodeRows(t, sj, data, int(part.NumRows()))
		for row := range rows {
			for i, f := range s.Fields {
				got := rows[row][f.Name]
				want := expectValue(f, part.Column(i), row)
				if err := compare(got, want); err != nil {
					t.Fatalf("slice %v row %d column %s: %v\n got %#v\nwant %#v", sl, row, f.Name, err, got, want)
				}
			}
		}
		part.Release()
	}
}

// expectValue is what hamba/avro's generic decoding should return for a cell,
// computed from the Arrow data.
func expectValue(f *schema.Field, arr arrow.Array, row int) any {
	if f.EffectiveMode() == schema.Repeated {
		l := arr.(*array.List)
		out := []any{}
		if l.IsValid(row) {
			s, e := l.ValueOffsets(row)
			for j := s; j < e; j++ {
				out = append(out, expectScalar(f, l.ListValues(), int(j)))
			}
		}
		return out
	}
	return expectScalar(f, arr, row)
}

func expectScalar(f *schema.Field, arr arrow.Array, row int) any {
	if arr.IsNull(row) {
		return nil
	}
	switch a := arr.(type) {
	case *array.Int64:
		return a.Value(row)
	case *array.Float64:
		return a.Value(row)
	case *array.Boolean:
		return a.Value(row)
	case *array.String:
		return a.Value(row)
	case *array.Binary:
		return append([]byte{}, a.Value(row)...)
	case *array.Decimal128:
		return new(big.Rat).SetFrac(a.Value(row).BigInt(), new(big.Int).Exp(big.NewInt(10), big.NewInt(9), nil))
	case *array.Decimal256:
		return new(big.Rat).SetFrac(a.Value(row).BigInt(), new(big.Int).Exp(big.NewInt(10), big.NewInt(38), nil))
	case *array.Timestamp:
		if f.Type == schema.DateTime {
			return string(rowjson.AppendDatetime(nil, int64(a.Value(row))))
		}
		return time.UnixMicro(int64(a.Value(row))).UTC()
	case *array.Date32:
		return time.Unix(int64(a.Value(row))*86400, 0).UTC()
	case *array.Time64:
		return time.Duration(a.Value(row)) * time.Microsecond
	case *array.MonthDayNanoInterval:
		return string(rowjson.AppendInterval(nil, a.Value(row)))
	case *array.Struct:
		fields := f.Fields
		if f.Type == schema.Range {
			fields = []*schema.Field{{Name: "start", Type: f.RangeElementType.Type}, {Name: "end", Type: f.RangeElementType.Type}}
		}
		out := map[string]any{}
		for i, c := range fields {
			out[c.Name] = expectValue(c, a.Field(i), row)
		}
		return out
	}
	panic("expectScalar: " + arr.DataType().String())
}

// compare compares a decoded value with the expected one. A nullable value
// may come back wrapped in a single-entry union map ({"long": 5}).
func compare(got, want any) error {
	if m, ok := got.(map[string]any); ok && len(m) == 1 {
		if _, isRec := want.(map[string]any); !isRec || len(want.(map[string]any)) != 1 {
			for _, v := range m {
				got = v
			}
		}
	}
	switch w := want.(type) {
	case nil:
		if got != nil {
			return fmt.Errorf("want NULL")
		}
		return nil
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Errorf("array length")
		}
		for i := range w {
			if err := compare(g[i], w[i]); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
		return nil
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			return fmt.Errorf("record shape")
		}
		for k := range w {
			if err := compare(g[k], w[k]); err != nil {
				return fmt.Errorf(".%s: %w", k, err)
			}
		}
		return nil
	case float64:
		g, ok := got.(float64)
		if ok && (g == w || math.IsNaN(g) && math.IsNaN(w)) {
			return nil
		}
	case *big.Rat:
		if g, ok := got.(*big.Rat); ok && g.Cmp(w) == 0 {
			return nil
		}
	case time.Time:
		if g, ok := got.(time.Time); ok && g.Equal(w) {
			return nil
		}
	case []byte:
		if g, ok := got.([]byte); ok && bytes.Equal(g, w) {
			return nil
		}
	default:
		if got == want {
			return nil
		}
	}
	return fmt.Errorf("value differs")
}

func TestEncodeExactBytes(t *testing.T) {
	s := &schema.Schema{Fields: []*schema.Field{
		{Name: "i", Type: schema.Integer, Mode: schema.Nullable},
		{Name: "n", Type: schema.Numeric, Mode: schema.Required},
		{Name: "l", Type: schema.Integer, Mode: schema.Repeated},
		{Name: "dt", Type: schema.DateTime, Mode: schema.Required},
	}}
	js := `[{"i": -1, "n": "-1.000000000", "l": [1, -64], "dt": 1000001},{"i": null, "n": "0", "l": [], "dt": 0}]`
	rec, _, err := array.RecordFromJSON(nil, schema.ToArrow(s), strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	got, err := NewEncoder(s).Encode(rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{
		// row 0: union 1, long -1 (zigzag 1)
		0x02, 0x01,
		// NUMERIC -1e9 = 0xC4653600 as minimal two's complement: 4 bytes
		0x08, 0xc4, 0x65, 0x36, 0x00,
		// array: block of 2, 1 (zigzag 2), -64 (zigzag 127), end
		0x04, 0x02, 0x7f, 0x00,
		// DATETIME "1970-01-01T00:00:01.000001" (26 bytes)
		0x34}
	want = append(want, "1970-01-01T00:00:01.000001"...)
	// row 1: null, NUMERIC 0 as one byte, empty array, "1970-01-01T00:00:00"
	want = append(want, 0x00, 0x02, 0x00, 0x00, 0x26)
	want = append(want, "1970-01-01T00:00:00"...)
	if !bytes.Equal(got, want) {
		t.Fatalf("got  % x\nwant % x", got, want)
	}
}

func TestEncodeErrors(t *testing.T) {
	s := arrowgen.AllTypes()
	rec := arrowgen.Record(s, rand.New(rand.NewPCG(3, 0)), 20)
	defer rec.Release()
	bad := s.Clone()
	bad.Fields[2].Type = schema.Integer
	if _, err := NewEncoder(bad).Encode(rec, nil); err == nil || !strings.Contains(err.Error(), `"float64"`) {
		t.Fatalf("type mismatch: %v", err)
	}
	nested := s.Clone()
	nested.Fields[18].Fields[2].Fields[1].Type = schema.Bytes
	if _, err := NewEncoder(nested).Encode(rec, nil); err == nil || !strings.Contains(err.Error(), `"rec.inner.y"`) {
		t.Fatalf("nested type mismatch: %v", err)
	}
	// A NULL in a column declared REQUIRED, and inside an array.
	nullable := &schema.Schema{Fields: []*schema.Field{
		{Name: "a", Type: schema.Integer, Mode: schema.Nullable},
		{Name: "l", Type: schema.Integer, Mode: schema.Repeated},
	}}
	as := schema.ToArrow(nullable)
	as = arrow.NewSchema([]arrow.Field{as.Field(0), {Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)}}, nil)
	nrec, _, err := array.RecordFromJSON(nil, as, strings.NewReader(`[{"a": 1, "l": [1]}, {"a": null, "l": [2, null]}]`))
	if err != nil {
		t.Fatal(err)
	}
	defer nrec.Release()
	req := nullable.Clone()
	req.Fields[0].Mode = schema.Required
	dst := []byte("keep")
	out, err := NewEncoder(req).Encode(nrec, dst)
	if err == nil || !strings.Contains(err.Error(), `"a"`) || !strings.Contains(err.Error(), "row 1") {
		t.Fatalf("NULL in REQUIRED: %v", err)
	}
	if string(out) != "keep" {
		t.Fatalf("dst modified on error: %q", out)
	}
	if _, err := NewEncoder(nullable).Encode(nrec, nil); err == nil || !strings.Contains(err.Error(), `"l (array element)"`) {
		t.Fatalf("NULL array element: %v", err)
	}
	if _, err := NewEncoder(&schema.Schema{Fields: s.Fields[:2]}).Encode(rec, nil); err == nil {
		t.Fatalf("column count mismatch accepted")
	}
	if _, err := Schema(&schema.Schema{Fields: []*schema.Field{{Name: "x", Type: "WHAT"}}}); err == nil {
		t.Fatalf("unknown type accepted")
	}
}

// TestAllocs guards the hot path: allocations per Encode depend on the
// schema (one closure per field), not on the number of rows.
func TestAllocs(t *testing.T) {
	s := benchTable()
	rec := benchRecord(s, 5000)
	defer rec.Release()
	enc := NewEncoder(s)
	buf, err := enc.Encode(rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(20, func() { buf, _ = enc.Encode(rec, buf[:0]) })
	if allocs > 20 { // measured 8
		t.Fatalf("%.0f allocations per Encode of 5000 rows", allocs)
	}
}
