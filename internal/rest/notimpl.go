package rest

import (
	"net/http"
	"reflect"
	"strings"
)

// notServed lists the BigQuery v2 REST methods bqstore does not serve (yet),
// from BigQuery's discovery document: a request for one is a 501
// notImplemented naming the method, not a 404 that reads like a missing
// resource. Paths are relative to the API root (/bigquery/v2 or none); "*"
// is one path segment; "*:verb" is a segment ending in ":verb". A route
// in the routes table (routes.go) takes precedence, so a method leaves this list by
// being served. docs/compatibility.md lists the same methods.
var notServed = []struct{ method, path, name string }{
	{"POST", "/projects/*/datasets/*:undelete", "datasets.undelete"},
	{"POST", "/projects/*/datasets/*/tables/*:getIamPolicy", "tables.getIamPolicy"},
	{"POST", "/projects/*/datasets/*/tables/*:setIamPolicy", "tables.setIamPolicy"},
	{"POST", "/projects/*/datasets/*/tables/*:testIamPermissions", "tables.testIamPermissions"},
	{"GET", "/projects/*/serviceAccount", "projects.getServiceAccount"},
	{"GET", "/projects/*/datasets/*/models", "models.list"},
	{"GET", "/projects/*/datasets/*/models/*", "models.get"},
	{"PATCH", "/projects/*/datasets/*/models/*", "models.patch"},
	{"DELETE", "/projects/*/datasets/*/models/*", "models.delete"},
	{"GET", "/projects/*/datasets/*/routines", "routines.list"},
	{"POST", "/projects/*/datasets/*/routines", "routines.insert"},
	{"GET", "/projects/*/datasets/*/routines/*", "routines.get"},
	{"PUT", "/projects/*/datasets/*/routines/*", "routines.update"},
	{"DELETE", "/projects/*/datasets/*/routines/*", "routines.delete"},
	{"POST", "/projects/*/datasets/*/routines/*:getIamPolicy", "routines.getIamPolicy"},
	{"POST", "/projects/*/datasets/*/routines/*:setIamPolicy", "routines.setIamPolicy"},
	{"GET", "/projects/*/datasets/*/tables/*/rowAccessPolicies", "rowAccessPolicies.list"},
	{"POST", "/projects/*/datasets/*/tables/*/rowAccessPolicies", "rowAccessPolicies.insert"},
	{"POST", "/projects/*/datasets/*/tables/*/rowAccessPolicies:batchDelete", "rowAccessPolicies.batchDelete"},
	{"GET", "/projects/*/datasets/*/tables/*/rowAccessPolicies/*", "rowAccessPolicies.get"},
	{"PUT", "/projects/*/datasets/*/tables/*/rowAccessPolicies/*", "rowAccessPolicies.update"},
	{"DELETE", "/projects/*/datasets/*/tables/*/rowAccessPolicies/*", "rowAccessPolicies.delete"},
	{"POST", "/projects/*/datasets/*/tables/*/rowAccessPolicies/*:getIamPolicy", "rowAccessPolicies.getIamPolicy"},
	{"POST", "/projects/*/datasets/*/tables/*/rowAccessPolicies/*:testIamPermissions", "rowAccessPolicies.testIamPermissions"},
}

// stubs describe, for the discovery document only, the methods of
// notServed that bq calls for its everyday verbs (query, load, cp,
// extract, ls -j, show -j, wait, cancel, rm -j). A discovery client fails
// on a method its document lacks before sending anything (bq then prints
// its "You have encountered a bug in the BigQuery CLI" report); described,
// the call reaches bqstore, which answers 501 notImplemented naming the
// method, and bq prints that. Each stub must match its notServed entry
// (a test checks it); a method leaves both lists by joining routes. The
// jobs methods did; the list is empty until a new everyday verb of bq
// needs a stub.
var stubs = []route{}

var (
	// tNotServed is the request body of a stub: anything.
	tNotServed = reflect.TypeFor[notServedBody]()
)

// notServedBody is the request schema of a stub.
type notServedBody struct{}

// uploadPrefix is the root of media uploads; jobs.insert (bq load of a
// local file) is the only BigQuery method served there.
const uploadPrefix = "/upload/bigquery/v2"

// notServedMethod returns the BigQuery method r asks for if bqstore does
// not serve it, or ""; verb reports a method with a ":verb" suffix.
func notServedMethod(r *http.Request) (name string, verb bool) {
	path := r.URL.EscapedPath()
	if rest, ok := strings.CutPrefix(path, uploadPrefix); ok {
		if r.Method == http.MethodPost && matchPath("/projects/*/jobs", rest) {
			// bq prints the message alone: say what the upload was for.
			return "load jobs (jobs.insert with a media upload: bq load of a local file)", false
		}
		return "", false
	}
	if rest, ok := strings.CutPrefix(path, "/bigquery/v2"); ok && (rest == "" || rest[0] == '/') {
		path = rest
	}
	for _, m := range notServed {
		if m.method == r.Method && matchPath(m.path, path) {
			return m.name, strings.Contains(m.path, ":")
		}
	}
	return "", false
}

func matchPath(pattern, path string) bool {
	ps, xs := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(ps) != len(xs) {
		return false
	}
	for i, p := range ps {
		x := xs[i]
		switch {
		case p == "*":
			if x == "" || strings.Contains(x, ":") {
				return false
			}
		case strings.HasPrefix(p, "*:"):
			id, ok := strings.CutSuffix(x, p[1:])
			if !ok || id == "" {
				return false
			}
		case p != x:
			return false
		}
	}
	return true
}

// notImplemented is the answer to a BigQuery method bqstore does not serve.
func notImplemented(name string) *Error {
	return &Error{Code: http.StatusNotImplemented, Reason: "notImplemented", Status: "UNIMPLEMENTED",
		Msg: "bqstore does not implement " + name + " yet"}
}

// serveNotServed answers r with 501 if it asks for a BigQuery method that
// no route serves, and reports whether it did. A method with a ":verb"
// suffix would otherwise reach the resource's route with the verb in the
// last path parameter.
func (h *Handler) serveNotServed(w http.ResponseWriter, r *http.Request) bool {
	name, verb := notServedMethod(r)
	if name == "" {
		return false
	}
	if _, pattern := h.mux.Handler(r); pattern != "/" && !verb {
		return false // served by a route of the routes table
	}
	h.writeError(w, r, notImplemented(name))
	return true
}
