package rest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"sync"

	bq "google.golang.org/api/bigquery/v2"
)

// MaxBodyBytes caps a request body. BigQuery's documented maximum HTTP
// request size is 10 MB; a table resource is far smaller.
const MaxBodyBytes = 10 << 20

func sprintf(format string, args ...any) string {
	if len(args) == 0 {
		return format
	}
	return fmt.Sprintf(format, args...)
}

// pathParams are the request parameters a method takes from its path;
// "" for one the method does not have.
type pathParams struct{ project, dataset, table string }

// readBody reads a JSON object body of at most MaxBodyBytes, binds the
// request parameters repeated at its top (see bindParams), checks that
// every other member name is a field of the BigQuery resource typ (as
// Google's JSON frontends do: unknown names are a 400 "Invalid JSON
// payload"), and returns the raw bytes and the top-level members, without
// the parameters.
func readBody(w http.ResponseWriter, r *http.Request, what string, typ reflect.Type, pp pathParams) ([]byte, map[string]json.RawMessage, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, nil, &Error{Code: http.StatusRequestEntityTooLarge, Reason: "invalid",
				Msg: fmt.Sprintf("Request payload size exceeds the limit: %d bytes.", MaxBodyBytes)}
		}
		return nil, nil, invalid("Could not read the request body: %v", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, nil, badRequest("Invalid JSON payload received. The request body is empty; expected a %s resource.", what)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, nil, badRequest("Invalid JSON payload received. %s", jsonErrText(err))
	}
	if dec.More() {
		return nil, nil, badRequest("Invalid JSON payload received. Unexpected data after the %s object.", what)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, nil, badRequest("Invalid JSON payload received. Expected a %s object, got %s.", what, jsonKind(v))
	}
	bound, err := bindParams(obj, pp)
	if err != nil {
		return nil, nil, err
	}
	renamed := false
	if err := checkNames(v, typ, what, &renamed); err != nil {
		return nil, nil, err
	}
	if renamed || len(bound) > 0 {
		// Decode what was checked: members under their JSON names,
		// without the parameters (and no larger than it came).
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(obj); err != nil {
			return nil, nil, badRequest("Invalid JSON payload received. %s", jsonErrText(err))
		}
		body = buf.Bytes()
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(body, &members); err != nil {
		return nil, nil, badRequest("Invalid JSON payload received. %s", jsonErrText(err))
	}
	return body, members, nil
}

// bindParams handles the request parameters a body repeats at its top, as
// Google's frontend does: a member named like one of the method's path
// parameters (projectId, datasetId, tableId) is the parameter itself, not
// a member of the resource. Equal to the path (or null) it is accepted and
// removed from obj; different, the request is a 400. The official Node.js
// client sends projectId in the body of datasets.insert. A name that is no
// parameter of the method is left in obj, for checkNames to report as
// unknown. bindParams returns the names it removed.
func bindParams(obj map[string]any, pp pathParams) ([]string, error) {
	var bound []string
	for _, p := range [...]struct{ name, value string }{
		{"projectId", pp.project}, {"datasetId", pp.dataset}, {"tableId", pp.table},
	} {
		v, ok := obj[p.name]
		if !ok || p.value == "" {
			continue
		}
		switch v := v.(type) {
		case nil:
		case string:
			if v != p.value {
				return nil, invalid("Value %s in content does not agree with value %s. This can happen when a value set through a parameter is inconsistent with a value set in the request.", v, p.value)
			}
		default:
			return nil, badRequest("Invalid JSON payload received. Invalid value at '%s' (TYPE_STRING), got a JSON %s.", snakePath(p.name), strings.TrimPrefix(strings.TrimPrefix(jsonKind(v), "an "), "a "))
		}
		delete(obj, p.name)
		bound = append(bound, p.name)
	}
	return bound, nil
}

// decodeInto decodes JSON into v, turning decoder errors into 400s that
// name the field.
func decodeInto(what string, b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field := what
			if te.Field != "" {
				field = what + "." + te.Field
			}
			return badRequest("Invalid JSON payload received. Invalid value at '%s' (%s), got a JSON %s.", snakePath(field), protoTypeName(te.Type), te.Value)
		}
		return badRequest("Invalid JSON payload received. Invalid value at '%s': %s", snakePath(what), jsonErrText(err))
	}
	return nil
}

func jsonErrText(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("Syntax error at byte %d: %s.", se.Offset, se.Error())
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return "Unexpected end of JSON input."
	}
	return err.Error()
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	}
	return "a number"
}

// Resource types whose field names requests are checked against: the
// generated BigQuery v2 types, i.e. BigQuery's discovery document.
var (
	tableType   = reflect.TypeFor[bq.Table]()
	datasetType = reflect.TypeFor[bq.Dataset]()
)

var jsonNames sync.Map // reflect.Type -> map[string]reflect.Type

// fieldsOf returns the JSON member names of struct type t and their types.
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	if m, ok := jsonNames.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := make(map[string]reflect.Type, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		m[name] = f.Type
	}
	jsonNames.Store(t, m)
	return m
}

// checkNames reports the first member of v (decoded JSON) that is not a
// field of t, recursively, in Google's wording. A member under its proto
// (snake_case) name, which Google's frontend accepts as well as the JSON
// name (bq's table client sends "table_constraints"), is renamed to the JSON name in v,
// and *renamed is set.
func checkNames(v any, t reflect.Type, path string, renamed *bool) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil // a type error; the typed decoder reports it
		}
		fields := fieldsOf(t)
		var protoNames []string
		for name := range obj {
			if _, ok := fields[name]; !ok {
				protoNames = append(protoNames, name)
			}
		}
		sort.Strings(protoNames)
		for _, name := range protoNames {
			jn := camelName(name)
			if _, ok := fields[jn]; !ok || jn == name {
				return badRequest("Invalid JSON payload received. Unknown name %q at '%s': Cannot find field.", name, snakePath(path))
			}
			if _, dup := obj[jn]; dup {
				return badRequest("Invalid JSON payload received. Member %q at '%s' repeats %q.", name, snakePath(path), jn)
			}
			obj[jn] = obj[name]
			delete(obj, name)
			*renamed = true
		}
		for name, val := range obj {
			if err := checkNames(val, fields[name], path+"."+name, renamed); err != nil {
				return err
			}
		}
	case reflect.Slice:
		arr, ok := v.([]any)
		if !ok {
			return nil
		}
		for i, el := range arr {
			if err := checkNames(el, t.Elem(), fmt.Sprintf("%s[%d]", path, i), renamed); err != nil {
				return err
			}
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		for k, el := range obj {
			if err := checkNames(el, t.Elem(), path+"["+k+"]", renamed); err != nil {
				return err
			}
		}
	}
	return nil
}

// member decodes one optional top-level member. present reports whether
// it was in the body; null reports an explicit JSON null (which clears the
// value in patch semantics).
func member(members map[string]json.RawMessage, name, what string, v any) (present, null bool, err error) {
	raw, ok := members[name]
	if !ok {
		return false, false, nil
	}
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return true, true, nil
	}
	if err := decodeInto(what+"."+name, raw, v); err != nil {
		return true, false, err
	}
	return true, false, nil
}

// badRequest is a request Google's JSON frontend rejects before BigQuery
// sees it (syntax, unknown member names, wrong JSON types): HTTP 400 with
// reason "badRequest". Paths in its messages use the proto (snake_case)
// field names, as the frontend's do.
func badRequest(format string, args ...any) *Error {
	return &Error{Code: http.StatusBadRequest, Reason: "badRequest", Msg: sprintf(format, args...)}
}

// camelName turns a proto field name ("table_constraints") into its JSON
// name ("tableConstraints").
func camelName(s string) string {
	var b strings.Builder
	up := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_':
			up = true
			continue
		case up && 'a' <= c && c <= 'z':
			c -= 'a' - 'A'
		}
		up = false
		b.WriteByte(c)
	}
	return b.String()
}

// snakePath turns "table.schema.fields[0].rangeElementType" into
// "table.schema.fields[0].range_element_type".
func snakePath(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if 'A' <= c && c <= 'Z' {
			b.WriteByte('_')
			c += 'a' - 'A'
		}
		b.WriteByte(c)
	}
	return b.String()
}

// protoTypeName names a Go type as the frontend names proto field types.
func protoTypeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "TYPE_STRING"
	case reflect.Bool:
		return "TYPE_BOOL"
	case reflect.Int, reflect.Int32, reflect.Int64:
		return "TYPE_INT64"
	case reflect.Float32, reflect.Float64:
		return "TYPE_DOUBLE"
	case reflect.Slice:
		return "repeated " + protoTypeName(t.Elem())
	case reflect.Map:
		return "map"
	}
	return "TYPE_MESSAGE"
}
