package rest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/rowjson"
	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/schema/protorows"
)

// ---- datasets ----

// listDatasets serves datasets.list.
func (h *Handler) listDatasets(w http.ResponseWriter, r *http.Request) {
	p := r.PathValue("projectId")
	if err := checkProject(p); err != nil {
		h.writeError(w, r, err)
		return
	}
	filter, err := parseLabelFilter(r.URL.Query().Get("filter"))
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	// Datasets whose id starts with "_" are hidden (the anonymous
	// datasets of query results) unless all=true, as in BigQuery.
	listAll, _ := strconv.ParseBool(r.URL.Query().Get("all"))
	var all []*catalog.Dataset
	for _, d := range h.cat.ListDatasets(p) {
		if strings.HasPrefix(d.DatasetID, "_") && !listAll {
			continue
		}
		if filter.match(d.Labels) {
			all = append(all, d)
		}
	}
	start, end, next, err := page(r, len(all), func(i int) string { return all[i].DatasetID })
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	out := datasetList{Kind: "bigquery#datasetList", NextPageToken: next}
	for _, d := range all[start:end] {
		out.Datasets = append(out.Datasets, datasetListItem{
			Kind: "bigquery#dataset", ID: d.FullID(),
			DatasetReference: datasetRef{ProjectID: d.ProjectID, DatasetID: d.DatasetID},
			FriendlyName:     d.FriendlyName, Labels: d.Labels, Location: d.Location,
		})
	}
	writeJSON(w, http.StatusOK, &out)
}

// datasetBody is the part of a Dataset resource bqstore reads.
type datasetBody struct {
	DatasetReference *datasetRef `json:"datasetReference"`
}

// insertDataset serves datasets.insert.
func (h *Handler) insertDataset(w http.ResponseWriter, r *http.Request) {
	p := r.PathValue("projectId")
	if err := checkProject(p); err != nil {
		h.writeError(w, r, err)
		return
	}
	body, members, err := readBody(w, r, "dataset", datasetType, pathParams{project: p})
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	var in datasetBody
	if err := decodeInto("dataset", body, &in); err != nil {
		h.writeError(w, r, err)
		return
	}
	if in.DatasetReference == nil || in.DatasetReference.DatasetID == "" {
		h.writeError(w, r, invalid("Required parameter is missing: dataset.datasetReference.datasetId"))
		return
	}
	if pid := in.DatasetReference.ProjectID; pid != "" && pid != p {
		h.writeError(w, r, invalid("Invalid value for dataset.datasetReference.projectId: %q does not match the project %q in the URL", pid, p))
		return
	}
	patch, err := datasetPatch(members, false)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	ds := catalog.Dataset{ProjectID: p, DatasetID: in.DatasetReference.DatasetID}
	if patch.Location != nil {
		ds.Location = *patch.Location
	}
	if patch.Description != nil {
		ds.Description = *patch.Description
	}
	if patch.FriendlyName != nil {
		ds.FriendlyName = *patch.FriendlyName
	}
	if patch.DefaultTableExpirationMs != nil {
		if *patch.DefaultTableExpirationMs < 0 {
			h.writeError(w, r, invalid("Invalid value for dataset.defaultTableExpirationMs: %d", *patch.DefaultTableExpirationMs))
			return
		}
		ds.DefaultTableExpirationMs = *patch.DefaultTableExpirationMs
	}
	ds.Labels = setLabels(ds.Labels, patch.Labels)
	created, err := h.cat.CreateDataset(r.Context(), ds)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, datasetOut(r, created))
}

// datasetPatch reads the mutable dataset members. With full (PUT) an
// absent member is cleared, as a full update replaces the resource.
func datasetPatch(members map[string]json.RawMessage, full bool) (catalog.DatasetPatch, error) {
	var p catalog.DatasetPatch
	var err error
	if p.Description, err = stringMember(members, "description", "dataset", full); err != nil {
		return p, err
	}
	if p.FriendlyName, err = stringMember(members, "friendlyName", "dataset", full); err != nil {
		return p, err
	}
	var loc string
	if present, null, err := member(members, "location", "dataset", &loc); err != nil {
		return p, err
	} else if present && !null {
		p.Location = &loc
	}
	var exp schema.Int64
	if present, null, err := member(members, "defaultTableExpirationMs", "dataset", &exp); err != nil {
		return p, err
	} else if present || full {
		v := int64(exp)
		if null {
			v = 0
		}
		if v < 0 || v > catalog.MaxDefaultTableExpirationMs {
			// Beyond the bound, now plus it overflows (negative
			// expirations) or leaves the timestamp range.
			return p, invalid("Invalid value for dataset.defaultTableExpirationMs: %d", v)
		}
		p.DefaultTableExpirationMs = &v
	}
	if p.Labels, p.ReplaceLabels, err = labelsMember(members, "dataset", full); err != nil {
		return p, err
	}
	return p, nil
}

func stringMember(members map[string]json.RawMessage, name, what string, full bool) (*string, error) {
	var s string
	present, _, err := member(members, name, what, &s)
	if err != nil {
		return nil, err
	}
	if !present && !full {
		return nil, nil
	}
	return &s, nil // null and absent-in-full clear it
}

func labelsMember(members map[string]json.RawMessage, what string, full bool) (map[string]*string, bool, error) {
	var labels map[string]*string
	present, null, err := member(members, "labels", what, &labels)
	if err != nil {
		return nil, false, err
	}
	return labels, full || (present && null), nil
}

// datasetPath returns the dataset named by r's path, validated.
func datasetPath(r *http.Request) (p, d string, err error) {
	p, d = r.PathValue("projectId"), r.PathValue("datasetId")
	return p, d, checkRef(p, d, nil)
}

// getDataset serves datasets.get.
func (h *Handler) getDataset(w http.ResponseWriter, r *http.Request) {
	p, d, err := datasetPath(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	ds, err := h.cat.Dataset(p, d)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, datasetOut(r, ds))
}

// updateDataset serves datasets.patch (PATCH) and datasets.update (PUT).
func (h *Handler) updateDataset(w http.ResponseWriter, r *http.Request) {
	p, d, err := datasetPath(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	body, members, err := readBody(w, r, "dataset", datasetType, pathParams{project: p, dataset: d})
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	var in datasetBody
	if err := decodeInto("dataset", body, &in); err != nil {
		h.writeError(w, r, err)
		return
	}
	if ref := in.DatasetReference; ref != nil && ((ref.ProjectID != "" && ref.ProjectID != p) || (ref.DatasetID != "" && ref.DatasetID != d)) {
		h.writeError(w, r, invalid("Invalid value for dataset.datasetReference: %s:%s does not match the dataset %s:%s in the URL", ref.ProjectID, ref.DatasetID, p, d))
		return
	}
	patch, err := datasetPatch(members, r.Method == http.MethodPut)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	ds, err := h.cat.PatchDataset(r.Context(), p, d, patch, ifMatch(r))
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, datasetOut(r, ds))
}

// deleteDataset serves datasets.delete.
func (h *Handler) deleteDataset(w http.ResponseWriter, r *http.Request) {
	p, d, err := datasetPath(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	contents, err := boolParam(r, "deleteContents")
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if err := h.cat.DeleteDataset(r.Context(), p, d, contents); err != nil {
		h.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// ---- tables ----

// listTables serves tables.list.
func (h *Handler) listTables(w http.ResponseWriter, r *http.Request) {
	p, d, err := datasetPath(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	all, err := h.cat.ListTables(p, d)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	start, end, next, err := page(r, len(all), func(i int) string { return all[i].TableID })
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	out := tableList{Kind: "bigquery#tableList", NextPageToken: next, TotalItems: len(all)}
	for _, t := range all[start:end] {
		out.Tables = append(out.Tables, tableListItem{
			Kind: "bigquery#table", ID: t.FullID(),
			TableReference: tableRef{ProjectID: t.ProjectID, DatasetID: t.DatasetID, TableID: t.TableID},
			FriendlyName:   t.FriendlyName, Labels: t.Labels, Type: tableKind(t),
			CreationTime: ms(t.Created), ExpirationTime: ms(t.Expiration),
			TimePartitioning: t.TimePartitioning, RangePartitioning: t.RangePartitioning, Clustering: t.Clustering,
		})
	}
	writeJSON(w, http.StatusOK, &out)
}

// tableBody is the part of a Table resource bqstore reads.
type tableBody struct {
	TableReference *tableRef `json:"tableReference"`
	Type           string    `json:"type"`
	View           *struct {
		Query        string `json:"query"`
		UseLegacySQL *bool  `json:"useLegacySql"`
	} `json:"view"`
}

// unsupportedTableMembers are Table members that would make the table
// something bqstore does not implement; they are refused rather than
// silently ignored.
var unsupportedTableMembers = []string{"materializedView", "externalDataConfiguration", "biglakeConfiguration", "tableReplicationInfo", "cloneDefinition", "snapshotDefinition"}

// insertTable serves tables.insert.
func (h *Handler) insertTable(w http.ResponseWriter, r *http.Request) {
	p, d, err := datasetPath(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	body, members, err := readBody(w, r, "table", tableType, pathParams{project: p, dataset: d})
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	var in tableBody
	if err := decodeInto("table", body, &in); err != nil {
		h.writeError(w, r, err)
		return
	}
	for _, m := range unsupportedTableMembers {
		if raw, ok := members[m]; ok && !rawNull(raw) {
			h.writeError(w, r, invalid("bqstore does not support table.%s: only tables and views can be created", m))
			return
		}
	}
	if in.Type != "" && !strings.EqualFold(in.Type, "TABLE") && !(strings.EqualFold(in.Type, "VIEW") && in.View != nil) {
		h.writeError(w, r, invalid("bqstore does not support tables of type %s: only TABLE and VIEW", in.Type))
		return
	}
	ref := in.TableReference
	if ref == nil || ref.TableID == "" {
		h.writeError(w, r, invalid("Required parameter is missing: table.tableReference.tableId"))
		return
	}
	if (ref.ProjectID != "" && ref.ProjectID != p) || (ref.DatasetID != "" && ref.DatasetID != d) {
		h.writeError(w, r, invalid("Invalid value for table.tableReference: %s:%s does not match the dataset %s:%s in the URL", ref.ProjectID, ref.DatasetID, p, d))
		return
	}
	patch, err := tablePatch(members, false)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if patch.Schema != nil {
		// An invalid schema is reported as such by the catalog.
		if ns, err := schema.Normalize(patch.Schema); err == nil {
			if err := checkDefaults("table.schema.fields", ns.Fields); err != nil {
				h.writeError(w, r, err)
				return
			}
		}
	}
	spec := catalog.TableSpec{ProjectID: p, DatasetID: d, TableID: ref.TableID, Schema: patch.Schema}
	if v := in.View; v != nil {
		// A view: its schema is its query's result schema.
		if v.UseLegacySQL == nil || *v.UseLegacySQL {
			h.writeError(w, r, legacyView())
			return
		}
		if strings.TrimSpace(v.Query) == "" {
			h.writeError(w, r, invalid("Required parameter is missing: table.view.query"))
			return
		}
		if h.jobs == nil {
			h.writeError(w, r, notImplementedYet("views"))
			return
		}
		s, err := h.jobs.ViewSchema(r.Context(), p, p+":"+d+"."+ref.TableID, v.Query)
		if err != nil {
			h.writeError(w, r, queryError(err))
			return
		}
		spec.Schema, spec.View = s, &catalog.View{Query: v.Query}
	}
	if patch.TableConstraints != nil {
		spec.TableConstraints = *patch.TableConstraints
	}
	if patch.Description != nil {
		spec.Description = *patch.Description
	}
	if patch.FriendlyName != nil {
		spec.FriendlyName = *patch.FriendlyName
	}
	if patch.Expiration != nil {
		spec.Expiration = *patch.Expiration
	}
	for _, m := range [...]struct{ dst, src *json.RawMessage }{
		{&spec.Partitioning.TimePartitioning, patch.TimePartitioning},
		{&spec.Partitioning.RangePartitioning, patch.RangePartitioning},
		{&spec.Partitioning.Clustering, patch.Clustering},
	} {
		if m.src != nil && len(*m.src) > 0 {
			*m.dst = *m.src
		}
	}
	spec.Labels = setLabels(spec.Labels, patch.Labels)
	t, err := h.cat.CreateTable(r.Context(), spec)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, h.tableOut(r, t))
}

// legacyView is the answer to a view in legacy SQL (BigQuery's default
// when view.useLegacySql is absent from tables.insert, which is what bq mk
// --view sends without --use_legacy_sql=false).
func legacyView() *Error {
	return invalid("Invalid value for table.view.useLegacySql: bqstore runs GoogleSQL only, not legacy SQL: send view.useLegacySql: false (bq mk --view --use_legacy_sql=false; the Go and Node.js clients send it)")
}

// tablePatch reads the mutable table members. With full (PUT) an absent
// member is cleared, except the schema, which stays when absent or null
// (columns cannot be dropped, so no schema cannot mean "no columns").
func tablePatch(members map[string]json.RawMessage, full bool) (catalog.TablePatch, error) {
	var p catalog.TablePatch
	var err error
	if p.Description, err = stringMember(members, "description", "table", full); err != nil {
		return p, err
	}
	if p.FriendlyName, err = stringMember(members, "friendlyName", "table", full); err != nil {
		return p, err
	}
	var exp schema.Int64
	if present, null, err := member(members, "expirationTime", "table", &exp); err != nil {
		return p, err
	} else if present || full {
		var t time.Time
		if !null && exp != 0 {
			if exp < 0 || exp > catalog.MaxTimestampMs {
				// BigQuery's timestamps end at year 9999.
				return p, invalid("Invalid value for table.expirationTime: %d", exp)
			}
			t = time.UnixMilli(int64(exp)).UTC()
		}
		p.Expiration = &t
	}
	if p.Labels, p.ReplaceLabels, err = labelsMember(members, "table", full); err != nil {
		return p, err
	}
	for _, m := range [...]struct {
		name string
		dst  **json.RawMessage
	}{
		{"timePartitioning", &p.TimePartitioning},
		{"rangePartitioning", &p.RangePartitioning},
		{"clustering", &p.Clustering},
		{"tableConstraints", &p.TableConstraints},
	} {
		raw, present := members[m.name]
		if !present && !full {
			continue
		}
		var v json.RawMessage // absent in a PUT, or null: cleared
		if present && !rawNull(raw) {
			if v, err = normalizeEcho("table."+m.name, raw, echoTypes[strings.ToUpper(m.name[:1])+m.name[1:]]); err != nil {
				return p, err
			}
		}
		*m.dst = &v
	}
	// A null schema leaves the schema, as an absent one does: null is an
	// unset message field in Google's JSON mapping, and bq update sends
	// "schema": null whenever it changes something else.
	var s schema.Schema
	if present, null, err := member(members, "schema", "table", &s); err != nil {
		return p, err
	} else if present && !null {
		p.Schema = &s
	}
	return p, nil
}

// checkDefaults compiles every column's defaultValueExpression, as
// BigQuery does when the table is created or patched: an expression that
// does not parse, or does not fit the column, is a 400 here instead of a
// failure of every later append.
func checkDefaults(path string, fields []*schema.Field) error {
	for i, f := range fields {
		if f == nil {
			continue
		}
		if f.DefaultValueExpression != "" {
			if _, err := protorows.CompileDefault(f); err != nil {
				return invalid("Invalid value for %s[%d].defaultValueExpression (column %s): %v", path, i, f.Name, err)
			}
		}
		if err := checkDefaults(fmt.Sprintf("%s[%d].fields", path, i), f.Fields); err != nil {
			return err
		}
	}
	return nil
}

// tablePath returns the table named by r's path, validated.
func tablePath(r *http.Request) (p, d, t string, err error) {
	p, d, t = r.PathValue("projectId"), r.PathValue("datasetId"), r.PathValue("tableId")
	return p, d, t, checkRef(p, d, &t)
}

// getTable serves tables.get.
func (h *Handler) getTable(w http.ResponseWriter, r *http.Request) {
	p, d, tn, err := tablePath(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	t, err := h.cat.Table(p, d, tn)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	out := h.tableOut(r, t)
	if sel := selectedFields(r); len(sel) > 0 {
		// The schema of the selected fields only, as BigQuery answers:
		// bq head -c pairs tabledata.list's cells with it.
		s, err := rowjson.SelectFields(t.Schema(), sel)
		if err != nil {
			h.writeError(w, r, invalid("Invalid value for selectedFields: %s", strings.TrimPrefix(err.Error(), "rowjson: ")))
			return
		}
		out.Schema = s
	}
	writeJSON(w, http.StatusOK, out)
}

// selectedFields returns the request's comma-separated selectedFields.
func selectedFields(r *http.Request) []string {
	var out []string
	for _, f := range strings.Split(r.URL.Query().Get("selectedFields"), ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// updateTable serves tables.patch (PATCH) and tables.update (PUT).
func (h *Handler) updateTable(w http.ResponseWriter, r *http.Request) {
	p, d, tn, err := tablePath(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	body, members, err := readBody(w, r, "table", tableType, pathParams{project: p, dataset: d, table: tn})
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	var in tableBody
	if err := decodeInto("table", body, &in); err != nil {
		h.writeError(w, r, err)
		return
	}
	if ref := in.TableReference; ref != nil && ((ref.ProjectID != "" && ref.ProjectID != p) || (ref.DatasetID != "" && ref.DatasetID != d) || (ref.TableID != "" && ref.TableID != tn)) {
		h.writeError(w, r, invalid("Invalid value for table.tableReference: it does not match the table %s:%s.%s in the URL", p, d, tn))
		return
	}
	patch, err := tablePatch(members, r.Method == http.MethodPut)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if v := in.View; v != nil {
		// A new view query: its result schema becomes the view's (bq
		// update --view, the Go client's ViewQuery, Node's
		// setMetadata({view})). An absent useLegacySql leaves the
		// dialect as it is: GoogleSQL, the only one bqstore runs.
		if v.UseLegacySQL != nil && *v.UseLegacySQL {
			h.writeError(w, r, legacyView())
			return
		}
		if strings.TrimSpace(v.Query) == "" {
			h.writeError(w, r, invalid("Required parameter is missing: table.view.query"))
			return
		}
		cur, err := h.cat.Table(p, d, tn)
		if err != nil {
			h.writeError(w, r, err)
			return
		}
		if cur.View == nil {
			h.writeError(w, r, invalid("Invalid value for table.view: %s is a table, not a view", cur.FullID()))
			return
		}
		if h.jobs == nil {
			h.writeError(w, r, notImplementedYet("views"))
			return
		}
		s, err := h.jobs.ViewSchema(r.Context(), p, cur.FullID(), v.Query)
		if err != nil {
			h.writeError(w, r, queryError(err))
			return
		}
		patch.Schema, patch.View = s, &catalog.View{Query: v.Query}
	} else if patch.Schema != nil {
		// An invalid schema or an incompatible change is
		// reported as such by the catalog, before the columns'
		// defaults are judged.
		ns, err := schema.Normalize(patch.Schema)
		if err == nil {
			if cur, err := h.cat.Table(p, d, tn); err != nil || schema.CheckEvolution(cur.Schema(), ns) == nil {
				if err := checkDefaults("table.schema.fields", ns.Fields); err != nil {
					h.writeError(w, r, err)
					return
				}
			}
		}
	}
	t, err := h.cat.UpdateTable(r.Context(), p, d, tn, patch, ifMatch(r))
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, h.tableOut(r, t))
}

// deleteTable serves tables.delete.
func (h *Handler) deleteTable(w http.ResponseWriter, r *http.Request) {
	p, d, tn, err := tablePath(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if err := h.cat.DeleteTable(r.Context(), p, d, tn); err != nil {
		h.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// labelFilter is datasets.list's filter: "labels.<name>[:<value>]" terms
// separated by spaces, all of which must match.
type labelFilter []struct{ key, value string }

func parseLabelFilter(s string) (labelFilter, error) {
	var f labelFilter
	for _, term := range strings.Fields(s) {
		rest, ok := strings.CutPrefix(term, "labels.")
		if !ok || rest == "" {
			return nil, invalid("Invalid filter %q: expected labels.<name>[:<value>] terms", s)
		}
		k, v, hasValue := strings.Cut(rest, ":")
		if !hasValue {
			v = "\x00any"
		}
		f = append(f, struct{ key, value string }{k, v})
	}
	return f, nil
}

func (f labelFilter) match(labels map[string]string) bool {
	for _, t := range f {
		v, ok := labels[t.key]
		if !ok || (t.value != "\x00any" && v != t.value) {
			return false
		}
	}
	return true
}

// setLabels copies the non-null labels of a request body into dst
// (allocated on first use) and returns it.
func setLabels(dst map[string]string, labels map[string]*string) map[string]string {
	for k, v := range labels {
		if v != nil {
			if dst == nil {
				dst = map[string]string{}
			}
			dst[k] = *v
		}
	}
	return dst
}
