package rows

import (
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

func col(name string, t storagepb.TableFieldSchema_Type, m storagepb.TableFieldSchema_Mode, sub ...*storagepb.TableFieldSchema) *storagepb.TableFieldSchema {
	return &storagepb.TableFieldSchema{Name: name, Type: t, Mode: m, Fields: sub}
}

const (
	nullable = storagepb.TableFieldSchema_NULLABLE
	required = storagepb.TableFieldSchema_REQUIRED
	repeated = storagepb.TableFieldSchema_REPEATED
)

// testSchema covers every type rows encodes.
func testSchema() *storagepb.TableSchema {
	rng := col("r", storagepb.TableFieldSchema_RANGE, nullable)
	rng.RangeElementType = &storagepb.TableFieldSchema_FieldElementType{Type: storagepb.TableFieldSchema_DATE}
	return &storagepb.TableSchema{Fields: []*storagepb.TableFieldSchema{
		col("id", storagepb.TableFieldSchema_INT64, required),
		col("f", storagepb.TableFieldSchema_DOUBLE, nullable),
		col("b", storagepb.TableFieldSchema_BOOL, nullable),
		col("s", storagepb.TableFieldSchema_STRING, nullable),
		col("by", storagepb.TableFieldSchema_BYTES, nullable),
		col("ts", storagepb.TableFieldSchema_TIMESTAMP, nullable),
		col("d", storagepb.TableFieldSchema_DATE, nullable),
		col("t", storagepb.TableFieldSchema_TIME, nullable),
		col("dt", storagepb.TableFieldSchema_DATETIME, nullable),
		col("n", storagepb.TableFieldSchema_NUMERIC, nullable),
		col("bn", storagepb.TableFieldSchema_BIGNUMERIC, nullable),
		col("g", storagepb.TableFieldSchema_GEOGRAPHY, nullable),
		col("j", storagepb.TableFieldSchema_JSON, nullable),
		col("ints", storagepb.TableFieldSchema_INT64, repeated),
		col("tags", storagepb.TableFieldSchema_STRING, repeated),
		col("rec", storagepb.TableFieldSchema_STRUCT, nullable,
			col("x", storagepb.TableFieldSchema_INT64, required),
			col("ys", storagepb.TableFieldSchema_STRUCT, repeated,
				col("z", storagepb.TableFieldSchema_STRING, nullable))),
		rng,
	}}
}

func newMapper(t testing.TB, u UnknownFields) (*Mapper, protoreflect.MessageDescriptor) {
	t.Helper()
	m, err := New(testSchema(), u)
	if err != nil {
		t.Fatal(err)
	}
	return m, messageDescriptor(t, m.Descriptor())
}

func messageDescriptor(t testing.TB, dp *descriptorpb.DescriptorProto) protoreflect.MessageDescriptor {
	t.Helper()
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name: proto.String("rows_test.proto"), Syntax: proto.String("proto2"),
		MessageType: []*descriptorpb.DescriptorProto{dp},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fd.Messages().Get(0)
}

// decode parses a row with the official protobuf runtime, so the test checks
// our hand-written wire bytes against an independent decoder.
func decode(t *testing.T, md protoreflect.MessageDescriptor, row []byte) *dynamicpb.Message {
	t.Helper()
	msg := dynamicpb.NewMessage(md)
	if err := proto.Unmarshal(row, msg); err != nil {
		t.Fatalf("proto.Unmarshal: %v", err)
	}
	return msg
}

func get(msg protoreflect.Message, name string) protoreflect.Value {
	return msg.Get(msg.Descriptor().Fields().ByName(protoreflect.Name(name)))
}

func has(msg protoreflect.Message, name string) bool {
	return msg.Has(msg.Descriptor().Fields().ByName(protoreflect.Name(name)))
}

func TestScalars(t *testing.T) {
	m, md := newMapper(t, UnknownReject)
	day := func(s string) int64 {
		tm, err := time.Parse("2006-01-02", s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.Unix() / 86400
	}
	micros := func(layout, s string) int64 {
		tm, err := time.Parse(layout, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixMicro()
	}
	cases := []struct {
		col, json string
		want      any
	}{
		{"id", `42`, int64(42)},
		{"id", `"-9223372036854775808"`, int64(math.MinInt64)},
		{"f", `1.5e3`, 1500.0},
		{"f", `"NaN"`, math.NaN()},
		{"f", `"-Infinity"`, math.Inf(-1)},
		{"f", `7`, 7.0},
		{"b", `true`, true},
		{"b", `"FALSE"`, false},
		{"s", `"h\u00e9\"llo\n"`, "hé\"llo\n"},
		{"s", `12.50`, "12.50"},
		{"s", `"\ud83d\ude00"`, "😀"},
		{"by", `"aGVsbG8="`, []byte("hello")},
		{"by", `"aGVsbG8"`, []byte("hello")},
		{"by", `""`, []byte{}},
		{"ts", `1700000000123456`, int64(1700000000123456)},
		{"ts", `"1700000000123456"`, int64(1700000000123456)},
		{"ts", `"2024-02-29T12:34:56.789Z"`, micros(time.RFC3339Nano, "2024-02-29T12:34:56.789Z")},
		{"ts", `"2024-02-29 12:34:56.123456+05:30"`, micros(time.RFC3339Nano, "2024-02-29T12:34:56.123456+05:30")},
		{"ts", `"2024-02-29 12:34:56 UTC"`, micros(time.RFC3339Nano, "2024-02-29T12:34:56Z")},
		{"ts", `"2024-02-29T12:34:56"`, micros(time.RFC3339Nano, "2024-02-29T12:34:56Z")},
		{"ts", `"0001-01-01T00:00:00Z"`, int64(minMicros)},
		{"ts", `"9999-12-31T23:59:59.999999Z"`, int64(maxMicros)},
		{"ts", `"2024-01-02T03:04:05.120000000-0800"`, micros(time.RFC3339Nano, "2024-01-02T03:04:05.12-08:00")},
		{"d", `"1970-01-01"`, int32(0)},
		{"d", `"2024-03-01"`, int32(day("2024-03-01"))},
		{"d", `"0001-01-01"`, int32(-719162)},
		{"d", `"1969-12-31"`, int32(-1)},
		{"t", `"23:59:59.999999"`, int64(23<<32 | 59<<26 | 59<<20 | 999999)},
		{"t", `"01:02:03"`, int64(1<<32 | 2<<26 | 3<<20)},
		{"dt", `"2024-05-06T07:08:09.5"`, int64(2024<<46 | 5<<42 | 6<<37 | 7<<32 | 8<<26 | 9<<20 | 500000)},
		{"dt", `"2024-05-06 07:08:09"`, int64(2024<<46 | 5<<42 | 6<<37 | 7<<32 | 8<<26 | 9<<20)},
		{"g", `"POINT(1 2)"`, "POINT(1 2)"},
		{"j", `"{\"a\":1}"`, `{"a":1}`},
		{"j", `{"a":[1,2]}`, `{"a":[1,2]}`},
		{"j", `17`, `17`},
	}
	for _, c := range cases {
		rec := `{"id":1,"` + c.col + `":` + c.json + `}`
		if c.col == "id" {
			rec = `{"id":` + c.json + `}`
		}
		row, err := m.Append(nil, []byte(rec))
		if err != nil {
			t.Errorf("%s: %v", rec, err)
			continue
		}
		got := get(decode(t, md, row), c.col).Interface()
		if f, ok := c.want.(float64); ok && math.IsNaN(f) {
			if g, ok := got.(float64); !ok || !math.IsNaN(g) {
				t.Errorf("%s: got %v, want NaN", rec, got)
			}
			continue
		}
		if b, ok := c.want.([]byte); ok {
			if g, ok := got.([]byte); !ok || string(g) != string(b) {
				t.Errorf("%s: got %v, want %v", rec, got, b)
			}
			continue
		}
		if got != c.want {
			t.Errorf("%s: got %#v, want %#v", rec, got, c.want)
		}
	}
}

// twos decodes two's-complement little-endian bytes.
func twos(b []byte) *big.Int {
	be := make([]byte, len(b))
	for i, c := range b {
		be[len(b)-1-i] = c
	}
	v := new(big.Int).SetBytes(be)
	if len(b) > 0 && b[len(b)-1]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return v
}

func TestDecimals(t *testing.T) {
	m, md := newMapper(t, UnknownReject)
	cases := []struct {
		col, json, scaled string
	}{
		{"n", `"1.5"`, "1500000000"},
		{"n", `-0.000000001`, "-1"},
		{"n", `"0"`, "0"},
		{"n", `"-0.00"`, "0"},
		{"n", `"99999999999999999999999999999.999999999"`, "99999999999999999999999999999999999999"},
		{"n", `"-99999999999999999999999999999.999999999"`, "-99999999999999999999999999999999999999"},
		{"n", `1e3`, "1000000000000"},
		{"n", `"12.3400000000000"`, "12340000000"},
		{"n", `"-128e-9"`, "-128"},
		{"n", `"-129e-9"`, "-129"},
		{"n", `"255e-9"`, "255"},
		{"bn", `"1.5"`, "150000000000000000000000000000000000000"},
		{"bn", `"-0.00000000000000000000000000000000000001"`, "-1"},
		{"bn", `"578960446186580977117854925043439539266.34992332820282019728792003956564819967"`,
			"57896044618658097711785492504343953926634992332820282019728792003956564819967"},
		{"bn", `"-578960446186580977117854925043439539266.34992332820282019728792003956564819968"`,
			"-57896044618658097711785492504343953926634992332820282019728792003956564819968"},
	}
	for _, c := range cases {
		rec := `{"id":1,"` + c.col + `":` + c.json + `}`
		row, err := m.Append(nil, []byte(rec))
		if err != nil {
			t.Errorf("%s: %v", rec, err)
			continue
		}
		b := get(decode(t, md, row), c.col).Bytes()
		want, _ := new(big.Int).SetString(c.scaled, 10)
		if got := twos(b); got.Cmp(want) != 0 {
			t.Errorf("%s: scaled %v, want %v (bytes %x)", rec, got, want, b)
		}
		// Minimal encoding, as Java's BigInteger.toByteArray.
		if len(b) > 1 {
			top, next := b[len(b)-1], b[len(b)-2]
			if (top == 0 && next&0x80 == 0) || (top == 0xff && next&0x80 != 0) {
				t.Errorf("%s: not minimal: %x", rec, b)
			}
		}
	}
}

func TestNestedAndRepeated(t *testing.T) {
	m, md := newMapper(t, UnknownReject)
	rec := `{"ID":7, "ints":[1,-2,300000], "tags":["a","b"], "rec":{"x":5,"ys":[{"z":"p"},{},{"z":null}]},
		"r":{"start":"2024-01-01","end":null}}`
	row, err := m.Append([]byte("prefix"), []byte(rec))
	if err != nil {
		t.Fatal(err)
	}
	if string(row[:6]) != "prefix" {
		t.Fatalf("Append did not append to dst")
	}
	msg := decode(t, md, row[6:])
	if got := get(msg, "id").Int(); got != 7 {
		t.Errorf("id = %d", got)
	}
	ints := get(msg, "ints").List()
	if ints.Len() != 3 || ints.Get(0).Int() != 1 || ints.Get(1).Int() != -2 || ints.Get(2).Int() != 300000 {
		t.Errorf("ints = %v", ints)
	}
	tags := get(msg, "tags").List()
	if tags.Len() != 2 || tags.Get(1).String() != "b" {
		t.Errorf("tags = %v", tags)
	}
	r := get(msg, "rec").Message()
	if get(r, "x").Int() != 5 {
		t.Errorf("rec.x = %v", get(r, "x"))
	}
	ys := get(r, "ys").List()
	if ys.Len() != 3 || get(ys.Get(0).Message(), "z").String() != "p" || has(ys.Get(1).Message(), "z") || has(ys.Get(2).Message(), "z") {
		t.Errorf("rec.ys wrong: len %d", ys.Len())
	}
	rg := get(msg, "r").Message()
	if get(rg, "start").Int() != int64(daysFromCivil(2024, 1, 1)) || has(rg, "end") {
		t.Errorf("range wrong")
	}
	if has(msg, "f") || has(msg, "s") {
		t.Errorf("absent columns are set")
	}

	// The string form of RANGE.
	row, err = m.Append(nil, []byte(`{"id":1,"r":"[UNBOUNDED, 2024-01-03)"}`))
	if err != nil {
		t.Fatal(err)
	}
	rg = get(decode(t, md, row), "r").Message()
	if has(rg, "start") || get(rg, "end").Int() != daysFromCivil(2024, 1, 3) {
		t.Errorf("string range wrong")
	}
}

func TestRecordErrors(t *testing.T) {
	m, _ := newMapper(t, UnknownReject)
	cases := []struct{ rec, path string }{
		{`{}`, "id"},
		{`{"id":null}`, "id"},
		{`{"id":1.5}`, "id"},
		{`{"id":"x"}`, "id"},
		{`{"id":9223372036854775808}`, "id"},
		{`{"id":true}`, "id"},
		{`{"id":1,"nope":2}`, "nope"},
		{`{"id":1,"id":2}`, "id"},
		{`{"id":1,"b":"yes"}`, "b"},
		{`{"id":1,"f":1e999}`, "f"},
		{`{"id":1,"by":"!!"}`, "by"},
		{`{"id":1,"ts":"2024-13-01T00:00:00Z"}`, "ts"},
		{`{"id":1,"ts":"2024-01-01T00:00:00.0000001Z"}`, "ts"},
		{`{"id":1,"ts":1.5}`, "ts"},
		{`{"id":1,"ts":"10000-01-01T00:00:00Z"}`, "ts"},
		{`{"id":1,"ts":253402300800000000}`, "ts"},
		{`{"id":1,"d":"2023-02-29"}`, "d"},
		{`{"id":1,"d":19000}`, "d"},
		{`{"id":1,"t":"24:00:00"}`, "t"},
		{`{"id":1,"dt":"2024-01-01X00:00:00"}`, "dt"},
		{`{"id":1,"n":"1.0000000001"}`, "n"},
		{`{"id":1,"n":"1e29"}`, "n"},
		{`{"id":1,"n":"abc"}`, "n"},
		{`{"id":1,"bn":"1e39"}`, "bn"},
		{`{"id":1,"g":5}`, "g"},
		{`{"id":1,"ints":5}`, "ints"},
		{`{"id":1,"ints":[1,null]}`, "ints[1]"},
		{`{"id":1,"ints":[1,"x"]}`, "ints[1]"},
		{`{"id":1,"rec":{"ys":[]}}`, "rec.x"},
		{`{"id":1,"rec":{"x":1,"ys":[{"z":1,"q":2}]}}`, "rec.ys[0].q"},
		{`{"id":1,"rec":[1]}`, "rec"},
		{`{"id":1,"s":{}}`, "s"},
		{`{"id":1,"r":"[2024-01-01]"}`, "r"},
		{`{"id":1`, ""},
		{`{"id":1}x`, ""},
		{`[1]`, ""},
		{`{"id":01}`, ""},
		{`{"id":1,"s":"a` + "\x01" + `"}`, "s"},
		{`{"id":1,"s":"\x"}`, "s"},
		{"{\"id\":1,\"s\":\"\xff\"}", "s"},
		{``, ""},
	}
	for _, c := range cases {
		dst := []byte("keep")
		out, err := m.Append(dst, []byte(c.rec))
		var re *RecordError
		if !errors.As(err, &re) {
			t.Errorf("%s: err = %v, want *RecordError", c.rec, err)
			continue
		}
		if want := strings.Contains(c.rec, "nope") || strings.Contains(c.rec, `"q"`); re.UnknownColumn != want {
			t.Errorf("%s: UnknownColumn = %v", c.rec, re.UnknownColumn)
		}
		if re.Path != c.path {
			t.Errorf("%s: path %q, want %q (%v)", c.rec, re.Path, c.path, err)
		}
		if string(out) != "keep" {
			t.Errorf("%s: dst not restored: %q", c.rec, out)
		}
	}
}

func TestUnknownIgnore(t *testing.T) {
	m, md := newMapper(t, UnknownIgnore)
	row, err := m.Append(nil, []byte(`{"extra":{"deep":[1,{"x":null}]},"id":3,"more":"s"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := get(decode(t, md, row), "id").Int(); got != 3 {
		t.Errorf("id = %d", got)
	}
	// Ignored values are still validated as JSON.
	if _, err := m.Append(nil, []byte(`{"extra":[1,},"id":3}`)); err == nil {
		t.Errorf("invalid JSON in an ignored value was accepted")
	}
}

func TestNewRejects(t *testing.T) {
	for _, s := range []*storagepb.TableSchema{
		nil,
		{},
		{Fields: []*storagepb.TableFieldSchema{col("i", storagepb.TableFieldSchema_INTERVAL, nullable)}},
		{Fields: []*storagepb.TableFieldSchema{col("a", storagepb.TableFieldSchema_STRUCT, nullable)}},
		{Fields: []*storagepb.TableFieldSchema{col("a", storagepb.TableFieldSchema_INT64, nullable), col("A", storagepb.TableFieldSchema_INT64, nullable)}},
	} {
		if _, err := New(s, UnknownReject); err == nil {
			t.Errorf("New(%v) accepted", s)
		}
	}
	if _, err := ParseUnknownFields("maybe"); err == nil {
		t.Errorf("ParseUnknownFields accepted maybe")
	}
}

func TestAppendAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	m, _ := newMapper(t, UnknownReject)
	rec := []byte(`{"id":1,"f":2.5,"s":"hello","ts":"2024-02-29T12:34:56Z","ints":[1,2,3],"rec":{"x":1,"ys":[{"z":"a"}]}}`)
	dst := make([]byte, 0, 4096)
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		if _, err = m.Append(dst[:0], rec); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 0 {
		t.Errorf("Append allocates %v times per record", allocs)
	}
}
