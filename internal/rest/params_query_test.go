package rest_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestQueryParamsREST sends queryParameters as the Go client, the Node
// client and bq send them, and the mistakes BigQuery refuses.
func TestQueryParamsREST(t *testing.T) {
	e := newEnv(t)
	base := e.srv.URL
	for _, tc := range []struct {
		name, body string
		code       int
		want       string // a substring of the answer
	}{
		{"go named", `{"query":"SELECT @i + 1 AS a, @s AS s","useLegacySql":false,"parameterMode":"NAMED","queryParameters":[` +
			`{"name":"i","parameterType":{"type":"INT64"},"parameterValue":{"value":"41"}},` +
			`{"name":"s","parameterType":{"type":"STRING"},"parameterValue":{"value":"x"}}]}`, 200, `"f":[{"v":"42"},{"v":"x"}]`},
		{"go null", `{"query":"SELECT @n IS NULL AS a","useLegacySql":false,"parameterMode":"NAMED","queryParameters":[` +
			`{"name":"n","parameterType":{"type":"INT64"},"parameterValue":{"value":null}}]}`, 200, `"f":[{"v":"true"}]`},
		{"go bytes timestamp", `{"query":"SELECT @b = b'\\x01\\x02' AS h, UNIX_MICROS(@ts) AS u","useLegacySql":false,"parameterMode":"NAMED","queryParameters":[` +
			`{"name":"b","parameterType":{"type":"BYTES"},"parameterValue":{"value":"AQI="}},` +
			`{"name":"ts","parameterType":{"type":"TIMESTAMP"},"parameterValue":{"value":"1970-01-01 00:00:01.000002+00:00"}}]}`, 200, `"f":[{"v":"true"},{"v":"1000002"}]`},
		{"go array", `{"query":"SELECT 2 IN UNNEST(@a) AS x, 3 IN UNNEST(@a) AS y","useLegacySql":false,"parameterMode":"NAMED","queryParameters":[` +
			`{"name":"a","parameterType":{"type":"ARRAY","arrayType":{"type":"INT64"}},"parameterValue":{"arrayValues":[{"value":"1"},{"value":"2"}]}}]}`, 200, `"f":[{"v":"true"},{"v":"false"}]`},
		{"node positional numbers", `{"query":"SELECT ? * 2 AS a, ? AS b, ? AS c","useLegacySql":false,"parameterMode":"positional","queryParameters":[` +
			`{"parameterType":{"type":"INT64"},"parameterValue":{"value":21}},` +
			`{"parameterType":{"type":"BOOL"},"parameterValue":{"value":true}},` +
			`{"parameterType":{"type":"FLOAT64"},"parameterValue":{"value":1.5}}]}`, 200, `"f":[{"v":"42"},{"v":"true"},{"v":"1.5"}]`},
		{"node timestamp", `{"query":"SELECT UNIX_SECONDS(@t) AS a","useLegacySql":false,"parameterMode":"named","queryParameters":[` +
			`{"name":"t","parameterType":{"type":"TIMESTAMP"},"parameterValue":{"value":"1970-01-01T00:01:00.000Z"}}]}`, 200, `"f":[{"v":"60"}]`},
		{"job insert", `{"configuration":{"query":{"query":"SELECT @x AS a","useLegacySql":false,"parameterMode":"NAMED","queryParameters":[` +
			`{"name":"x","parameterType":{"type":"NUMERIC"},"parameterValue":{"value":"1.25"}}]}}}`, 200, `"f":[{"v":"1.25"}]`},
		{"struct accepted, unused", `{"query":"SELECT 1 AS a","useLegacySql":false,"parameterMode":"NAMED","queryParameters":[` +
			`{"name":"s","parameterType":{"type":"STRUCT","structTypes":[{"name":"a","type":{"type":"INT64"}}]},"parameterValue":{"structValues":{"a":{"value":"1"}}}}]}`, 200, `"f":[{"v":"1"}]`},
		{"struct used", `{"query":"SELECT @s AS a","useLegacySql":false,"parameterMode":"NAMED","queryParameters":[` +
			`{"name":"s","parameterType":{"type":"STRUCT","structTypes":[{"name":"a","type":{"type":"INT64"}}]},"parameterValue":{"structValues":{"a":{"value":"1"}}}}]}`, 200, `"fields":[{"name":"a","type":"RECORD","mode":"NULLABLE","fields":[{"name":"a","type":"INTEGER","mode":"NULLABLE"}]}]},` +
			`"jobReference"`},
		{"struct field", `{"query":"SELECT @s.b AS a, @s.a + 1 AS b","useLegacySql":false,"parameterMode":"NAMED","queryParameters":[` +
			`{"name":"s","parameterType":{"type":"STRUCT","structTypes":[{"name":"a","type":{"type":"INT64"}},{"name":"b","type":{"type":"STRING"}}]},"parameterValue":{"structValues":{"a":{"value":"1"},"b":{"value":"x"}}}}]}`, 200, `"f":[{"v":"x"},{"v":"2"}]`},
		{"node array", `{"query":"SELECT ARRAY_LENGTH(@a) AS n, @a AS a","useLegacySql":false,"parameterMode":"named","queryParameters":[` +
			`{"name":"a","parameterType":{"type":"ARRAY","arrayType":{"type":"INT64"}},"parameterValue":{"arrayValues":[{"value":1},{"value":2}]}}]}`, 200, `"f":[{"v":"2"},{"v":[{"v":"1"},{"v":"2"}]}]`},
		{"unnest array", `{"query":"SELECT SUM(x) AS s FROM UNNEST(@a) AS x","useLegacySql":false,"parameterMode":"NAMED","queryParameters":[` +
			`{"name":"a","parameterType":{"type":"ARRAY","arrayType":{"type":"INT64"}},"parameterValue":{"arrayValues":[{"value":"3"},{"value":"4"}]}}]}`, 200, `"f":[{"v":"7"}]`},
		{"empty array", `{"query":"SELECT ARRAY_LENGTH(@a) AS n","useLegacySql":false,"parameterMode":"NAMED","queryParameters":[` +
			`{"name":"a","parameterType":{"type":"ARRAY","arrayType":{"type":"STRING"}},"parameterValue":{}}]}`, 200, `"f":[{"v":"0"}]`},
		{"array of struct", `{"query":"SELECT a[OFFSET(1)].k AS k FROM (SELECT @a AS a)","useLegacySql":false,"parameterMode":"NAMED","queryParameters":[` +
			`{"name":"a","parameterType":{"type":"ARRAY","arrayType":{"type":"STRUCT","structTypes":[{"name":"k","type":{"type":"STRING"}}]}},` +
			`"parameterValue":{"arrayValues":[{"structValues":{"k":{"value":"p"}}},{"structValues":{"k":{"value":"q"}}}]}}]}`, 200, `"f":[{"v":"q"}]`},
		{"undeclared", `{"query":"SELECT @nope","useLegacySql":false}`, 400, `Query parameter 'nope' not found at [1:8]","domain":"global","reason":"invalidQuery"`},
		{"named in positional mode", `{"query":"SELECT @x","useLegacySql":false,"parameterMode":"POSITIONAL","queryParameters":[{"parameterType":{"type":"INT64"},"parameterValue":{"value":"1"}}]}`, 400, `Named parameters are not supported at [1:8]`},
		{"positional in named mode", `{"query":"SELECT ?","useLegacySql":false,"parameterMode":"NAMED","queryParameters":[{"name":"x","parameterType":{"type":"INT64"},"parameterValue":{"value":"1"}}]}`, 400, `Positional parameters are not supported at [1:8]`},
		{"type mismatch in query", `{"query":"SELECT 1 + @s","useLegacySql":false,"parameterMode":"NAMED","queryParameters":[{"name":"s","parameterType":{"type":"STRING"},"parameterValue":{"value":"a"}}]}`, 400, `No matching signature for operator +`},
		{"unparseable value", `{"query":"SELECT @ts","useLegacySql":false,"parameterMode":"NAMED","queryParameters":[{"name":"ts","parameterType":{"type":"TIMESTAMP"},"parameterValue":{"value":"1.4810976E9"}}]}`, 400, "Unparseable query parameter `ts` in type `TYPE_TIMESTAMP`, Invalid timestamp: '1.4810976E9' value: '1.4810976E9'"},
		{"bad int", `{"query":"SELECT @i","useLegacySql":false,"parameterMode":"NAMED","queryParameters":[{"name":"i","parameterType":{"type":"INT64"},"parameterValue":{"value":"abc"}}]}`, 400, "Unparseable query parameter `i` in type `TYPE_INT64`, Bad int64 value: abc value: 'abc'"},
		{"unknown type", `{"query":"SELECT @i","useLegacySql":false,"parameterMode":"NAMED","queryParameters":[{"name":"i","parameterType":{"type":"FOO"},"parameterValue":{"value":"1"}}]}`, 400, `Invalid value for type: FOO is not a valid value`},
		{"no type", `{"query":"SELECT @i","useLegacySql":false,"parameterMode":"NAMED","queryParameters":[{"name":"i","parameterValue":{"value":"1"}}]}`, 400, `Query parameter i has no parameterType`},
		{"duplicate", `{"query":"SELECT @i","useLegacySql":false,"parameterMode":"NAMED","queryParameters":[{"name":"i","parameterType":{"type":"INT64"},"parameterValue":{"value":"1"}},{"name":"I","parameterType":{"type":"INT64"},"parameterValue":{"value":"2"}}]}`, 400, `Duplicate query parameter name: I`},
		{"bad mode", `{"query":"SELECT 1","useLegacySql":false,"parameterMode":"BOTH","queryParameters":[]}`, 400, `Invalid value for parameterMode: BOTH is not a valid value`},
	} {
		path := "/projects/p/queries"
		if strings.HasPrefix(tc.body, `{"configuration"`) {
			path = "/projects/p/jobs"
		}
		code, b := do(t, base, "POST", path, tc.body)
		if path == "/projects/p/jobs" && code == 200 {
			// Jobs run asynchronously: read the results.
			var j struct{ JobReference struct{ JobID string } }
			if err := json.Unmarshal(b, &j); err != nil {
				t.Fatal(err)
			}
			code, b = do(t, base, "GET", "/projects/p/queries/"+j.JobReference.JobID+"?timeoutMs=60000", "")
		}
		if code != tc.code || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s: %d %s\nwant %d and %s", tc.name, code, b, tc.code, tc.want)
		}
		if code == 200 && !json.Valid(b) {
			t.Errorf("%s: invalid JSON %s", tc.name, b)
		}
	}
}

// TestQueryParamsLimit: LIMIT and OFFSET given by parameters (the
// statement parser reads them); INSERT VALUES is tested in e2e, with an
// engine.
func TestQueryParamsLimit(t *testing.T) {
	e := newEnv(t)
	base := e.srv.URL
	q := func(body string) (int, string) {
		code, b := do(t, base, "POST", "/projects/p/queries", body)
		return code, string(b)
	}
	code, b := q(`{"query":"SELECT x FROM UNNEST([1, 2, 3, 4]) AS x ORDER BY x LIMIT ? OFFSET ?","useLegacySql":false,"timeoutMs":60000,` +
		`"queryParameters":[{"parameterType":{"type":"INT64"},"parameterValue":{"value":"2"}},{"parameterType":{"type":"INT64"},"parameterValue":{"value":"1"}}]}`)
	if code != 200 || !strings.Contains(b, `"rows":[{"f":[{"v":"2"}]},{"f":[{"v":"3"}]}]`) {
		t.Fatalf("LIMIT ? OFFSET ?: %d %s", code, b)
	}
	code, b = q(`{"query":"SELECT 1 AS x LIMIT @n","useLegacySql":false,"timeoutMs":60000,` +
		`"queryParameters":[{"name":"n","parameterType":{"type":"STRING"},"parameterValue":{"value":"1"}}]}`)
	if code != 400 || !strings.Contains(b, `LIMIT expects an integer literal or parameter at [1:21]`) {
		t.Fatalf("LIMIT of a STRING parameter: %d %s", code, b)
	}
	code, b = q(`{"query":"SELECT 1 AS x LIMIT @n","useLegacySql":false,"timeoutMs":60000,` +
		`"queryParameters":[{"name":"n","parameterType":{"type":"INT64"},"parameterValue":{"value":null}}]}`)
	if code != 400 || !strings.Contains(b, `LIMIT must not be null at [1:21]`) {
		t.Fatalf("LIMIT of a NULL parameter: %d %s", code, b)
	}
}
