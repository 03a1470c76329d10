package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/bqstore/bqstore/internal/schema"
)

// bqstore query 'SQL': jobs.query, then getQueryResults until the job is
// done and --max-rows rows are read; rows printed as head prints them.
// Parameters use bq's --parameter syntax.

func runQuery(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "query", "[--format pretty|json|prettyjson|csv] [--parameter name:TYPE:value]... [--max-rows N] [--dry-run] [--dataset_id d] 'SQL'")
	af := addAPIFlags(env, fs)
	af.csv = true
	var params paramFlags
	fs.Var(&params, "parameter", "a query parameter as bq takes it: name:TYPE:value (TYPE empty: STRING; name empty: positional; ARRAY<T> values in JSON, NULL for NULL); repeatable")
	maxRows := fs.Int64("max-rows", 100, "print at most this many rows")
	fs.Int64Var(maxRows, "max_rows", 100, "same as --max-rows (bq's spelling)")
	n := fs.Int64("n", -1, "same as --max-rows (bq's spelling)")
	dry := fs.Bool("dry-run", false, "validate the query and print the bytes it would process, without running it")
	fs.BoolVar(dry, "dry_run", false, "same as --dry-run (bq's spelling)")
	legacy := fs.Bool("use_legacy_sql", false, "accepted for bq habits; only false (GoogleSQL) is served")
	fs.BoolVar(legacy, "use-legacy-sql", false, "same as --use_legacy_sql")
	dataset := fs.String("dataset_id", "", "default dataset for unqualified table names ([project:]dataset)")
	maxWidth := fs.Int("max-width", 50, "pretty format: cut cells wider than this many characters (0: never)")
	timeout := fs.Duration("timeout", 0, "give up waiting for the job after this long (0: wait)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *n >= 0 {
		*maxRows = *n
	}
	if len(pos) == 0 {
		return usagef("want the query text as an argument")
	}
	sqlText := strings.Join(pos, " ")
	if *legacy {
		return usagef("bqstore runs GoogleSQL only: drop --use_legacy_sql or set it to false")
	}
	if *maxRows < 0 {
		return usagef("--max-rows must not be negative")
	}
	c, err := af.client()
	if err != nil {
		return err
	}
	req := map[string]any{
		"query":         sqlText,
		"useLegacySql":  false,
		"maxResults":    min(*maxRows, 10000),
		"formatOptions": map[string]any{"useInt64Timestamp": true},
	}
	if *dry {
		req["dryRun"] = true
	}
	if len(params) > 0 {
		req["queryParameters"] = []json.RawMessage(params)
	}
	if *dataset != "" {
		r, err := parseRef(*dataset, af.project)
		if err != nil || r.table != "" {
			return usagef("--dataset_id: want [project:]dataset, got %q", *dataset)
		}
		req["defaultDataset"] = apiDatasetRef{ProjectID: r.project, DatasetID: r.dataset}
	}
	if *timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}
	var page queryPage
	// callErr is the error of a call; one --timeout ended says so (the
	// server is up: the job did not end in time).
	callErr := func(err error) error {
		if *timeout > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			if id := page.JobReference.JobID; id != "" {
				return fmt.Errorf("gave up waiting for job %s after --timeout %v; it may still be running", id, *timeout)
			}
			return fmt.Errorf("gave up waiting for the query after --timeout %v", *timeout)
		}
		return queryErr(err)
	}
	path := "/bigquery/v2/projects/" + url.PathEscape(af.project)
	if err := c.call(ctx, http.MethodPost, path+"/queries", nil, req, &page); err != nil {
		return callErr(err)
	}
	if *dry {
		return printDryRun(env, af, &page)
	}
	jobPath := path + "/queries/" + url.PathEscape(page.JobReference.JobID)
	loc := page.JobReference.Location
	// Wait for the job, then page through its rows.
	for !page.JobComplete {
		q := url.Values{"timeoutMs": {"10000"}, "maxResults": {strconv.FormatInt(min(*maxRows, 10000), 10)},
			"formatOptions.useInt64Timestamp": {"true"}}
		if loc != "" {
			q.Set("location", loc)
		}
		if err := c.call(ctx, http.MethodGet, jobPath+"?"+q.Encode(), nil, nil, &page); err != nil {
			return callErr(err)
		}
	}
	if len(page.Errors) > 0 {
		return &queryError{reason: page.Errors[0].Reason, msg: page.Errors[0].Message}
	}
	sch := page.Schema
	if sch == nil {
		sch = &schema.Schema{}
	}
	var rows [][]any
	for {
		for _, row := range page.Rows {
			if int64(len(rows)) >= *maxRows {
				break
			}
			if len(row.F) != len(sch.Fields) {
				return fmt.Errorf("a row has %d cells, the schema %d columns", len(row.F), len(sch.Fields))
			}
			cells := make([]any, len(row.F))
			for i, f := range sch.Fields {
				v, err := headValue(f, row.F[i].V, false)
				if err != nil {
					return fmt.Errorf("column %s: %w", f.Name, err)
				}
				cells[i] = v
			}
			rows = append(rows, cells)
		}
		if page.PageToken == "" || int64(len(rows)) >= *maxRows || len(page.Rows) == 0 {
			break
		}
		q := url.Values{"pageToken": {page.PageToken}, "maxResults": {strconv.FormatInt(min(*maxRows-int64(len(rows)), 10000), 10)},
			"formatOptions.useInt64Timestamp": {"true"}}
		if loc != "" {
			q.Set("location", loc)
		}
		page = queryPage{JobReference: page.JobReference}
		if err := c.call(ctx, http.MethodGet, jobPath+"?"+q.Encode(), nil, nil, &page); err != nil {
			return callErr(err)
		}
	}
	if len(sch.Fields) == 0 {
		// DDL, DML: no rows; say what happened as bq does.
		if page.NumDmlAffectedRows != "" {
			fmt.Fprintf(env.Stdout, "Number of affected rows: %s\n", page.NumDmlAffectedRows)
		}
		return nil
	}
	return printRows(env, af, sch, rows, *maxWidth)
}

// printRows prints rows in af's format, as head does.
func printRows(env *Env, af *apiFlags, sch *schema.Schema, rows [][]any, maxWidth int) error {
	if af.json() {
		out := make([]orderedObject, len(rows))
		for i, cells := range rows {
			out[i] = orderedObject{}
			for k, f := range sch.Fields {
				out[i] = append(out[i], kvPair{f.Name, cells[k]})
			}
		}
		if af.format == "prettyjson" {
			return printJSON(env.Stdout, out)
		}
		b, err := json.Marshal(out)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(env.Stdout, "%s\n", b)
		return err
	}
	if af.format == "csv" {
		return printHeadCSV(env.Stdout, sch, rows)
	}
	return printBox(env.Stdout, sch, rows, maxWidth)
}

// queryPage is the members of jobs.query's and getQueryResults' answers
// the command reads.
type queryPage struct {
	JobReference struct {
		JobID    string `json:"jobId"`
		Location string `json:"location"`
	} `json:"jobReference"`
	JobComplete         bool           `json:"jobComplete"`
	Schema              *schema.Schema `json:"schema"`
	PageToken           string         `json:"pageToken"`
	TotalRows           string         `json:"totalRows"`
	TotalBytesProcessed string         `json:"totalBytesProcessed"`
	NumDmlAffectedRows  string         `json:"numDmlAffectedRows"`
	Rows                []struct {
		F []struct {
			V json.RawMessage `json:"v"`
		} `json:"f"`
	} `json:"rows"`
	Errors []struct {
		Reason   string `json:"reason"`
		Location string `json:"location"`
		Message  string `json:"message"`
	} `json:"errors"`
}

// printDryRun prints what a dry run learned, in bq's words.
func printDryRun(env *Env, af *apiFlags, page *queryPage) error {
	bytes := page.TotalBytesProcessed
	if bytes == "" {
		bytes = "0"
	}
	if af.json() {
		out := orderedObject{{"totalBytesProcessed", bytes}}
		if page.Schema != nil {
			out = append(out, kvPair{"schema", page.Schema})
		}
		if af.format == "prettyjson" {
			return printJSON(env.Stdout, out)
		}
		b, err := json.Marshal(out)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(env.Stdout, "%s\n", b)
		return err
	}
	_, err := fmt.Fprintf(env.Stdout, "Query successfully validated. Assuming the tables are not modified, running this query will process %s bytes of data.\n", bytes)
	return err
}

// queryError is a query the server refused or that failed: BigQuery's
// reason and message (which carries the position, "at [l:c]").
type queryError struct {
	reason, msg string
}

func (e *queryError) Error() string {
	if e.reason == "" {
		return e.msg
	}
	return e.reason + ": " + e.msg
}

func queryErr(err error) error {
	var ae *apiError
	if errors.As(err, &ae) {
		return &queryError{reason: ae.Reason, msg: ae.Message}
	}
	return err
}

// paramFlags collects --parameter values as BigQuery QueryParameter JSON.
type paramFlags []json.RawMessage

func (p *paramFlags) String() string { return "" }

func (p *paramFlags) Set(s string) error {
	q, err := parseParameter(s)
	if err != nil {
		return err
	}
	b, err := json.Marshal(q)
	if err != nil {
		return err
	}
	*p = append(*p, b)
	return nil
}

// parseParameter parses bq's --parameter syntax, name:TYPE:value: the
// name is up to the first colon (empty: positional), the type up to the
// next (empty: STRING), the value is the rest; ARRAY<T> and STRUCT<...>
// values are JSON; NULL is a NULL.
func parseParameter(s string) (map[string]any, error) {
	name, rest, ok := strings.Cut(s, ":")
	typ, value, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 {
		return nil, fmt.Errorf(`%q: a query parameter is "name:TYPE:value", ":TYPE:value" (positional) or "name::value" (STRING)`, s)
	}
	if typ == "" {
		typ = "STRING"
	}
	pt, err := paramType(typ)
	if err != nil {
		return nil, fmt.Errorf("parameter %s: %w", name, err)
	}
	var v any = value
	if strings.HasPrefix(strings.ToUpper(typ), "ARRAY<") || strings.HasPrefix(strings.ToUpper(typ), "STRUCT<") {
		if value != "NULL" {
			d := json.NewDecoder(strings.NewReader(value))
			d.UseNumber() // INT64 and NUMERIC values keep every digit
			if err := d.Decode(&v); err != nil {
				return nil, fmt.Errorf("parameter %s: the value of an %s is JSON: %v", name, typ, err)
			}
		}
	}
	pv, err := paramValue(pt, v)
	if err != nil {
		return nil, fmt.Errorf("parameter %s: %w", name, err)
	}
	out := map[string]any{"parameterType": pt, "parameterValue": pv}
	if name != "" {
		out["name"] = name
	}
	return out, nil
}

// paramType parses a parameter type: a scalar, ARRAY<T>, STRUCT<name T, ...>.
func paramType(typ string) (map[string]any, error) {
	typ = strings.TrimSpace(typ)
	up := strings.ToUpper(typ)
	switch {
	case strings.HasPrefix(up, "ARRAY<") && strings.HasSuffix(up, ">"):
		et, err := paramType(typ[6 : len(typ)-1])
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "ARRAY", "arrayType": et}, nil
	case strings.HasPrefix(up, "STRUCT<") && strings.HasSuffix(up, ">"):
		var fields []any
		for _, f := range splitTopLevel(typ[7 : len(typ)-1]) {
			fname, ftyp, ok := strings.Cut(strings.TrimSpace(f), " ")
			if !ok {
				return nil, fmt.Errorf("STRUCT field %q has no type (want name TYPE)", f)
			}
			ft, err := paramType(ftyp)
			if err != nil {
				return nil, err
			}
			fields = append(fields, map[string]any{"name": fname, "type": ft})
		}
		return map[string]any{"type": "STRUCT", "structTypes": fields}, nil
	case typ == "" || strings.ContainsAny(typ, "<> "):
		return nil, fmt.Errorf("invalid type %q", typ)
	}
	return map[string]any{"type": up}, nil
}

// splitTopLevel splits s at the commas outside <...>.
func splitTopLevel(s string) []string {
	var parts []string
	depth, from := 0, 0
	for i, r := range s {
		switch r {
		case '<':
			depth++
		case '>':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[from:i])
				from = i + 1
			}
		}
	}
	return append(parts, s[from:])
}

// paramValue builds a QueryParameterValue of type pt from v (a string, or
// what JSON decoded for ARRAY and STRUCT).
func paramValue(pt map[string]any, v any) (map[string]any, error) {
	if v == "NULL" || v == nil {
		switch pt["type"] {
		case "ARRAY":
			return map[string]any{}, nil
		case "STRUCT":
			return map[string]any{}, nil
		}
		return map[string]any{"value": nil}, nil
	}
	switch pt["type"] {
	case "ARRAY":
		list, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("an ARRAY value is a JSON array, got %v", v)
		}
		vals := []any{}
		for _, x := range list {
			ev, err := paramValue(pt["arrayType"].(map[string]any), jsonScalar(x))
			if err != nil {
				return nil, err
			}
			vals = append(vals, ev)
		}
		return map[string]any{"arrayValues": vals}, nil
	case "STRUCT":
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("a STRUCT value is a JSON object, got %v", v)
		}
		vals := map[string]any{}
		for _, f := range pt["structTypes"].([]any) {
			fm := f.(map[string]any)
			name := fm["name"].(string)
			x, ok := obj[name]
			if !ok {
				continue
			}
			fv, err := paramValue(fm["type"].(map[string]any), jsonScalar(x))
			if err != nil {
				return nil, err
			}
			vals[name] = fv
		}
		return map[string]any{"structValues": vals}, nil
	}
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("value %v is not a scalar", v)
	}
	return map[string]any{"value": s}, nil
}

// jsonScalar turns a decoded JSON scalar into the text BigQuery takes
// (numbers as written, booleans as true/false); null stays nil, and
// arrays and objects stay as they are.
func jsonScalar(x any) any {
	switch y := x.(type) {
	case json.Number:
		return y.String()
	case bool:
		return strconv.FormatBool(y)
	}
	return x
}
