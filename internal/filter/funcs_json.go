// JSON functions beyond JSON_VALUE/JSON_QUERY (funcs_more.go):
// PARSE_JSON, TO_JSON, TO_JSON_STRING of any scalar, JSON_TYPE,
// JSON_OBJECT, JSON_ARRAY, the INT64/FLOAT64/BOOL/STRING converters and
// their LAX_ forms. BigQuery's JSON values keep object keys sorted, the
// first of duplicate keys winning; PARSE_JSON and the constructors produce
// that form.

package filter

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bqstore/bqstore/internal/jsoncanon"
)

// jsonDecode parses one JSON document with numbers kept as text.
func jsonDecode(doc string) (any, error) {
	d := json.NewDecoder(strings.NewReader(doc))
	d.UseNumber()
	v, err := jsonValue(d)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err == nil {
		return nil, fmt.Errorf("unexpected data after the JSON value")
	}
	return v, nil
}

// jsonObject is an object with its keys in order of appearance (first of
// duplicates kept).
type jsonObject struct {
	keys []string
	vals map[string]any
}

func jsonValue(d *json.Decoder) (any, error) {
	t, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch t := t.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &jsonObject{vals: map[string]any{}}
			for d.More() {
				kt, err := d.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := jsonValue(d)
				if err != nil {
					return nil, err
				}
				if _, dup := o.vals[k]; !dup {
					o.keys = append(o.keys, k)
					o.vals[k] = v
				}
			}
			_, err := d.Token()
			return o, err
		case '[':
			arr := []any{}
			for d.More() {
				v, err := jsonValue(d)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			_, err := d.Token()
			return arr, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	}
	return t, nil
}

// jsonWrite renders v in BigQuery's canonical JSON text: no spaces, keys
// sorted (sortKeys), numbers normalised (1.10 -> 1.1, 1e2 -> 100);
// indent != "" pretty-prints.
func jsonWrite(b *bytes.Buffer, v any, indent, prefix string, sortKeys bool) {
	nl := func(p string) {
		if indent != "" {
			b.WriteByte('\n')
			b.WriteString(p)
		}
	}
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case json.Number:
		b.WriteString(jsonNumber(string(v)))
	case string:
		jsonString(b, v)
	case []any:
		if len(v) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			nl(prefix + indent)
			jsonWrite(b, x, indent, prefix+indent, sortKeys)
		}
		nl(prefix)
		b.WriteByte(']')
	case *jsonObject:
		if len(v.keys) == 0 {
			b.WriteString("{}")
			return
		}
		keys := v.keys
		if sortKeys {
			keys = append([]string(nil), v.keys...)
			sort.Strings(keys)
		}
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			nl(prefix + indent)
			jsonString(b, k)
			b.WriteByte(':')
			if indent != "" {
				b.WriteByte(' ')
			}
			jsonWrite(b, v.vals[k], indent, prefix+indent, sortKeys)
		}
		nl(prefix)
		b.WriteByte('}')
	}
}

func jsonString(b *bytes.Buffer, s string) {
	var tmp bytes.Buffer
	enc := json.NewEncoder(&tmp)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	b.Write(bytes.TrimSuffix(tmp.Bytes(), []byte("\n")))
}

// jsonExact reports the first number in v that FLOAT64 and INT64/UINT64
// cannot hold exactly: one whose FLOAT64 value neither equals it nor
// prints back (shortest form) as the same number, as 0.1 does.
func jsonExact(v any) error {
	switch v := v.(type) {
	case json.Number:
		s := string(v)
		if _, err := strconv.ParseInt(s, 10, 64); err == nil {
			return nil
		}
		if _, err := strconv.ParseUint(s, 10, 64); err == nil {
			return nil
		}
		want, ok := new(big.Rat).SetString(s)
		f, err := strconv.ParseFloat(s, 64)
		if ok && err == nil {
			if got := new(big.Rat).SetFloat64(f); got != nil && got.Cmp(want) == 0 {
				return nil
			}
			if back, ok := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64)); ok && back.Cmp(want) == 0 {
				return nil
			}
		}
		return fmt.Errorf("cannot round-trip number %s without loss of precision (wide_number_mode 'exact')", s)
	case []any:
		for _, x := range v {
			if err := jsonExact(x); err != nil {
				return err
			}
		}
	case *jsonObject:
		for _, k := range v.keys {
			if err := jsonExact(v.vals[k]); err != nil {
				return err
			}
		}
	}
	return nil
}

// jsonNumber normalises a JSON number's text (jsoncanon.Number: the
// write paths store JSON with the same rule).
func jsonNumber(s string) string { return jsoncanon.Number(s) }

// jsonFloat prints a JSON number held as FLOAT64 (jsoncanon.Float).
func jsonFloat(f float64) string { return jsoncanon.Float(f) }

func canonicalJSON(doc string) (string, error) {
	return canonicalJSONMode(doc, false)
}

// canonicalJSONMode is canonicalJSON; exact refuses a number that neither
// INT64/UINT64 nor FLOAT64 holds without losing precision, as PARSE_JSON's
// default wide_number_mode 'exact' and the JSON literal do.
func canonicalJSONMode(doc string, exact bool) (string, error) {
	v, err := jsonDecode(doc)
	if err != nil {
		return "", err
	}
	if exact {
		if err := jsonExact(v); err != nil {
			return "", err
		}
	}
	var b bytes.Buffer
	jsonWrite(&b, v, "", "", true)
	return b.String(), nil
}

// wideMode says which numbers toJSONText encodes as JSON strings.
type wideMode int

const (
	wideNone    wideMode = iota // numbers stay numbers (TO_JSON)
	wideInts                    // INT64 beyond ±2^53 (TO_JSON_STRING)
	wideNumbers                 // also decimals FLOAT64 cannot hold (TO_JSON stringify_wide_numbers)
)

// toJSONText encodes a scalar of type t as TO_JSON_STRING does: INT64
// beyond ±2^53 (wide >= wideInts) and non-finite floats as strings, BYTES
// as base64, date/time values as quoted strings (TIMESTAMP in RFC 3339
// UTC).
func toJSONText(t typ, v value, wide wideMode) (string, error) {
	if v.null {
		return "null", nil
	}
	var b bytes.Buffer
	if ct := t.comp(); ct != nil {
		// ARRAY: [e, ...]; STRUCT: {"name": v, ...} in field order
		// (anonymous fields are _field_N).
		open, end := byte('['), byte(']')
		if ct.kind == tStruct {
			open, end = '{', '}'
		}
		b.WriteByte(open)
		for i, x := range v.a {
			if i > 0 {
				b.WriteByte(',')
			}
			et := ct.elem
			if ct.kind == tStruct {
				et = ct.fields[i].t
				name := ct.fields[i].name
				if name == "" {
					name = fmt.Sprintf("_field_%d", i+1)
				}
				jsonString(&b, name)
				b.WriteByte(':')
			}
			s, err := toJSONText(et, x, wide)
			if err != nil {
				return "", err
			}
			b.WriteString(s)
		}
		b.WriteByte(end)
		return b.String(), nil
	}
	switch t {
	case tBool:
		return strconv.FormatBool(v.b), nil
	case tInt:
		s := strconv.FormatInt(v.i, 10)
		if wide >= wideInts && (v.i > 1<<53 || v.i < -(1<<53)) {
			return `"` + s + `"`, nil
		}
		return s, nil
	case tFloat:
		switch {
		case math.IsNaN(v.f):
			return `"NaN"`, nil
		case math.IsInf(v.f, 1):
			return `"Infinity"`, nil
		case math.IsInf(v.f, -1):
			return `"-Infinity"`, nil
		}
		return jsonFloat(v.f), nil
	case tNumeric, tBigNumeric:
		s, _ := castToString(t, v)
		if wide == wideNumbers && jsonExact(json.Number(s)) != nil {
			return `"` + s + `"`, nil
		}
		return s, nil
	case tString:
		jsonString(&b, v.s)
	case tBytes:
		jsonString(&b, base64.StdEncoding.EncodeToString([]byte(v.s)))
	case tDate:
		jsonString(&b, formatDate(v.i))
	case tDatetime:
		jsonString(&b, strings.Replace(formatDatetime(v.i), " ", "T", 1))
	case tTime:
		jsonString(&b, formatTime(v.i))
	case tTimestamp:
		jsonString(&b, strings.Replace(formatDatetime(v.i), " ", "T", 1)+"Z")
	case tJSON:
		return v.s, nil
	default:
		return "", fmt.Errorf("TO_JSON does not support %s", t)
	}
	return b.String(), nil
}

// timeIn is the zone name and offset (seconds) of loc at UTC µs us.
func timeIn(us int64, loc *time.Location) (string, int) {
	return time.UnixMicro(us).In(loc).Zone()
}

// isJSONable reports whether TO_JSON takes values of type t.
func isJSONable(t typ) bool {
	if ct := t.comp(); ct != nil {
		if ct.kind == tArray {
			return isJSONable(ct.elem)
		}
		for _, f := range ct.fields {
			if !isJSONable(f.t) {
				return false
			}
		}
		return true
	}
	switch t {
	case tGeo, tStruct, tArray, tInterval, tRange:
		return false
	}
	return true
}

func jsonTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	}
	return "object"
}

func registerJSON() {
	// STRING(timestamp [, zone]); STRING(json) is added below.
	builtins["STRING"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 1, 2); err != nil {
			return nil, err
		}
		return c.sig(e, args, []typ{tTimestamp, tString}[:len(args)], tString, func(a []value) (value, error) {
			loc, err := zoneArg(a, 1)
			if err != nil {
				return value{}, err
			}
			_, off := timeIn(a[0].i, loc)
			z := strftime("%Ez", 0, off, "")
			z = strings.TrimSuffix(z, ":00")
			return value{s: formatDatetime(a[0].i+int64(off)*microsPerSecond) + z}, nil
		})
	}
	// PARSE_JSON(s, wide_number_mode => 'exact' | 'round'): 'exact'
	// refuses a number FLOAT64 cannot hold, 'round' rounds it; a NULL
	// mode gives NULL (ZetaSQL's JsonParse).
	builtins["PARSE_JSON"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args[:len(args)-1], 1, 1); err != nil {
			return nil, err
		}
		return c.sig(e, args, []typ{tString, tString}, tJSON, func(a []value) (value, error) {
			if m := a[1].s; m != "exact" && m != "round" {
				return value{}, fmt.Errorf("Invalid `wide_number_mode` specified for PARSE_JSON: %s", m)
			}
			s, err := canonicalJSONMode(a[0].s, a[1].s == "exact")
			if err != nil {
				return value{}, fmt.Errorf("Invalid input to PARSE_JSON: %v", err)
			}
			return value{s: s}, nil
		})
	}
	jsonable := isJSONable
	// TO_JSON(v, stringify_wide_numbers => b): b encodes INT64 beyond
	// ±2^53 and NUMERIC/BIGNUMERIC that FLOAT64 cannot hold as strings,
	// in containers too.
	builtins["TO_JSON"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args[:len(args)-1], 1, 1); err != nil {
			return nil, err
		}
		t := args[0].typ()
		if !jsonable(t) {
			return nil, c.noSig(e, args)
		}
		return c.sigStrict(e, args, []typ{tNull, tBool}, tJSON, false, func(a []value) (value, error) {
			if a[1].null {
				return nullValue, nil
			}
			wide := wideNone
			if a[1].b {
				wide = wideNumbers
			}
			s, err := toJSONText(t, a[0], wide)
			if err == nil && t.comp() != nil {
				s, err = canonicalJSON(s) // a JSON object's keys are sorted
			}
			return value{s: s}, err
		})
	}
	builtins["TO_JSON_STRING"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 1, 2); err != nil {
			return nil, err
		}
		t := args[0].typ()
		if !jsonable(t) {
			return nil, c.noSig(e, args)
		}
		return c.sigStrict(e, args, []typ{tNull, tBool}, tString, false, func(a []value) (value, error) {
			s, err := toJSONText(t, a[0], wideInts)
			if err != nil || len(a) < 2 || !a[1].b || a[1].null {
				return value{s: s}, err
			}
			v, err := jsonDecode(s)
			if err != nil {
				return value{}, err
			}
			var b bytes.Buffer
			jsonWrite(&b, v, "  ", "", false) // in the value's own key order
			return value{s: b.String()}, nil
		})
	}
	builtins["JSON_TYPE"] = func(c *checker, e *Call, args []node) (node, error) {
		return c.sig(e, args, []typ{tJSON}, tString, func(a []value) (value, error) {
			v, err := jsonDecode(a[0].s)
			if err != nil {
				return value{}, fmt.Errorf("Invalid JSON: %v", err)
			}
			return value{s: jsonTypeName(v)}, nil
		})
	}
	builtins["JSON_ARRAY"] = func(c *checker, e *Call, args []node) (node, error) {
		for _, a := range args {
			if a == nil || !jsonable(a.typ()) {
				return nil, c.noSig(e, args)
			}
		}
		return c.sigStrict(e, args, repeatT(tNull, max(len(args), 1)), tJSON, false, func(a []value) (value, error) {
			parts := make([]string, len(a))
			for i, v := range a {
				s, err := toJSONText(args[i].typ(), v, wideNone)
				if err != nil {
					return value{}, err
				}
				parts[i] = s
			}
			s, err := canonicalJSON("[" + strings.Join(parts, ",") + "]")
			return value{s: s}, err
		})
	}
	builtins["JSON_OBJECT"] = func(c *checker, e *Call, args []node) (node, error) {
		if len(args)%2 == 1 {
			return nil, c.errf(e.P, "Number of arguments does not match for function JSON_OBJECT. Expected an even number of arguments but got %d", len(args))
		}
		want := make([]typ, max(len(args), 1))
		for i := range args {
			if args[i] == nil || !jsonable(args[i].typ()) {
				return nil, c.noSig(e, args)
			}
			if i%2 == 0 {
				want[i] = tString
			}
		}
		return c.sigStrict(e, args, want, tJSON, false, func(a []value) (value, error) {
			var b strings.Builder
			b.WriteByte('{')
			for i := 0; i < len(a); i += 2 {
				if a[i].null {
					return value{}, fmt.Errorf("A key of JSON_OBJECT cannot be NULL")
				}
				s, err := toJSONText(args[i+1].typ(), a[i+1], wideNone)
				if err != nil {
					return value{}, err
				}
				if i > 0 {
					b.WriteByte(',')
				}
				k, _ := toJSONText(tString, a[i], wideNone)
				b.WriteString(k + ":" + s)
			}
			b.WriteByte('}')
			s, err := canonicalJSON(b.String())
			return value{s: s}, err
		})
	}
	// INT64/FLOAT64/BOOL/STRING(json) and their LAX_ forms.
	conv := func(name string, ret typ, lax bool, f func(v any) (value, bool, error)) {
		prev := builtins[name]
		builtins[name] = func(c *checker, e *Call, args []node) (node, error) {
			if prev != nil && (len(args) != 1 || args[0] == nil || args[0].typ() != tJSON) {
				return prev(c, e, args) // STRING(timestamp) and friends
			}
			return c.sig(e, args, []typ{tJSON}, ret, func(a []value) (value, error) {
				v, err := jsonDecode(a[0].s)
				if err != nil {
					return value{}, fmt.Errorf("Invalid JSON: %v", err)
				}
				if lax && v == nil {
					return nullValue, nil
				}
				r, ok, err := f(v)
				if err != nil {
					return value{}, err
				}
				if !ok {
					if lax {
						return nullValue, nil
					}
					return value{}, fmt.Errorf("The provided JSON input is not %s", map[typ]string{tInt: "an integer", tFloat: "a number", tBool: "a boolean", tString: "a string"}[ret])
				}
				return r, nil
			})
		}
	}
	conv("INT64", tInt, false, func(v any) (value, bool, error) {
		n, ok := v.(json.Number)
		if !ok {
			return value{}, false, nil
		}
		r, ok := new(big.Rat).SetString(string(n))
		if !ok || !r.IsInt() || !r.Num().IsInt64() {
			return value{}, false, nil
		}
		return value{i: r.Num().Int64()}, true, nil
	})
	conv("FLOAT64", tFloat, false, func(v any) (value, bool, error) {
		n, ok := v.(json.Number)
		if !ok {
			return value{}, false, nil
		}
		f, err := strconv.ParseFloat(string(n), 64)
		return value{f: f}, err == nil, nil
	})
	// FLOAT64(json, wide_number_mode => 'round' | 'exact'): 'exact'
	// refuses an integer FLOAT64 cannot hold (beyond ±2^53), as ZetaSQL's
	// ConvertJsonToDouble does; a JSON number with a fraction or an
	// exponent is a FLOAT64 already.
	float64JSON := builtins["FLOAT64"]
	builtins["FLOAT64"] = func(c *checker, e *Call, args []node) (node, error) {
		args, named := namedTail(e.Name, args)
		if err := c.arity(e, args, 1, 1); err != nil {
			return nil, err
		}
		if k, ok := named[0].(*constNode); ok && !k.v.isNull(0) && k.v.s[0] == "round" {
			return float64JSON(c, e, args)
		}
		return c.sig(e, append(args, named...), []typ{tJSON, tString}, tFloat, func(a []value) (value, error) {
			mode := a[1].s
			if mode != "round" && mode != "exact" {
				return value{}, fmt.Errorf("Invalid `wide_number_mode` specified: %s", mode)
			}
			v, err := jsonDecode(a[0].s)
			if err != nil {
				return value{}, fmt.Errorf("Invalid JSON: %v", err)
			}
			n, ok := v.(json.Number)
			if !ok {
				return value{}, fmt.Errorf("The provided JSON input is not a number")
			}
			if mode == "exact" {
				i, ierr := strconv.ParseInt(string(n), 10, 64)
				_, uerr := strconv.ParseUint(string(n), 10, 64)
				if ierr == nil && (i > 1<<53 || i < -(1<<53)) || ierr != nil && uerr == nil {
					return value{}, fmt.Errorf("JSON number: %s cannot be converted to FLOAT64 without loss of precision", n)
				}
			}
			f, err := strconv.ParseFloat(string(n), 64)
			if err != nil {
				return value{}, fmt.Errorf("The provided JSON input is not a number")
			}
			return value{f: f}, nil
		})
	}
	conv("BOOL", tBool, false, func(v any) (value, bool, error) {
		b, ok := v.(bool)
		return value{b: b}, ok, nil
	})
	conv("STRING", tString, false, func(v any) (value, bool, error) {
		s, ok := v.(string)
		return value{s: s}, ok, nil
	})
	conv("LAX_BOOL", tBool, true, func(v any) (value, bool, error) {
		switch v := v.(type) {
		case bool:
			return value{b: v}, true, nil
		case string:
			switch strings.ToLower(v) {
			case "true":
				return value{b: true}, true, nil
			case "false":
				return value{b: false}, true, nil
			}
		case json.Number:
			f, err := strconv.ParseFloat(string(v), 64)
			return value{b: f != 0}, err == nil, nil
		}
		return value{}, false, nil
	})
	conv("LAX_INT64", tInt, true, func(v any) (value, bool, error) {
		var text string
		switch v := v.(type) {
		case bool:
			return value{i: map[bool]int64{true: 1}[v]}, true, nil
		case json.Number:
			text = string(v)
		case string:
			text = strings.TrimSpace(v)
		default:
			return value{}, false, nil
		}
		r, ok := new(big.Rat).SetString(text)
		if !ok {
			return value{}, false, nil
		}
		r, _ = roundRat(r, 0, 0) // half away from zero
		if !r.Num().IsInt64() {
			return value{}, false, nil
		}
		return value{i: r.Num().Int64()}, true, nil
	})
	conv("LAX_FLOAT64", tFloat, true, func(v any) (value, bool, error) {
		var text string
		switch v := v.(type) {
		case json.Number:
			text = string(v)
		case string:
			text = strings.TrimSpace(v)
		default:
			return value{}, false, nil
		}
		f, err := strconv.ParseFloat(text, 64)
		if err != nil && !isRangeErr(err) {
			return value{}, false, nil
		}
		return value{f: f}, true, nil
	})
	conv("LAX_STRING", tString, true, func(v any) (value, bool, error) {
		switch v := v.(type) {
		case string:
			return value{s: v}, true, nil
		case bool:
			return value{s: strconv.FormatBool(v)}, true, nil
		case json.Number:
			return value{s: string(v)}, true, nil
		}
		return value{}, false, nil
	})
}
