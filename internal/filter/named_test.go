package filter

import (
	"context"
	"fmt"
	"math/big"
	"strings"
	"testing"

	"github.com/bqstore/bqstore/internal/schema"
)

// scalarText compiles and evaluates a constant query expression and prints
// its one value (an ARRAY as [a, b]), or "error: <message>".
func scalarText(t *testing.T, expr string) string {
	t.Helper()
	x, err := CompileScalar(expr, &schema.Schema{})
	if err != nil {
		return "error: " + err.Error()
	}
	vals, err := x.Values(context.Background(), nil, 1)
	if err != nil {
		return "error: " + err.Error()
	}
	switch v := vals[0].(type) {
	case nil:
		return "NULL"
	case *big.Rat:
		return v.RatString()
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = fmt.Sprint(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprint(vals[0])
}

// TestNamedArguments: the functions that take mandatory-named arguments
// (name => value), with their documented defaults and effects (GoogleSQL
// JSON functions reference; ZetaSQL builtin_function_internal_2.cc for
// the signatures: each of these is kNamedOnly).
func TestNamedArguments(t *testing.T) {
	for _, tc := range []struct{ expr, want string }{
		// PARSE_JSON: 'exact' (the default) refuses a number FLOAT64
		// cannot hold; 'round' rounds it.
		{`PARSE_JSON('{"id": 922337203685477580701}', wide_number_mode => 'round')`, `{"id":9.223372036854776e+20}`},
		{`PARSE_JSON('{"id": 922337203685477580701}', WIDE_NUMBER_MODE => 'round')`, `{"id":9.223372036854776e+20}`},
		{`PARSE_JSON('[1.5]', wide_number_mode => 'exact')`, `[1.5]`},
		{`PARSE_JSON('{"id": 922337203685477580701}', wide_number_mode => 'exact')`, `error: Invalid input to PARSE_JSON`},
		{`SAFE.PARSE_JSON('{"id": 922337203685477580701}', wide_number_mode => 'round')`, `{"id":9.223372036854776e+20}`},
		// ZetaSQL: "Invalid `wide_number_mode` specified for PARSE_JSON: x";
		// a NULL mode gives NULL.
		{`PARSE_JSON('1', wide_number_mode => 'sloppy')`, "error: Invalid `wide_number_mode` specified for PARSE_JSON: sloppy"},
		{`PARSE_JSON('1', wide_number_mode => NULL)`, `NULL`},
		// FLOAT64(json, wide_number_mode => 'round' (the default) |
		// 'exact'): 'exact' refuses an integer beyond ±2^53 (ZetaSQL's
		// ConvertJsonToDouble and its message).
		{`FLOAT64(JSON '9007199254740993')`, `9.007199254740992e+15`},
		{`FLOAT64(JSON '9007199254740993', wide_number_mode => 'round')`, `9.007199254740992e+15`},
		{`FLOAT64(JSON '9007199254740993', wide_number_mode => 'exact')`, "error: JSON number: 9007199254740993 cannot be converted to FLOAT64 without loss of precision"},
		{`FLOAT64(JSON '-9007199254740992', wide_number_mode => 'exact')`, `-9.007199254740992e+15`},
		{`FLOAT64(JSON '1.5', wide_number_mode => 'exact')`, `1.5`},
		{`FLOAT64(JSON '1', wide_number_mode => 'bogus')`, "error: Invalid `wide_number_mode` specified: bogus"},
		{`FLOAT64(JSON '1', wide_number_mode => NULL)`, `NULL`},
		// TO_JSON: stringify_wide_numbers encodes INT64 beyond ±2^53 and
		// decimals FLOAT64 cannot hold as JSON strings.
		{`TO_JSON(9007199254740993)`, `9007199254740993`},
		{`TO_JSON(9007199254740993, stringify_wide_numbers => TRUE)`, `"9007199254740993"`},
		{`TO_JSON([9007199254740993, 1], stringify_wide_numbers => TRUE)`, `["9007199254740993",1]`},
		{`TO_JSON(NUMERIC '123456789012345678.5', stringify_wide_numbers => TRUE)`, `"123456789012345678.5"`},
		{`TO_JSON(NUMERIC '1.5', stringify_wide_numbers => TRUE)`, `1.5`},
		{`TO_JSON(9007199254740993, stringify_wide_numbers => FALSE)`, `9007199254740993`},
		// JSON_KEYS: 'strict' (the default) does not enter arrays, 'lax'
		// enters arrays directly under an object, 'lax recursive' every
		// array.
		{`JSON_KEYS(JSON '{"a":[{"b":1},{"c":2}],"d":3}')`, `[a, d]`},
		{`JSON_KEYS(JSON '{"a":[{"b":1},{"c":2}],"d":3}', mode => 'strict')`, `[a, d]`},
		{`JSON_KEYS(JSON '{"a":[{"b":1},{"c":2}],"d":3}', mode => 'lax')`, `[a, a.b, a.c, d]`},
		{`JSON_KEYS(JSON '{"a":[[{"b":1}]],"d":3}', mode => 'lax')`, `[a, d]`},
		{`JSON_KEYS(JSON '{"a":[[{"b":1}]],"d":3}', mode => 'lax recursive')`, `[a, a.b, d]`},
		{`JSON_KEYS(JSON '{"a":[{"b":{"e":1}}],"d":3}', 2, mode => 'lax')`, `[a, a.b, d]`},
		// The GoogleSQL reference's examples: 'lax' enters arrays that
		// are not directly nested in arrays.
		{`JSON_KEYS(JSON '{"a":[{"b":[{"c":1}]}]}', mode => "lax")`, `[a, a.b, a.b.c]`},
		{`JSON_KEYS(JSON '{"a":[{"b":[[{"c":1}]]}]}', mode => "lax")`, `[a, a.b]`},
		{`JSON_KEYS(JSON '{"a":[{"b":[[{"c":1}]]}]}', mode => "lax recursive")`, `[a, a.b, a.b.c]`},
		// ZetaSQL's JsonKeysFunction: the mode is matched case-insensitively
		// and may differ row by row; a NULL max_depth is no limit, a NULL
		// mode or JSON gives NULL; its message for a bad mode.
		{`JSON_KEYS(JSON '{"a":[{"b":1}]}', mode => 'LAX')`, `[a, a.b]`},
		{`JSON_KEYS(JSON '{"a":[{"b":1}]}', mode => CONCAT('la', 'x'))`, `[a, a.b]`},
		{`JSON_KEYS(JSON '{"a":{"b":{"c":1}}}', NULL)`, `[a, a.b, a.b.c]`},
		{`JSON_KEYS(JSON '{"a":1}', mode => CAST(NULL AS STRING))`, `NULL`},
		{`JSON_KEYS(CAST(NULL AS JSON), 1)`, `NULL`},
		{`JSON_KEYS(JSON '{"a":1}', mode => 'loose')`, `error: Invalid JSON mode specified`},
		{`JSON_KEYS(JSON '{"a":1}', 0)`, `error: JSON_KEYS: max_depth must be positive`},
		// JSON_SET: create_if_missing => FALSE only replaces.
		{`JSON_SET(JSON '{"a":1}', '$.b', 2)`, `{"a":1,"b":2}`},
		{`JSON_SET(JSON '{"a":1}', '$.b', 2, create_if_missing => FALSE)`, `{"a":1}`},
		{`JSON_SET(JSON '{"a":1}', '$.a', 2, create_if_missing => FALSE)`, `{"a":2}`},
		// JSON_ARRAY_APPEND / JSON_ARRAY_INSERT: an ARRAY value is one
		// element when *_each_element is FALSE.
		{`JSON_ARRAY_APPEND(JSON '[1]', '$', [2, 3])`, `[1,2,3]`},
		{`JSON_ARRAY_APPEND(JSON '[1]', '$', [2, 3], append_each_element => FALSE)`, `[1,[2,3]]`},
		{`JSON_ARRAY_INSERT(JSON '[1]', '$[0]', [2, 3])`, `[2,3,1]`},
		{`JSON_ARRAY_INSERT(JSON '[1]', '$[0]', [2, 3], insert_each_element => FALSE)`, `[[2,3],1]`},
		// JSON_STRIP_NULLS: include_arrays (TRUE) and remove_empty (FALSE).
		{`JSON_STRIP_NULLS(JSON '[1, null, 2, null, [null]]')`, `[1,2,[]]`},
		{`JSON_STRIP_NULLS(JSON '[1, null, 2, null]', include_arrays => FALSE)`, `[1,null,2,null]`},
		{`JSON_STRIP_NULLS(JSON '[1, null, 2, null, [null]]', remove_empty => TRUE)`, `[1,2]`},
		{`JSON_STRIP_NULLS(JSON '{"a": {"b": {"c": null}}, "d": [null], "e": [], "f": 1}', include_arrays => FALSE, remove_empty => TRUE)`, `{"d":[null],"e":[],"f":1}`},
		{`JSON_STRIP_NULLS(JSON '{"a": {"b": {"c": null}}, "d": [null], "e": [], "f": 1}', remove_empty => TRUE)`, `{"f":1}`},
		// With a path, only the value there is stripped; emptied, it
		// becomes JSON null.
		{`JSON_STRIP_NULLS(JSON '{"a": {"b": {"c": null}}, "d": [null], "e": [], "f": 1}', '$.a', remove_empty => TRUE)`, `{"a":null,"d":[null],"e":[],"f":1}`},
		{`JSON_STRIP_NULLS(JSON '{"a": null}', include_arrays => NULL)`, `NULL`},
	} {
		got := scalarText(t, tc.expr)
		if got != tc.want && !(strings.HasPrefix(tc.want, "error: ") && strings.HasPrefix(got, tc.want)) {
			t.Errorf("%s\n got %s\nwant %s", tc.expr, got, tc.want)
		}
	}
}

// TestNamedArgumentErrors: a name the function does not take, a name
// given twice, a positional argument after a named one, a named
// argument given positionally, and a non-constant where a constant is
// required (ZetaSQL analyzer/testdata/named_arguments.test has the
// messages).
func TestNamedArgumentErrors(t *testing.T) {
	for _, tc := range []struct{ expr, want string }{
		{`PARSE_JSON('1', wide_number => 'round')`, "No matching signature for function PARSE_JSON. Named argument `wide_number` does not exist in signature PARSE_JSON(..., [wide_number_mode => STRING]) at [1:1]"},
		{`PARSE_JSON('1', wide_number_mode => 'round', wide_number_mode => 'exact')`, "No matching signature for function PARSE_JSON. Named argument `wide_number_mode` is given more than once"},
		{`JSON_STRIP_NULLS(JSON '{}', remove_empty => TRUE, '$')`, "Call to function JSON_STRIP_NULLS must not specify positional arguments after named arguments; named arguments must be specified last in the argument list at [1:29]"},
		{`CONCAT('a', sep => 'b')`, "No matching signature for function CONCAT. Named argument `sep` does not exist in signature at [1:1]"},
		// A mandatory-named argument given positionally is one argument
		// too many; the counts and types name the positional arguments.
		{`PARSE_JSON('1', 'round')`, "Number of arguments does not match for function PARSE_JSON. Expected 1 arguments but got 2 at [1:1]"},
		{`TO_JSON(1, TRUE)`, "Number of arguments does not match for function TO_JSON. Expected 1 arguments but got 2 at [1:1]"},
		{`PARSE_JSON(1)`, "No matching signature for function PARSE_JSON for argument types: INT64 at [1:1]"},
		{`PARSE_JSON(1, wide_number_mode => 'round')`, "No matching signature for function PARSE_JSON for argument types: INT64 at [1:1]"},
		{`JSON_SET(JSON '{}', '$.a', 1, create_if_missing => RAND() < 2)`, "Argument 'create_if_missing' to JSON_SET must be a literal or query parameter at [1:31]"},
		{`TO_JSON(1, stringify_wide_numbers => 'yes')`, "No matching signature for function TO_JSON. Argument `stringify_wide_numbers` must be BOOL, not STRING"},
		{`PARSE_JSON('1', select => 'round')`, "Syntax error: Unexpected keyword SELECT"},
	} {
		got := scalarText(t, tc.expr)
		if !strings.HasPrefix(got, "error: "+tc.want) {
			t.Errorf("%s\n got %s\nwant error: %s", tc.expr, got, tc.want)
		}
	}
}

// TestNamedArgumentPrint: a named argument prints back as it parses.
func TestNamedArgumentPrint(t *testing.T) {
	e, err := parse("PARSE_JSON(s, `wide_number_mode` => 'round')", true)
	if err != nil {
		t.Fatal(err)
	}
	want := "PARSE_JSON(s, wide_number_mode => 'round')"
	if got := e.String(); got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if e2, err := parse(want, true); err != nil || e2.String() != want {
		t.Fatalf("reparse: %v %v", e2, err)
	}
}
