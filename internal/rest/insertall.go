package rest

// tabledata.insertAll: POST .../projects/{p}/datasets/{d}/tables/{t}/insertAll.
//
// The legacy streaming API, translated to what the Write API's default
// stream does: each row's JSON goes through ingest/rows (BigQuery's JSON
// value conventions, in tabledata.insertAll's flavour) to a proto row, the
// rows through protorows (the engine's row rules: REQUIRED, maxLength,
// precision, defaults of missing columns) to one Arrow batch, and the batch
// is appended to the table's _default stream, so the rows are committed
// and visible when the response is sent.
//
// A bad row fails the request's other rows ("stopped") unless
// skipInvalidRows is set; either way the answer is 200 with insertErrors,
// as BigQuery answers. insertId de-duplication is dedup.go's.

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

	"github.com/bqstore/bqstore/ingest/rows"
	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/schema/protorows"
	"github.com/bqstore/bqstore/internal/storage"
)

// Limits of one insertAll request, BigQuery's (cloud.google.com/bigquery/
// quotas, streaming inserts): the HTTP body and the rows.
const (
	insertAllMaxBytes = MaxBodyBytes
	insertAllMaxRows  = 50000
)

// insertAllRow is one rows[] member of a request.
type insertAllRow struct {
	insertID string
	json     json.RawMessage // the row object; nil: {}
}

// insertAllRequest is a parsed TableDataInsertAllRequest.
type insertAllRequest struct {
	skipInvalid    bool
	ignoreUnknown  bool
	templateSuffix string
	rows           []insertAllRow
}

// tableDataInsertAllRequest is the request body as the discovery
// document describes it (BigQuery's TableDataInsertAllRequest, the
// generated google.golang.org/api/bigquery/v2 type's members);
// parseInsertAll accepts these members and no others.
type tableDataInsertAllRequest struct {
	Kind                string                  `json:"kind"`
	SkipInvalidRows     bool                    `json:"skipInvalidRows"`
	IgnoreUnknownValues bool                    `json:"ignoreUnknownValues"`
	TemplateSuffix      string                  `json:"templateSuffix"`
	TraceID             string                  `json:"traceId"`
	Rows                []tableDataInsertAllRow `json:"rows"`
}

type tableDataInsertAllRow struct {
	InsertID string         `json:"insertId"`
	JSON     map[string]any `json:"json"`
}

// Member names of the request and of its rows.
var (
	insertAllMembers    = memberSet(reflect.TypeFor[tableDataInsertAllRequest]())
	insertAllRowMembers = memberSet(reflect.TypeFor[tableDataInsertAllRow]())
)

func memberSet(t reflect.Type) map[string]bool {
	m := map[string]bool{}
	for name := range fieldsOf(t) {
		m[name] = true
	}
	return m
}

// readInsertAll reads the request body: at most insertAllMaxBytes; past
// that the answer is BigQuery's 400.
func readInsertAll(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, insertAllMaxBytes))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, invalid("Request payload size exceeds the limit: %d bytes.", insertAllMaxBytes)
		}
		return nil, invalid("Could not read the request body: %v", err)
	}
	return body, nil
}

// parseInsertAll parses an insertAll body as Google's JSON frontend does:
// unknown member names and members of the wrong JSON type are 400
// badRequest naming the member; request parameters repeated in the body
// (projectId, datasetId, tableId) must agree with the path.
//
// A body the typed decoder takes in one pass (insertAllWire) is parsed
// that way; any other goes through checkInsertAll, which walks the members
// one by one to name the one at fault (about three times slower: every
// level is scanned again).
func parseInsertAll(body []byte, pp pathParams) (*insertAllRequest, error) {
	if len(body) > 0 && len(body) <= insertAllMaxBytes {
		var wire insertAllWire
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&wire); err == nil && len(bytes.Trim(body[dec.InputOffset():], " \t\r\n")) == 0 {
			if req, ok := wire.request(pp); ok {
				return req, nil
			}
		}
	}
	return checkInsertAll(body, pp)
}

// insertAllWire is the request as encoding/json decodes it: every member
// under its JSON and its proto name. Note that encoding/json matches names
// case-insensitively, which Google's frontend does not: "ROWS" is read as
// "rows" (a body only a hand-written client could send).
type insertAllWire struct {
	Kind                 *string            `json:"kind"`
	SkipInvalidRows      *bool              `json:"skipInvalidRows"`
	SkipInvalidRows2     *bool              `json:"skip_invalid_rows"`
	IgnoreUnknownValues  *bool              `json:"ignoreUnknownValues"`
	IgnoreUnknownValues2 *bool              `json:"ignore_unknown_values"`
	TemplateSuffix       *string            `json:"templateSuffix"`
	TemplateSuffix2      *string            `json:"template_suffix"`
	TraceID              *string            `json:"traceId"`
	TraceID2             *string            `json:"trace_id"`
	ProjectID            *string            `json:"projectId"`
	DatasetID            *string            `json:"datasetId"`
	TableID              *string            `json:"tableId"`
	Rows                 []insertAllWireRow `json:"rows"`
}

type insertAllWireRow struct {
	InsertID  *string         `json:"insertId"`
	InsertID2 *string         `json:"insert_id"`
	JSON      json.RawMessage `json:"json"`
}

// request converts a decoded body; ok false sends it to checkInsertAll
// (for its error message).
func (w *insertAllWire) request(pp pathParams) (*insertAllRequest, bool) {
	one := func(a, b *string) (string, bool) {
		switch {
		case a != nil && b != nil:
			return "", false
		case a != nil:
			return *a, true
		case b != nil:
			return *b, true
		}
		return "", true
	}
	oneBool := func(a, b *bool) (bool, bool) {
		if a != nil && b != nil {
			return false, false
		}
		return a != nil && *a || b != nil && *b, true
	}
	for _, p := range [...]struct {
		v    *string
		path string
	}{{w.ProjectID, pp.project}, {w.DatasetID, pp.dataset}, {w.TableID, pp.table}} {
		if p.v != nil && *p.v != p.path {
			return nil, false
		}
	}
	if len(w.Rows) > insertAllMaxRows {
		return nil, false
	}
	req := &insertAllRequest{}
	if len(w.Rows) > 0 {
		req.rows = make([]insertAllRow, len(w.Rows))
	}
	var ok1, ok2, ok3, ok4 bool
	req.skipInvalid, ok1 = oneBool(w.SkipInvalidRows, w.SkipInvalidRows2)
	req.ignoreUnknown, ok2 = oneBool(w.IgnoreUnknownValues, w.IgnoreUnknownValues2)
	req.templateSuffix, ok3 = one(w.TemplateSuffix, w.TemplateSuffix2)
	_, ok4 = one(w.TraceID, w.TraceID2)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return nil, false
	}
	for i, r := range w.Rows {
		id, ok := one(r.InsertID, r.InsertID2)
		if !ok {
			return nil, false
		}
		js := r.JSON
		if rawNull(js) {
			js = nil
		} else if len(js) > 0 && js[0] != '{' {
			return nil, false
		}
		req.rows[i] = insertAllRow{insertID: id, json: js}
	}
	return req, true
}

// checkInsertAll is parseInsertAll member by member.
func checkInsertAll(body []byte, pp pathParams) (*insertAllRequest, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, badRequest("Invalid JSON payload received. The request body is empty; expected a TableDataInsertAllRequest.")
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, badRequest("Invalid JSON payload received. Expected a TableDataInsertAllRequest object, got a JSON %s.", te.Value)
		}
		return nil, badRequest("Invalid JSON payload received. %s", jsonErrText(err))
	}
	params := map[string]any{}
	for _, name := range []string{"projectId", "datasetId", "tableId"} {
		if raw, ok := top[name]; ok {
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, badRequest("Invalid JSON payload received. %s", jsonErrText(err))
			}
			params[name] = v
		}
	}
	if _, err := bindParams(params, pp); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(top))
	for name := range top {
		names = append(names, name)
	}
	sort.Strings(names)
	req := &insertAllRequest{}
	for _, name := range names {
		if _, bound := params[name]; !bound && (name == "projectId" || name == "datasetId" || name == "tableId") {
			continue // bound to the path
		}
		raw := top[name]
		jn := name
		if !insertAllMembers[jn] {
			jn = camelName(name) // the proto name is accepted too
			if !insertAllMembers[jn] {
				return nil, badRequest("Invalid JSON payload received. Unknown name %q: Cannot find field.", name)
			}
			if _, dup := top[jn]; dup {
				return nil, badRequest("Invalid JSON payload received. Member %q repeats %q.", name, jn)
			}
		}
		if rawNull(raw) {
			continue
		}
		var err error
		switch jn {
		case "kind", "traceId":
			var s string
			err = decodeInto(jn, raw, &s)
		case "skipInvalidRows":
			err = decodeInto(jn, raw, &req.skipInvalid)
		case "ignoreUnknownValues":
			err = decodeInto(jn, raw, &req.ignoreUnknown)
		case "templateSuffix":
			err = decodeInto(jn, raw, &req.templateSuffix)
		case "rows":
			req.rows, err = parseInsertAllRows(raw)
		}
		if err != nil {
			return nil, err
		}
	}
	return req, nil
}

func parseInsertAllRows(raw json.RawMessage) ([]insertAllRow, error) {
	var list []json.RawMessage
	if err := decodeInto("rows", raw, &list); err != nil {
		return nil, err
	}
	if len(list) > insertAllMaxRows {
		return nil, invalid("too many rows present in the request, limit: %d row count: %d.", insertAllMaxRows, len(list))
	}
	if len(list) == 0 {
		return nil, nil
	}
	out := make([]insertAllRow, len(list))
	for i, el := range list {
		path := fmt.Sprintf("rows[%d]", i)
		var m map[string]json.RawMessage
		if err := decodeInto(path, el, &m); err != nil {
			return nil, err
		}
		for name, v := range m {
			jn := name
			if !insertAllRowMembers[jn] {
				if jn = camelName(name); !insertAllRowMembers[jn] {
					return nil, badRequest("Invalid JSON payload received. Unknown name %q at '%s': Cannot find field.", name, path)
				}
				if _, dup := m[jn]; dup {
					return nil, badRequest("Invalid JSON payload received. Member %q at '%s' repeats %q.", name, path, jn)
				}
			}
			if rawNull(v) {
				continue
			}
			switch jn {
			case "insertId":
				if err := decodeInto(path+".insertId", v, &out[i].insertID); err != nil {
					return nil, err
				}
			case "json":
				if t := bytes.TrimLeft(v, " \t\r\n"); len(t) == 0 || t[0] != '{' {
					return nil, badRequest("Invalid JSON payload received. Invalid value at '%s.json' (type.googleapis.com/google.protobuf.Struct), expected a JSON object.", path)
				}
				out[i].json = v
			}
		}
	}
	return out, nil
}

// Wire form of the response (TableDataInsertAllResponse); errorProto is
// BigQuery's ErrorProto.
type errorProto struct {
	Reason    string `json:"reason"`
	Location  string `json:"location"`
	DebugInfo string `json:"debugInfo"`
	Message   string `json:"message"`
}

type rowInsertErrors struct {
	Index  int          `json:"index"`
	Errors []errorProto `json:"errors"`
}

type tableDataInsertAllResponse struct {
	Kind         string            `json:"kind"`
	InsertErrors []rowInsertErrors `json:"insertErrors,omitempty"`
}

// insertAllRows serves tabledata.insertAll over Options.DB.
func (h *Handler) insertAllRows(w http.ResponseWriter, r *http.Request) {
	resp, err := h.insertAll(w, r, h.opts.DB)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// insertAll serves one request.
func (h *Handler) insertAll(w http.ResponseWriter, r *http.Request, db *storage.DB) (*tableDataInsertAllResponse, error) {
	p, d, t := r.PathValue("projectId"), r.PathValue("datasetId"), r.PathValue("tableId")
	if err := checkRef(p, d, &t); err != nil {
		return nil, err
	}
	body, err := readInsertAll(w, r)
	if err != nil {
		return nil, err
	}
	// The decoded request and its rows take about as much again as the
	// body: both come from the engine's in-flight budget, as an
	// AppendRows request's do (docs/memory.md).
	res, err := db.Reserve(r.Context(), 2*int64(len(body)))
	if err != nil {
		return nil, err
	}
	defer res.Release()
	req, err := parseInsertAll(body, pathParams{project: p, dataset: d, table: t})
	if err != nil {
		return nil, err
	}
	if len(req.rows) == 0 {
		return nil, invalid("No rows present in the request.")
	}
	ct, err := h.insertTarget(r, p, d, t, req.templateSuffix)
	if err != nil {
		return nil, err
	}
	st, err := db.Table(ct.ID)
	if err != nil {
		if errors.Is(err, storage.ErrTableNotFound) {
			return nil, &Error{Code: http.StatusNotFound, Reason: "notFound", Msg: fmt.Sprintf("Not found: Table %s:%s.%s", ct.ProjectID, ct.DatasetID, ct.TableID)}
		}
		return nil, err
	}
	cur := ct.Schemas[len(ct.Schemas)-1]
	ck := convKey{table: ct.ID, version: cur.Version, ignore: req.ignoreUnknown}
	conv, err := h.converters.get(ck, cur.Schema)
	if err != nil {
		return nil, err
	}
	defer h.converters.put(ck, conv)

	out := &tableDataInsertAllResponse{Kind: "bigquery#tableDataInsertAllResponse"}
	bad := map[int][]errorProto{}
	// Rows whose insertId the window remembers are acknowledged and not
	// written again; the ids of this request are claimed now and released
	// if the append fails.
	ids := make([]string, len(req.rows))
	for i, row := range req.rows {
		ids[i] = row.insertID
	}
	dup := h.insertIDs.claim(ct.ID, ids)
	written := make([]bool, len(req.rows))
	defer func() {
		// Forget the ids of rows not written (refused, stopped, or the
		// append failed): a corrected retry must not be dropped.
		forget := make([]bool, len(ids))
		for i := range ids {
			forget[i] = !dup[i] && !written[i]
		}
		h.insertIDs.release(ct.ID, ids, forget)
	}()

	// JSON to proto rows; rows that do not map are invalid.
	var protoRows [][]byte
	var protoIdx []int // request index of each proto row
	var buf []byte
	for i, row := range req.rows {
		if dup[i] {
			continue
		}
		js := row.json
		if js == nil {
			js = json.RawMessage("{}")
		}
		start := len(buf)
		buf, err = conv.mapper.Append(buf, js)
		if err != nil {
			bad[i] = []errorProto{recordInsertError(err, js)}
			continue
		}
		protoRows = append(protoRows, buf[start:len(buf):len(buf)])
		protoIdx = append(protoIdx, i)
	}
	// Proto rows to one batch; rows the engine's rules refuse are invalid.
	// With skipInvalidRows the refused rows are dropped and the rest
	// decoded again (Decode reports at most 1000 bad rows per call).
	mv := protorows.MissingValues{Default: protorows.DefaultValue}
	for len(protoRows) > 0 {
		rec, rowErrs, err := conv.decoder.Decode(protoRows, mv)
		if errors.Is(err, protorows.ErrTooManyValues) {
			return nil, invalid("The request has too many values (rows x columns); send fewer rows per request.")
		}
		if err != nil {
			return nil, err
		}
		if len(rowErrs) == 0 {
			if len(bad) > 0 && !req.skipInvalid {
				rec.Release()
				break
			}
			if h.opts.Admit != nil {
				if err := h.opts.Admit(); err != nil {
					rec.Release()
					return nil, err
				}
			}
			_, err = st.Append(r.Context(), storage.AppendRequest{
				Stream: storage.DefaultStreamID, Offset: -1, Batch: rec,
				SchemaVersion: cur.Version, Reservation: res,
			})
			rec.Release()
			if err != nil {
				return nil, err
			}
			for _, i := range protoIdx {
				written[i] = true
			}
			protoRows = nil
			break
		}
		drop := map[int]bool{}
		for _, re := range rowErrs {
			i := protoIdx[re.Index]
			bad[i] = []errorProto{{Reason: "invalid", Location: re.Field, Message: re.Message}}
			drop[re.Index] = true
		}
		if !req.skipInvalid {
			break
		}
		keep, keepIdx := protoRows[:0], protoIdx[:0]
		for j := range protoRows {
			if !drop[j] {
				keep, keepIdx = append(keep, protoRows[j]), append(keepIdx, protoIdx[j])
			}
		}
		protoRows, protoIdx = keep, keepIdx
	}
	if len(bad) == 0 {
		return out, nil
	}
	for i := range req.rows {
		switch {
		case bad[i] != nil:
			out.InsertErrors = append(out.InsertErrors, rowInsertErrors{Index: i, Errors: bad[i]})
		case !req.skipInvalid:
			// Nothing of the request was written: the good rows were
			// stopped by the bad ones (a retry may send them again).
			out.InsertErrors = append(out.InsertErrors, rowInsertErrors{Index: i, Errors: []errorProto{{Reason: "stopped"}}})
		}
	}
	return out, nil
}

// insertTarget returns the catalog table the rows go to: t, or with a
// templateSuffix the table t+suffix, created with t's schema if it does not
// exist yet (BigQuery's template tables).
func (h *Handler) insertTarget(r *http.Request, p, d, t, suffix string) (*catalog.Table, error) {
	if suffix == "" {
		return h.cat.Table(p, d, t)
	}
	target := t + suffix
	if err := catalog.ValidateTableID(target); err != nil {
		return nil, invalid("Invalid value for templateSuffix: the table name %q is not valid.", target)
	}
	if ct, err := h.cat.Table(p, d, target); err == nil || !errors.Is(err, catalog.ErrNotFound) {
		return ct, err
	}
	tmpl, err := h.cat.Table(p, d, t)
	if err != nil {
		return nil, err
	}
	ct, err := h.cat.CreateTable(r.Context(), catalog.TableSpec{ProjectID: p, DatasetID: d, TableID: target, Schema: tmpl.Schema()})
	if errors.Is(err, catalog.ErrExists) {
		return h.cat.Table(p, d, target) // created meanwhile by another request
	}
	return ct, err
}

// rowConverter turns insertAll rows of one table schema into proto rows
// and proto rows into Arrow batches.
type rowConverter struct {
	mapper  *rows.Mapper
	decoder *protorows.Decoder
}

func newRowConverter(sch *schema.Schema, ignoreUnknown bool) (*rowConverter, error) {
	if len(sch.Fields) == 0 {
		return nil, invalid("The table has no schema: rows cannot be inserted before columns are added.")
	}
	unknown := rows.UnknownReject
	if ignoreUnknown {
		unknown = rows.UnknownIgnore
	}
	m, err := rows.NewWithOptions(schema.ToStorage(sch), rows.Options{Unknown: unknown, InsertAll: true})
	if err != nil {
		// Only column types ingest/rows does not encode get here.
		return nil, invalid("bqstore does not support tabledata.insertAll into this table: %s", strings.TrimPrefix(err.Error(), "rows: "))
	}
	dec, err := protorows.Compile(m.Descriptor(), sch)
	if err != nil {
		return nil, fmt.Errorf("rest: insertAll: compile the row decoder: %w", err)
	}
	return &rowConverter{mapper: m, decoder: dec}, nil
}

// recordInsertError is a row's insertErrors entry for a JSON value that
// does not map to the schema, in BigQuery's words where we know them
// ("no such field", "Missing required field", "Cannot convert value to
// ... (bad value)"); location names the field.
func recordInsertError(err error, row []byte) errorProto {
	re, ok := errors.AsType[*rows.RecordError](err)
	if !ok {
		return errorProto{Reason: "invalid", Message: err.Error()}
	}
	e := errorProto{Reason: "invalid", Location: re.Path}
	switch {
	case re.UnknownColumn:
		e.Message = "no such field: " + re.Path + "."
	case strings.HasPrefix(re.Reason, "REQUIRED column is"):
		e.Message = "Missing required field: " + re.Path + "."
	case strings.HasPrefix(re.Reason, "INT64 ") || strings.HasPrefix(re.Reason, "invalid INT64 "):
		e.Message = "Cannot convert value to integer (bad value): " + valueText(row, re.Offset)
	case strings.HasPrefix(re.Reason, "FLOAT64 ") || strings.HasPrefix(re.Reason, "invalid FLOAT64 "):
		e.Message = "Cannot convert value to floating point (bad value): " + valueText(row, re.Offset)
	case strings.HasPrefix(re.Reason, "invalid BOOL "):
		e.Message = "Cannot convert value to boolean (bad value): " + valueText(row, re.Offset)
	case re.Path == "":
		e.Message = "Invalid row: " + re.Reason + "."
	default:
		e.Message = "Field " + re.Path + ": " + re.Reason + "."
	}
	return e
}

// valueText is the JSON value at off in row, a string unquoted, shortened
// to 64 bytes.
func valueText(row []byte, off int) string {
	if off < 0 || off >= len(row) {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(row[off:]))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return ""
	}
	s := fmt.Sprint(v)
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return s
}
