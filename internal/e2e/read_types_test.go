package e2e

// Helpers of the Read API conformance tests (read_test.go): canonical
// forms of values as written, as Arrow and as Avro, and the every-type test.

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"cloud.google.com/go/bigquery/storage/managedwriter"
	"cloud.google.com/go/civil"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/hamba/avro/v2"
)

// ---- canonical values ----
//
// Rows from the three sources (what was written, Arrow, Avro) are turned
// into one canonical form and compared: a scalar is a string (numbers in
// decimal, TIMESTAMP and DATETIME as microseconds since the epoch, DATE as
// days, TIME as microseconds of the day, NUMERIC/BIGNUMERIC as exact
// decimals at their scale, BYTES in base64), a RECORD or RANGE a
// map[string]any, a REPEATED field []any (never nil), NULL nil.

func scaleOf(t bigquery.FieldType) int {
	if t == bigquery.BigNumericFieldType {
		return 38
	}
	return 9
}

func canonScalar(f *bigquery.FieldSchema, typ bigquery.FieldType, v any) (string, error) {
	switch x := v.(type) {
	case int64:
		return strconv.FormatInt(x, 10), nil
	case int32:
		return strconv.FormatInt(int64(x), 10), nil
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	case bool:
		return strconv.FormatBool(x), nil
	case string:
		if typ == bigquery.DateTimeFieldType {
			dt, err := civil.ParseDateTime(x)
			if err != nil {
				return "", fmt.Errorf("%s: DATETIME %q: %v", f.Name, x, err)
			}
			return strconv.FormatInt(dt.In(time.UTC).UnixMicro(), 10), nil
		}
		return x, nil
	case []byte:
		return base64.StdEncoding.EncodeToString(x), nil
	case *big.Rat:
		return x.FloatString(scaleOf(typ)), nil
	case numeric:
		return x.r.FloatString(9), nil
	case bignumeric:
		return x.r.FloatString(38), nil
	case decimal128.Num:
		return new(big.Rat).SetFrac(x.BigInt(), pow10(9)).FloatString(9), nil
	case decimal256.Num:
		return new(big.Rat).SetFrac(x.BigInt(), pow10(38)).FloatString(38), nil
	case arrow.Timestamp:
		return strconv.FormatInt(int64(x), 10), nil
	case arrow.Date32:
		return strconv.FormatInt(int64(x), 10), nil
	case arrow.Time64:
		return strconv.FormatInt(int64(x), 10), nil
	case time.Time:
		if typ == bigquery.DateFieldType {
			return strconv.FormatInt(int64(civil.DateOf(x.UTC()).DaysSince(unixEpochDate)), 10), nil
		}
		return strconv.FormatInt(x.UnixMicro(), 10), nil
	case time.Duration:
		return strconv.FormatInt(x.Microseconds(), 10), nil
	case civil.Date:
		return strconv.FormatInt(int64(x.DaysSince(unixEpochDate)), 10), nil
	case civil.Time:
		return strconv.FormatInt(int64(x.Hour)*3600e6+int64(x.Minute)*60e6+int64(x.Second)*1e6+int64(x.Nanosecond/1000), 10), nil
	case civil.DateTime:
		return strconv.FormatInt(x.In(time.UTC).UnixMicro(), 10), nil
	}
	return "", fmt.Errorf("%s: unexpected %T %v", f.Name, v, v)
}

func pow10(n int) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil) }

// canonInput canonicalizes a written row value of field f.
func canonInput(f *bigquery.FieldSchema, v any, elem bool) (any, error) {
	if f.Repeated && !elem {
		out := []any{}
		if v == nil {
			return out, nil
		}
		for _, el := range v.([]any) {
			c, err := canonInput(f, el, true)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
		return out, nil
	}
	if v == nil {
		return nil, nil
	}
	switch f.Type {
	case bigquery.RecordFieldType:
		return canonRecordInput(f.Schema, v.(map[string]any))
	case bigquery.RangeFieldType:
		return canonRecordInput(rangeFields(f), v.(map[string]any))
	}
	return canonScalar(f, f.Type, v)
}

func canonRecordInput(sch bigquery.Schema, row map[string]any) (map[string]any, error) {
	out := map[string]any{}
	for _, f := range sch {
		c, err := canonInput(f, row[f.Name], false)
		if err != nil {
			return nil, err
		}
		out[f.Name] = c
	}
	return out, nil
}

// rangeFields is RANGE<T> as a record of two nullable T.
func rangeFields(f *bigquery.FieldSchema) bigquery.Schema {
	t := f.RangeElementType.Type
	return bigquery.Schema{{Name: "start", Type: t}, {Name: "end", Type: t}}
}

// canonArrow canonicalizes row i of a column of field f.
func canonArrow(f *bigquery.FieldSchema, arr arrow.Array, i int, elem bool) (any, error) {
	if f.Repeated && !elem {
		l, ok := arr.(*array.List)
		if !ok {
			return nil, fmt.Errorf("%s: REPEATED as %s", f.Name, arr.DataType())
		}
		out := []any{}
		if l.IsNull(i) {
			return nil, fmt.Errorf("%s: a NULL list (BigQuery arrays are never NULL)", f.Name)
		}
		lo, hi := l.ValueOffsets(i)
		for j := lo; j < hi; j++ {
			c, err := canonArrow(f, l.ListValues(), int(j), true)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
		return out, nil
	}
	if arr.IsNull(i) {
		return nil, nil
	}
	switch a := arr.(type) {
	case *array.Struct:
		sch := f.Schema
		if f.Type == bigquery.RangeFieldType {
			sch = rangeFields(f)
		}
		out := map[string]any{}
		st := a.DataType().(*arrow.StructType)
		if st.NumFields() != len(sch) {
			return nil, fmt.Errorf("%s: struct of %d fields, want %d", f.Name, st.NumFields(), len(sch))
		}
		for k, sf := range sch {
			if st.Field(k).Name != sf.Name {
				return nil, fmt.Errorf("%s: child %d is %q, want %q", f.Name, k, st.Field(k).Name, sf.Name)
			}
			c, err := canonArrow(sf, a.Field(k), i, false)
			if err != nil {
				return nil, err
			}
			out[sf.Name] = c
		}
		return out, nil
	case *array.Int64:
		return canonScalar(f, f.Type, a.Value(i))
	case *array.Float64:
		return canonScalar(f, f.Type, a.Value(i))
	case *array.Boolean:
		return canonScalar(f, f.Type, a.Value(i))
	case *array.String:
		return canonScalar(f, bigquery.StringFieldType, a.Value(i))
	case *array.Binary:
		return canonScalar(f, f.Type, a.Value(i))
	case *array.Decimal128:
		return canonScalar(f, f.Type, a.Value(i))
	case *array.Decimal256:
		return canonScalar(f, f.Type, a.Value(i))
	case *array.Timestamp:
		return canonScalar(f, f.Type, a.Value(i))
	case *array.Date32:
		return canonScalar(f, f.Type, a.Value(i))
	case *array.Time64:
		return canonScalar(f, f.Type, a.Value(i))
	}
	return nil, fmt.Errorf("%s: unexpected Arrow type %s", f.Name, arr.DataType())
}

func canonArrowRows(t *testing.T, sch bigquery.Schema, recs []arrow.Record) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, rec := range recs {
		if int(rec.NumCols()) != len(sch) {
			t.Fatalf("record has %d columns, want %d: %s", rec.NumCols(), len(sch), rec.Schema())
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			row := map[string]any{}
			for k, f := range sch {
				if rec.ColumnName(k) != f.Name {
					t.Fatalf("column %d is %q, want %q", k, rec.ColumnName(k), f.Name)
				}
				c, err := canonArrow(f, rec.Column(k), i, false)
				if err != nil {
					t.Fatal(err)
				}
				row[f.Name] = c
			}
			out = append(out, row)
		}
	}
	return out
}

// canonAvro canonicalizes a value hamba/avro decoded into any. A nullable
// field is a ["null", T] union: nil or a map with one key (the branch).
func canonAvro(f *bigquery.FieldSchema, v any, elem bool) (any, error) {
	if f.Repeated && !elem {
		l, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%s: REPEATED decoded as %T", f.Name, v)
		}
		out := []any{}
		for _, el := range l {
			c, err := canonAvro(f, el, true)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
		return out, nil
	}
	if !f.Required && !elem {
		if v == nil {
			return nil, nil
		}
		// hamba/avro returns a nullable union's value as is or, for
		// some targets, as a one-key map naming the branch.
		if u, ok := v.(map[string]any); ok && len(u) == 1 {
			for k, x := range u {
				isChild := false
				for _, c := range f.Schema {
					isChild = isChild || c.Name == k
				}
				if f.Type == bigquery.RangeFieldType {
					isChild = k == "start" || k == "end"
				}
				if !isChild {
					v = x
				}
			}
		}
	}
	switch f.Type {
	case bigquery.RecordFieldType, bigquery.RangeFieldType:
		sch := f.Schema
		if f.Type == bigquery.RangeFieldType {
			sch = rangeFields(f)
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: record decoded as %T", f.Name, v)
		}
		out := map[string]any{}
		for _, sf := range sch {
			c, err := canonAvro(sf, m[sf.Name], false)
			if err != nil {
				return nil, err
			}
			out[sf.Name] = c
		}
		return out, nil
	}
	return canonScalar(f, f.Type, v)
}

// ---- reading ----

// readAvro reads every stream of an AVRO session and decodes the rows.
func (e *env) readAvro(tablePath string, n int32, opts *storagepb.ReadSession_TableReadOptions) (*storagepb.ReadSession, []map[string]any) {
	e.t.Helper()
	sess, err := e.rc.CreateReadSession(e.ctx, &storagepb.CreateReadSessionRequest{
		Parent:                  "projects/" + project,
		ReadSession:             &storagepb.ReadSession{Table: tablePath, DataFormat: storagepb.DataFormat_AVRO, ReadOptions: opts},
		MaxStreamCount:          n,
		PreferredMinStreamCount: n,
	})
	if err != nil {
		e.t.Fatalf("CreateReadSession(AVRO): %v", err)
	}
	sch, err := avro.Parse(sess.GetAvroSchema().GetSchema())
	if err != nil {
		e.t.Fatalf("hamba/avro cannot parse the session schema: %v\n%s", err, sess.GetAvroSchema().GetSchema())
	}
	var out []map[string]any
	for _, s := range sess.GetStreams() {
		rows, err := e.rc.ReadRows(e.ctx, &storagepb.ReadRowsRequest{ReadStream: s.GetName()})
		if err != nil {
			e.t.Fatal(err)
		}
		for {
			resp, err := rows.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				e.t.Fatalf("ReadRows(AVRO): %v", err)
			}
			r := bytes.NewReader(resp.GetAvroRows().GetSerializedBinaryRows())
			dec := avro.NewDecoderForSchema(sch, r)
			for i := int64(0); i < resp.GetRowCount(); i++ {
				var m map[string]any
				if err := dec.Decode(&m); err != nil {
					e.t.Fatalf("avro row %d of %d: %v", i, resp.GetRowCount(), err)
				}
				out = append(out, m)
			}
			if r.Len() != 0 {
				e.t.Fatalf("%d bytes left after %d Avro rows", r.Len(), resp.GetRowCount())
			}
		}
	}
	return sess, out
}

func sortByID(rows []map[string]any) {
	sort.Slice(rows, func(i, j int) bool {
		a, _ := strconv.ParseInt(rows[i]["id"].(string), 10, 64)
		b, _ := strconv.ParseInt(rows[j]["id"].(string), 10, 64)
		return a < b
	})
}

func diffRows(t *testing.T, what string, got, want []map[string]any) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows, want %d", what, len(got), len(want))
	}
	for i := range want {
		for k, w := range want[i] {
			if g := got[i][k]; !reflect.DeepEqual(g, w) {
				t.Errorf("%s: row %d (id %v) column %s:\n got  %#v\n want %#v", what, i, want[i]["id"], k, g, w)
			}
		}
		if len(got[i]) != len(want[i]) {
			t.Errorf("%s: row %d has %d columns, want %d", what, i, len(got[i]), len(want[i]))
		}
	}
}

// ---- every type ----

var allTypesSchema = bigquery.Schema{
	{Name: "id", Type: bigquery.IntegerFieldType, Required: true},
	{Name: "i", Type: bigquery.IntegerFieldType},
	{Name: "f", Type: bigquery.FloatFieldType},
	{Name: "b", Type: bigquery.BooleanFieldType},
	{Name: "s", Type: bigquery.StringFieldType},
	{Name: "by", Type: bigquery.BytesFieldType},
	{Name: "n", Type: bigquery.NumericFieldType},
	{Name: "bn", Type: bigquery.BigNumericFieldType},
	{Name: "ts", Type: bigquery.TimestampFieldType},
	{Name: "d", Type: bigquery.DateFieldType},
	{Name: "tm", Type: bigquery.TimeFieldType},
	{Name: "dt", Type: bigquery.DateTimeFieldType},
	{Name: "g", Type: bigquery.GeographyFieldType},
	{Name: "j", Type: bigquery.JSONFieldType},
	{Name: "rd", Type: bigquery.RangeFieldType, RangeElementType: &bigquery.RangeElementType{Type: bigquery.DateFieldType}},
	{Name: "rts", Type: bigquery.RangeFieldType, RangeElementType: &bigquery.RangeElementType{Type: bigquery.TimestampFieldType}},
	{Name: "rec", Type: bigquery.RecordFieldType, Schema: bigquery.Schema{
		{Name: "a", Type: bigquery.StringFieldType},
		{Name: "inner", Type: bigquery.RecordFieldType, Schema: bigquery.Schema{
			{Name: "x", Type: bigquery.IntegerFieldType},
			{Name: "ys", Type: bigquery.IntegerFieldType, Repeated: true},
		}},
	}},
	{Name: "reps", Type: bigquery.StringFieldType, Repeated: true},
	{Name: "recs", Type: bigquery.RecordFieldType, Repeated: true, Schema: bigquery.Schema{
		{Name: "k", Type: bigquery.StringFieldType},
		{Name: "v", Type: bigquery.FloatFieldType, Required: true},
	}},
}

func allTypesRows() []map[string]any {
	minTS := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTS := time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
	return []map[string]any{
		{"id": int64(0)}, // every nullable column NULL, arrays empty
		{
			"id": int64(1), "i": int64(42), "f": 1.5, "b": true, "s": "héllo, \"world\"\n", "by": []byte{0, 1, 2, 255},
			"n": numeric{rat("-123.456")}, "bn": bignumeric{rat("3.14159265358979323846264338327950288419")},
			"ts": time.Date(2024, 2, 29, 12, 34, 56, 789012000, time.UTC), "d": civil.Date{Year: 2024, Month: 2, Day: 29},
			"tm": civil.Time{Hour: 13, Minute: 14, Second: 15, Nanosecond: 16000},
			"dt": civil.DateTime{Date: civil.Date{Year: 1999, Month: 12, Day: 31}, Time: civil.Time{Hour: 23, Minute: 59, Second: 59, Nanosecond: 500000000}},
			"g":  "POINT(1 2)", "j": `{"a":[1,true,null],"b":"x"}`,
			"rd":   map[string]any{"start": civil.Date{Year: 2020, Month: 1, Day: 1}, "end": civil.Date{Year: 2021, Month: 1, Day: 1}},
			"rts":  map[string]any{"start": time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)}, // unbounded end
			"rec":  map[string]any{"a": "x", "inner": map[string]any{"x": int64(7), "ys": []any{int64(1), int64(2), int64(3)}}},
			"reps": []any{"a", "", "c"},
			"recs": []any{map[string]any{"k": "one", "v": 1.0}, map[string]any{"v": -2.5}},
		},
		{
			"id": int64(2), "i": int64(math.MaxInt64), "f": math.MaxFloat64, "b": false, "s": "", "by": []byte{},
			"n":  numeric{rat("99999999999999999999999999999.999999999")},
			"bn": bignumeric{rat("578960446186580977117854925043439539266.34992332820282019728792003956564819967")},
			"ts": maxTS, "d": civil.Date{Year: 9999, Month: 12, Day: 31},
			"tm": civil.Time{Hour: 23, Minute: 59, Second: 59, Nanosecond: 999999000},
			"dt": civil.DateTime{Date: civil.Date{Year: 9999, Month: 12, Day: 31}, Time: civil.Time{Hour: 23, Minute: 59, Second: 59, Nanosecond: 999999000}},
			"g":  "LINESTRING(0 0, 1 1)", "j": `"just a string"`,
			"rec": map[string]any{"inner": map[string]any{}}, // nested NULLs, empty array
		},
		{
			"id": int64(3), "i": int64(math.MinInt64), "f": math.Inf(-1), "by": bytes.Repeat([]byte{0xAB}, 1000),
			"n":  numeric{rat("-99999999999999999999999999999.999999999")},
			"bn": bignumeric{rat("-578960446186580977117854925043439539266.34992332820282019728792003956564819968")},
			"ts": minTS, "d": civil.Date{Year: 1, Month: 1, Day: 1},
			"tm":  civil.Time{},
			"dt":  civil.DateTime{Date: civil.Date{Year: 1, Month: 1, Day: 1}},
			"j":   `null`,
			"rd":  map[string]any{"end": civil.Date{Year: 1970, Month: 1, Day: 1}},
			"rec": map[string]any{"a": strings.Repeat("long ", 100)},
		},
		{
			"id": int64(4), "f": math.NaN(), "n": numeric{rat("0.000000001")}, "bn": bignumeric{rat("-0.00000000000000000000000000000000000001")},
			"ts": time.Unix(0, 0).UTC(),
		},
	}
}

// writeAllTypes creates a table of allTypesSchema, writes allTypesRows
// through managedwriter and returns the table path and the canonical rows.
func writeAllTypes(t *testing.T, e *env, name string) (string, []map[string]any) {
	t.Helper()
	tp := e.table(name, allTypesSchema)
	dp, md := descriptor(t, allTypesSchema)
	ms, err := e.mw.NewManagedStream(e.ctx, managedwriter.WithDestinationTable(tp), managedwriter.WithSchemaDescriptor(dp))
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	var data [][]byte
	var want []map[string]any
	for _, r := range allTypesRows() {
		data = append(data, marshalRow(t, md, r))
		c, err := canonRecordInput(allTypesSchema, r)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, c)
	}
	res, err := ms.AppendRows(e.ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := res.GetResult(e.ctx); err != nil {
		t.Fatalf("append all types: %v", err)
	}
	return tp, want
}

func TestReadEveryTypeArrowAndAvro(t *testing.T) {
	e := newEnv(t)
	tp, want := writeAllTypes(t, e, "t_types")

	for _, c := range []storagepb.ArrowSerializationOptions_CompressionCodec{
		storagepb.ArrowSerializationOptions_COMPRESSION_UNSPECIFIED,
		storagepb.ArrowSerializationOptions_LZ4_FRAME,
		storagepb.ArrowSerializationOptions_ZSTD,
	} {
		opts := &storagepb.ReadSession_TableReadOptions{
			OutputFormatSerializationOptions: &storagepb.ReadSession_TableReadOptions_ArrowSerializationOptions{
				ArrowSerializationOptions: &storagepb.ArrowSerializationOptions{BufferCompression: c},
			},
		}
		recs := e.readAll(tp, 1, opts, nil)
		got := canonArrowRows(t, allTypesSchema, recs)
		sortByID(got)
		diffRows(t, "ARROW "+c.String(), got, want)
		if c == storagepb.ArrowSerializationOptions_COMPRESSION_UNSPECIFIED {
			checkArrowTypes(t, recs[0].Schema())
		}
		for _, r := range recs {
			r.Release()
		}
	}

	_, avroRows := e.readAvro(tp, 1, nil)
	var got []map[string]any
	for _, m := range avroRows {
		row := map[string]any{}
		for _, f := range allTypesSchema {
			c, err := canonAvro(f, m[f.Name], false)
			if err != nil {
				t.Fatal(err)
			}
			row[f.Name] = c
		}
		got = append(got, row)
	}
	sortByID(got)
	diffRows(t, "AVRO", got, want)
}

// checkArrowTypes checks the Arrow type of each BigQuery type as the Read
// API serves it (TIMESTAMP as timestamp[us, UTC], NUMERIC as decimal128(38, 9), ...).
func checkArrowTypes(t *testing.T, s *arrow.Schema) {
	t.Helper()
	want := map[string]string{
		"id": "int64", "i": "int64", "f": "float64", "b": "bool", "s": "utf8", "by": "binary",
		"n": "decimal(38, 9)", "bn": "decimal256(76, 38)", "ts": "timestamp[us, tz=UTC]", "d": "date32",
		"tm": "time64[us]", "dt": "timestamp[us]", "g": "utf8", "j": "utf8",
	}
	for name, typ := range want {
		fs, ok := s.FieldsByName(name)
		if !ok {
			t.Fatalf("no Arrow field %s", name)
		}
		if got := fs[0].Type.String(); got != typ {
			t.Errorf("Arrow type of %s = %s, want %s", name, got, typ)
		}
		if name == "id" && fs[0].Nullable {
			t.Errorf("REQUIRED id is nullable in Arrow")
		}
	}
	for name, ext := range map[string]string{"g": "google:sqlType:geography", "j": "google:sqlType:json", "dt": "google:sqlType:datetime"} {
		fs, _ := s.FieldsByName(name)
		if v, ok := fs[0].Metadata.GetValue("ARROW:extension:name"); !ok || v != ext {
			t.Errorf("%s: ARROW:extension:name = %q, want %q", name, v, ext)
		}
	}
}
