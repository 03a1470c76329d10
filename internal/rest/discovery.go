package rest

// The discovery document: a description of the API in Google's discovery
// format, which bq and the discovery-based clients fetch before their
// first call (bq asks for {api}/$discovery/rest?version=v2).
//
// It is generated from the routes table (routes.go): a method is in it
// exactly when it is served, with the path and query parameters it
// accepts, and the schemas of its bodies are derived from the Go types the
// handlers encode and decode. It is not Google's document: a method
// bqstore does not serve is absent (bq then reports it has no such
// method), and a schema lists the members bqstore returns, not every
// member BigQuery has. rootUrl is the address the request reached, so a
// client that follows the document comes back to this server.

import (
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/bqstore/bqstore/internal/schema"

	bq "google.golang.org/api/bigquery/v2"
)

// discoveryPaths are where the document is served: the v1 discovery
// service path the libraries use and the $discovery path bq uses.
var discoveryPaths = []string{"/$discovery/rest", "/discovery/v1/apis/bigquery/v2/rest"}

// IsDiscoveryPath reports whether path is one the discovery document is
// served at.
func IsDiscoveryPath(path string) bool {
	return slices.Contains(discoveryPaths, path)
}

// servicePath is the API root under the server's address.
const servicePath = "bigquery/v2/"

// schemaNames names the schemas of the wire types after their BigQuery
// counterparts; a struct type not listed is named after its Go name.
var schemaNames = map[reflect.Type]string{
	tDataset:                                   "Dataset",
	tDatasetList:                               "DatasetList",
	reflect.TypeFor[datasetListItem]():         "DatasetListItem",
	reflect.TypeFor[datasetRef]():              "DatasetReference",
	tTable:                                     "Table",
	tTableList:                                 "TableList",
	reflect.TypeFor[tableListItem]():           "TableListItem",
	reflect.TypeFor[tableRef]():                "TableReference",
	reflect.TypeFor[schema.Schema]():           "TableSchema",
	reflect.TypeFor[schema.Field]():            "TableFieldSchema",
	reflect.TypeFor[schema.RangeElementType](): "RangeElementType",
	tProjectList:                               "ProjectList",
	reflect.TypeFor[projectListItem]():         "ProjectListItem",
	reflect.TypeFor[projectRef]():              "ProjectReference",
	tTableDataDoc:                              "TableDataList",
}

// serveDiscovery answers GET of the discovery paths.
func (h *Handler) serveDiscovery(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == discoveryPaths[0] {
		if v := r.URL.Query().Get("version"); v != "" && v != "v2" {
			h.writeError(w, r, &Error{Code: http.StatusNotFound, Reason: "notFound",
				Msg: "Discovery document not found for API service: bigquery.googleapis.com format: rest version: " + v})
			return
		}
	}
	doc := h.discoveryDoc()
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	root := scheme + "://" + r.Host + "/"
	doc["rootUrl"] = root
	doc["baseUrl"] = root + servicePath
	writeJSON(w, http.StatusOK, doc)
}

// discoveryDoc returns a fresh copy of the top level of the document
// (without rootUrl and baseUrl); the rest is built once and shared.
func (h *Handler) discoveryDoc() map[string]any {
	h.docOnce.Do(func() { h.doc = buildDiscovery(h.served) })
	out := make(map[string]any, len(h.doc)+2)
	for k, v := range h.doc {
		out[k] = v
	}
	return out
}

// buildDiscovery generates the document for the served routes.
func buildDiscovery(served []*route) map[string]any {
	schemas := map[string]any{}
	resources := map[string]any{}
	for _, rt := range served {
		res, name, _ := strings.Cut(rt.id, ".")
		params := map[string]any{}
		order := pathParamNames(rt.path)
		for _, p := range order {
			params[p] = map[string]any{"type": "string", "location": "path", "required": true,
				"description": pathParamDesc[p]}
		}
		for _, q := range rt.query {
			params[q.name] = map[string]any{"type": q.typ, "location": "query", "description": q.desc}
		}
		m := map[string]any{
			"id":          "bigquery." + rt.id,
			"httpMethod":  rt.method,
			"path":        rt.path,
			"description": rt.desc,
			"parameters":  params,
		}
		if rt.stub {
			m["description"] = "Not implemented by bqstore: every call is answered 501 notImplemented."
		}
		if rt.upload {
			// googleapiclient sends every upload to the simple path.
			up := "/upload/" + servicePath + rt.path
			m["supportsMediaUpload"] = true
			m["mediaUpload"] = map[string]any{"accept": []string{"*/*"}, "protocols": map[string]any{
				"simple":    map[string]any{"multipart": true, "path": up},
				"resumable": map[string]any{"multipart": true, "path": up},
			}}
		}
		if len(order) > 0 {
			m["parameterOrder"] = order
		}
		if rt.request != nil {
			m["request"] = schemaOf(rt.request, schemas)
		}
		if rt.response != nil {
			m["response"] = schemaOf(rt.response, schemas)
		}
		rm, ok := resources[res].(map[string]any)
		if !ok {
			rm = map[string]any{"methods": map[string]any{}}
			resources[res] = rm
		}
		rm["methods"].(map[string]any)[name] = m
	}
	return map[string]any{
		"kind":             "discovery#restDescription",
		"discoveryVersion": "v1",
		"id":               "bigquery:v2",
		"name":             "bigquery",
		"version":          "v2",
		"title":            "BigQuery API (bqstore)",
		"description":      "The methods of BigQuery's REST API v2 that this bqstore server serves.",
		"protocol":         "rest",
		"servicePath":      servicePath,
		"basePath":         "/" + servicePath,
		"parameters": map[string]any{
			"alt":         map[string]any{"type": "string", "location": "query", "enum": []string{"json"}, "default": "json", "description": "Data format for the response: JSON only."},
			"prettyPrint": map[string]any{"type": "boolean", "location": "query", "description": "Accepted; responses are always compact JSON."},
		},
		"resources": resources,
		"schemas":   schemas,
	}
}

// echoTypes are the BigQuery types of members bqstore echoes as the client
// sent them (json.RawMessage fields tagged discovery:"<name>"): their
// schemas are those of the generated BigQuery types, which requests are
// checked against.
var echoTypes = map[string]reflect.Type{
	"TimePartitioning":  reflect.TypeFor[bq.TimePartitioning](),
	"RangePartitioning": reflect.TypeFor[bq.RangePartitioning](),
	"Clustering":        reflect.TypeFor[bq.Clustering](),
	"TableConstraints":  reflect.TypeFor[bq.TableConstraints](),
}

var pathParamDesc = map[string]string{
	"projectId": "Project ID.",
	"datasetId": "Dataset ID.",
	"tableId":   "Table ID.",
}

// schemaOf returns the discovery schema of values of Go type t as
// encoding/json writes them; named struct types go to schemas and are
// referred to by name.
func schemaOf(t reflect.Type, schemas map[string]any) map[string]any {
	if t == reflect.TypeFor[schema.Int64]() { // its MarshalJSON writes a string
		return map[string]any{"type": "string", "format": "int64"}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return schemaOf(t.Elem(), schemas)
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int32:
		return map[string]any{"type": "integer", "format": "int32"}
	case reflect.Int64:
		return map[string]any{"type": "string", "format": "int64"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number", "format": "double"}
	case reflect.Slice:
		return map[string]any{"type": "array", "items": schemaOf(t.Elem(), schemas)}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": schemaOf(t.Elem(), schemas)}
	case reflect.Interface:
		return map[string]any{"type": "any"}
	case reflect.Struct:
		if t.Name() == "" {
			return structSchema(t, schemas)
		}
		name, ok := schemaNames[t]
		if !ok {
			name = strings.ToUpper(t.Name()[:1]) + t.Name()[1:]
		}
		if _, done := schemas[name]; !done {
			schemas[name] = nil // a placeholder, for recursive types
			s := structSchema(t, schemas)
			s["id"] = name
			schemas[name] = s
		}
		return map[string]any{"$ref": name}
	}
	panic("rest: no discovery schema for " + t.String())
}

func structSchema(t reflect.Type, schemas map[string]any) map[string]any {
	props := map[string]any{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		var s map[string]any
		if name := f.Tag.Get("discovery"); name != "" {
			s = schemaOf(echoTypes[name], schemas)
		} else {
			s = schemaOf(f.Type, schemas)
		}
		if format := f.Tag.Get("format"); format != "" {
			s["format"] = format
		}
		props[name] = s
	}
	return map[string]any{"type": "object", "properties": props}
}
