// Package rest serves the subset of BigQuery's REST v2 API that the official
// clients and bq use to manage datasets and tables (datasets and tables
// insert, get, list, patch, update, delete; projects.list) and to read
// and stream rows (tabledata.list, tabledata.insertAll: insertall.go), over
// the catalog and the engine, and a discovery document describing them
// (discovery.go). It only translates: names, rules and durability are the
// catalog's and the engine's. The methods are the routes
// table in routes.go, the one place a method is registered.
//
// Every route is served under /bigquery/v2/projects/... and /projects/...
// (the Go client with a custom endpoint calls the second, the Node client
// the first). Errors use the JSON shape of Google's APIs, with BigQuery's
// reasons: notFound 404, duplicate 409, invalid 400, badRequest 400,
// resourceInUse 400 (a dataset with tables, deleted without
// deleteContents), conditionNotMet 412 (stale If-Match), 413 for a body
// over MaxBodyBytes, and notImplemented 501 for a BigQuery v2 method
// bqstore does not serve (notimpl.go); a path that is no BigQuery method is
// a 404.
//
// Request bodies are checked against BigQuery's resource definitions (the
// generated google.golang.org/api/bigquery/v2 types): malformed JSON, a
// member name BigQuery does not know, or a member of the wrong JSON type is
// a 400 with reason badRequest and an "Invalid JSON payload received."
// message naming the snake_case field path, as Google's JSON frontend
// answers. Request parameters repeated at the top of a body (projectId,
// datasetId, tableId, as the Node.js client sends) are the parameters
// themselves: accepted when equal to the path, a 400 otherwise.
// timePartitioning, rangePartitioning and clustering are stored and echoed
// as sent (echo.go), though bqstore neither partitions nor clusters; other
// known members that bqstore does not implement (encryption, policy tags,
// collation, ...) are accepted and ignored; members that would make the
// table a view, a materialized view, an external, BigLake, clone or
// snapshot table are refused (400 invalid).
package rest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/jobs"
	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/storage"
)

// Options configures New.
type Options struct {
	// Stats returns a table's row count and size in bytes, by the
	// table's internal id (catalog.Table.ID); ok false means they are
	// unknown (a quarantined table) and are left out of the table
	// resource. Nil means 0 and 0.
	Stats func(tableID string) (numRows, numBytes int64, ok bool)
	// DB is the engine whose table ids are the catalog's Table.ID. The
	// methods that read or write table data (tabledata.*) are served,
	// and described in the discovery document, only when it is set.
	DB *storage.DB
	// ProjectVisible reports whether projects.list shows project to the
	// caller of r (with --auth-tokens, the projects its token may use).
	// Nil shows every project.
	ProjectVisible func(r *http.Request, project string) bool
	// Logger receives internal errors. Default: discard.
	Logger *slog.Logger
	// InsertIDWindow is how long tabledata.insertAll remembers a row's
	// insertId to drop a repeat (dedup.go). Zero means
	// DefaultInsertIDWindow; negative turns de-duplication off.
	InsertIDWindow time.Duration
	// Clock is the time source of the insertId window. Default: time.Now.
	Clock func() time.Time
	// QueryTimeout is how long jobs.query and getQueryResults wait for a
	// job when the request has no timeoutMs. Zero means 10 s, BigQuery's.
	QueryTimeout time.Duration
	// Jobs runs and keeps the query jobs. Nil: the handler keeps its own,
	// in memory, over DB (closed by Close).
	Jobs *jobs.Store
	// Admit, when set, is asked before the rows of a tabledata.insertAll
	// request are appended (the data directory's disk quota); its error
	// refuses the request, nothing of it stored. It should return an
	// *Error (internal errors are logged and answered 500).
	Admit func() error
}

// Handler is the REST v2 handler. Its methods are the routes table
// (routes.go).
type Handler struct {
	cat    *catalog.Catalog
	opts   Options
	log    *slog.Logger
	mux    *http.ServeMux
	served []*route // the routes registered, in table order

	jobs       *jobs.Store // query jobs and their results
	ownJobs    bool        // jobs was created by New: Close closes it
	insertIDs  *insertIDs  // tabledata.insertAll's insertId window
	converters converters  // tabledata.insertAll's idle row converters

	docOnce sync.Once
	doc     map[string]any // the discovery document, without its URLs
}

// Prefixes under which every route is served.
var prefixes = []string{"", "/bigquery/v2"}

// Default and maximum page sizes of the list methods.
const (
	defaultPageSize = 1000
	maxPageSize     = 10000
)

// New returns the REST v2 handler over cat.
func New(cat *catalog.Catalog, opts Options) *Handler {
	h := &Handler{cat: cat, opts: opts, log: opts.Logger, mux: http.NewServeMux()}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	clock := opts.Clock
	if clock == nil {
		clock = time.Now
	}
	window := opts.InsertIDWindow
	if window == 0 {
		window = DefaultInsertIDWindow
	}
	h.insertIDs = newInsertIDs(window, clock, insertIDMaxBytes)
	h.jobs = opts.Jobs
	if h.jobs == nil {
		h.jobs = jobs.New(cat, jobs.Options{DB: opts.DB, Clock: clock, Logger: h.log})
		h.ownJobs = true
	}
	h.register()
	for _, path := range discoveryPaths {
		h.mux.HandleFunc("GET "+path, h.serveDiscovery)
	}
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		h.writeError(w, r, &Error{Code: http.StatusNotFound, Reason: "notFound", Msg: "Not found: URL " + r.URL.Path})
	})
	return h
}

// Close stops the jobs store the handler created (Options.Jobs nil),
// waiting for its running jobs, which end DONE with an error.
func (h *Handler) Close() error {
	if h.ownJobs {
		return h.jobs.Close()
	}
	return nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.serveNotServed(w, r) {
		return
	}
	h.mux.ServeHTTP(w, r)
}

// WriteError writes err in Google's JSON error shape, for the server's
// middleware (authentication, host checks). Errors that are not *Error or catalog errors are logged and
// sent as internal errors.
func (h *Handler) WriteError(w http.ResponseWriter, r *http.Request, err error) {
	h.writeError(w, r, err)
}

func (h *Handler) methodNotAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	h.writeError(w, r, &Error{Code: http.StatusMethodNotAllowed, Reason: "methodNotAllowed",
		Msg: fmt.Sprintf("Method %s is not allowed for %s", r.Method, r.URL.Path)})
}

// ---- wire types ----

type datasetRef struct {
	ProjectID string `json:"projectId"`
	DatasetID string `json:"datasetId"`
}

type tableRef struct {
	ProjectID string `json:"projectId"`
	DatasetID string `json:"datasetId"`
	TableID   string `json:"tableId"`
}

type datasetJSON struct {
	Kind                     string            `json:"kind"`
	ETag                     string            `json:"etag"`
	ID                       string            `json:"id"`
	SelfLink                 string            `json:"selfLink"`
	DatasetReference         datasetRef        `json:"datasetReference"`
	FriendlyName             string            `json:"friendlyName,omitempty"`
	Description              string            `json:"description,omitempty"`
	Labels                   map[string]string `json:"labels,omitempty"`
	DefaultTableExpirationMs string            `json:"defaultTableExpirationMs,omitempty"`
	CreationTime             string            `json:"creationTime"`
	LastModifiedTime         string            `json:"lastModifiedTime"`
	Location                 string            `json:"location"`
	Type                     string            `json:"type"`
}

type datasetListItem struct {
	Kind             string            `json:"kind"`
	ID               string            `json:"id"`
	DatasetReference datasetRef        `json:"datasetReference"`
	FriendlyName     string            `json:"friendlyName,omitempty"`
	Labels           map[string]string `json:"labels,omitempty"`
	Location         string            `json:"location"`
}

type datasetList struct {
	Kind          string            `json:"kind"`
	Datasets      []datasetListItem `json:"datasets,omitempty"`
	NextPageToken string            `json:"nextPageToken,omitempty"`
}

type tableJSON struct {
	Kind             string            `json:"kind"`
	ETag             string            `json:"etag"`
	ID               string            `json:"id"`
	SelfLink         string            `json:"selfLink"`
	TableReference   tableRef          `json:"tableReference"`
	FriendlyName     string            `json:"friendlyName,omitempty"`
	Description      string            `json:"description,omitempty"`
	Labels           map[string]string `json:"labels,omitempty"`
	Schema           *schema.Schema    `json:"schema,omitempty"`
	NumBytes         string            `json:"numBytes,omitempty"`
	NumLongTermBytes string            `json:"numLongTermBytes"`
	// NumTotalLogicalBytes is numBytes (bq show prints it as Total
	// Logical Bytes); bqstore has no long-term storage.
	NumTotalLogicalBytes string `json:"numTotalLogicalBytes,omitempty"`
	NumRows              string `json:"numRows,omitempty"`
	CreationTime         string `json:"creationTime"`
	ExpirationTime       string `json:"expirationTime,omitempty"`
	LastModifiedTime     string `json:"lastModifiedTime"`
	Type                 string `json:"type"`
	Location             string `json:"location"`
	// Echoed as the client sent them (catalog.Partitioning); the
	// discovery schema is that of the BigQuery type named by the tag.
	TimePartitioning  json.RawMessage `json:"timePartitioning,omitempty" discovery:"TimePartitioning"`
	RangePartitioning json.RawMessage `json:"rangePartitioning,omitempty" discovery:"RangePartitioning"`
	Clustering        json.RawMessage `json:"clustering,omitempty" discovery:"Clustering"`
	TableConstraints  json.RawMessage `json:"tableConstraints,omitempty" discovery:"TableConstraints"`
	View              *viewJSON       `json:"view,omitempty"`
}

// viewJSON is a view's ViewDefinition.
type viewJSON struct {
	Query        string `json:"query"`
	UseLegacySQL bool   `json:"useLegacySql"`
}

// tableKind is a catalog table's REST type: TABLE or VIEW.
func tableKind(t *catalog.Table) string {
	if t.View != nil {
		return "VIEW"
	}
	return "TABLE"
}

type tableListItem struct {
	Kind           string            `json:"kind"`
	ID             string            `json:"id"`
	TableReference tableRef          `json:"tableReference"`
	FriendlyName   string            `json:"friendlyName,omitempty"`
	Labels         map[string]string `json:"labels,omitempty"`
	Type           string            `json:"type"`
	CreationTime   string            `json:"creationTime"`
	ExpirationTime string            `json:"expirationTime,omitempty"`
	// As in tableJSON (bq ls prints them).
	TimePartitioning  json.RawMessage `json:"timePartitioning,omitempty" discovery:"TimePartitioning"`
	RangePartitioning json.RawMessage `json:"rangePartitioning,omitempty" discovery:"RangePartitioning"`
	Clustering        json.RawMessage `json:"clustering,omitempty" discovery:"Clustering"`
}

type tableList struct {
	Kind          string          `json:"kind"`
	Tables        []tableListItem `json:"tables,omitempty"`
	NextPageToken string          `json:"nextPageToken,omitempty"`
	TotalItems    int             `json:"totalItems"`
}

func ms(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return strconv.FormatInt(t.UnixMilli(), 10)
}

func selfLink(r *http.Request, segs ...string) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	var b strings.Builder
	b.WriteString(scheme + "://" + r.Host + "/bigquery/v2")
	for i, s := range segs {
		if i%2 == 0 {
			b.WriteString("/" + s)
		} else {
			b.WriteString("/" + url.PathEscape(s))
		}
	}
	return b.String()
}

func datasetOut(r *http.Request, d *catalog.Dataset) *datasetJSON {
	out := &datasetJSON{
		Kind: "bigquery#dataset", ETag: d.ETag, ID: d.FullID(),
		SelfLink:         selfLink(r, "projects", d.ProjectID, "datasets", d.DatasetID),
		DatasetReference: datasetRef{ProjectID: d.ProjectID, DatasetID: d.DatasetID},
		FriendlyName:     d.FriendlyName, Description: d.Description, Labels: d.Labels,
		CreationTime: ms(d.Created), LastModifiedTime: ms(d.Modified), Location: d.Location, Type: "DEFAULT",
	}
	if d.DefaultTableExpirationMs != 0 {
		out.DefaultTableExpirationMs = strconv.FormatInt(d.DefaultTableExpirationMs, 10)
	}
	return out
}

func (h *Handler) tableOut(r *http.Request, t *catalog.Table) *tableJSON {
	rows, size, known := int64(0), int64(0), true
	if h.opts.Stats != nil {
		rows, size, known = h.opts.Stats(t.ID)
	}
	out := &tableJSON{
		Kind: "bigquery#table", ETag: t.ETag, ID: t.FullID(),
		SelfLink:       selfLink(r, "projects", t.ProjectID, "datasets", t.DatasetID, "tables", t.TableID),
		TableReference: tableRef{ProjectID: t.ProjectID, DatasetID: t.DatasetID, TableID: t.TableID},
		FriendlyName:   t.FriendlyName, Description: t.Description, Labels: t.Labels,
		NumLongTermBytes: "0",
		CreationTime:     ms(t.Created), ExpirationTime: ms(t.Expiration), LastModifiedTime: ms(t.Modified),
		Type: tableKind(t), Location: t.Location,
		TimePartitioning: t.TimePartitioning, RangePartitioning: t.RangePartitioning, Clustering: t.Clustering,
		TableConstraints: t.TableConstraints,
	}
	if t.View != nil {
		out.View = &viewJSON{Query: t.View.Query, UseLegacySQL: t.View.UseLegacySQL}
	}
	if known {
		out.NumRows, out.NumBytes = strconv.FormatInt(rows, 10), strconv.FormatInt(size, 10)
		out.NumTotalLogicalBytes = out.NumBytes
	}
	if s := t.Schema(); len(s.Fields) > 0 {
		out.Schema = s
	}
	return out
}

// ---- paging ----

// page returns the slice of ids (sorted) to return for the request's
// maxResults and pageToken, and the next token. Tokens are the last id of
// the previous page, base64url-encoded, so a page stays correct while the
// list changes.
func page(r *http.Request, n int, id func(i int) string) (start, end int, next string, err error) {
	q := r.URL.Query()
	size := defaultPageSize
	if s := q.Get("maxResults"); s != "" {
		v, perr := strconv.ParseUint(s, 10, 32)
		if perr != nil {
			return 0, 0, "", invalid("Invalid value for maxResults: %q is not a non-negative integer", s)
		}
		if v > 0 {
			size = int(min(v, maxPageSize))
		}
	}
	if tok := q.Get("pageToken"); tok != "" {
		b, derr := base64.RawURLEncoding.DecodeString(tok)
		if derr != nil {
			return 0, 0, "", invalid("Invalid page token %q", tok)
		}
		after := string(b)
		for start < n && id(start) <= after {
			start++
		}
	}
	end = min(start+size, n)
	if end < n {
		next = base64.RawURLEncoding.EncodeToString([]byte(id(end - 1)))
	}
	return start, end, next, nil
}

// ifMatch returns the If-Match etag, unquoted; "" when there is no
// condition (no header, or "*", which matches anything). BigQuery's clients
// send the etag as they received it, unquoted. If-Match compares strongly
// (RFC 9110 13.1.1): a weak tag (W/"...") matches nothing, and neither
// does an empty one (an empty header or ""), so those get unmatchable,
// which no etag equals, and the request fails its precondition (412).
func ifMatch(r *http.Request) string {
	vals, present := r.Header["If-Match"]
	if !present {
		return ""
	}
	v := strings.TrimSpace(strings.Join(vals, ","))
	switch {
	case v == "*":
		return ""
	case v == "" || strings.HasPrefix(v, `W/"`):
		return unmatchable
	case len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"':
		if v = v[1 : len(v)-1]; v == "" {
			return unmatchable
		}
	}
	return v
}

// unmatchable is an If-Match value no etag equals.
const unmatchable = "\x00unmatchable"

func boolParam(r *http.Request, name string) (bool, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return false, nil
	}
	v, err := strconv.ParseBool(s)
	if err != nil {
		return false, invalid("Invalid value for %s: %q is not a boolean", name, s)
	}
	return v, nil
}

// checkProject validates the project in the path; a bad one is a 400
// naming it.
func checkProject(p string) error {
	return catalog.ValidateProjectID(p)
}

// checkRef validates the names in a dataset or table path, so that a bad
// name is a 400 naming the rule rather than a 404.
func checkRef(p, d string, t *string) error {
	if err := catalog.ValidateProjectID(p); err != nil {
		return err
	}
	if err := catalog.ValidateDatasetID(d); err != nil {
		return err
	}
	if t != nil {
		return catalog.ValidateTableID(*t)
	}
	return nil
}

func rawNull(b json.RawMessage) bool { return strings.TrimSpace(string(b)) == "null" }
