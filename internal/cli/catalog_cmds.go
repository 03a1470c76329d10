package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bqstore/bqstore/internal/schema"
)

// The catalog verbs (mk, ls, show, update, rm) follow Google's bq: the same
// verbs, [project:]dataset[.table] references, "name:TYPE,..." inline
// schemas or JSON schema files, and rm refusing to delete without -f when
// it cannot ask. They talk REST v2 to a running server.

// DefaultAPI is the REST address the verbs use without --api/BQSTORE_API.
const DefaultAPI = "http://127.0.0.1:9050"

// apiFlags are the flags every catalog verb has.
type apiFlags struct {
	api, project, format string
	csv                  bool // the command takes --format csv
}

func addAPIFlags(env *Env, fs *flag.FlagSet) *apiFlags {
	f := &apiFlags{}
	fs.StringVar(&f.api, "api", envDefault(env, "BQSTORE_API", DefaultAPI), "REST address of the bqstore server (env BQSTORE_API)")
	fs.StringVar(&f.project, "project", envDefault(env, "BQSTORE_PROJECT", "local"), "default project for references without one (env BQSTORE_PROJECT)")
	fs.StringVar(&f.format, "format", "pretty", "output format: pretty, json or prettyjson (as bq's)")
	return f
}

func (f *apiFlags) client() (*apiClient, error) {
	switch f.format {
	case "pretty", "json", "prettyjson":
	case "csv":
		if !f.csv {
			return nil, usagef("--format csv is for head; here: pretty, json or prettyjson")
		}
	default:
		return nil, usagef("--format: unknown format %q (pretty, json, prettyjson)", f.format)
	}
	return newAPIClient(f.api)
}

// json reports whether the output is JSON (json or prettyjson).
func (f *apiFlags) json() bool { return f.format == "json" || f.format == "prettyjson" }

// ref is a parsed [project:]dataset[.table] reference.
type ref struct {
	project, dataset, table string
}

func (r ref) String() string {
	if r.table == "" {
		return r.project + ":" + r.dataset
	}
	return r.project + ":" + r.dataset + "." + r.table
}

// parseRef parses "[project:]dataset[.table]". The project is what is
// before the last ':' (domain-scoped projects contain one too); the
// dataset is up to the first '.' after it (dataset ids have no dots).
func parseRef(s, defaultProject string) (ref, error) {
	var r ref
	rest := s
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		r.project, rest = s[:i], s[i+1:]
		if r.project == "" {
			return r, usagef("invalid reference %q: empty project (want [project:]dataset[.table])", s)
		}
	} else {
		r.project = defaultProject
	}
	r.dataset, r.table, _ = strings.Cut(rest, ".")
	if r.dataset == "" {
		return r, usagef("invalid reference %q: empty dataset (want [project:]dataset[.table])", s)
	}
	if strings.Contains(rest, ".") && r.table == "" {
		return r, usagef("invalid reference %q: empty table (want [project:]dataset[.table])", s)
	}
	return r, nil
}

func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// labelsFlag is a repeatable --label key:value.
type labelsFlag map[string]string

func (l labelsFlag) String() string { return "" }

func (l labelsFlag) Set(s string) error {
	k, v, _ := strings.Cut(s, ":")
	if k == "" {
		return fmt.Errorf("label %q: want key:value", s)
	}
	l[k] = v
	return nil
}

// ---- mk ----

func runMk(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "mk", "[--dataset|--table] [project:]dataset[.table] [SCHEMA]")
	af := addAPIFlags(env, fs)
	var isDataset, isTable bool
	fs.BoolVar(&isDataset, "dataset", false, "create a dataset")
	fs.BoolVar(&isDataset, "d", false, "shorthand for --dataset")
	fs.BoolVar(&isTable, "table", false, "create a table")
	fs.BoolVar(&isTable, "t", false, "shorthand for --table")
	location := fs.String("location", "", "dataset location (default US)")
	description := fs.String("description", "", "description of the dataset or table")
	expiration := fs.Int64("expiration", 0, "table expiration, in seconds from now (0: never)")
	labels := labelsFlag{}
	fs.Var(labels, "label", "a label key:value (repeatable)")
	schemaFlag := fs.String("schema", "", "table schema: a JSON schema file or name:TYPE,... (instead of the SCHEMA argument)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *schemaFlag != "" {
		if len(pos) != 1 {
			return usagef("--schema and a SCHEMA argument are exclusive")
		}
		pos = append(pos, *schemaFlag)
	}
	if len(pos) == 0 || len(pos) > 2 {
		return usagef("want a reference and, for a table, an optional SCHEMA (see bqstore mk -h)")
	}
	if isDataset && isTable {
		return usagef("--dataset and --table are exclusive")
	}
	r, err := parseRef(pos[0], af.project)
	if err != nil {
		return err
	}
	if !isDataset && !isTable {
		isTable = r.table != ""
		isDataset = !isTable
	}
	c, err := af.client()
	if err != nil {
		return err
	}
	if isDataset {
		if r.table != "" {
			return usagef("--dataset: %q names a table", pos[0])
		}
		if len(pos) > 1 {
			return usagef("a dataset takes no SCHEMA")
		}
		in := apiDataset{DatasetReference: apiDatasetRef{ProjectID: r.project, DatasetID: r.dataset},
			Location: *location, Description: *description, Labels: labels}
		var out apiDataset
		if err := c.call(ctx, http.MethodPost, "/bigquery/v2/projects/"+pathEscape(r.project)+"/datasets", nil, &in, &out); err != nil {
			return err
		}
		if af.json() {
			return printJSON(env.Stdout, &out)
		}
		fmt.Fprintf(env.Stdout, "Dataset '%s' successfully created.\n", r)
		return nil
	}
	if r.table == "" {
		return usagef("--table: %q names a dataset; want [project:]dataset.table", pos[0])
	}
	in := apiTable{TableReference: apiTableRef{ProjectID: r.project, DatasetID: r.dataset, TableID: r.table},
		Description: *description, Labels: labels}
	if len(pos) == 2 {
		if in.Schema, err = readSchemaArg(pos[1]); err != nil {
			return err
		}
	}
	if *expiration < 0 {
		return usagef("--expiration: %d is negative", *expiration)
	}
	if *expiration > 0 {
		in.ExpirationTime = schema.Int64(time.Now().Add(time.Duration(*expiration) * time.Second).UnixMilli())
	}
	var out apiTable
	if err := c.call(ctx, http.MethodPost, datasetPath(r.project, r.dataset)+"/tables", nil, &in, &out); err != nil {
		return err
	}
	if af.json() {
		return printJSON(env.Stdout, &out)
	}
	fmt.Fprintf(env.Stdout, "Table '%s' successfully created.\n", r)
	return nil
}

func pathEscape(s string) string { return url.PathEscape(s) }

// ---- ls ----

func runLs(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "ls", "[project:dataset]")
	af := addAPIFlags(env, fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usagef("want at most one dataset reference")
	}
	c, err := af.client()
	if err != nil {
		return err
	}
	if len(pos) == 0 || (strings.HasSuffix(pos[0], ":") && !strings.Contains(strings.TrimSuffix(pos[0], ":"), ".")) {
		project := af.project
		if len(pos) == 1 {
			project = strings.TrimSuffix(pos[0], ":")
		}
		var all []apiDataset
		err := c.listAll(ctx, "/bigquery/v2/projects/"+pathEscape(project)+"/datasets", func(raw json.RawMessage) (string, error) {
			var page struct {
				Datasets      []apiDataset `json:"datasets"`
				NextPageToken string       `json:"nextPageToken"`
			}
			err := json.Unmarshal(raw, &page)
			all = append(all, page.Datasets...)
			return page.NextPageToken, err
		})
		if err != nil {
			return err
		}
		if af.json() {
			return printJSON(env.Stdout, nonNil(all))
		}
		if len(all) == 0 {
			return nil
		}
		tw := newTable(env.Stdout, "datasetId", "location")
		for _, d := range all {
			tw.row(d.DatasetReference.DatasetID, d.Location)
		}
		return tw.flush()
	}
	r, err := parseRef(pos[0], af.project)
	if err != nil {
		return err
	}
	if r.table != "" {
		return usagef("ls lists datasets or the tables of a dataset; %q names a table (use bqstore show)", pos[0])
	}
	var all []apiTable
	err = c.listAll(ctx, datasetPath(r.project, r.dataset)+"/tables", func(raw json.RawMessage) (string, error) {
		var page struct {
			Tables        []apiTable `json:"tables"`
			NextPageToken string     `json:"nextPageToken"`
		}
		err := json.Unmarshal(raw, &page)
		all = append(all, page.Tables...)
		return page.NextPageToken, err
	})
	if err != nil {
		return err
	}
	if af.json() {
		return printJSON(env.Stdout, nonNil(all))
	}
	if len(all) == 0 {
		return nil
	}
	tw := newTable(env.Stdout, "tableId", "Type", "Labels", "Created")
	for _, t := range all {
		tw.row(t.TableReference.TableID, t.Type, labelText(t.Labels), msTime(t.CreationTime))
	}
	return tw.flush()
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// table prints bq-style aligned columns.
type table struct {
	tw *tabwriter.Writer
}

func newTable(w io.Writer, headers ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	t.row(headers...)
	dashes := make([]string, len(headers))
	for i, h := range headers {
		dashes[i] = strings.Repeat("-", len(h))
	}
	t.row(dashes...)
	return t
}

func (t *table) row(cells ...string) {
	fmt.Fprintln(t.tw, "  "+strings.Join(cells, "\t"))
}

func (t *table) flush() error { return t.tw.Flush() }

func labelText(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		keys[i] = k + ":" + l[k]
	}
	return strings.Join(keys, ",")
}

func msTime(v schema.Int64) string {
	if v == 0 {
		return ""
	}
	return time.UnixMilli(int64(v)).UTC().Format("2006-01-02 15:04:05 MST")
}

// ---- show ----

func runShow(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "show", "[--schema] [project:]dataset[.table]")
	af := addAPIFlags(env, fs)
	schemaOnly := fs.Bool("schema", false, "print only the table's schema, as bq's JSON schema (--format prettyjson: indented)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want one reference [project:]dataset[.table]")
	}
	r, err := parseRef(pos[0], af.project)
	if err != nil {
		return err
	}
	c, err := af.client()
	if err != nil {
		return err
	}
	w := env.Stdout
	if r.table == "" {
		if *schemaOnly {
			return usagef("--schema needs a table; %q names a dataset", pos[0])
		}
		var d apiDataset
		if err := c.call(ctx, http.MethodGet, datasetPath(r.project, r.dataset), nil, nil, &d); err != nil {
			return err
		}
		if af.json() {
			return printJSON(w, &d)
		}
		kv := newKV(w)
		kv.add("Dataset", d.ID)
		kv.add("Location", d.Location)
		kv.add("Created", msTime(d.CreationTime))
		kv.add("Last modified", msTime(d.LastModifiedTime))
		kv.add("Labels", labelText(d.Labels))
		if d.DefaultTableExpirationMs > 0 {
			kv.add("Default table expiration", (time.Duration(d.DefaultTableExpirationMs) * time.Millisecond).String())
		}
		kv.add("Description", d.Description)
		return kv.flush()
	}
	var t apiTable
	if err := c.call(ctx, http.MethodGet, tablePath(r.project, r.dataset, r.table), nil, nil, &t); err != nil {
		return err
	}
	if *schemaOnly {
		fields := []*schema.Field{}
		if t.Schema != nil && t.Schema.Fields != nil {
			fields = t.Schema.Fields
		}
		if af.format == "prettyjson" {
			return printJSON(w, fields)
		}
		b, err := json.Marshal(fields)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	if af.json() {
		return printJSON(w, &t)
	}
	kv := newKV(w)
	kv.add("Table", t.ID)
	kv.add("Type", t.Type)
	kv.add("Location", t.Location)
	kv.add("Created", msTime(t.CreationTime))
	kv.add("Last modified", msTime(t.LastModifiedTime))
	exp := msTime(t.ExpirationTime)
	if exp == "" {
		exp = "never"
	}
	kv.add("Expiration", exp)
	kv.add("Total rows", strconv.FormatInt(int64(t.NumRows), 10))
	kv.add("Total bytes", strconv.FormatInt(int64(t.NumBytes), 10))
	kv.add("Labels", labelText(t.Labels))
	kv.add("Description", t.Description)
	if err := kv.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "Schema:")
	if t.Schema == nil || len(t.Schema.Fields) == 0 {
		fmt.Fprintln(w, "  (no columns)")
		return nil
	}
	printSchemaTree(w, t.Schema.Fields, "  ")
	return nil
}

type kv struct {
	tw *tabwriter.Writer
}

func newKV(w io.Writer) *kv {
	return &kv{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
}

func (k *kv) add(key, value string) {
	if value == "" {
		return
	}
	fmt.Fprintf(k.tw, "%s:\t%s\n", key, oneLine(value))
}

func (k *kv) flush() error { return k.tw.Flush() }

// printSchemaTree prints a schema as bq's show does: one "|- name: type"
// line per column, nested columns indented.
func printSchemaTree(w io.Writer, fs []*schema.Field, indent string) {
	for _, f := range fs {
		t := strings.ToLower(string(f.Type))
		switch {
		case f.Type == schema.Range && f.RangeElementType != nil:
			t += "<" + strings.ToLower(string(f.RangeElementType.Type)) + ">"
		case f.Precision != 0 && f.Scale != 0:
			t += fmt.Sprintf("(%d, %d)", f.Precision, f.Scale)
		case f.Precision != 0:
			t += fmt.Sprintf("(%d)", f.Precision)
		case f.MaxLength != 0:
			t += fmt.Sprintf("(%d)", f.MaxLength)
		}
		var notes []string
		if f.Mode == schema.Required || f.Mode == schema.Repeated {
			notes = append(notes, strings.ToLower(string(f.Mode)))
		}
		if f.DefaultValueExpression != "" {
			notes = append(notes, "default "+f.DefaultValueExpression)
		}
		line := indent + "|- " + f.Name + ": " + t
		if len(notes) > 0 {
			line += " (" + strings.Join(notes, ", ") + ")"
		}
		if f.Description != "" {
			line += "  -- " + oneLine(f.Description)
		}
		fmt.Fprintln(w, line)
		if len(f.Fields) > 0 {
			printSchemaTree(w, f.Fields, indent+"|  ")
		}
	}
}

// ---- update ----

func runUpdate(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "update", "[project:]dataset.table SCHEMA | [project:]dataset [--description D] [--set_label K:V] [--clear_label K] [--default_table_expiration SECONDS]")
	af := addAPIFlags(env, fs)
	description := fs.String("description", "", "new description (table or dataset)")
	schemaFlag := fs.String("schema", "", "new table schema: a JSON schema file or name:TYPE,... (instead of the SCHEMA argument)")
	setLabels, clearLabels := labelsFlag{}, labelsFlag{}
	fs.Var(setLabels, "set_label", "dataset: add or change a label KEY:VALUE (repeatable)")
	fs.Var(clearLabels, "clear_label", "dataset: remove the label KEY (repeatable)")
	expiration := fs.Int64("default_table_expiration", 0, "dataset: default lifetime of new tables in seconds (0: none)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 1 && *schemaFlag == "" {
		if r, err := parseRef(pos[0], af.project); err == nil && r.table == "" {
			return runUpdateDataset(ctx, env, fs, af, r, setLabels, clearLabels, *expiration)
		}
	}
	if len(setLabels) > 0 || len(clearLabels) > 0 || *expiration != 0 {
		return usagef("--set_label, --clear_label and --default_table_expiration change a dataset; give [project:]dataset")
	}
	if *schemaFlag != "" {
		if len(pos) != 1 {
			return usagef("--schema and a SCHEMA argument are exclusive")
		}
		pos = append(pos, *schemaFlag)
	}
	descSet := false
	fs.Visit(func(f *flag.Flag) { descSet = descSet || f.Name == "description" })
	if len(pos) < 1 || len(pos) > 2 || (len(pos) == 1 && !descSet) {
		return usagef("want [project:]dataset.table and a SCHEMA (or --description)")
	}
	r, err := parseRef(pos[0], af.project)
	if err != nil {
		return err
	}
	if r.table == "" {
		return usagef("update changes a table; %q names a dataset", pos[0])
	}
	c, err := af.client()
	if err != nil {
		return err
	}
	patch := map[string]any{}
	if len(pos) == 2 {
		s, err := readSchemaArg(pos[1])
		if err != nil {
			return err
		}
		patch["schema"] = s
	}
	if descSet {
		patch["description"] = *description
	}
	// Read the etag first so that a concurrent change is not overwritten.
	var cur apiTable
	if err := c.call(ctx, http.MethodGet, tablePath(r.project, r.dataset, r.table), nil, nil, &cur); err != nil {
		return err
	}
	hdr := http.Header{}
	if cur.ETag != "" {
		hdr.Set("If-Match", cur.ETag)
	}
	var out apiTable
	if err := c.call(ctx, http.MethodPatch, tablePath(r.project, r.dataset, r.table), hdr, patch, &out); err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.Code == http.StatusPreconditionFailed {
			return fmt.Errorf("table %s changed while updating it; run the update again", r)
		}
		return err
	}
	if af.json() {
		return printJSON(env.Stdout, &out)
	}
	fmt.Fprintf(env.Stdout, "Table '%s' successfully updated.\n", r)
	return nil
}

// ---- rm ----

// stdinIsTerminal reports whether r is an interactive terminal (a
// variable so that tests can answer the prompt).
var stdinIsTerminal = isTerminal

func runRm(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "rm", "[-r] [-f] [project:]dataset[.table]")
	af := addAPIFlags(env, fs)
	recursive := fs.Bool("r", false, "remove a dataset with all its tables")
	force := fs.Bool("f", false, "do not ask for confirmation")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want one reference [project:]dataset[.table]")
	}
	r, err := parseRef(pos[0], af.project)
	if err != nil {
		return err
	}
	c, err := af.client()
	if err != nil {
		return err
	}
	what := "dataset"
	if r.table != "" {
		what = "table"
	}
	if !*force {
		if !stdinIsTerminal(env.Stdin) {
			return fmt.Errorf("refusing to remove %s %s without confirmation: stdin is not a terminal (use -f)", what, r)
		}
		fmt.Fprintf(env.Stdout, "rm: remove %s '%s'? (y/N) ", what, r)
		line, _ := bufio.NewReader(env.Stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
			return errors.New("not removed")
		}
	}
	if r.table != "" {
		return c.call(ctx, http.MethodDelete, tablePath(r.project, r.dataset, r.table), nil, nil, nil)
	}
	path := datasetPath(r.project, r.dataset)
	if *recursive {
		path += "?deleteContents=true"
	}
	err = c.call(ctx, http.MethodDelete, path, nil, nil, nil)
	var ae *apiError
	if errors.As(err, &ae) && ae.Reason == "resourceInUse" {
		return fmt.Errorf("%s (use -r to remove its tables too)", ae.Message)
	}
	return err
}
