package rest

import (
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
)

// route is one BigQuery REST v2 method bqstore serves. The routes table is
// the only place a method is registered: New builds the mux from it and
// the discovery document (discovery.go) is generated from it, so the
// document can neither describe a method that is not served nor miss one
// that is.
type route struct {
	// id is the method's id in BigQuery's API, without "bigquery.":
	// "datasets.insert". Its resource is the part before the dot.
	id string
	// method is the HTTP method.
	method string
	// path is relative to the API root ("/bigquery/v2/" or "/"), with
	// the path parameters in braces: "projects/{projectId}/datasets".
	// It is the mux pattern too, so handlers read the parameters with
	// r.PathValue("projectId").
	path string
	// query lists the query parameters the method accepts (all of them:
	// the discovery-based clients, bq among them, refuse to send one the
	// document does not list).
	query []param
	// request is the type of the JSON body (nil: none); response the
	// type of the JSON answer (nil: an empty 204).
	request, response reflect.Type
	// desc is the method's description in the discovery document.
	desc string
	// needsDB: the method reads or writes table data, so it is served
	// only when Options.DB is set.
	needsDB bool
	// serve handles the method.
	serve func(h *Handler, w http.ResponseWriter, r *http.Request)
	// stub: a method bqstore does not serve (see stubs in notimpl.go),
	// described so that discovery clients call it and get its 501;
	// upload: it takes a media upload too (jobs.insert).
	stub, upload bool
}

// param is a query parameter of a method.
type param struct {
	name string
	typ  string // discovery type: "string", "integer" or "boolean"
	desc string
}

// Query parameters shared by several methods.
var (
	pMaxResults = param{"maxResults", "integer", "The maximum number of results per page."}
	pPageToken  = param{"pageToken", "string", "Page token, returned by a previous call, to request the next page of results."}
	// accessPolicyVersion is sent by bq on every dataset call; bqstore
	// keeps no access policies, so any version reads the same.
	pJobLocation         = param{"location", "string", "The job's location; accepted and used in messages only (bqstore has one location)."}
	pAccessPolicyVersion = param{"accessPolicyVersion", "integer", "Accepted and ignored: bqstore keeps no dataset access policies."}
)

// resource types of the routes' bodies (see discovery.go for their schemas).
var (
	tDataset      = reflect.TypeFor[datasetJSON]()
	tDatasetList  = reflect.TypeFor[datasetList]()
	tTable        = reflect.TypeFor[tableJSON]()
	tTableList    = reflect.TypeFor[tableList]()
	tProjectList  = reflect.TypeFor[projectList]()
	tTableDataDoc = reflect.TypeFor[tableDataListDoc]()

	tInsertAll         = reflect.TypeFor[tableDataInsertAllRequest]()
	tInsertAllResponse = reflect.TypeFor[tableDataInsertAllResponse]()
)

// routes are the methods bqstore serves, in the discovery document's
// order.
var routes = []route{
	{id: "projects.list", method: "GET", path: "projects",
		query:    []param{pMaxResults, pPageToken},
		response: tProjectList, serve: (*Handler).listProjects,
		desc: "Lists the projects this server knows: its default project (serve --project) and every project a dataset was created in."},

	{id: "datasets.list", method: "GET", path: "projects/{projectId}/datasets",
		query: []param{
			{"all", "boolean", "Accepted and ignored: bqstore has no hidden datasets."},
			{"filter", "string", "Only datasets whose labels match: labels.<name>[:<value>] terms, space-separated, all of which must match."},
			pMaxResults, pPageToken,
		},
		response: tDatasetList, serve: (*Handler).listDatasets,
		desc: "Lists the datasets of a project, by dataset id."},
	{id: "datasets.insert", method: "POST", path: "projects/{projectId}/datasets",
		query:   []param{pAccessPolicyVersion},
		request: tDataset, response: tDataset, serve: (*Handler).insertDataset,
		desc: "Creates a new empty dataset."},
	{id: "datasets.get", method: "GET", path: "projects/{projectId}/datasets/{datasetId}",
		query: []param{pAccessPolicyVersion,
			{"datasetView", "string", "Accepted and ignored: the whole dataset is returned."}},
		response: tDataset, serve: (*Handler).getDataset,
		desc: "Returns the dataset."},
	{id: "datasets.patch", method: "PATCH", path: "projects/{projectId}/datasets/{datasetId}",
		query:   []param{pAccessPolicyVersion, {"updateMode", "string", "Accepted and ignored: every member sent is updated."}},
		request: tDataset, response: tDataset, serve: (*Handler).updateDataset,
		desc: "Updates the members of the dataset that the request sends (description, friendlyName, labels, defaultTableExpirationMs); honours If-Match."},
	{id: "datasets.update", method: "PUT", path: "projects/{projectId}/datasets/{datasetId}",
		query:   []param{pAccessPolicyVersion, {"updateMode", "string", "Accepted and ignored: the whole resource is replaced."}},
		request: tDataset, response: tDataset, serve: (*Handler).updateDataset,
		desc: "Replaces the dataset's mutable members; absent ones are cleared. Honours If-Match."},
	{id: "datasets.delete", method: "DELETE", path: "projects/{projectId}/datasets/{datasetId}",
		query: []param{{"deleteContents", "boolean", "Delete the dataset's tables too; without it a dataset with tables is not deleted."}},
		serve: (*Handler).deleteDataset,
		desc:  "Deletes the dataset."},

	{id: "tables.list", method: "GET", path: "projects/{projectId}/datasets/{datasetId}/tables",
		query:    []param{pMaxResults, pPageToken},
		response: tTableList, serve: (*Handler).listTables,
		desc: "Lists the tables of a dataset, by table id."},
	{id: "tables.insert", method: "POST", path: "projects/{projectId}/datasets/{datasetId}/tables",
		request: tTable, response: tTable, serve: (*Handler).insertTable,
		desc: "Creates a new empty table (type TABLE only)."},
	{id: "tables.get", method: "GET", path: "projects/{projectId}/datasets/{datasetId}/tables/{tableId}",
		query: []param{
			{"selectedFields", "string", "Comma-separated list of fields (a.b for a nested one): the schema returned has only those."},
			{"view", "string", "Accepted and ignored: the whole table resource is returned."},
		},
		response: tTable, serve: (*Handler).getTable,
		desc: "Returns the table."},
	{id: "tables.patch", method: "PATCH", path: "projects/{projectId}/datasets/{datasetId}/tables/{tableId}",
		query:   []param{{"autodetect_schema", "boolean", "Accepted and ignored: bqstore has no external tables."}},
		request: tTable, response: tTable, serve: (*Handler).updateTable,
		desc: "Updates the members of the table that the request sends; the schema may only gain NULLABLE or REPEATED columns and relax REQUIRED ones. Honours If-Match."},
	{id: "tables.update", method: "PUT", path: "projects/{projectId}/datasets/{datasetId}/tables/{tableId}",
		query:   []param{{"autodetect_schema", "boolean", "Accepted and ignored: bqstore has no external tables."}},
		request: tTable, response: tTable, serve: (*Handler).updateTable,
		desc: "Replaces the table's mutable members; absent ones are cleared (an absent schema is kept). Honours If-Match."},
	{id: "tables.delete", method: "DELETE", path: "projects/{projectId}/datasets/{datasetId}/tables/{tableId}",
		serve: (*Handler).deleteTable,
		desc:  "Deletes the table and its data."},

	{id: "tabledata.list", method: "GET", path: "projects/{projectId}/datasets/{datasetId}/tables/{tableId}/data",
		query: []param{
			{"formatOptions.useInt64Timestamp", "boolean", "TIMESTAMP cells as int64 microseconds since the epoch (strings) instead of float seconds."},
			pMaxResults, pPageToken,
			{"selectedFields", "string", "Comma-separated list of the fields to return (a.b for a nested field)."},
			{"startIndex", "string", "Zero-based index of the first row to return."},
		},
		response: tTableDataDoc, needsDB: true, serve: (*Handler).listTableData,
		desc: "Lists the table's rows from one snapshot: the page token keeps later pages on the first page's snapshot."},
	{id: "tabledata.insertAll", method: "POST", path: "projects/{projectId}/datasets/{datasetId}/tables/{tableId}/insertAll",
		request: tInsertAll, response: tInsertAllResponse, needsDB: true, serve: (*Handler).insertAllRows,
		desc: "Streams rows into the table (the legacy streaming API): they are appended to its _default stream and visible when the call returns. insertId de-duplicates retries for a minute, best effort; templateSuffix writes to tableId+suffix, created from the table's schema."},

	{id: "jobs.insert", method: "POST", path: "projects/{projectId}/jobs", upload: true,
		request: tJob, response: tJob, serve: (*Handler).insertJob,
		desc: "Starts a query job (GoogleSQL) and runs it to the end before answering: the job is DONE, with its errorResult if it failed. Load, copy and extract jobs, destinationTable, query parameters and dry runs answer \"not supported yet\"."},
	{id: "jobs.list", method: "GET", path: "projects/{projectId}/jobs",
		query: []param{
			{"allUsers", "boolean", "Accepted and ignored: bqstore lists every job of the project."},
			{"maxCreationTime", "string", "Only jobs created at or before this time, in milliseconds since the epoch."},
			pMaxResults,
			{"minCreationTime", "string", "Only jobs created at or after this time, in milliseconds since the epoch."},
			pPageToken,
			{"parentJobId", "string", "Accepted and ignored: bqstore has no child jobs."},
			{"projection", "string", "Accepted and ignored: the full job is listed."},
			{"stateFilter", "string", "Only jobs in these states (DONE, PENDING, RUNNING)."},
		},
		response: tJobList, serve: (*Handler).listJobs,
		desc: "Lists the project's jobs kept by this server (24 hours, at most 1000, in memory), newest first."},
	{id: "jobs.get", method: "GET", path: "projects/{projectId}/jobs/{jobId}",
		query:    []param{pJobLocation},
		response: tJob, serve: (*Handler).getJob,
		desc: "Returns the job."},
	{id: "jobs.cancel", method: "POST", path: "projects/{projectId}/jobs/{jobId}/cancel",
		query:    []param{pJobLocation},
		response: tJobCancelResp, serve: (*Handler).cancelJob,
		desc: "Returns the job: bqstore's jobs are DONE when created, so there is nothing to cancel."},
	{id: "jobs.delete", method: "DELETE", path: "projects/{projectId}/jobs/{jobId}/delete",
		query: []param{pJobLocation},
		serve: (*Handler).deleteJob,
		desc:  "Forgets the job and its results."},
	{id: "jobs.query", method: "POST", path: "projects/{projectId}/queries",
		request: tQueryRequest, response: tQueryResults, serve: (*Handler).query,
		desc: "Runs a GoogleSQL query to the end and returns its first page of rows (up to maxResults)."},
	{id: "jobs.getQueryResults", method: "GET", path: "projects/{projectId}/queries/{jobId}",
		query: []param{
			{"formatOptions.useInt64Timestamp", "boolean", "TIMESTAMP cells as int64 microseconds since the epoch (strings) instead of float seconds."},
			pJobLocation, pMaxResults, pPageToken,
			{"startIndex", "string", "Zero-based index of the first row to return."},
			{"timeoutMs", "integer", "Accepted: queries are complete when their job exists."},
		},
		response: tQueryResults, serve: (*Handler).getQueryResults,
		desc: "Returns a page of a query job's rows; a failed query answers its error."},
}

// register adds the routes to h's mux, under every prefix, and for each
// path a fallback that answers other HTTP methods with 405 and an Allow
// header.
func (h *Handler) register() {
	allow := map[string][]string{}
	var paths []string
	all := make([]*route, 0, len(routes)+len(stubs))
	for i := range routes {
		all = append(all, &routes[i])
	}
	for i := range stubs {
		all = append(all, &stubs[i])
	}
	for _, rt := range all {
		if rt.needsDB && h.opts.DB == nil {
			continue
		}
		h.served = append(h.served, rt)
		if rt.stub {
			continue // answered by serveNotServed
		}
		for _, p := range prefixes {
			h.mux.HandleFunc(rt.method+" "+p+"/"+rt.path, func(w http.ResponseWriter, r *http.Request) { rt.serve(h, w, r) })
		}
		if _, ok := allow[rt.path]; !ok {
			paths = append(paths, rt.path)
		}
		allow[rt.path] = append(allow[rt.path], rt.method)
	}
	for _, path := range paths {
		methods := allow[path]
		slices.Sort(methods)
		if slices.Contains(methods, "GET") {
			methods = append(methods, "HEAD") // the mux serves HEAD with GET's handler
		}
		a := strings.Join(methods, ", ")
		for _, p := range prefixes {
			h.mux.HandleFunc(p+"/"+path, func(w http.ResponseWriter, r *http.Request) {
				// A bad name is reported as such whatever the method.
				if err := checkPathNames(r); err != nil {
					h.writeError(w, r, err)
					return
				}
				h.methodNotAllowed(w, r, a)
			})
		}
	}
}

// checkPathNames validates the project, dataset and table ids in r's path
// (those it has).
func checkPathNames(r *http.Request) error {
	p, d, t := r.PathValue("projectId"), r.PathValue("datasetId"), r.PathValue("tableId")
	switch {
	case t != "":
		return checkRef(p, d, &t)
	case d != "":
		return checkRef(p, d, nil)
	case p != "":
		return checkProject(p)
	}
	return nil
}

// pathParamNames returns the names of the path parameters of a route path, in
// order.
func pathParamNames(path string) []string {
	var out []string
	for _, seg := range strings.Split(path, "/") {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			out = append(out, seg[1:len(seg)-1])
		}
	}
	return out
}

func (rt *route) String() string { return fmt.Sprintf("%s %s (%s)", rt.method, rt.path, rt.id) }
