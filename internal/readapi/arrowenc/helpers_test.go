package arrowenc

import (
	"math/big"
	"math/rand/v2"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The test schema follows the engine's BigQuery -> Arrow mapping: every
// scalar type nullable and required, a RECORD with a nested RECORD, REPEATED
// scalars and records, a RANGE, and the google:sqlType extension metadata.
func ext(name string) arrow.Metadata {
	return arrow.NewMetadata([]string{"ARROW:extension:name"}, []string{name})
}

var (
	tsUTC    = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	datetime = &arrow.TimestampType{Unit: arrow.Microsecond}
	numeric  = &arrow.Decimal128Type{Precision: 38, Scale: 9}
	bignum   = &arrow.Decimal256Type{Precision: 76, Scale: 38}
)

func listOf(t arrow.DataType) arrow.DataType {
	return arrow.ListOfField(arrow.Field{Name: "item", Type: t, Nullable: false})
}

func testSchema() *arrow.Schema {
	inner := arrow.StructOf(
		arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "y", Type: arrow.BinaryTypes.String, Nullable: true},
	)
	rec := arrow.StructOf(
		arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: false},
		arrow.Field{Name: "inner", Type: inner, Nullable: true},
		arrow.Field{Name: "tags", Type: listOf(arrow.BinaryTypes.String), Nullable: false},
	)
	return arrow.NewSchema([]arrow.Field{
		{Name: "int64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "int64_req", Type: arrow.PrimitiveTypes.Int64, Nullable: false},
		{Name: "float64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "bool", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "string", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "bytes", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "numeric", Type: numeric, Nullable: true},
		{Name: "bignumeric", Type: bignum, Nullable: true},
		{Name: "timestamp", Type: tsUTC, Nullable: true},
		{Name: "date", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "datetime", Type: datetime, Nullable: true, Metadata: ext("google:sqlType:datetime")},
		{Name: "time", Type: arrow.FixedWidthTypes.Time64us, Nullable: true},
		{Name: "geography", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: arrow.NewMetadata(
			[]string{"ARROW:extension:name", "ARROW:extension:metadata"},
			[]string{"google:sqlType:geography", `{"encoding": "WKT"}`})},
		{Name: "json", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: ext("google:sqlType:json")},
		{Name: "interval", Type: arrow.FixedWidthTypes.MonthDayNanoInterval, Nullable: true},
		{Name: "range_ts", Type: arrow.StructOf(
			arrow.Field{Name: "start", Type: tsUTC, Nullable: true},
			arrow.Field{Name: "end", Type: tsUTC, Nullable: true}), Nullable: true},
		{Name: "rec", Type: rec, Nullable: true},
		{Name: "ints", Type: listOf(arrow.PrimitiveTypes.Int64), Nullable: false},
		{Name: "recs", Type: listOf(rec), Nullable: false},
	}, nil)
}

// randomRecord builds n rows of s with values from r: about one value in
// five is NULL where the field is nullable, and extremes appear often.
func randomRecord(s *arrow.Schema, r *rand.Rand, n int) arrow.Record {
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	for row := 0; row < n; row++ {
		for i, f := range s.Fields() {
			fill(b.Field(i), f.Type, f.Nullable, r)
		}
	}
	return b.NewRecord()
}

var (
	maxNumeric, _ = new(big.Int).SetString("99999999999999999999999999999999999999", 10)
	// BIGNUMERIC's range is exactly that of a 256-bit two's-complement
	// integer scaled by 10^-38: [-2^255, 2^255-1] × 10^-38 (77 digits, one
	// more than decimal256's nominal precision of 76).
	maxBig = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 255), big.NewInt(1))
	minBig = new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), 255))
)

func fill(b array.Builder, t arrow.DataType, nullable bool, r *rand.Rand) {
	if nullable && r.IntN(5) == 0 {
		b.AppendNull()
		return
	}
	pick := r.IntN(8)
	switch b := b.(type) {
	case *array.Int64Builder:
		switch pick {
		case 0:
			b.Append(-1 << 63)
		case 1:
			b.Append(1<<63 - 1)
		default:
			b.Append(r.Int64() - r.Int64())
		}
	case *array.Float64Builder:
		b.Append(r.NormFloat64() * 1e10)
	case *array.BooleanBuilder:
		b.Append(r.IntN(2) == 0)
	case *array.StringBuilder:
		b.Append(randString(r))
	case *array.BinaryBuilder:
		buf := make([]byte, r.IntN(20))
		for i := range buf {
			buf[i] = byte(r.IntN(256))
		}
		b.Append(buf)
	case *array.Decimal128Builder:
		v := new(big.Int).Mod(new(big.Int).SetBytes(randBytes(r, 17)), maxNumeric)
		switch pick {
		case 0:
			v.Set(maxNumeric)
		case 1:
			v.Neg(maxNumeric)
		case 2:
			v.Neg(v)
		}
		b.Append(decimal128.FromBigInt(v))
	case *array.Decimal256Builder:
		v := new(big.Int).Mod(new(big.Int).SetBytes(randBytes(r, 32)), maxBig)
		switch pick {
		case 0:
			v.Set(maxBig)
		case 1:
			v.Set(minBig)
		case 2:
			v.Neg(v)
		}
		b.Append(dec256(v))
	case *array.TimestampBuilder:
		const minTS, maxTS = -62135596800000000, 253402300799999999
		switch pick {
		case 0:
			b.Append(minTS)
		case 1:
			b.Append(maxTS)
		default:
			b.Append(arrow.Timestamp(minTS + r.Int64N(maxTS-minTS)))
		}
	case *array.Date32Builder:
		b.Append(arrow.Date32(-719162 + r.Int32N(2932896+719162)))
	case *array.Time64Builder:
		b.Append(arrow.Time64(r.Int64N(86400000000)))
	case *array.MonthDayNanoIntervalBuilder:
		b.Append(arrow.MonthDayNanoInterval{Months: r.Int32N(240000) - 120000, Days: r.Int32N(7000000) - 3500000, Nanoseconds: (r.Int64N(1e15) - 5e14) * 1000})
	case *array.StructBuilder:
		b.Append(true)
		st := t.(*arrow.StructType)
		for i, f := range st.Fields() {
			fill(b.FieldBuilder(i), f.Type, f.Nullable, r)
		}
	case *array.ListBuilder:
		b.Append(true)
		et := t.(*arrow.ListType).ElemField()
		for range r.IntN(4) {
			fill(b.ValueBuilder(), et.Type, et.Nullable, r)
		}
	default:
		panic("fill: unhandled builder for " + t.String())
	}
}

func randString(r *rand.Rand) string {
	alphabet := []rune("abcXYZ 019_é漢字🙂\"\\\n")
	out := make([]rune, r.IntN(12))
	for i := range out {
		out[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(out)
}

func randBytes(r *rand.Rand, n int) []byte {
	p := make([]byte, r.IntN(n+1))
	for i := range p {
		p[i] = byte(r.IntN(256))
	}
	return p
}

// dec256 converts v in [-2^255, 2^255-1]; decimal256.FromBigInt rejects
// -2^255 (its magnitude needs 256 bits) though the type holds it.
func dec256(v *big.Int) decimal256.Num {
	if v.Cmp(minBig) == 0 {
		return decimal256.New(1<<63, 0, 0, 0)
	}
	return decimal256.FromBigInt(v)
}
