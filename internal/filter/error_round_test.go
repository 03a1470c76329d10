package filter

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/bqstore/bqstore/internal/schema"
)

// TestRoundingMode: ROUND(x, digits, rounding_mode) for NUMERIC and
// BIGNUMERIC (GoogleSQL mathematical functions, ROUND; ZetaSQL's
// FN_ROUND_WITH_ROUNDING_MODE_NUMERIC/BIGNUMERIC: no FLOAT64 signature).
// ROUND_HALF_AWAY_FROM_ZERO is ROUND's default; ROUND_HALF_EVEN rounds a
// tie to the even neighbour.
func TestRoundingMode(t *testing.T) {
	for _, tc := range []struct{ expr, want string }{
		{`ROUND(NUMERIC '2.25', 1, 'ROUND_HALF_EVEN')`, "11/5"},   // 2.2
		{`ROUND(NUMERIC '2.35', 1, 'ROUND_HALF_EVEN')`, "12/5"},   // 2.4
		{`ROUND(NUMERIC '2.251', 1, 'ROUND_HALF_EVEN')`, "23/10"}, // 2.3
		{`ROUND(NUMERIC '-2.5', 0, 'ROUND_HALF_EVEN')`, "-2"},
		{`ROUND(NUMERIC '3.5', 0, 'ROUND_HALF_EVEN')`, "4"},
		{`ROUND(NUMERIC '-2.5', 0, 'ROUND_HALF_AWAY_FROM_ZERO')`, "-3"},
		{`ROUND(NUMERIC '2.25', 1, 'ROUND_HALF_AWAY_FROM_ZERO')`, "23/10"},
		{`ROUND(NUMERIC '125', -1, 'ROUND_HALF_EVEN')`, "120"},
		{`ROUND(NUMERIC '135', -1, 'ROUND_HALF_EVEN')`, "140"},
		{`ROUND(BIGNUMERIC '0.00000000000000000000000000000000000025', 37, 'ROUND_HALF_EVEN')`, "1/5000000000000000000000000000000000000"},
		{`ROUND(BIGNUMERIC '0.00000000000000000000000000000000000035', 37, 'ROUND_HALF_EVEN')`, "1/2500000000000000000000000000000000000"},
		{`ROUND(NUMERIC '2.5', NULL, 'ROUND_HALF_EVEN')`, "NULL"},
		{`ROUND(CAST(NULL AS NUMERIC), 0, 'ROUND_HALF_EVEN')`, "NULL"},
		// No FLOAT64 (or INT64-only) signature; the mode is a literal of
		// the ROUNDING_MODE enum.
		{`ROUND(2.5, 0, 'ROUND_HALF_EVEN')`, "error: No matching signature for function ROUND"},
		{`ROUND(5, 0, 'ROUND_HALF_EVEN')`, "error: No matching signature for function ROUND"},
		{`ROUND(NUMERIC '2.5', 0, 'ROUND_UP')`, "error: Could not cast literal \"ROUND_UP\" to type ROUNDING_MODE"},
		// An enum's names are case-sensitive (ZetaSQL's string-to-enum cast).
		{`ROUND(NUMERIC '2.5', 0, 'round_half_even')`, "error: Could not cast literal \"round_half_even\" to type ROUNDING_MODE"},
		{`ROUND(NUMERIC '2.5', 0, CONCAT('ROUND_', 'HALF_EVEN'))`, "error: No matching signature for function ROUND"},
	} {
		got := scalarText(t, tc.expr)
		if got != tc.want && !(strings.HasPrefix(tc.want, "error: ") && strings.HasPrefix(got, tc.want)) {
			t.Errorf("%s\n got %s\nwant %s", tc.expr, got, tc.want)
		}
	}
	for expr, want := range map[string]string{
		`ROUND(BIGNUMERIC '2.5', 0, 'ROUND_HALF_EVEN')`: "BIGNUMERIC",
		`ROUND(NUMERIC '2.5', 0, 'ROUND_HALF_EVEN')`:    "NUMERIC",
	} {
		if x, err := CompileScalar(expr, &schema.Schema{}); err != nil || x.Type() != want {
			t.Errorf("%s: %v, want type %s", expr, err, want)
		}
	}
}

// TestErrorFunction: ERROR(message) fails the query with message as it
// is (GoogleSQL debugging functions, ERROR: "Returns an error ... the
// error_message argument is a STRING"; the documented example's error
// reads "Found unexpected value: baz"), only on rows that evaluate it:
// a branch of IF, CASE or COALESCE not taken does not fail, and the
// function is not folded away at compile time. Its type is inferred from
// the context.
func TestErrorFunction(t *testing.T) {
	for _, tc := range []struct{ expr, want string }{
		{`ERROR('boom')`, "error: boom"},
		{`ERROR(CONCAT('Found unexpected value: ', 'baz'))`, "error: Found unexpected value: baz"},
		{`IF(TRUE, 1, ERROR('never'))`, "1"},
		{`IF(FALSE, 1, ERROR('taken'))`, "error: taken"},
		{`CASE WHEN 1 > 0 THEN 'a' ELSE ERROR('never') END`, "a"},
		{`COALESCE(1, ERROR('never'))`, "1"},
		{`1 + IF(TRUE, 1, ERROR('never'))`, "2"},
		{`ERROR(1)`, "error: No matching signature for function ERROR"},
	} {
		got := scalarText(t, tc.expr)
		if got != tc.want && !(strings.HasPrefix(tc.want, "error: ") && strings.HasPrefix(got, tc.want)) {
			t.Errorf("%s\n got %s\nwant %s", tc.expr, got, tc.want)
		}
	}
	// The message carries no position (the user wrote all of it); the
	// error is still an *Error, the query engine's error type.
	x, err := CompileScalar(`ERROR('boom')`, &schema.Schema{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = x.Values(context.Background(), nil, 1)
	var fe *Error
	if !errors.As(err, &fe) || err.Error() != "boom" {
		t.Fatalf("ERROR('boom'): %#v (%v), want an *Error reading exactly boom", err, err)
	}
	// Row by row: the rows that do not reach it pass.
	s := &schema.Schema{Fields: []*schema.Field{{Name: "v", Type: schema.String}}}
	x, err = CompileScalar(`IF(v = 'baz', ERROR(CONCAT('Found unexpected value: ', v)), v)`, s)
	if err != nil {
		t.Fatal(err)
	}
	sch := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	run := func(vals ...string) ([]any, error) {
		rb := array.NewRecordBuilder(memory.DefaultAllocator, sch)
		defer rb.Release()
		rb.Field(0).(*array.StringBuilder).AppendValues(vals, nil)
		rec := rb.NewRecordBatch()
		defer rec.Release()
		return x.Values(context.Background(), rec, 0)
	}
	if got, err := run("foo", "bar"); err != nil || len(got) != 2 {
		t.Fatalf("no baz: %v, %v", got, err)
	}
	if _, err := run("foo", "baz"); err == nil || err.Error() != "Found unexpected value: baz" {
		t.Fatalf("with baz: %v", err)
	}
}
