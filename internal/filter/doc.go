// Package filter implements the Read API's row_restriction: a lexer and a
// Pratt parser for the boolean-expression subset of GoogleSQL, a type
// checker against the table schema, a vectorised evaluator over Arrow
// record batches with SQL's three-valued logic, and zone-map pruning over
// the same typed tree.
//
// Parse turns text into an untyped syntax tree (Expr); Compile checks it
// against a schema.Schema and returns a *Filter, immutable and safe for
// concurrent use. Filter.Eval selects the rows of a batch, Filter.Columns
// names the top-level columns the reader must project, and
// Filter.MayMatch rules out batches from their min/max/null counts.
//
// # Language
//
// Comparisons (=, !=, <>, <, <=, >, >=), AND, OR, NOT, IS [NOT]
// NULL/TRUE/FALSE, [NOT] BETWEEN, [NOT] IN (list), [NOT] LIKE, + - * / and
// unary minus, ||, bitwise & | ^ << >> ~, CASE, CAST and SAFE_CAST,
// EXTRACT, typed literals (DATE,
// DATETIME, TIME, TIMESTAMP, NUMERIC, BIGNUMERIC, JSON), every string and
// bytes literal form (quoted, triple-quoted, raw, bytes, with GoogleSQL's
// escapes), decimal and hex integers, floats, backtick identifiers, paths
// through RECORD columns (a.b.c, case-insensitive), comments, and the
// functions registered in funcs*.go (string and regexp, math, hashing,
// conditional, date/time, JSON and geography), each also with GoogleSQL's
// SAFE. prefix (an error of the function itself gives NULL). Implicit coercions follow GoogleSQL's conversion rules:
// INT64 -> NUMERIC -> BIGNUMERIC -> FLOAT64, DATE -> DATETIME, and string
// literals (only literals) to DATE, DATETIME, TIME and TIMESTAMP.
//
// # Errors
//
// Every error from Parse and Compile, and every runtime error from Eval, is
// an *Error whose message ends with BigQuery's position suffix
// "at [line:column]". The API layer maps them to INVALID_ARGUMENT.
//
// # Where we differ from BigQuery, or are unsure
//
//   - Runtime errors (division by zero, integer overflow, a failing CAST,
//     an invalid WKT) fail Eval, as they fail a BigQuery query; we believe
//     the real Read API then fails the ReadRows call. When the right
//     operand of AND/OR fails over a batch, it is re-evaluated on the rows
//     the left operand leaves undecided, so guards like
//     "x != 0 AND 1 / x > 2" work; BigQuery promises no evaluation order.
//   - References to REPEATED columns (or through them) are rejected at
//     Compile; the real API does not allow predicates on repeated fields.
//   - GEOGRAPHY: WKT only (POINT, LINESTRING, POLYGON, MULTI*, and
//     GEOMETRYCOLLECTION; Z/M dropped). Distances are on a sphere of radius
//     6371008.8 m between vertices and great-circle edges; point-in-polygon
//     uses ray casting with edges as straight lines in longitude/latitude,
//     so it is approximate near long edges and the poles. ST_EQUALS compares geometry kind and vertex sets, not point
//     sets. "POINT(x, y)" (with a comma, as the Read API reference's own
//     example writes it) is accepted; st_geofromtext is accepted as an
//     alias of ST_GEOGFROMTEXT for the same reason.
//   - POW, EXP, LN, LOG, SQRT always compute in FLOAT64 (BigQuery returns
//     NUMERIC for NUMERIC inputs of POW).
//   - TIMESTAMP and DATETIME strings accept up to 9 fractional digits;
//     digits past the microsecond are truncated.
//   - CASE and IF evaluate a branch only for the rows that take it (after
//     a failure over the whole batch), as BigQuery's lazy evaluation does.
//   - JSON_VALUE/JSON_QUERY support $, .name, ."name", ['name'] and [n]
//     paths (the JSON_EXTRACT family also [name], and [n] naming an
//     object's member); in queries j.name, j['name'] and j[n] read JSON
//     (json_access.go); PARSE_JSON, TO_JSON and JSON_OBJECT/JSON_ARRAY produce
//     BigQuery's canonical text (keys sorted, the first duplicate kept,
//     numbers normalised), as a JSON literal and the write paths
//     (internal/jsoncanon) do.
//     TO_JSON_STRING writes FLOAT64 in its shortest form (1.0 as 1:
//     unverified against BigQuery); CONTAINS_SUBSTR compares NFKC-normalized,
//     case-folded text, field by field in a STRUCT or ARRAY.
//   - Query parameters (@name, ?) are constants bound by WithParams
//     (params.go); IN UNNEST takes an ARRAY parameter only.
//   - Not supported: IN UNNEST of other arrays, subqueries (the query
//     engine substitutes them, WithConstants), JSON_SET/JSON_REMOVE and
//     the ARRAY-returning JSON functions, RANGE values (only IS [NOT]
//     NULL on such columns), INTERVAL, STRUCT and ARRAY values (they
//     exist in queries only, below and interval.go).
//   - FORMAT_* / PARSE_*: %Z formats the zone's name (UTC, or the IANA
//     name given); BigQuery's exact %Z text for named zones is unverified.
//     PARSE_* reads %Y as at most four digits, so "%Y%m%d" works.
//   - FARM_FINGERPRINT is FarmHash's Fingerprint64 (BigQuery's values);
//     GENERATE_UUID is a random version-4 UUID per row.
//
// # ARRAY and STRUCT (queries only)
//
// CompileScalar, the query engine's entry, also admits ARRAY and STRUCT
// values (composite.go): REPEATED and RECORD columns typed ARRAY<T> and
// STRUCT<...>, array literals, STRUCT(...) and tuple constructors,
// subscripts (OFFSET, SAFE_OFFSET, ORDINAL, SAFE_ORDINAL), field access
// on any STRUCT expression, STRUCT equality, and the array functions of
// funcs_array.go. Compile (row_restriction) parses and checks exactly
// the scalar language above: none of this syntax, and references to
// REPEATED fields are rejected as before.
package filter

import _ "time/tzdata" // time zone names work on hosts without a tz database
