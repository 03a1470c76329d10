package rest

// Query parameters (jobs.query and query jobs' queryParameters): the
// QueryParameter JSON the clients send, checked and translated to the
// expression layer's typed constants (filter.Params).
//
//   Go:   {"name":"x","parameterType":{"type":"INT64"},"parameterValue":{"value":"5"}}
//         a NULL is "value": null; BYTES are base64; TIMESTAMP
//         "2006-01-02 15:04:05.999999-07:00".
//   Node: parameterMode "named"/"positional" in lower case; values may be
//         JSON numbers and booleans; TIMESTAMP in RFC 3339.
//   bq:   --parameter name:TYPE:value, sent as strings.

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/bqstore/bqstore/internal/filter"
)

type queryParameter struct {
	Name           string               `json:"name"`
	ParameterType  *queryParameterType  `json:"parameterType"`
	ParameterValue *queryParameterValue `json:"parameterValue"`
}

type queryParameterType struct {
	Type             string              `json:"type"`
	ArrayType        *queryParameterType `json:"arrayType"`
	StructTypes      []structParamType   `json:"structTypes"`
	RangeElementType *queryParameterType `json:"rangeElementType"`
}

type structParamType struct {
	Name        string              `json:"name"`
	Type        *queryParameterType `json:"type"`
	Description string              `json:"description"`
}

type queryParameterValue struct {
	Value        json.RawMessage                 `json:"value"`
	ArrayValues  []*queryParameterValue          `json:"arrayValues"`
	StructValues map[string]*queryParameterValue `json:"structValues"`
	RangeValue   json.RawMessage                 `json:"rangeValue"`
}

// queryParams checks a request's parameters and returns them bound for the
// expression layer (nil when there are none and no mode is given).
func queryParams(mode string, raw []any) (*filter.Params, *Error) {
	if len(raw) == 0 && mode == "" {
		return nil, nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, invalid("Invalid queryParameters: %v", err)
	}
	var ps []queryParameter
	if err := json.Unmarshal(b, &ps); err != nil {
		return nil, invalid("Invalid queryParameters: %v", err)
	}
	out := &filter.Params{Named: map[string]filter.ParamValue{}}
	switch strings.ToUpper(mode) {
	case filter.ParamsNamed, filter.ParamsPositional:
		out.Mode = strings.ToUpper(mode)
	case "":
		// The clients always say; infer it from the first parameter.
		out.Mode = filter.ParamsPositional
		if len(ps) > 0 && ps[0].Name != "" {
			out.Mode = filter.ParamsNamed
		}
	default:
		return nil, invalid("Invalid value for parameterMode: %s is not a valid value", mode)
	}
	for i, p := range ps {
		label := p.Name
		if label == "" {
			label = strconv.Itoa(i + 1)
		}
		if p.ParameterType == nil || p.ParameterType.Type == "" {
			return nil, invalid("Query parameter %s has no parameterType", label)
		}
		v, e := paramValue(label, p.ParameterType, p.ParameterValue)
		if e != nil {
			return nil, e
		}
		switch {
		case out.Mode == filter.ParamsNamed && p.Name == "":
			return nil, invalid("Query parameter %d has no name; parameterMode NAMED requires names", i+1)
		case out.Mode == filter.ParamsPositional && p.Name != "":
			return nil, invalid("Query parameter %s has a name; parameterMode POSITIONAL requires parameters without names", p.Name)
		case out.Mode == filter.ParamsNamed:
			k := strings.ToLower(p.Name)
			if _, dup := out.Named[k]; dup {
				return nil, invalid("Duplicate query parameter name: %s", p.Name)
			}
			out.Named[k] = v
		default:
			out.Positional = append(out.Positional, v)
		}
	}
	return out, nil
}

// paramValue translates one parameter's value. An ARRAY's Type is its
// element type's name (a STRUCT<...> for an array of structs); a STRUCT
// is one filter.Struct value of its type.
func paramValue(label string, t *queryParameterType, v *queryParameterValue) (filter.ParamValue, *Error) {
	typ := strings.ToUpper(t.Type)
	if typ == "ARRAY" {
		if t.ArrayType == nil || t.ArrayType.Type == "" {
			return filter.ParamValue{}, invalid("Query parameter %s of type ARRAY has no arrayType", label)
		}
		if strings.ToUpper(t.ArrayType.Type) == "ARRAY" {
			return filter.ParamValue{}, invalid("Query parameter %s: arrays of arrays are not allowed", label)
		}
	}
	name, x, e := paramGo(label, t, v)
	if e != nil {
		return filter.ParamValue{}, e
	}
	if typ == "ARRAY" {
		out := filter.ParamValue{Type: typeString(t.ArrayType), Array: true}
		if x != nil {
			out.Values = x.([]any)
		}
		return out, nil
	}
	out := filter.ParamValue{Type: name}
	if x != nil {
		out.Values = []any{x}
	}
	return out, nil
}

// paramGo translates a value of type t to the expression layer's Go
// value (nil for NULL; []any for an ARRAY, filter.Struct for a STRUCT)
// and names its type.
func paramGo(label string, t *queryParameterType, v *queryParameterValue) (string, any, *Error) {
	if t == nil || t.Type == "" {
		return "", nil, invalid("Query parameter %s has no parameterType", label)
	}
	switch typ := strings.ToUpper(t.Type); typ {
	case "ARRAY":
		if t.ArrayType == nil || t.ArrayType.Type == "" {
			return "", nil, invalid("Query parameter %s of type ARRAY has no arrayType", label)
		}
		if strings.ToUpper(t.ArrayType.Type) == "ARRAY" {
			return "", nil, invalid("Query parameter %s: arrays of arrays are not allowed", label)
		}
		name := typeString(t)
		if v == nil || v.ArrayValues == nil && string(v.Value) == "null" {
			return name, nil, nil // NULL; {} (what clients send for an empty slice) is []
		}
		out := make([]any, 0, len(v.ArrayValues))
		for _, ev := range v.ArrayValues {
			_, x, e := paramGo(label, t.ArrayType, ev)
			if e != nil {
				return "", nil, e
			}
			out = append(out, x)
		}
		return name, out, nil
	case "STRUCT":
		if len(t.StructTypes) == 0 {
			return "", nil, invalid("Query parameter %s of type STRUCT has no structTypes", label)
		}
		name := typeString(t)
		if v == nil || v.StructValues == nil {
			return name, nil, nil
		}
		out := make(filter.Struct, len(t.StructTypes))
		for i, f := range t.StructTypes {
			_, x, e := paramGo(label, f.Type, v.StructValues[f.Name])
			if e != nil {
				return "", nil, e
			}
			out[i] = x
		}
		return name, out, nil
	case "RANGE":
		// rangeValue {start, end} (each {value}; a missing one is
		// unbounded), as the Go client sends a *RangeValue.
		et := t.RangeElementType
		if et == nil || et.Type == "" {
			return "", nil, invalid("Query parameter %s of type RANGE has no rangeElementType", label)
		}
		switch strings.ToUpper(et.Type) {
		case "DATE", "DATETIME", "TIMESTAMP":
		default:
			return "", nil, invalid("Query parameter %s: RANGE<%s> is not supported: the element type must be DATE, DATETIME or TIMESTAMP", label, et.Type)
		}
		name := typeString(t)
		if v == nil || len(v.RangeValue) == 0 || string(v.RangeValue) == "null" {
			return name, nil, nil
		}
		var rv struct{ Start, End *queryParameterValue }
		if err := json.Unmarshal(v.RangeValue, &rv); err != nil {
			return "", nil, invalid("Invalid value for query parameter %s: %s", label, v.RangeValue)
		}
		var bounds [2]any
		for i, b := range []*queryParameterValue{rv.Start, rv.End} {
			x, e := scalarParam(label, strings.ToUpper(et.Type), b)
			if e != nil {
				return "", nil, e
			}
			bounds[i] = x
		}
		return name, filter.Range{Start: bounds[0], End: bounds[1]}, nil
	default:
		x, e := scalarParam(label, typ, v)
		return canonicalType(typ), x, e
	}
}

// scalarParam parses one scalar value (nil for NULL).
func scalarParam(label, typ string, v *queryParameterValue) (any, *Error) {
	if v == nil || len(v.Value) == 0 || string(v.Value) == "null" {
		if _, err := filter.ParseParam(typ, ""); err == filter.ErrParamType {
			return nil, invalid("Invalid value for type: %s is not a valid value", typ)
		}
		return nil, nil
	}
	var text string
	if err := json.Unmarshal(v.Value, &text); err != nil {
		// Node sends numbers and booleans as JSON numbers and booleans.
		var x any
		if json.Unmarshal(v.Value, &x) != nil {
			return nil, invalid("Invalid value for query parameter %s: %s", label, v.Value)
		}
		switch x.(type) {
		case float64, bool:
			text = string(v.Value)
		default:
			return nil, invalid("Invalid value for query parameter %s: %s", label, v.Value)
		}
	}
	raw := text
	if typ == "BYTES" {
		b, err := base64.StdEncoding.DecodeString(text)
		if err != nil {
			return nil, unparseable(label, typ, "Invalid base64 value", raw)
		}
		text = string(b)
	}
	x, err := filter.ParseParam(typ, text)
	if err == filter.ErrParamType {
		return nil, invalid("Invalid value for type: %s is not a valid value", typ)
	}
	if err != nil {
		return nil, unparseable(label, typ, err.Error(), raw)
	}
	return x, nil
}

// unparseable is BigQuery's error for a value that is not of its
// parameter's type (reason invalid), e.g. "Unparseable query parameter
// `ts` in type `TYPE_TIMESTAMP`, Invalid timestamp: '1.5E9' value: '1.5E9'".
func unparseable(label, typ, why, raw string) *Error {
	return invalid("Unparseable query parameter `%s` in type `TYPE_%s`, %s value: '%s'", label, canonicalType(typ), why, raw)
}

// canonicalType maps the type names the clients send to GoogleSQL's
// (the Go client sends INT64, bq accepts INTEGER and FLOAT too).
func canonicalType(t string) string {
	switch t {
	case "INTEGER", "INT":
		return "INT64"
	case "FLOAT":
		return "FLOAT64"
	case "BOOLEAN":
		return "BOOL"
	case "DECIMAL":
		return "NUMERIC"
	case "BIGDECIMAL":
		return "BIGNUMERIC"
	}
	return t
}

// typeString renders a parameter type as GoogleSQL writes it.
func typeString(t *queryParameterType) string {
	if t == nil {
		return "?"
	}
	switch typ := strings.ToUpper(t.Type); typ {
	case "ARRAY":
		return "ARRAY<" + typeString(t.ArrayType) + ">"
	case "RANGE":
		return "RANGE<" + typeString(t.RangeElementType) + ">"
	case "STRUCT":
		var b strings.Builder
		b.WriteString("STRUCT<")
		for i, f := range t.StructTypes {
			if i > 0 {
				b.WriteString(", ")
			}
			if f.Name != "" {
				b.WriteString(f.Name + " ")
			}
			b.WriteString(typeString(f.Type))
		}
		b.WriteString(">")
		return b.String()
	default:
		return canonicalType(typ)
	}
}
