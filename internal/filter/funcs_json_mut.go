// JSON mutators and inspectors: JSON_SET, JSON_REMOVE, JSON_ARRAY_APPEND,
// JSON_ARRAY_INSERT, JSON_STRIP_NULLS and JSON_KEYS, with their named
// options (create_if_missing => FALSE, ...: funcs_named.go). Each decodes the JSON value, changes it and writes it back
// in BigQuery's canonical form (keys sorted). A path that does not lead
// where the operation needs (a key of a non-object, an index of a
// non-array) leaves the value as it was, as GoogleSQL's documentation
// says of these functions.

package filter

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// jsonStep is one step of a JSONPath: an object key or an array index.
type jsonStep struct {
	key   string
	index int // >= 0: an array index
}

// jsonSteps parses a JSONPath as jsonPath reads it: $, then .name,
// ."quoted name", ['name'] or [index] steps.
func jsonSteps(path string) ([]jsonStep, error) {
	p := strings.TrimSpace(path)
	if !strings.HasPrefix(p, "$") {
		return nil, fmt.Errorf("Invalid JSONPath: %s", path)
	}
	p = p[1:]
	var out []jsonStep
	for p != "" {
		st := jsonStep{index: -1}
		switch {
		case strings.HasPrefix(p, ".\""):
			end := strings.Index(p[2:], "\"")
			if end < 0 {
				return nil, fmt.Errorf("Invalid JSONPath: %s", path)
			}
			st.key, p = p[2:2+end], p[3+end:]
		case p[0] == '.':
			end := strings.IndexAny(p[1:], ".[")
			if end < 0 {
				end = len(p) - 1
			}
			st.key, p = p[1:1+end], p[1+end:]
			if st.key == "" {
				return nil, fmt.Errorf("Invalid JSONPath: %s", path)
			}
		case p[0] == '[':
			end := strings.Index(p, "]")
			if end < 0 {
				return nil, fmt.Errorf("Invalid JSONPath: %s", path)
			}
			in := strings.TrimSpace(p[1:end])
			p = p[end+1:]
			if len(in) >= 2 && (in[0] == '\'' || in[0] == '"') && in[len(in)-1] == in[0] {
				st.key = in[1 : len(in)-1]
			} else {
				n, err := strconv.Atoi(in)
				if err != nil || n < 0 {
					return nil, fmt.Errorf("Invalid JSONPath: %s", path)
				}
				st.index = n
			}
		default:
			return nil, fmt.Errorf("Invalid JSONPath: %s", path)
		}
		out = append(out, st)
	}
	return out, nil
}

// maxJSONPad bounds the JSON nulls JSON_SET and JSON_ARRAY_INSERT add to
// reach an index past an array's end.
const maxJSONPad = 1 << 20

// jsonSetAt sets the value at steps under v (creating missing members,
// and padding arrays with nulls, when create is true) and returns the new
// v. A step that meets a scalar leaves v unchanged.
func jsonSetAt(v any, steps []jsonStep, x any, create bool) (any, error) {
	if len(steps) == 0 {
		return x, nil
	}
	st := steps[0]
	if v == nil && create { // JSON null becomes the container the step needs
		if st.index >= 0 {
			v = []any{}
		} else {
			v = &jsonObject{vals: map[string]any{}}
		}
	}
	switch c := v.(type) {
	case *jsonObject:
		if st.index >= 0 {
			return v, nil
		}
		old, ok := c.vals[st.key]
		if !ok && !create {
			return v, nil
		}
		nv, err := jsonSetAt(old, steps[1:], x, create)
		if err != nil {
			return nil, err
		}
		if !ok {
			c.keys = append(c.keys, st.key)
		}
		c.vals[st.key] = nv
		return c, nil
	case []any:
		if st.index < 0 {
			return v, nil
		}
		if st.index >= len(c) {
			if !create {
				return v, nil
			}
			if st.index-len(c) > maxJSONPad {
				return nil, fmt.Errorf("JSON array index %d is too large", st.index)
			}
			for len(c) <= st.index {
				c = append(c, nil)
			}
		}
		nv, err := jsonSetAt(c[st.index], steps[1:], x, create)
		if err != nil {
			return nil, err
		}
		c[st.index] = nv
		return c, nil
	}
	return v, nil
}

// jsonAt returns the container holding the last step's target and
// whether the path up to it exists.
func jsonAt(v any, steps []jsonStep) (any, bool) {
	for _, st := range steps {
		switch c := v.(type) {
		case *jsonObject:
			if st.index >= 0 {
				return nil, false
			}
			x, ok := c.vals[st.key]
			if !ok {
				return nil, false
			}
			v = x
		case []any:
			if st.index < 0 || st.index >= len(c) {
				return nil, false
			}
			v = c[st.index]
		default:
			return nil, false
		}
	}
	return v, true
}

// jsonReplaceAt replaces the value at steps (which exists) by f of it.
func jsonReplaceAt(v any, steps []jsonStep, f func(any) any) any {
	if len(steps) == 0 {
		return f(v)
	}
	st := steps[0]
	switch c := v.(type) {
	case *jsonObject:
		c.vals[st.key] = jsonReplaceAt(c.vals[st.key], steps[1:], f)
	case []any:
		c[st.index] = jsonReplaceAt(c[st.index], steps[1:], f)
	}
	return v
}

// stripNulls removes JSON nulls from objects (and arrays, when arrays);
// with empty it then removes the objects (and, when arrays, the arrays)
// left empty, and an empty value becomes null.
func stripNulls(v any, arrays, empty bool) any {
	switch c := v.(type) {
	case *jsonObject:
		keys := c.keys[:0:0]
		for _, k := range c.keys {
			x := stripNulls(c.vals[k], arrays, empty)
			if x == nil {
				delete(c.vals, k)
				continue
			}
			c.vals[k] = x
			keys = append(keys, k)
		}
		c.keys = keys
		if empty && len(keys) == 0 {
			return nil
		}
	case []any:
		if !arrays {
			// Arrays are left as they are, but for the objects in them.
			out := make([]any, len(c))
			for i, e := range c {
				if o, ok := e.(*jsonObject); ok {
					if x := stripNulls(o, false, empty); x != nil {
						e = x
					} else {
						e = &jsonObject{vals: map[string]any{}}
					}
				}
				out[i] = e
			}
			return out
		}
		out := c[:0:0]
		for _, e := range c {
			x := stripNulls(e, arrays, empty)
			if x == nil {
				continue
			}
			out = append(out, x)
		}
		if empty && len(out) == 0 {
			return nil
		}
		return out
	}
	return v
}

// constBool is the value of the one constant BOOL node in n (a named
// option, funcs_named.go).
func constBool(n []node) value {
	return n[0].(*constNode).v.get(0)
}

// JSON_KEYS's modes: how deep into arrays jsonKeys looks for objects.
const (
	keysStrict       = iota // not into arrays
	keysLax                 // into an array directly under an object member
	keysLaxRecursive        // into arrays nested in arrays too
)

var jsonKeysModes = map[string]int{"strict": keysStrict, "lax": keysLax, "lax recursive": keysLaxRecursive}

// jsonKeys adds to set the keys of v's objects down to depth levels
// (depth < 0: all), nested ones as parent.child (an object in an array
// adds its keys under the array member's name): 'strict' enters no
// array, 'lax' an array that is an object member's value, 'lax
// recursive' arrays in arrays too (GoogleSQL JSON_KEYS).
func jsonKeys(v any, prefix string, depth, mode int, set map[string]bool) {
	if arr, ok := v.([]any); ok && prefix != "" && mode != keysStrict {
		for _, x := range arr {
			if _, nested := x.([]any); nested && mode != keysLaxRecursive {
				continue
			}
			jsonKeys(x, prefix, depth, mode, set)
		}
		return
	}
	o, ok := v.(*jsonObject)
	if !ok || depth == 0 {
		return
	}
	for _, k := range o.keys {
		name := k
		if !isPlainJSONKey(k) {
			var b bytes.Buffer
			jsonString(&b, k)
			name = b.String()
		}
		if prefix != "" {
			name = prefix + "." + name
		}
		set[name] = true
		jsonKeys(o.vals[k], name, depth-1, mode, set)
	}
}

// isPlainJSONKey reports whether a key needs no quotes in a JSONPath.
func isPlainJSONKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if !isIdentChar(k[i]) {
			return false
		}
	}
	return true
}

func registerJSONMut() {
	// mutate builds JSON_SET-like functions: a JSON value, then (path,
	// value) pairs applied left to right.
	// opt is the value of the function's named BOOL option
	// (create_if_missing, append_each_element, insert_each_element), a
	// constant; a NULL option makes the result NULL.
	mutate := func(apply func(v any, steps []jsonStep, x any, xt typ, opt bool) (any, error)) builtin {
		return func(c *checker, e *Call, args []node) (node, error) {
			args, named := namedTail(e.Name, args)
			opt := constBool(named)
			if opt.null {
				return &constNode{v: constVec(tJSON, nullValue), p: e.P}, nil
			}
			if len(args) < 3 || len(args)%2 == 0 {
				return nil, c.errf(e.P, "Number of arguments does not match for function %s. Expected a JSON value and pairs of a JSONPath and a value but got %d arguments", e.Name, len(args))
			}
			want := make([]typ, len(args))
			want[0] = tJSON
			for i := 1; i < len(args); i++ {
				if args[i] == nil {
					return nil, c.noSig(e, args)
				}
				if i%2 == 1 {
					want[i] = tString
				} // a value keeps its type (tNull)
			}
			for i := 2; i < len(args); i += 2 {
				if t := args[i].typ(); t != tNull && !isJSONable(t) {
					return nil, c.noSig(e, args)
				}
			}
			return c.sigStrict(e, args, want, tJSON, false, func(a []value) (value, error) {
				if a[0].null {
					return nullValue, nil
				}
				v, err := jsonDecode(a[0].s)
				if err != nil {
					return value{}, fmt.Errorf("Invalid JSON: %v", err)
				}
				for i := 1; i < len(a); i += 2 {
					if a[i].null {
						return value{}, fmt.Errorf("%s: the JSONPath cannot be NULL", e.Name)
					}
					steps, err := jsonSteps(a[i].s)
					if err != nil {
						return value{}, err
					}
					xt := args[i+1].typ()
					var x any
					if !a[i+1].null {
						s, err := toJSONText(xt, a[i+1], wideNone)
						if err != nil {
							return value{}, err
						}
						if x, err = jsonDecode(s); err != nil {
							return value{}, err
						}
					}
					if v, err = apply(v, steps, x, xt, opt.b); err != nil {
						return value{}, err
					}
				}
				var b bytes.Buffer
				jsonWrite(&b, v, "", "", true)
				return value{s: b.String()}, nil
			})
		}
	}
	builtins["JSON_SET"] = mutate(func(v any, steps []jsonStep, x any, _ typ, create bool) (any, error) {
		return jsonSetAt(v, steps, x, create)
	})
	// JSON_ARRAY_APPEND: the value (each element of an ARRAY value, unless
	// append_each_element => FALSE) at the end of the array at the path;
	// JSON null there becomes [].
	builtins["JSON_ARRAY_APPEND"] = mutate(func(v any, steps []jsonStep, x any, xt typ, each bool) (any, error) {
		target, ok := jsonAt(v, steps)
		if !ok {
			return v, nil
		}
		arr, isArr := target.([]any)
		if target != nil && !isArr {
			return v, nil
		}
		add := []any{x}
		if xs, ok := x.([]any); ok && xt.isArray() && each {
			add = xs
		}
		return jsonReplaceAt(v, steps, func(any) any { return append(append([]any{}, arr...), add...) }), nil
	})
	// JSON_ARRAY_INSERT: the path ends in an index of an array; the value
	// (each element of an ARRAY value, unless insert_each_element =>
	// FALSE) is inserted there, the array padded with nulls up to the
	// index.
	builtins["JSON_ARRAY_INSERT"] = mutate(func(v any, steps []jsonStep, x any, xt typ, each bool) (any, error) {
		if len(steps) == 0 || steps[len(steps)-1].index < 0 {
			return v, nil
		}
		at := steps[len(steps)-1].index
		target, ok := jsonAt(v, steps[:len(steps)-1])
		arr, isArr := target.([]any)
		if !ok || !isArr {
			return v, nil
		}
		if at-len(arr) > maxJSONPad {
			return nil, fmt.Errorf("JSON array index %d is too large", at)
		}
		add := []any{x}
		if xs, ok := x.([]any); ok && xt.isArray() && each {
			add = xs
		}
		out := append([]any{}, arr...)
		for len(out) < at {
			out = append(out, nil)
		}
		out = append(out[:at], append(add, out[at:]...)...)
		return jsonReplaceAt(v, steps[:len(steps)-1], func(any) any { return out }), nil
	})
	builtins["JSON_REMOVE"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 2, -1); err != nil {
			return nil, err
		}
		want := append([]typ{tJSON}, repeatT(tString, len(args)-1)...)
		return c.sigStrict(e, args, want, tJSON, false, func(a []value) (value, error) {
			if a[0].null {
				return nullValue, nil
			}
			v, err := jsonDecode(a[0].s)
			if err != nil {
				return value{}, fmt.Errorf("Invalid JSON: %v", err)
			}
			for _, p := range a[1:] {
				if p.null {
					return value{}, fmt.Errorf("JSON_REMOVE: the JSONPath cannot be NULL")
				}
				steps, err := jsonSteps(p.s)
				if err != nil {
					return value{}, err
				}
				if len(steps) == 0 {
					return value{}, fmt.Errorf("JSON_REMOVE: the JSONPath cannot be $")
				}
				last := steps[len(steps)-1]
				parent, ok := jsonAt(v, steps[:len(steps)-1])
				if !ok {
					continue
				}
				switch c := parent.(type) {
				case *jsonObject:
					if _, has := c.vals[last.key]; last.index < 0 && has {
						delete(c.vals, last.key)
						keys := c.keys[:0:0]
						for _, k := range c.keys {
							if k != last.key {
								keys = append(keys, k)
							}
						}
						c.keys = keys
					}
				case []any:
					if last.index >= 0 && last.index < len(c) {
						out := append(append([]any{}, c[:last.index]...), c[last.index+1:]...)
						v = jsonReplaceAt(v, steps[:len(steps)-1], func(any) any { return out })
					}
				}
			}
			var b bytes.Buffer
			jsonWrite(&b, v, "", "", true)
			return value{s: b.String()}, nil
		})
	}
	// JSON_STRIP_NULLS(json [, path], include_arrays => TRUE,
	// remove_empty => FALSE): constant options; a NULL one gives NULL.
	builtins["JSON_STRIP_NULLS"] = func(c *checker, e *Call, args []node) (node, error) {
		args, named := namedTail(e.Name, args)
		arrays, empty := constBool(named[:1]), constBool(named[1:])
		if arrays.null || empty.null {
			return &constNode{v: constVec(tJSON, nullValue), p: e.P}, nil
		}
		if err := c.arity(e, args, 1, 2); err != nil {
			return nil, err
		}
		return c.sig(e, args, []typ{tJSON, tString}[:len(args)], tJSON, func(a []value) (value, error) {
			v, err := jsonDecode(a[0].s)
			if err != nil {
				return value{}, fmt.Errorf("Invalid JSON: %v", err)
			}
			var steps []jsonStep
			if len(a) == 2 {
				if steps, err = jsonSteps(a[1].s); err != nil {
					return value{}, err
				}
			}
			if _, ok := jsonAt(v, steps); ok {
				v = jsonReplaceAt(v, steps, func(x any) any { return stripNulls(x, arrays.b, empty.b) })
			}
			var b bytes.Buffer
			jsonWrite(&b, v, "", "", true)
			return value{s: b.String()}, nil
		})
	}
	// JSON_KEYS(json [, max_depth], mode => 'strict'): the object keys,
	// nested ones as a.b, unique and sorted; arrays are entered as the
	// mode says (jsonKeys).
	builtins["JSON_KEYS"] = func(c *checker, e *Call, args []node) (node, error) {
		args, named := namedTail(e.Name, args)
		at, _ := arrayOf(tString)
		if err := c.arity(e, args, 1, 2); err != nil {
			return nil, err
		}
		want := []typ{tJSON, tInt}[:len(args)]
		// As ZetaSQL's JsonKeysFunction: max_depth (NULL: no limit), then
		// the mode (case-insensitive), then a NULL JSON or mode is NULL.
		return c.sigStrict(e, append(args, named...), append(want, tString), at, false, func(a []value) (value, error) {
			depth := -1
			if len(a) == 3 && !a[1].null {
				if a[1].i <= 0 {
					return value{}, fmt.Errorf("JSON_KEYS: max_depth must be positive")
				}
				depth = int(min(a[1].i, 1<<20))
			}
			m := a[len(a)-1]
			mode, ok := jsonKeysModes[strings.ToLower(m.s)]
			if !ok && !m.null {
				return value{}, fmt.Errorf("Invalid JSON mode specified")
			}
			if a[0].null || m.null {
				return nullValue, nil
			}
			v, err := jsonDecode(a[0].s)
			if err != nil {
				return value{}, fmt.Errorf("Invalid JSON: %v", err)
			}
			set := map[string]bool{}
			jsonKeys(v, "", depth, mode, set)
			keys := make([]string, 0, len(set))
			for k := range set {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			out := make([]value, len(keys))
			for i, k := range keys {
				out[i] = value{s: k}
			}
			return value{a: out}, nil
		})
	}
}
