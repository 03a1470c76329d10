package rest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// normalizeEcho checks raw (one member of a request body, decoded by the
// caller's JSON checks already for names) against the BigQuery type t the
// way Google's JSON frontend reads it, and returns it compacted with int64
// values as strings, as BigQuery writes them. The frontend takes an int64
// as a JSON number or a string (bq sends timePartitioning.expirationMs as
// a number), which encoding/json's ",string" fields of the generated types
// do not, so the generated types only provide the shape here.
func normalizeEcho(path string, raw json.RawMessage, t reflect.Type) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, badRequest("Invalid JSON payload received. %s", jsonErrText(err))
	}
	v, err := echoValue(path, v, t, false)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// echoValue checks v against t; asString marks an int64 field whose JSON
// form is a string.
func echoValue(path string, v any, t reflect.Type, asString bool) (any, error) {
	if v == nil {
		return nil, nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	bad := func() error {
		return badRequest("Invalid JSON payload received. Invalid value at '%s' (%s), got %s.", snakePath(path), protoTypeName(t), jsonKind(v))
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, bad()
		}
		fields := map[string]reflect.StructField{}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name != "-" && name != "" && f.IsExported() {
				fields[name] = f
			}
		}
		for k, el := range obj {
			f, ok := fields[k]
			if !ok {
				return nil, badRequest("Invalid JSON payload received. Unknown name %q at '%s': Cannot find field.", k, snakePath(path))
			}
			nv, err := echoValue(path+"."+k, el, f.Type, strings.Contains(f.Tag.Get("json"), ",string"))
			if err != nil {
				return nil, err
			}
			obj[k] = nv
		}
		return obj, nil
	case reflect.Slice:
		arr, ok := v.([]any)
		if !ok {
			return nil, bad()
		}
		for i, el := range arr {
			nv, err := echoValue(fmt.Sprintf("%s[%d]", path, i), el, t.Elem(), false)
			if err != nil {
				return nil, err
			}
			arr[i] = nv
		}
		return arr, nil
	case reflect.String:
		if _, ok := v.(string); !ok {
			return nil, bad()
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return nil, bad()
		}
	case reflect.Int, reflect.Int32, reflect.Int64:
		var s string
		switch x := v.(type) {
		case json.Number:
			s = x.String()
		case string:
			s = x
		default:
			return nil, bad()
		}
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return nil, badRequest("Invalid JSON payload received. Invalid value at '%s' (%s), %s.", snakePath(path), protoTypeName(t), strconv.Quote(s))
		}
		if asString || t.Kind() == reflect.Int64 {
			return strconv.FormatInt(n, 10), nil
		}
		return n, nil
	case reflect.Float32, reflect.Float64:
		if _, ok := v.(json.Number); !ok {
			return nil, bad()
		}
	default:
		return nil, fmt.Errorf("rest: no echo check for %s", t)
	}
	return v, nil
}
