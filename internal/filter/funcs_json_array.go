// JSON functions that return arrays: JSON_QUERY_ARRAY, JSON_VALUE_ARRAY
// and their legacy names JSON_EXTRACT_ARRAY, JSON_EXTRACT_STRING_ARRAY.
// The path defaults to '$'; a path that selects nothing, JSON null or a
// non-array gives NULL, as JSON_QUERY and JSON_VALUE do.

package filter

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

func registerJSONArray() {
	// jsonArrayFn builds JSON_QUERY_ARRAY (scalar false: the elements as
	// JSON, or JSON-formatted STRING for a STRING input) and
	// JSON_VALUE_ARRAY (scalar true: STRING elements, JSON null a NULL
	// element, and NULL when an element is an object or array).
	jsonArrayFn := func(scalar bool) builtin {
		return func(c *checker, e *Call, args []node) (node, error) {
			if err := c.arity(e, args, 1, 2); err != nil {
				return nil, err
			}
			in := tJSON
			if at := args[0].typ(); at == tString || at == tNull {
				in = tString
			}
			elem := in
			if scalar {
				elem = tString
			}
			ret, _ := arrayOf(elem)
			want := []typ{in, tString}[:len(args)]
			return c.sig(e, args, want, ret, func(a []value) (value, error) {
				path := "$"
				if len(a) == 2 {
					path = a[1].s
				}
				v, ok, err := jsonPathMode(a[0].s, path, strings.HasPrefix(e.Name, "JSON_EXTRACT"))
				if err != nil || !ok {
					return nullValue, err
				}
				arr, ok := v.([]any)
				if !ok {
					return nullValue, nil
				}
				out := make([]value, len(arr))
				for i, x := range arr {
					if scalar {
						s, ok := jsonScalarText(x)
						if !ok {
							return nullValue, nil
						}
						out[i] = s
						continue
					}
					s, err := jsonText(x)
					if err != nil {
						return value{}, err
					}
					out[i] = value{s: s}
				}
				return value{a: out}, nil
			})
		}
	}
	builtins["JSON_QUERY_ARRAY"] = jsonArrayFn(false)
	builtins["JSON_EXTRACT_ARRAY"] = jsonArrayFn(false)
	builtins["JSON_VALUE_ARRAY"] = jsonArrayFn(true)
	builtins["JSON_EXTRACT_STRING_ARRAY"] = jsonArrayFn(true)
}

// jsonScalarText is JSON_VALUE's reading of a scalar: a string's text, a
// number's or boolean's spelling, SQL NULL for JSON null; ok is false for
// an object or array.
func jsonScalarText(v any) (value, bool) {
	switch v := v.(type) {
	case nil:
		return nullValue, true
	case string:
		return value{s: v}, true
	case json.Number:
		return value{s: v.String()}, true
	case bool:
		return value{s: strconv.FormatBool(v)}, true
	}
	return value{}, false
}

// jsonText renders a value jsonPath selected as JSON_QUERY does.
func jsonText(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}
