package rest

// The jobs API for queries: jobs.query, jobs.insert (query jobs),
// jobs.getQueryResults, jobs.get, jobs.list, jobs.cancel, jobs.delete.
// Jobs run asynchronously in internal/jobs: jobs.query and
// getQueryResults wait for the job up to timeoutMs (default 10 s) and
// answer jobComplete false if it is not done; jobs.insert answers at once.
// Results are read from the job's result table. This file only translates
// between BigQuery's JSON and internal/jobs.

import (
	"cmp"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/jobs"
	"github.com/bqstore/bqstore/internal/rowjson"
	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/sql"
)

// Limits of one page of query results, as for tabledata.list.
const (
	queryMaxPageBytes = tableDataMaxPageBytes
	queryMaxRows      = tableDataMaxRows
)

// defaultLocation is the location jobs report when the request names none.
const defaultLocation = "US"

// defaultTimeout is how long jobs.query and getQueryResults wait for the
// job when the request has no timeoutMs (BigQuery's 10 seconds).
const defaultTimeout = 10 * time.Second

type jobReference struct {
	ProjectID string `json:"projectId"`
	JobID     string `json:"jobId,omitempty"`
	Location  string `json:"location,omitempty"`
}

type formatOptions struct {
	UseInt64Timestamp bool `json:"useInt64Timestamp,omitempty"`
}

// queryRequest is the body of jobs.query: every member the clients send
// is listed (unknown names are refused); those bqstore does not act on are
// accepted and ignored unless the comment says otherwise.
type queryRequest struct {
	Kind                               string            `json:"kind,omitempty"`
	Query                              string            `json:"query"`
	MaxResults                         *int              `json:"maxResults,omitempty"`
	DefaultDataset                     *datasetRef       `json:"defaultDataset,omitempty"`
	TimeoutMs                          *int              `json:"timeoutMs,omitempty"`
	DryRun                             bool              `json:"dryRun,omitempty"` // answered "not supported yet"
	UseQueryCache                      *bool             `json:"useQueryCache,omitempty"`
	UseLegacySQL                       *bool             `json:"useLegacySql,omitempty"` // absent or true: 400
	ParameterMode                      string            `json:"parameterMode,omitempty"`
	QueryParameters                    []any             `json:"queryParameters,omitempty"` // params.go
	Location                           string            `json:"location,omitempty"`
	FormatOptions                      *formatOptions    `json:"formatOptions,omitempty"`
	ConnectionProperties               []any             `json:"connectionProperties,omitempty"` // session_id: "not supported yet"
	Labels                             map[string]string `json:"labels,omitempty"`
	MaximumBytesBilled                 schema.Int64      `json:"maximumBytesBilled,omitempty"`
	RequestID                          string            `json:"requestId,omitempty"`
	CreateSession                      bool              `json:"createSession,omitempty"` // "not supported yet"
	JobCreationMode                    string            `json:"jobCreationMode,omitempty"`
	Reservation                        string            `json:"reservation,omitempty"`
	MaxSlots                           *int              `json:"maxSlots,omitempty"`
	JobTimeoutMs                       schema.Int64      `json:"jobTimeoutMs,omitempty"`
	WriteIncrementalResults            bool              `json:"writeIncrementalResults,omitempty"`
	DestinationEncryptionConfiguration any               `json:"destinationEncryptionConfiguration,omitempty"`
	PreserveNulls                      bool              `json:"preserveNulls,omitempty"`
}

// jobJSON is the Job resource.
type jobJSON struct {
	Kind          string            `json:"kind"`
	ETag          string            `json:"etag,omitempty"`
	ID            string            `json:"id,omitempty"`
	SelfLink      string            `json:"selfLink,omitempty"`
	UserEmail     string            `json:"user_email,omitempty"`
	JobReference  *jobReference     `json:"jobReference,omitempty"`
	Configuration *jobConfiguration `json:"configuration,omitempty"`
	Status        *jobStatus        `json:"status,omitempty"`
	Statistics    *jobStatistics    `json:"statistics,omitempty"`
	// Accepted in a request and ignored.
	PrincipalSubject  string `json:"principal_subject,omitempty"`
	JobCreationReason any    `json:"jobCreationReason,omitempty"`
}

type jobConfiguration struct {
	JobType      string            `json:"jobType,omitempty"`
	Query        *queryConfig      `json:"query,omitempty"`
	Load         any               `json:"load,omitempty"`
	Copy         any               `json:"copy,omitempty"`
	Extract      any               `json:"extract,omitempty"`
	DryRun       bool              `json:"dryRun,omitempty"`
	JobTimeoutMs schema.Int64      `json:"jobTimeoutMs,omitempty"`
	Labels       map[string]string `json:"labels,omitempty"`
	Reservation  string            `json:"reservation,omitempty"`
	MaxSlots     *int              `json:"maxSlots,omitempty"`
}

type queryConfig struct {
	Query                              string          `json:"query"`
	UseLegacySQL                       *bool           `json:"useLegacySql,omitempty"`
	DefaultDataset                     *datasetRef     `json:"defaultDataset,omitempty"`
	DestinationTable                   *tableRef       `json:"destinationTable,omitempty"` // answered "not supported yet"
	CreateDisposition                  string          `json:"createDisposition,omitempty"`
	WriteDisposition                   string          `json:"writeDisposition,omitempty"`
	Priority                           string          `json:"priority,omitempty"`
	AllowLargeResults                  bool            `json:"allowLargeResults,omitempty"`
	FlattenResults                     *bool           `json:"flattenResults,omitempty"`
	UseQueryCache                      *bool           `json:"useQueryCache,omitempty"`
	MaximumBytesBilled                 schema.Int64    `json:"maximumBytesBilled,omitempty"`
	MaximumBillingTier                 *int            `json:"maximumBillingTier,omitempty"`
	ParameterMode                      string          `json:"parameterMode,omitempty"`
	QueryParameters                    []any           `json:"queryParameters,omitempty"`
	SchemaUpdateOptions                []string        `json:"schemaUpdateOptions,omitempty"`
	TimePartitioning                   json.RawMessage `json:"timePartitioning,omitempty" discovery:"TimePartitioning"`
	RangePartitioning                  json.RawMessage `json:"rangePartitioning,omitempty" discovery:"RangePartitioning"`
	Clustering                         json.RawMessage `json:"clustering,omitempty" discovery:"Clustering"`
	DestinationEncryptionConfiguration any             `json:"destinationEncryptionConfiguration,omitempty"` // refused: no customer-managed keys
	UserDefinedFunctionResources       []any           `json:"userDefinedFunctionResources,omitempty"`
	TableDefinitions                   map[string]any  `json:"tableDefinitions,omitempty"`
	ConnectionProperties               []any           `json:"connectionProperties,omitempty"`
	CreateSession                      bool            `json:"createSession,omitempty"`
	Continuous                         bool            `json:"continuous,omitempty"`
	ScriptOptions                      *scriptOptions  `json:"scriptOptions,omitempty"`
	PreserveNulls                      bool            `json:"preserveNulls,omitempty"`
	WriteIncrementalResults            bool            `json:"writeIncrementalResults,omitempty"`
}

// scriptOptions is ScriptOptions: keyResultStatement chooses a script's
// result statement; the statement limits are accepted and ignored.
type scriptOptions struct {
	StatementTimeoutMs  schema.Int64 `json:"statementTimeoutMs,omitempty"`
	StatementByteBudget schema.Int64 `json:"statementByteBudget,omitempty"`
	KeyResultStatement  string       `json:"keyResultStatement,omitempty"`
}

// jobError is BigQuery's ErrorProto in a job status (members omitted when empty).
type jobError struct {
	Reason    string `json:"reason,omitempty"`
	Location  string `json:"location,omitempty"`
	DebugInfo string `json:"debugInfo,omitempty"`
	Message   string `json:"message,omitempty"`
}

type jobStatus struct {
	State       string     `json:"state"`
	ErrorResult *jobError  `json:"errorResult,omitempty"`
	Errors      []jobError `json:"errors,omitempty"`
}

type jobStatistics struct {
	CreationTime        schema.Int64 `json:"creationTime,omitempty"`
	StartTime           schema.Int64 `json:"startTime,omitempty"`
	EndTime             schema.Int64 `json:"endTime,omitempty"`
	TotalBytesProcessed schema.Int64 `json:"totalBytesProcessed"`
	NumChildJobs        schema.Int64 `json:"numChildJobs,omitempty"`
	// ParentJobID and ScriptStatistics: a script's child job.
	ParentJobID      string            `json:"parentJobId,omitempty"`
	ScriptStatistics *scriptStatistics `json:"scriptStatistics,omitempty"`
	Query            *queryStatistics  `json:"query,omitempty"`
}

// scriptStatistics is ScriptStatistics: a child job of a script runs a
// statement (bqstore has no procedural language: no EXPRESSION
// evaluations, no procedures).
type scriptStatistics struct {
	EvaluationKind string             `json:"evaluationKind"`
	StackFrames    []scriptStackFrame `json:"stackFrames"`
}

type scriptStackFrame struct {
	StartLine   int    `json:"startLine"`
	StartColumn int    `json:"startColumn"`
	EndLine     int    `json:"endLine"`
	EndColumn   int    `json:"endColumn"`
	ProcedureID string `json:"procedureId,omitempty"`
	Text        string `json:"text"`
}

type queryStatistics struct {
	TotalBytesProcessed schema.Int64   `json:"totalBytesProcessed"`
	TotalBytesBilled    schema.Int64   `json:"totalBytesBilled"`
	CacheHit            bool           `json:"cacheHit"`
	StatementType       string         `json:"statementType,omitempty"`
	ReferencedTables    []tableRef     `json:"referencedTables,omitempty"`
	Schema              *schema.Schema `json:"schema,omitempty"`
	// DDL and DML statements (jobs.Stats).
	DDLOperationPerformed string        `json:"ddlOperationPerformed,omitempty"`
	DDLTargetTable        *tableRef     `json:"ddlTargetTable,omitempty"`
	DDLTargetDataset      *datasetRef   `json:"ddlTargetDataset,omitempty"`
	NumDMLAffectedRows    *schema.Int64 `json:"numDmlAffectedRows,omitempty"`
	DMLStats              *dmlStats     `json:"dmlStats,omitempty"`
}

// dmlStats is DmlStatistics: bqstore's DML inserts only.
type dmlStats struct {
	InsertedRowCount schema.Int64 `json:"insertedRowCount"`
	DeletedRowCount  schema.Int64 `json:"deletedRowCount"`
	UpdatedRowCount  schema.Int64 `json:"updatedRowCount"`
}

// queryResultsDoc is the shape of the jobs.query and jobs.getQueryResults
// responses (queryResults writes them), for the discovery document.
type queryResultsDoc struct {
	Kind         string         `json:"kind"`
	ETag         string         `json:"etag,omitempty"`
	Schema       *schema.Schema `json:"schema,omitempty"`
	JobReference *jobReference  `json:"jobReference"`
	TotalRows    schema.Int64   `json:"totalRows"`
	PageToken    string         `json:"pageToken,omitempty"`
	Rows         []struct {
		F []struct {
			V any `json:"v"`
		} `json:"f"`
	} `json:"rows,omitempty"`
	TotalBytesProcessed schema.Int64  `json:"totalBytesProcessed"`
	JobComplete         bool          `json:"jobComplete"`
	CacheHit            bool          `json:"cacheHit"`
	Errors              []jobError    `json:"errors,omitempty"`
	NumDMLAffectedRows  *schema.Int64 `json:"numDmlAffectedRows,omitempty"`
	DMLStats            *dmlStats     `json:"dmlStats,omitempty"`
}

type jobList struct {
	Kind          string        `json:"kind"`
	ETag          string        `json:"etag,omitempty"`
	NextPageToken string        `json:"nextPageToken,omitempty"`
	Jobs          []jobListItem `json:"jobs"`
}

type jobListItem struct {
	ID            string            `json:"id"`
	Kind          string            `json:"kind"`
	JobReference  *jobReference     `json:"jobReference"`
	State         string            `json:"state"`
	ErrorResult   *jobError         `json:"errorResult,omitempty"`
	Statistics    *jobStatistics    `json:"statistics,omitempty"`
	Configuration *jobConfiguration `json:"configuration,omitempty"`
	Status        *jobStatus        `json:"status,omitempty"`
	UserEmail     string            `json:"user_email,omitempty"`
}

type jobCancelResponse struct {
	Kind string   `json:"kind"`
	Job  *jobJSON `json:"job"`
}

var (
	tQueryRequest  = reflect.TypeFor[queryRequest]()
	tQueryResults  = reflect.TypeFor[queryResultsDoc]()
	tJob           = reflect.TypeFor[jobJSON]()
	tJobList       = reflect.TypeFor[jobList]()
	tJobCancelResp = reflect.TypeFor[jobCancelResponse]()
)

// legacySQL is the answer to a query that asks for legacy SQL (or does not
// say: BigQuery's REST default is legacy SQL).
func legacySQL() *Error {
	return invalid("bqstore runs GoogleSQL only, not legacy SQL: send useLegacySql: false (bq query --use_legacy_sql=false; the Go and Node.js clients send it by default)")
}

// newJobID returns a job id as BigQuery generates them: "job_" and 28
// URL-safe characters.
func newJobID() string {
	b := make([]byte, 21)
	_, _ = rand.Read(b)
	return "job_" + base64.RawURLEncoding.EncodeToString(b)
}

func validJobID(id string) bool {
	if id == "" || len(id) > 1024 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// queryError is the wire form of a failed query: invalidQuery for an
// error in the query text (with its position), notFound for a missing
// table.
func queryError(err error) *Error {
	var fe *filter.Error
	var te *jobs.TableError
	var be *jobs.BytesBilledError
	var se *jobs.StoppedError
	var bk *jobs.BackendError
	var de *jobs.DestinationError
	var re *sql.ResourcesError
	var ce *jobs.ConcurrentUpdateError
	switch {
	case errors.As(err, &ce):
		// As BigQuery answers a write conflicting with another.
		return &Error{Code: http.StatusBadRequest, Reason: "invalidQuery", Msg: ce.Msg, Location: "q", LocationType: "parameter"}
	case errors.As(err, &re):
		// BigQuery's error table: resourcesExceeded is HTTP 400.
		return &Error{Code: http.StatusBadRequest, Reason: "resourcesExceeded", Msg: re.Error()}
	case errors.As(err, &be):
		return &Error{Code: http.StatusBadRequest, Reason: "bytesBilledLimitExceeded", Msg: be.Error()}
	case errors.As(err, &se):
		// BigQuery's error table gives "stopped" HTTP 200 (it is a job
		// status); as the error of getQueryResults it is a 400 here, one
		// the clients do not retry.
		if se.Timeout {
			return &Error{Code: http.StatusBadRequest, Reason: "timeout", Msg: se.Msg}
		}
		return &Error{Code: http.StatusBadRequest, Reason: "stopped", Msg: se.Msg}
	case errors.As(err, &bk):
		return &Error{Code: http.StatusBadRequest, Reason: "jobInternalError", Msg: bk.Msg}
	case errors.As(err, &de) && de.Reason == "notFound":
		return &Error{Code: http.StatusNotFound, Reason: "notFound", Msg: de.Msg}
	case errors.As(err, &de) && de.Reason == "duplicate":
		return &Error{Code: http.StatusConflict, Reason: "duplicate", Msg: de.Msg}
	case errors.As(err, &de):
		return &Error{Code: http.StatusBadRequest, Reason: "invalid", Msg: de.Msg}
	case errors.As(err, &fe):
		return &Error{Code: http.StatusBadRequest, Reason: "invalidQuery", Msg: fe.Error(), Location: "q", LocationType: "parameter"}
	case errors.As(err, &te) && te.NotFound:
		return &Error{Code: http.StatusNotFound, Reason: "notFound", Msg: te.Msg}
	case errors.As(err, &te):
		return &Error{Code: http.StatusBadRequest, Reason: "invalid", Msg: te.Msg}
	}
	e, _ := fromErr(err)
	return e
}

// failedJobError is the wire form of a DONE job's error, as its
// status.errorResult and as the answer of getQueryResults (and of jobs.query
// once the job is done). The job is over: a retry of the call cannot change
// its outcome, so an error of the server (a crash or a shutdown while the
// job ran, a storage error) is BigQuery's 400 jobInternalError, never a 5xx
// or backendError, which the clients retry (the Go client until its
// context ends) rather than report.
func failedJobError(err error) *Error {
	e := queryError(err)
	if e.Code >= 500 || e.Reason == "backendError" || e.Reason == "internalError" {
		return &Error{Code: http.StatusBadRequest, Reason: "jobInternalError", Msg: e.Msg}
	}
	return e
}

// jobErrorOf is a failed job's status.errorResult.
func jobErrorOf(err error) *jobError {
	e := failedJobError(err)
	ep := &jobError{Reason: e.Reason, Message: e.Msg}
	if e.Reason == "invalidQuery" {
		ep.Location = "query"
	}
	return ep
}

// queryOptions is a query configuration as the two request shapes
// (jobs.query, jobs.insert) carry it.
type queryOptions struct {
	legacy    *bool
	dryRun    bool
	mode      string // parameterMode
	params    []any
	def       *datasetRef
	sql       string
	maxBilled int64
	dest      *tableRef
	create    string
	write     string
	timeoutMs int64 // jobTimeoutMs
	priority  string
	labels    map[string]string
	// part is the destination's timePartitioning, rangePartitioning and
	// clustering as sent (jobs.insert only); encryption whether it has a
	// destinationEncryptionConfiguration.
	part       [3]json.RawMessage
	encryption bool
	keyResult  string // scriptOptions.keyResultStatement
	// session is set when the request asks for a session (createSession)
	// or names one (the session_id connection property).
	session bool
	updates []string // schemaUpdateOptions
}

// startQuery checks a query configuration and starts it as job
// project/id; a dry run is checked and answered at once, not stored.
func (h *Handler) startQuery(r *http.Request, project, id, location string, o queryOptions) (jobs.Job, error) {
	if o.legacy == nil || *o.legacy {
		return jobs.Job{}, legacySQL()
	}
	qp, perr := queryParams(o.mode, o.params)
	if perr != nil {
		return jobs.Job{}, perr
	}
	if strings.TrimSpace(o.sql) == "" {
		return jobs.Job{}, invalid("Required parameter is missing: query")
	}
	if o.session {
		// Refused rather than run outside any session: a client that
		// created one reads its id from statistics.sessionInfo.
		return jobs.Job{}, notImplementedYet("sessions (createSession, the session_id connection property)")
	}
	switch o.keyResult {
	case "", "KEY_RESULT_STATEMENT_KIND_UNSPECIFIED":
		o.keyResult = ""
	case jobs.KeyResultLast, jobs.KeyResultFirstSelect:
	default:
		return jobs.Job{}, invalid("Invalid value for scriptOptions.keyResultStatement: %q: LAST or FIRST_SELECT", o.keyResult)
	}
	if o.maxBilled < 0 {
		return jobs.Job{}, invalid("Invalid value for maximumBytesBilled: %d", o.maxBilled)
	}
	if o.timeoutMs < 0 {
		return jobs.Job{}, invalid("Invalid value for jobTimeoutMs: %d", o.timeoutMs)
	}
	switch o.priority {
	case "", "INTERACTIVE", "BATCH":
	default:
		return jobs.Job{}, invalid("Invalid value for priority: %q: INTERACTIVE or BATCH", o.priority)
	}
	// A BATCH job runs at once, as an INTERACTIVE one: there is no
	// queue of idle slots to wait for here.
	q := jobs.Query{SQL: o.sql, MaxBytesBilled: o.maxBilled, Params: qp, ParameterMode: o.mode, TimeoutMs: o.timeoutMs,
		Priority: o.priority, Labels: o.labels, KeyResult: o.keyResult}
	if len(o.params) > 0 {
		q.Parameters, _ = json.Marshal(o.params) // decoded from JSON: it encodes
	}
	if o.def != nil {
		q.DefaultProject, q.DefaultDataset = o.def.ProjectID, o.def.DatasetID
	}
	if !jobs.ValidDisposition(o.create, true) {
		return jobs.Job{}, invalid("Invalid value for createDisposition: %q", o.create)
	}
	if !jobs.ValidDisposition(o.write, false) {
		return jobs.Job{}, invalid("Invalid value for writeDisposition: %q", o.write)
	}
	if d := o.dest; d != nil {
		if d.DatasetID == "" || d.TableID == "" {
			return jobs.Job{}, invalid("Required parameter is missing: destinationTable.datasetId and tableId")
		}
		q.Destination = &jobs.TableRef{Project: cmp.Or(d.ProjectID, project), Dataset: d.DatasetID, Table: d.TableID}
		q.CreateDisposition, q.WriteDisposition = o.create, o.write
	}
	if len(o.updates) > 0 {
		for _, u := range o.updates {
			if !jobs.ValidSchemaUpdateOption(u) {
				return jobs.Job{}, invalid("Invalid value for schemaUpdateOptions: %q: ALLOW_FIELD_ADDITION or ALLOW_FIELD_RELAXATION", u)
			}
		}
		// BigQuery's answer; bqstore has no partition decorators, so
		// WRITE_TRUNCATE never qualifies.
		if o.dest == nil || o.write != jobs.WriteAppend {
			return jobs.Job{}, invalid("Schema update options should only be specified with WRITE_APPEND disposition, or with WRITE_TRUNCATE disposition on a table partition.")
		}
		q.SchemaUpdateOptions = o.updates
	}
	if o.encryption {
		// Tables here are not encrypted with a key of the caller's;
		// saying so beats a table that silently is not.
		return jobs.Job{}, invalid("bqstore does not support destinationEncryptionConfiguration: customer-managed encryption keys are not implemented")
	}
	if p, err := destPartitioning(o.part); err != nil {
		return jobs.Job{}, err
	} else if p != nil {
		if o.dest == nil {
			return jobs.Job{}, invalid("timePartitioning, rangePartitioning and clustering require a destinationTable")
		}
		q.Partitioning = p
	}
	if location == "" {
		// BigQuery runs the query where the data it names is.
		location = cmp.Or(h.jobs.Location(r.Context(), project, q), defaultLocation)
	}
	if o.dryRun {
		j, err := h.jobs.DryRun(r.Context(), project, location, q)
		if err != nil {
			return j, queryError(err)
		}
		return j, nil
	}
	j, err := h.jobs.Insert(project, id, location, q)
	if errors.Is(err, jobs.ErrDuplicate) {
		return j, &Error{Code: http.StatusConflict, Reason: "duplicate", Msg: fmt.Sprintf("Already Exists: Job %s:%s.%s", project, location, id)}
	}
	return j, err
}

// keyResultOf is the keyResultStatement of o ("" if none).
func keyResultOf(o *scriptOptions) string {
	if o == nil {
		return ""
	}
	return o.KeyResultStatement
}

// hasSessionID reports whether connectionProperties (ConnectionProperty:
// {key, value}) names a session: the session_id key.
func hasSessionID(props []any) bool {
	for _, p := range props {
		if m, ok := p.(map[string]any); ok && m["key"] == "session_id" {
			return true
		}
	}
	return false
}

// notImplementedYet is a request using a feature bqstore does not serve yet.
func notImplementedYet(feature string) *Error {
	return invalid("not supported yet by bqstore: %s", feature)
}

// query serves jobs.query: the job starts and the answer waits for it up
// to timeoutMs; it holds the first page of the rows if the job is done,
// else jobComplete false and the job's reference (the client polls
// getQueryResults).
func (h *Handler) query(w http.ResponseWriter, r *http.Request) {
	p := r.PathValue("projectId")
	if err := checkProject(p); err != nil {
		h.writeError(w, r, err)
		return
	}
	body, _, err := readBody(w, r, "query request", tQueryRequest, pathParams{project: p})
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	var in queryRequest
	if err := decodeInto("query request", body, &in); err != nil {
		h.writeError(w, r, err)
		return
	}
	timeout := cmp.Or(h.opts.QueryTimeout, defaultTimeout)
	if in.TimeoutMs != nil {
		if *in.TimeoutMs < 0 {
			h.writeError(w, r, invalid("Invalid value for timeoutMs: %d", *in.TimeoutMs))
			return
		}
		timeout = time.Duration(*in.TimeoutMs) * time.Millisecond
	}
	id := newJobID()
	if in.RequestID != "" && !in.DryRun {
		// A retry of a request already served is its job (jobs_requestid.go).
		id = requestJobID(p, in)
		if j, err := h.jobs.Get(p, id); err == nil && h.now().Sub(j.Created) > requestIDLifetime {
			id = newJobID()
		}
	}
	j, err := h.startQuery(r, p, id, in.Location, queryOptions{legacy: in.UseLegacySQL, dryRun: in.DryRun, mode: in.ParameterMode, params: in.QueryParameters,
		def: in.DefaultDataset, sql: in.Query, maxBilled: int64(in.MaximumBytesBilled), timeoutMs: int64(in.JobTimeoutMs), labels: in.Labels,
		session: in.CreateSession || hasSessionID(in.ConnectionProperties)})
	if e, ok := err.(*Error); ok && e.Reason == "duplicate" && in.RequestID != "" {
		j, err = h.jobs.Get(p, id)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if in.DryRun {
		// No job: the schema and the bytes the query would process.
		writeJSON(w, http.StatusOK, &queryResultsWire{Kind: "bigquery#queryResponse", Schema: j.Schema,
			JobReference: &jobReference{ProjectID: p, Location: j.Location}, JobComplete: true,
			TotalBytesProcessed: ptr(schema.Int64(j.BytesProcessed))})
		return
	}
	if j, err = h.jobs.Wait(r.Context(), j.Project, j.ID, timeout); err != nil {
		h.writeError(w, r, err)
		return
	}
	maxRows := int64(queryMaxRows)
	if in.MaxResults != nil && *in.MaxResults > 0 {
		maxRows = min(maxRows, int64(*in.MaxResults))
	}
	int64TS := in.FormatOptions != nil && in.FormatOptions.UseInt64Timestamp
	h.writeResults(w, r, j, "bigquery#queryResponse", 0, maxRows, int64TS)
}

// writeResults answers with rows [start, start+maxRows) of j's result,
// or jobComplete false if j is not done.
func (h *Handler) writeResults(w http.ResponseWriter, r *http.Request, j jobs.Job, kind string, start, maxRows int64, int64TS bool) {
	ref := &jobReference{ProjectID: j.Project, JobID: j.ID, Location: j.Location}
	if j.State != jobs.StateDone {
		writeJSON(w, http.StatusOK, &queryResultsWire{Kind: kind, JobReference: ref, JobComplete: false})
		return
	}
	if j.Err != nil {
		h.writeError(w, r, failedJobError(j.Err))
		return
	}
	if j.Schema == nil {
		// DDL and DML: no rows, no schema.
		out := queryResultsWire{
			Kind: kind, JobReference: ref,
			TotalBytesProcessed: ptr(schema.Int64(j.BytesProcessed)), JobComplete: true, Rows: []byte("[]"),
		}
		if j.Stats.DML {
			n := schema.Int64(j.Stats.AffectedRows)
			out.NumDMLAffectedRows, out.DMLStats = &n, &dmlStats{InsertedRowCount: n}
		}
		writeJSON(w, http.StatusOK, &out)
		return
	}
	res, err := h.jobs.Rows(j)
	if err != nil {
		h.writeError(w, r, queryError(err))
		return
	}
	defer res.Close()
	total := res.Total
	var rows []byte
	pos := min(start, total)
	end := min(total, pos+maxRows)
	f := rowjson.NewFormatter(res.Schema, rowjson.Options{UseInt64Timestamp: int64TS})
	errFull := errors.New("page full")
	err = res.Read(r.Context(), pos, end, func(rec arrow.RecordBatch) error {
		n := int(rec.NumRows())
		for i := 0; i < n; {
			if len(rows) >= queryMaxPageBytes {
				return errFull
			}
			k := pageRunEnd(rec, i, n, len(rows), queryMaxPageBytes)
			if len(rows) > 0 {
				rows = append(rows, ',')
			}
			var err error
			if rows, err = f.AppendRows(rows, rec, i, k); err != nil {
				return err
			}
			pos += int64(k - i)
			i = k
		}
		return nil
	})
	if err != nil && err != errFull {
		h.writeError(w, r, err)
		return
	}
	out := queryResultsWire{
		Kind: kind, Schema: res.Schema,
		JobReference:        ref,
		TotalRows:           ptr(schema.Int64(total)),
		TotalBytesProcessed: ptr(schema.Int64(j.BytesProcessed)),
		JobComplete:         true,
	}
	if pos < total {
		out.PageToken = encodeQueryToken(pos)
	}
	if len(rows) > 0 {
		out.Rows = append(append([]byte{'['}, rows...), ']')
	} else {
		out.Rows = []byte("[]")
	}
	writeJSON(w, http.StatusOK, &out)
}

// queryResultsWire is queryResultsDoc with the rows preformatted.
type queryResultsWire struct {
	Kind                string         `json:"kind"`
	Schema              *schema.Schema `json:"schema,omitempty"`
	JobReference        *jobReference  `json:"jobReference"`
	TotalRows           *schema.Int64  `json:"totalRows,omitempty"` // nil: not done
	PageToken           string         `json:"pageToken,omitempty"`
	Rows                rawJSON        `json:"rows,omitempty"`
	TotalBytesProcessed *schema.Int64  `json:"totalBytesProcessed,omitempty"`
	JobComplete         bool           `json:"jobComplete"`
	CacheHit            bool           `json:"cacheHit"`
	NumDMLAffectedRows  *schema.Int64  `json:"numDmlAffectedRows,omitempty"`
	DMLStats            *dmlStats      `json:"dmlStats,omitempty"`
}

type rawJSON []byte

func (b rawJSON) MarshalJSON() ([]byte, error) { return b, nil }

// Page tokens of query results: base64url("q1:<next row>").
func encodeQueryToken(next int64) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "q1:%d", next))
}

func decodeQueryToken(tok string) (int64, bool) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return 0, false
	}
	s, ok := strings.CutPrefix(string(b), "q1:")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n >= 0
}

// Page tokens of jobs.list: base64url("j1:<creation time, ns>:<job id>")
// of the last job of the page.
func encodeListToken(j jobs.Job) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "j1:%d:%s", j.Created.UnixNano(), j.ID))
}

func decodeListToken(tok string) (jobs.Job, bool) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return jobs.Job{}, false
	}
	s, ok := strings.CutPrefix(string(b), "j1:")
	if !ok {
		return jobs.Job{}, false
	}
	ns, id, ok := strings.Cut(s, ":")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil {
		return jobs.Job{}, false
	}
	return jobs.Job{ID: id, Created: time.Unix(0, n)}, true
}

// jobNotFound is BigQuery's answer for a job it does not have.
func jobNotFound(r *http.Request, p, id string) *Error {
	loc := r.URL.Query().Get("location")
	if loc == "" {
		loc = defaultLocation
	}
	return &Error{Code: http.StatusNotFound, Reason: "notFound", Msg: fmt.Sprintf("Not found: Job %s:%s.%s", p, loc, id)}
}

// jobFromPath returns the job the path names, in the request's location
// if it names one.
func (h *Handler) jobFromPath(r *http.Request) (jobs.Job, error) {
	p, id := r.PathValue("projectId"), r.PathValue("jobId")
	if err := checkProject(p); err != nil {
		return jobs.Job{}, err
	}
	j, err := h.jobs.GetIn(p, r.URL.Query().Get("location"), id)
	if err != nil {
		return j, jobNotFound(r, p, id)
	}
	return j, nil
}

// getQueryResults serves jobs.getQueryResults: it waits for the job up to
// timeoutMs, then answers a page of its rows or jobComplete false.
func (h *Handler) getQueryResults(w http.ResponseWriter, r *http.Request) {
	j, err := h.jobFromPath(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	q := r.URL.Query()
	maxRows := int64(queryMaxRows)
	if s := q.Get("maxResults"); s != "" {
		v, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			h.writeError(w, r, invalid("Invalid value for maxResults: %q is not a non-negative integer", s))
			return
		}
		if v == 0 {
			maxRows = 0 // the clients ask for no rows to wait for completion
		} else {
			maxRows = min(maxRows, int64(v))
		}
	}
	var start int64
	if s := q.Get("startIndex"); s != "" {
		v, err := strconv.ParseUint(s, 10, 63)
		if err != nil {
			h.writeError(w, r, invalid("Invalid value for startIndex: %q is not a non-negative integer", s))
			return
		}
		start = int64(v)
	}
	if tok := q.Get("pageToken"); tok != "" {
		v, ok := decodeQueryToken(tok)
		if !ok {
			h.writeError(w, r, invalid("Invalid page token %q", tok))
			return
		}
		start = v
	}
	timeout := cmp.Or(h.opts.QueryTimeout, defaultTimeout)
	if s := q.Get("timeoutMs"); s != "" {
		v, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			h.writeError(w, r, invalid("Invalid value for timeoutMs: %q is not a non-negative integer", s))
			return
		}
		timeout = time.Duration(v) * time.Millisecond
	}
	int64TS, _ := strconv.ParseBool(q.Get("formatOptions.useInt64Timestamp"))
	if j.State != jobs.StateDone {
		if j, err = h.jobs.Wait(r.Context(), j.Project, j.ID, timeout); err != nil {
			h.writeError(w, r, jobNotFound(r, j.Project, j.ID))
			return
		}
	}
	h.writeResults(w, r, j, "bigquery#getQueryResultsResponse", start, maxRows, int64TS)
}

// insertJob serves jobs.insert for query jobs: the job starts and the
// answer is the job as it is then (PENDING, RUNNING or DONE).
func (h *Handler) insertJob(w http.ResponseWriter, r *http.Request) {
	p := r.PathValue("projectId")
	if err := checkProject(p); err != nil {
		h.writeError(w, r, err)
		return
	}
	body, _, err := readBody(w, r, "job", tJob, pathParams{project: p})
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	var in jobJSON
	if err := decodeInto("job", body, &in); err != nil {
		h.writeError(w, r, err)
		return
	}
	cfg := in.Configuration
	switch {
	case cfg == nil:
		h.writeError(w, r, invalid("Required parameter is missing: job.configuration"))
		return
	case cfg.Load != nil:
		h.writeError(w, r, notImplementedYet("load jobs"))
		return
	case cfg.Copy != nil:
		h.writeError(w, r, notImplementedYet("copy jobs"))
		return
	case cfg.Extract != nil:
		h.writeError(w, r, notImplementedYet("extract jobs"))
		return
	case cfg.Query == nil:
		h.writeError(w, r, invalid("Required parameter is missing: job.configuration.query"))
		return
	}
	qc := cfg.Query
	id, loc := newJobID(), ""
	if ref := in.JobReference; ref != nil {
		if ref.ProjectID != "" && ref.ProjectID != p {
			h.writeError(w, r, invalid("Invalid value for job.jobReference.projectId: %q does not match the project %q in the URL", ref.ProjectID, p))
			return
		}
		if ref.JobID != "" {
			if !validJobID(ref.JobID) {
				h.writeError(w, r, invalid("Invalid job ID \"%s\". Job IDs must be alphanumeric (plus underscores and dashes) and must be at most 1024 characters long.", ref.JobID))
				return
			}
			id = ref.JobID
		}
		loc = ref.Location
	}
	j, err := h.startQuery(r, p, id, loc, queryOptions{legacy: qc.UseLegacySQL, dryRun: cfg.DryRun, mode: qc.ParameterMode, params: qc.QueryParameters,
		def: qc.DefaultDataset, sql: qc.Query, maxBilled: int64(qc.MaximumBytesBilled),
		dest: qc.DestinationTable, create: qc.CreateDisposition, write: qc.WriteDisposition, timeoutMs: int64(cfg.JobTimeoutMs),
		priority: qc.Priority, labels: cfg.Labels, keyResult: keyResultOf(qc.ScriptOptions),
		session: qc.CreateSession || hasSessionID(qc.ConnectionProperties),
		part:    [3]json.RawMessage{qc.TimePartitioning, qc.RangePartitioning, qc.Clustering}, encryption: qc.DestinationEncryptionConfiguration != nil,
		updates: qc.SchemaUpdateOptions})
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	out := jobResource(j)
	if cfg.DryRun {
		// Not stored: no id, no result table, nothing billed.
		out.ID, out.JobReference.JobID = "", ""
		out.Configuration.DryRun = true
		out.Statistics.Query.TotalBytesBilled = 0
	}
	writeJSON(w, http.StatusOK, out)
}

// destPartitioning checks a query configuration's timePartitioning,
// rangePartitioning and clustering (in that order in raw) as
// tables.insert checks a table's; nil when none is set. The job checks
// them against its result's schema (jobs/destination_part.go).
func destPartitioning(raw [3]json.RawMessage) (*catalog.Partitioning, error) {
	var p catalog.Partitioning
	set := false
	for i, m := range [...]struct {
		name string
		dst  *json.RawMessage
	}{
		{"timePartitioning", &p.TimePartitioning},
		{"rangePartitioning", &p.RangePartitioning},
		{"clustering", &p.Clustering},
	} {
		if len(raw[i]) == 0 || rawNull(raw[i]) {
			continue
		}
		v, err := normalizeEcho("job.configuration.query."+m.name, raw[i], echoTypes[strings.ToUpper(m.name[:1])+m.name[1:]])
		if err != nil {
			return nil, err
		}
		*m.dst, set = v, true
	}
	if !set {
		return nil, nil
	}
	return &p, nil
}

// jobResource is the Job resource of j.
func jobResource(j jobs.Job) *jobJSON {
	f := false
	out := &jobJSON{
		Kind:         "bigquery#job",
		ID:           fmt.Sprintf("%s:%s.%s", j.Project, j.Location, j.ID),
		JobReference: &jobReference{ProjectID: j.Project, JobID: j.ID, Location: j.Location},
		Configuration: &jobConfiguration{JobType: "QUERY", Query: &queryConfig{
			Query: j.Query.SQL, UseLegacySQL: &f, Priority: cmpOr(j.Query.Priority, "INTERACTIVE")}, Labels: j.Query.Labels},
		Status:     &jobStatus{State: j.State.String()},
		Statistics: &jobStatistics{CreationTime: schema.Int64(j.Created.UnixMilli())},
	}
	if j.Query.DefaultDataset != "" {
		out.Configuration.Query.DefaultDataset = &datasetRef{ProjectID: j.Query.DefaultProject, DatasetID: j.Query.DefaultDataset}
		if out.Configuration.Query.DefaultDataset.ProjectID == "" {
			out.Configuration.Query.DefaultDataset.ProjectID = j.Project
		}
	}
	out.Configuration.Query.ParameterMode = j.Query.ParameterMode
	if j.Query.KeyResult != "" {
		out.Configuration.Query.ScriptOptions = &scriptOptions{KeyResultStatement: j.Query.KeyResult}
	}
	out.Configuration.JobTimeoutMs = schema.Int64(j.Query.TimeoutMs)
	if len(j.Query.Parameters) > 0 {
		_ = json.Unmarshal(j.Query.Parameters, &out.Configuration.Query.QueryParameters) // written by json.Marshal
	}
	if d := j.Query.Destination; d != nil {
		out.Configuration.Query.DestinationTable = &tableRef{ProjectID: d.Project, DatasetID: d.Dataset, TableID: d.Table}
		out.Configuration.Query.CreateDisposition = cmpOr(j.Query.CreateDisposition, jobs.CreateIfNeeded)
		out.Configuration.Query.WriteDisposition = cmpOr(j.Query.WriteDisposition, jobs.WriteEmpty)
		out.Configuration.Query.SchemaUpdateOptions = j.Query.SchemaUpdateOptions
		if p := j.Query.Partitioning; p != nil {
			qc := out.Configuration.Query
			qc.TimePartitioning, qc.RangePartitioning, qc.Clustering = p.TimePartitioning, p.RangePartitioning, p.Clustering
		}
	} else if d := j.Destination; d != (jobs.TableRef{}) {
		out.Configuration.Query.DestinationTable = &tableRef{ProjectID: d.Project, DatasetID: d.Dataset, TableID: d.Table}
		out.Configuration.Query.CreateDisposition = jobs.CreateIfNeeded
		out.Configuration.Query.WriteDisposition = jobs.WriteTruncate
	}
	if !j.Started.IsZero() {
		out.Statistics.StartTime = schema.Int64(j.Started.UnixMilli())
	}
	if j.State != jobs.StateDone {
		return out
	}
	out.Statistics.EndTime = schema.Int64(j.End.UnixMilli())
	st := j.Stats
	qs := &queryStatistics{StatementType: st.StatementType, TotalBytesProcessed: schema.Int64(j.BytesProcessed)}
	for _, t := range j.Referenced {
		qs.ReferencedTables = append(qs.ReferencedTables, tableRef{ProjectID: t.Project, DatasetID: t.Dataset, TableID: t.Table})
	}
	if len(j.Referenced) > 0 || j.BytesProcessed > 0 {
		qs.TotalBytesBilled = schema.Int64(jobs.Billed(j.BytesProcessed))
	}
	out.Statistics.TotalBytesProcessed = qs.TotalBytesProcessed
	out.Statistics.NumChildJobs = schema.Int64(st.NumChildJobs)
	if j.Parent != "" {
		out.Statistics.ParentJobID = j.Parent
		if f := j.Frame; f != nil {
			out.Statistics.ScriptStatistics = &scriptStatistics{EvaluationKind: "STATEMENT", StackFrames: []scriptStackFrame{{
				StartLine: f.StartLine, StartColumn: f.StartColumn, EndLine: f.EndLine, EndColumn: f.EndColumn, Text: f.Text}}}
		}
	}
	if j.Err != nil {
		ep := jobErrorOf(j.Err)
		out.Status.ErrorResult = ep
		out.Status.Errors = []jobError{*ep}
		qs.StatementType = ""
	} else {
		qs.Schema = j.Schema
		qs.DDLOperationPerformed = st.DDLOperation
		if t := st.DDLTargetTable; t != nil {
			qs.DDLTargetTable = &tableRef{ProjectID: t.Project, DatasetID: t.Dataset, TableID: t.Table}
		}
		if d := st.DDLTargetDataset; d != nil {
			qs.DDLTargetDataset = &datasetRef{ProjectID: d.Project, DatasetID: d.Dataset}
		}
		if st.DML {
			n := schema.Int64(st.AffectedRows)
			qs.NumDMLAffectedRows, qs.DMLStats = &n, &dmlStats{InsertedRowCount: n}
		}
	}
	out.Statistics.Query = qs
	return out
}

func ptr[T any](v T) *T { return &v }

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// getJob serves jobs.get.
func (h *Handler) getJob(w http.ResponseWriter, r *http.Request) {
	j, err := h.jobFromPath(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, jobResource(j))
}

// cancelJob serves jobs.cancel: a job not done is asked to stop (it ends
// DONE with the error "stopped" once its query notices); the answer is
// the job as it is then.
func (h *Handler) cancelJob(w http.ResponseWriter, r *http.Request) {
	j, err := h.jobFromPath(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if j, err = h.jobs.Cancel(j.Project, j.ID); err != nil {
		h.writeError(w, r, jobNotFound(r, j.Project, j.ID))
		return
	}
	writeJSON(w, http.StatusOK, &jobCancelResponse{Kind: "bigquery#jobCancelResponse", Job: jobResource(j)})
}

// deleteJob serves jobs.delete: it forgets the job and its results.
func (h *Handler) deleteJob(w http.ResponseWriter, r *http.Request) {
	j, err := h.jobFromPath(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	switch err := h.jobs.Delete(j.Project, j.ID); {
	case errors.Is(err, jobs.ErrRunning):
		h.writeError(w, r, invalid("Job %s:%s.%s is still running; cancel it or wait for it to finish before deleting it.", j.Project, j.Location, j.ID))
		return
	case errors.Is(err, jobs.ErrNotFound):
		h.writeError(w, r, jobNotFound(r, j.Project, j.ID))
		return
	case errors.Is(err, jobs.ErrChildJob):
		// BigQuery's jobs.delete: "Direct deletion of the metadata of
		// child jobs is not allowed."
		h.writeError(w, r, invalid("Job %s:%s.%s is a child job of script job %s: direct deletion of the metadata of child jobs is not allowed; delete the parent job.", j.Project, j.Location, j.ID, j.Parent))
		return
	case err != nil:
		h.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// listJobs serves jobs.list: the project's jobs, newest first.
func (h *Handler) listJobs(w http.ResponseWriter, r *http.Request) {
	p := r.PathValue("projectId")
	if err := checkProject(p); err != nil {
		h.writeError(w, r, err)
		return
	}
	q := r.URL.Query()
	size := defaultPageSize
	if v := q.Get("maxResults"); v != "" {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			h.writeError(w, r, invalid("Invalid value for maxResults: %q is not a non-negative integer", v))
			return
		}
		if n > 0 {
			size = min(int(n), maxPageSize)
		}
	}
	var after *jobs.Job // the last job of the previous page
	if v := q.Get("pageToken"); v != "" {
		j, ok := decodeListToken(v)
		if !ok {
			h.writeError(w, r, invalid("Invalid page token %q", v))
			return
		}
		after = &j
	}
	// parentJobId lists the child jobs of a script job; without it,
	// jobs.list lists jobs of their own only ("top-level jobs").
	// allUsers is accepted: every job is the one user's here.
	parent := q.Get("parentJobId")
	minimal := false
	switch v := q.Get("projection"); strings.ToLower(v) {
	case "", "full":
	case "minimal":
		minimal = true // "Does not include the job configuration"
	default:
		h.writeError(w, r, invalid("Invalid value for projection: %q: full or minimal", v))
		return
	}
	states := map[string]bool{}
	for _, s := range q["stateFilter"] {
		for _, v := range strings.Split(s, ",") {
			states[strings.ToUpper(strings.TrimSpace(v))] = true
		}
	}
	var minT, maxT int64 = 0, 1<<63 - 1
	for name, dst := range map[string]*int64{"minCreationTime": &minT, "maxCreationTime": &maxT} {
		if s := q.Get(name); s != "" {
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				h.writeError(w, r, invalid("Invalid value for %s: %q", name, s))
				return
			}
			*dst = v
		}
	}
	all := h.jobs.List(p)
	// Newest first; ties by id. A page token names the last job of its
	// page, and the next page starts after it in this order, so jobs
	// started meanwhile (newer: before it) shift nothing.
	before := func(a, b *jobs.Job) bool {
		if !a.Created.Equal(b.Created) {
			return a.Created.After(b.Created)
		}
		return a.ID < b.ID
	}
	sort.Slice(all, func(a, b int) bool { return before(&all[a], &all[b]) })
	out := jobList{Kind: "bigquery#jobList", Jobs: []jobListItem{}}
	var kept []jobs.Job
	for _, j := range all {
		jr := jobResource(j)
		ms := j.Created.UnixMilli()
		if len(states) > 0 && !states[jr.Status.State] || ms < minT || ms > maxT || after != nil && !before(after, &j) || j.Parent != parent {
			continue
		}
		kept = append(kept, j)
	}
	for i := 0; i < len(kept) && i < size; i++ {
		jr := jobResource(kept[i])
		if minimal {
			jr.Configuration = nil
		}
		out.Jobs = append(out.Jobs, jobListItem{ID: jr.ID, Kind: jr.Kind, JobReference: jr.JobReference, State: jr.Status.State,
			ErrorResult: jr.Status.ErrorResult, Statistics: jr.Statistics, Configuration: jr.Configuration, Status: jr.Status})
	}
	if size < len(kept) {
		out.NextPageToken = encodeListToken(kept[size-1])
	}
	writeJSON(w, http.StatusOK, &out)
}
