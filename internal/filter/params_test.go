package filter

import (
	"context"
	"fmt"
	"math/big"
	"testing"

	"github.com/bqstore/bqstore/internal/schema"
)

// TestParams compiles expressions with query parameters and prints their
// value, or the error.
func TestParams(t *testing.T) {
	named := &Params{Mode: ParamsNamed, Named: map[string]ParamValue{
		"i":    {Type: "INT64", Values: []any{int64(5)}},
		"s":    {Type: "STRING", Values: []any{"a'b"}},
		"n":    {Type: "NUMERIC", Values: []any{big.NewRat(3, 2)}},
		"d":    {Type: "DATE", Values: []any{int64(19000)}},
		"null": {Type: "INT64"},
		"arr":  {Type: "INT64", Array: true, Values: []any{int64(1), int64(5), nil}},
		"none": {Type: "STRING", Array: true},
		"st":   {Unsupported: "RANGE<DATE>"},
		"sv":   {Type: "STRUCT<a INT64, b STRING>", Values: []any{Struct{int64(1), "x"}}},
		"sarr": {Type: "STRUCT<k STRING>", Array: true, Values: []any{Struct{"p"}, Struct{"q"}}},
		"e":    {Type: "INT64", Array: true, Values: []any{}},
	}}
	pos := &Params{Mode: ParamsPositional, Positional: []ParamValue{
		{Type: "INT64", Values: []any{int64(7)}},
		{Type: "STRING", Values: []any{"x"}},
	}}
	for _, tc := range []struct {
		p        *Params
		expr     string
		want     string
		wantType string
	}{
		{named, "@i + 1", "6", "INT64"},
		{named, "@I * 2", "10", "INT64"},
		{named, "CONCAT(@s, 'c')", "a'bc", "STRING"},
		{named, "@n * 2", "3/1", "NUMERIC"},
		{named, "DATE_ADD(@d, INTERVAL 1 DAY)", "19001", "DATE"},
		{named, "@null IS NULL", "true", "BOOL"},
		{named, "5 IN UNNEST(@arr)", "true", "BOOL"},
		{named, "2 NOT IN UNNEST(@arr)", "<nil>", "BOOL"},
		{named, "CAST(NULL AS STRING) IN UNNEST(@none)", "false", "BOOL"},
		{pos, "? + LENGTH(?)", "8", "INT64"},
		{named, "@missing", "Query parameter 'missing' not found at [1:1]", ""},
		{named, "1 + ?", "Positional parameters are not supported at [1:5]", ""},
		{pos, "@i", "Named parameters are not supported at [1:1]", ""},
		{pos, "? + LENGTH(?) + ?", "Query has 2 positional parameters but parameter 3 was referenced at [1:17]", ""},
		{nil, "?", "Query takes no positional parameters at [1:1]", ""},
		{named, "@i = @s", "No matching signature for operator = for argument types: INT64, STRING. Supported signature: ANY = ANY at [1:4]", ""},
		{named, "@arr", "[1 5 <nil>]", "ARRAY<INT64>"},
		{named, "ARRAY_LENGTH(@arr)", "3", "INT64"},
		{named, "@arr[OFFSET(1)]", "5", "INT64"},
		{named, "@none", "<nil>", "ARRAY<STRING>"},
		{named, "ARRAY_LENGTH(@e)", "0", "INT64"},
		{named, "@sv.b", "x", "STRING"},
		{named, "@sv", "[1 x]", "STRUCT<a INT64, b STRING>"},
		{named, "@sarr[OFFSET(1)].k", "q", "STRING"},
		{named, "1 IN UNNEST(@i)", "Values referenced in UNNEST must be arrays. UNNEST contains expression of type INT64 at [1:13]", ""},
		{named, "@st", "not supported yet by bqstore: query parameters of type RANGE<DATE> at [1:1]", ""},
	} {
		x, err := CompileScalar(tc.expr, &schema.Schema{}, WithParams(tc.p))
		got := ""
		if err == nil {
			var vals []any
			vals, err = x.Values(context.Background(), nil, 1)
			if err == nil {
				got = fmt.Sprint(vals[0])
				if x.Type() != tc.wantType {
					t.Errorf("%s: type %s, want %s", tc.expr, x.Type(), tc.wantType)
				}
			}
		}
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.expr, got, tc.want)
		}
	}
}

// TestParamsIndex numbers the `?`s of a whole statement, then compiles
// one expression of it with the rest blanked.
func TestParamsIndex(t *testing.T) {
	src := "SELECT ? AS a FROM t WHERE x = ?"
	p := &Params{Mode: ParamsPositional, Positional: []ParamValue{
		{Type: "INT64", Values: []any{int64(1)}},
		{Type: "INT64", Values: []any{int64(2)}},
	}}
	p.Index(src)
	blanked := []byte(src)
	for i := range blanked[:len(src)-1] {
		blanked[i] = ' '
	}
	x, err := CompileScalar(string(blanked), &schema.Schema{}, WithParams(p))
	if err != nil {
		t.Fatal(err)
	}
	v, err := x.Values(context.Background(), nil, 1)
	if err != nil || v[0] != int64(2) {
		t.Fatalf("got %v, %v; want 2", v, err)
	}
}

func TestParseParam(t *testing.T) {
	for _, tc := range []struct{ typ, text, want string }{
		{"INT64", "-42", "-42"},
		{"FLOAT64", "1.5", "1.5"},
		{"FLOAT64", "NaN", "NaN"},
		{"NUMERIC", "1.25", "5/4"},
		{"BIGNUMERIC", "-0.5", "-1/2"},
		{"BOOL", "true", "true"},
		{"STRING", "x", "x"},
		{"DATE", "1970-01-02", "1"},
		{"DATETIME", "1970-01-01T00:00:01.5", "1500000"},
		{"DATETIME", "1970-01-01 00:00:01", "1000000"},
		{"TIME", "00:00:02", "2000000"},
		{"TIMESTAMP", "1970-01-01 00:00:01.000001+00:00", "1000001"},
		{"TIMESTAMP", "1970-01-01T00:00:01Z", "1000000"},
		{"TIMESTAMP", "1970-01-01 01:00:00-01:00", "7200000000"},
		{"TIMESTAMP", "1970-01-01 00:00:00 UTC", "0"},
		{"JSON", `{"a":1}`, `{"a":1}`},
		{"GEOGRAPHY", "POINT(1 2)", "POINT(1 2)"},
		{"INT64", "abc", "error: Bad int64 value: abc"},
		{"STRUCT", "x", "error: filter: parameter type not supported"},
	} {
		v, err := ParseParam(tc.typ, tc.text)
		got := fmt.Sprint(v)
		if r, ok := v.(*big.Rat); ok {
			got = r.String()
		}
		if err != nil {
			got = "error: " + err.Error()
		}
		if got != tc.want {
			t.Errorf("%s %q: got %q, want %q", tc.typ, tc.text, got, tc.want)
		}
	}
}
