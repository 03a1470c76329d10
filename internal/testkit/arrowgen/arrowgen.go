// Package arrowgen generates Arrow records of BigQuery tables for tests:
// every type in every mode, with NULLs and the extremes of each type.
package arrowgen

import (
	"math"
	"math/big"
	"math/rand/v2"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/bqstore/bqstore/internal/schema"
)

// AllTypes is a table with every BigQuery type, in every mode, nested
// and repeated.
func AllTypes() *schema.Schema {
	f := func(name string, t schema.Type, m schema.Mode, sub ...*schema.Field) *schema.Field {
		return &schema.Field{Name: name, Type: t, Mode: m, Fields: sub}
	}
	rng := func(name string, elem schema.Type) *schema.Field {
		return &schema.Field{Name: name, Type: schema.Range, Mode: schema.Nullable, RangeElementType: &schema.RangeElementType{Type: elem}}
	}
	inner := f("inner", schema.Record, schema.Nullable,
		f("x", schema.Integer, schema.Nullable),
		f("y", schema.String, schema.Nullable))
	return &schema.Schema{Fields: []*schema.Field{
		f("int64", schema.Integer, schema.Nullable),
		f("int64_req", schema.Integer, schema.Required),
		f("float64", schema.Float, schema.Nullable),
		f("bool", schema.Boolean, schema.Nullable),
		f("string", schema.String, schema.Nullable),
		f("bytes", schema.Bytes, schema.Nullable),
		f("numeric", schema.Numeric, schema.Nullable),
		f("bignumeric", schema.BigNumeric, schema.Nullable),
		f("timestamp", schema.Timestamp, schema.Nullable),
		f("date", schema.Date, schema.Nullable),
		f("datetime", schema.DateTime, schema.Nullable),
		f("time", schema.Time, schema.Nullable),
		f("geography", schema.Geography, schema.Nullable),
		f("json", schema.JSON, schema.Nullable),
		f("interval", schema.Interval, schema.Nullable),
		rng("range_ts", schema.Timestamp),
		rng("range_date", schema.Date),
		rng("range_dt", schema.DateTime),
		f("rec", schema.Record, schema.Nullable,
			f("a", schema.Integer, schema.Nullable),
			f("b", schema.String, schema.Required),
			inner,
			f("tags", schema.String, schema.Repeated)),
		f("ints", schema.Integer, schema.Repeated),
		f("stamps", schema.Timestamp, schema.Repeated),
		f("recs", schema.Record, schema.Repeated,
			f("a", schema.Numeric, schema.Nullable),
			f("inner", schema.Record, schema.Required,
				f("x", schema.Date, schema.Nullable))),
	}}
}

// Record builds n rows of the Arrow form of s: about one value in
// five is NULL where the column is nullable, and extremes appear often.
func Record(s *schema.Schema, r *rand.Rand, n int) arrow.Record {
	as := schema.ToArrow(s)
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	for range n {
		for i, f := range as.Fields() {
			Fill(b.Field(i), f.Type, f.Nullable, r)
		}
	}
	return b.NewRecord()
}

var (
	maxNumeric, _ = new(big.Int).SetString("99999999999999999999999999999999999999", 10)
	// MinBigNumeric and MaxBigNumeric bound BIGNUMERIC: its range is exactly that of a 256-bit two's-complement
	// integer scaled by 10^-38: [-2^255, 2^255-1] × 10^-38 (77 digits, one
	// more than decimal256's nominal precision of 76).
	MaxBigNumeric = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 255), big.NewInt(1))
	MinBigNumeric = new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), 255))
)

const (
	minTS = -62135596800000000 // 0001-01-01T00:00:00Z
	maxTS = 253402300799999999 // 9999-12-31T23:59:59.999999Z
)

// Fill appends one random value of type t (NULL about one time in five
// when nullable) to b.
func Fill(b array.Builder, t arrow.DataType, nullable bool, r *rand.Rand) {
	if nullable && r.IntN(5) == 0 {
		b.AppendNull()
		return
	}
	pick := r.IntN(10)
	switch b := b.(type) {
	case *array.Int64Builder:
		switch pick {
		case 0:
			b.Append(math.MinInt64)
		case 1:
			b.Append(math.MaxInt64)
		default:
			b.Append(r.Int64() - r.Int64())
		}
	case *array.Float64Builder:
		switch pick {
		case 0:
			b.Append(math.Inf(1))
		case 1:
			b.Append(math.Inf(-1))
		case 2:
			b.Append(math.NaN())
		case 3:
			b.Append(math.MaxFloat64)
		case 4:
			b.Append(-math.SmallestNonzeroFloat64)
		default:
			b.Append(r.NormFloat64() * math.Pow(10, float64(r.IntN(40)-20)))
		}
	case *array.BooleanBuilder:
		b.Append(r.IntN(2) == 0)
	case *array.StringBuilder:
		b.Append(randString(r))
	case *array.BinaryBuilder:
		b.Append(randBytes(r, 20))
	case *array.Decimal128Builder:
		v := new(big.Int).Mod(new(big.Int).SetBytes(randBytes(r, 17)), maxNumeric)
		switch pick {
		case 0:
			v.Set(maxNumeric)
		case 1:
			v.Neg(maxNumeric)
		case 2, 3:
			v.Neg(v)
		case 4:
			v.SetInt64(r.Int64N(2000) - 1000)
		}
		b.Append(decimal128.FromBigInt(v))
	case *array.Decimal256Builder:
		v := new(big.Int).Mod(new(big.Int).SetBytes(randBytes(r, 32)), MaxBigNumeric)
		switch pick {
		case 0:
			v.Set(MaxBigNumeric)
		case 1:
			v.Set(MinBigNumeric)
		case 2, 3:
			v.Neg(v)
		case 4:
			v.SetInt64(r.Int64N(2000) - 1000)
		}
		b.Append(Dec256(v))
	case *array.TimestampBuilder:
		switch pick {
		case 0:
			b.Append(minTS)
		case 1:
			b.Append(maxTS)
		case 2:
			b.Append(arrow.Timestamp(r.Int64N(2e6) - 1e6))
		default:
			b.Append(arrow.Timestamp(minTS + r.Int64N(maxTS-minTS)))
		}
	case *array.Date32Builder:
		switch pick {
		case 0:
			b.Append(-719162)
		case 1:
			b.Append(2932896)
		default:
			b.Append(arrow.Date32(-719162 + r.Int32N(2932896+719162)))
		}
	case *array.Time64Builder:
		switch pick {
		case 0:
			b.Append(0)
		case 1:
			b.Append(86399999999)
		default:
			b.Append(arrow.Time64(r.Int64N(86400000000)))
		}
	case *array.MonthDayNanoIntervalBuilder:
		// The Go client cannot parse a negative interval whose years or
		// hours part is zero ("-0-5": see compatibility notes), so the
		// negative values here keep a non-zero leading part.
		months := r.Int32N(240000) - 120000
		if months < 0 && months > -12 {
			months -= 12
		}
		nanos := (r.Int64N(1e15) - 5e14) * 1000
		if nanos < 0 && nanos > -3600e9 {
			nanos -= 3600e9
		}
		if pick == 0 {
			nanos -= nanos % 1e9
		}
		b.Append(arrow.MonthDayNanoInterval{Months: months, Days: r.Int32N(7000000) - 3500000, Nanoseconds: nanos})
	case *array.StructBuilder:
		b.Append(true)
		st := t.(*arrow.StructType)
		for i, f := range st.Fields() {
			Fill(b.FieldBuilder(i), f.Type, f.Nullable, r)
		}
	case *array.ListBuilder:
		b.Append(true)
		et := t.(*arrow.ListType).ElemField()
		for range r.IntN(4) {
			Fill(b.ValueBuilder(), et.Type, et.Nullable, r)
		}
	default:
		panic("fill: unhandled builder for " + t.String())
	}
}

func randString(r *rand.Rand) string {
	alphabet := []rune("abcXYZ 019_é漢字🙂\"\\\n\t\x01\u2028<>&")
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
// Dec256 converts an integer in BIGNUMERIC's range to decimal256.
func Dec256(v *big.Int) decimal256.Num {
	if v.Cmp(MinBigNumeric) == 0 {
		return decimal256.New(1<<63, 0, 0, 0)
	}
	return decimal256.FromBigInt(v)
}
