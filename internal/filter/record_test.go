package filter

import (
	"math/big"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/bqstore/bqstore/internal/schema"
)

// testSchema is the table the evaluation tests run against.
func testSchema() *schema.Schema {
	f := func(name string, t schema.Type, mode schema.Mode, sub ...*schema.Field) *schema.Field {
		return &schema.Field{Name: name, Type: t, Mode: mode, Fields: sub}
	}
	return &schema.Schema{Fields: []*schema.Field{
		f("int_field", schema.Integer, schema.Nullable),
		f("float_field", schema.Float, schema.Nullable),
		f("numeric_field", schema.Numeric, schema.Nullable),
		f("bignum", schema.BigNumeric, schema.Nullable),
		f("bool_field", schema.Boolean, schema.Nullable),
		f("str", schema.String, schema.Nullable),
		f("bytes_field", schema.Bytes, schema.Nullable),
		f("date_field", schema.Date, schema.Nullable),
		f("dt", schema.DateTime, schema.Nullable),
		f("time_field", schema.Time, schema.Nullable),
		f("ts", schema.Timestamp, schema.Nullable),
		f("geo_field", schema.Geography, schema.Nullable),
		f("json_field", schema.JSON, schema.Nullable),
		f("nullable_field", schema.String, schema.Nullable),
		f("rec", schema.Record, schema.Nullable,
			f("a", schema.Integer, schema.Nullable),
			f("b", schema.Record, schema.Nullable, f("c", schema.String, schema.Nullable))),
		f("arr", schema.Integer, schema.Repeated),
		f("Select", schema.String, schema.Required),
	}}
}

// testRows are the rows of the evaluation tests; nil is NULL.
var testRows = [][]any{
	// int, float, numeric, bignum, bool, str, bytes, date, dt, time, ts, geo, json, nullable, rec.a, rec.b.c (rec NULL when both "REC_NULL"), arr, Select
	{int64(1), 1.5, "1.5", "10", true, "alpha", "\x00\x01", "2014-09-27", "2014-09-27 10:00:00", "10:00:00", "2014-09-27 10:00:00", "POINT(2 2)", `{"a":1}`, "x", int64(1), "p", []int64{1, 2}, "s0"},
	{int64(5), -2.0, "5", "-1", false, "beta", "abc", "2020-02-29", "2020-02-29 23:59:59.5", "23:59:59", "2020-02-29 23:59:59.5", "POINT(2.001 2)", nil, nil, nil, "q", []int64{}, "s1"},
	{int64(6), 100.25, "5.000000001", "0", nil, "Gamma%", nil, nil, nil, nil, nil, "LINESTRING(0 0, 10 0)", "[1,2]", "", "REC_NULL", "REC_NULL", nil, "s2"},
	{nil, nil, nil, nil, true, nil, "", "1970-01-01", "1970-01-01 00:00:00", "00:00:00", "1970-01-01 00:00:00", nil, nil, nil, int64(3), "B_NULL", []int64{3}, "s3"},
	{int64(-7), 0.0, "-0.5", "0.00000000000000000000000000000000000001", false, "é_x", "\xff", "9999-12-31", "9999-12-31 23:59:59.999999", "12:34:56.789", "2024-01-01 00:00:00", "POLYGON((0 0, 4 0, 4 4, 0 4, 0 0))", "null", "y", int64(4), nil, []int64{4}, "s4"},
}

// must panics on a malformed test fixture.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func testRecord(t testing.TB) arrow.RecordBatch {
	mem := memory.DefaultAllocator
	bStruct := arrow.StructOf(arrow.Field{Name: "c", Type: arrow.BinaryTypes.String, Nullable: true})
	recType := arrow.StructOf(
		arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "b", Type: bStruct, Nullable: true})
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "int_field", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "float_field", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "numeric_field", Type: &arrow.Decimal128Type{Precision: 38, Scale: 9}, Nullable: true},
		{Name: "bignum", Type: &arrow.Decimal256Type{Precision: 76, Scale: 38}, Nullable: true},
		{Name: "bool_field", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "str", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "bytes_field", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "date_field", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "dt", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
		{Name: "time_field", Type: arrow.FixedWidthTypes.Time64us, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "geo_field", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "json_field", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "nullable_field", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "rec", Type: recType, Nullable: true},
		{Name: "arr", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
		{Name: "Select", Type: arrow.BinaryTypes.String},
	}, nil)
	b := array.NewRecordBuilder(mem, sch)
	defer b.Release()
	for _, row := range testRows {
		for c, v := range row[:14] {
			fb := b.Field(c)
			if v == nil {
				fb.AppendNull()
				continue
			}
			switch fb := fb.(type) {
			case *array.Int64Builder:
				fb.Append(v.(int64))
			case *array.Float64Builder:
				fb.Append(v.(float64))
			case *array.BooleanBuilder:
				fb.Append(v.(bool))
			case *array.StringBuilder:
				fb.Append(v.(string))
			case *array.BinaryBuilder:
				fb.Append([]byte(v.(string)))
			case *array.Decimal128Builder:
				r := mustRat(v.(string))
				n := new(big.Int).Quo(new(big.Int).Mul(r.Num(), tenPow9), r.Denom())
				fb.Append(decimal128.FromBigInt(n))
			case *array.Decimal256Builder:
				r := mustRat(v.(string))
				n := new(big.Int).Quo(new(big.Int).Mul(r.Num(), tenPow38), r.Denom())
				fb.Append(decimal256.FromBigInt(n))
			case *array.Date32Builder:
				fb.Append(arrow.Date32(must(parseDate(v.(string)))))
			case *array.TimestampBuilder:
				fb.Append(arrow.Timestamp(must(parseDatetime(v.(string)))))
			case *array.Time64Builder:
				fb.Append(arrow.Time64(must(parseTime(v.(string)))))
			default:
				t.Fatalf("column %d: unexpected builder %T", c, fb)
			}
		}
		sb := b.Field(14).(*array.StructBuilder)
		if row[14] == "REC_NULL" {
			sb.AppendNull()
		} else {
			sb.Append(true)
			ab := sb.FieldBuilder(0).(*array.Int64Builder)
			if row[14] == nil {
				ab.AppendNull()
			} else {
				ab.Append(row[14].(int64))
			}
			bb := sb.FieldBuilder(1).(*array.StructBuilder)
			switch row[15] {
			case "B_NULL":
				bb.AppendNull()
			case nil:
				bb.Append(true)
				bb.FieldBuilder(0).AppendNull()
			default:
				bb.Append(true)
				bb.FieldBuilder(0).(*array.StringBuilder).Append(row[15].(string))
			}
		}
		lb := b.Field(15).(*array.ListBuilder)
		if row[16] == nil {
			lb.AppendNull()
		} else {
			lb.Append(true)
			for _, x := range row[16].([]int64) {
				lb.ValueBuilder().(*array.Int64Builder).Append(x)
			}
		}
		b.Field(16).(*array.StringBuilder).Append(row[17].(string))
	}
	return b.NewRecordBatch()
}
