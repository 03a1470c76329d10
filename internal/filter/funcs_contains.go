package filter

// CONTAINS_SUBSTR(expression, search_value [, json_scope => scope]): a
// normalized (NFKC), case-folded substring search over a value of any
// searchable type (string functions docs, CONTAINS_SUBSTR). A STRUCT or
// ARRAY is searched field by field, element by element, recursively,
// each cast to STRING: TRUE if one matches, else NULL if one is NULL,
// else FALSE. JSON is searched in its values, keys or both (json_scope).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

func registerContains() {
	builtins["CONTAINS_SUBSTR"] = func(c *checker, e *Call, args []node) (node, error) {
		args, named := namedTail(e.Name, args)
		if err := c.arity(e, args, 2, 2); err != nil {
			return nil, err
		}
		if !containsSearchable(args[0].typ()) {
			return nil, c.noSig(e, args)
		}
		if v, ok := constValue(args[1]); ok && v.null {
			return nil, c.errf(args[1].pos(), "The search value of CONTAINS_SUBSTR cannot be NULL")
		}
		scope, _ := constValue(named[0])
		keys, values := false, true
		switch strings.ToUpper(scope.s) {
		case "JSON_VALUES":
		case "JSON_KEYS":
			keys, values = true, false
		case "JSON_KEYS_AND_VALUES":
			keys = true
		default:
			return nil, c.errf(e.P, "Invalid json_scope for CONTAINS_SUBSTR: %s; expected JSON_VALUES, JSON_KEYS or JSON_KEYS_AND_VALUES", quoteString(scope.s))
		}
		t := args[0].typ()
		fold := cases.Fold()
		return c.sigStrict(e, args, []typ{tNull, tString}, tBool, true, func(a []value) (value, error) {
			needle := norm.NFKC.String(fold.String(a[1].s))
			found, null, err := containsSubstr(t, a[0], needle, fold, keys, values)
			if err != nil {
				return value{}, err
			}
			if !found && null {
				return nullValue, nil
			}
			return value{b: found}, nil
		})
	}
}

// containsSearchable reports whether CONTAINS_SUBSTR searches a value of
// type t: the types its reference lists, and ARRAYs and STRUCTs of them.
func containsSearchable(t typ) bool {
	if ct := t.comp(); ct != nil {
		if ct.kind == tArray {
			return containsSearchable(ct.elem)
		}
		for _, f := range ct.fields {
			if !containsSearchable(f.t) {
				return false
			}
		}
		return true
	}
	switch t {
	case tNull, tString, tInt, tBool, tNumeric, tBigNumeric, tFloat, tTimestamp, tTime, tDate, tDatetime, tJSON:
		return true
	}
	return false
}

// containsSubstr searches v (of type t) for needle (normalized and
// folded): found, or else whether a NULL was met on the way.
func containsSubstr(t typ, v value, needle string, fold cases.Caser, keys, values bool) (found, null bool, err error) {
	if v.null {
		return false, true, nil
	}
	if ct := t.comp(); ct != nil {
		for i, x := range v.a {
			et := ct.elem
			if ct.kind == tStruct {
				et = ct.fields[i].t
			}
			f, n, err := containsSubstr(et, x, needle, fold, keys, values)
			if err != nil || f {
				return f, false, err
			}
			null = null || n
		}
		return false, null, nil
	}
	match := func(s string) bool { return strings.Contains(norm.NFKC.String(fold.String(s)), needle) }
	if t == tJSON {
		return containsJSON(v.s, match, keys, values)
	}
	s, err := castToString(t, v)
	if err != nil {
		return false, false, err
	}
	return match(s), false, nil
}

// containsJSON searches JSON text: its object keys (keys) and its scalar
// values (values), strings unquoted; JSON null is no value.
func containsJSON(text string, match func(string) bool, keys, values bool) (bool, bool, error) {
	d := json.NewDecoder(bytes.NewReader([]byte(text)))
	d.UseNumber()
	var doc any
	if err := d.Decode(&doc); err != nil {
		return false, false, fmt.Errorf("Invalid JSON value for CONTAINS_SUBSTR")
	}
	var walk func(x any) bool
	walk = func(x any) bool {
		switch x := x.(type) {
		case map[string]any:
			for k, v := range x {
				if (keys && match(k)) || walk(v) {
					return true
				}
			}
		case []any:
			for _, v := range x {
				if walk(v) {
					return true
				}
			}
		case string:
			return values && match(x)
		case json.Number:
			return values && match(x.String())
		case bool:
			return values && match(fmt.Sprint(x))
		}
		return false
	}
	return walk(doc), false, nil
}
