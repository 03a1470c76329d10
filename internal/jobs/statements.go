package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/schema/protorows"
	"github.com/bqstore/bqstore/internal/sql"
)

// This file dispatches the statements of a query job: queries run through
// sql.Run; DDL goes through the catalog (the same calls as the REST
// tables.* and datasets.* methods); INSERT appends through the engine
// (dml.go). A script (several statements) runs them in order.

// Stats are a job's statement statistics (JobStatistics2).
type Stats struct {
	// StatementType is BigQuery's statementType: SELECT, INSERT,
	// CREATE_TABLE, CREATE_TABLE_AS_SELECT, DROP_TABLE, ALTER_TABLE,
	// CREATE_SCHEMA, DROP_SCHEMA, ... or SCRIPT for several statements.
	StatementType string
	// DDLOperation is ddlOperationPerformed: CREATE, REPLACE, SKIP, DROP
	// or ALTER; "" for other statements.
	DDLOperation string
	// DDLTargetTable is ddlTargetTable (table statements), nil if none.
	DDLTargetTable *TableRef
	// DDLTargetDataset is ddlTargetDataset (SCHEMA statements).
	DDLTargetDataset *DatasetRef
	// DML is set for INSERT; AffectedRows is numDmlAffectedRows.
	DML          bool
	AffectedRows int64
	// NumChildJobs is the statements a SCRIPT ran.
	NumChildJobs int
	// BytesProcessed is the logical bytes the statements read.
	BytesProcessed int64
}

// TableRef names a table.
type TableRef struct{ Project, Dataset, Table string }

// DatasetRef names a dataset.
type DatasetRef struct{ Project, Dataset string }

// The values of Query.KeyResult (scriptOptions.keyResultStatement).
const (
	KeyResultLast        = "LAST"
	KeyResultFirstSelect = "FIRST_SELECT"
)

// runScript parses q.SQL and runs its statements in order. The result is
// the key result statement's (q.KeyResult: by default the last
// statement, as BigQuery's; nil when that statement returns no rows,
// DDL or DML, even if a query ran before it). The first
// statement reads at snapshot time at; later ones at their start, so that
// they see what earlier ones did.
//
// The result's query (a lone query, or a script's last) hands its rows
// to sink (nil: none) as they are produced (sql.Options.Sink), so a
// script's result streams as a query's does; a script's other queries
// hand theirs to their child job's table (children.go; q.script records
// each statement as a child job), so that they hold no more than the
// result's query.
func (s *Store) runScript(ctx context.Context, project string, q Query, at time.Time, sink sql.Sink) (*sql.Result, Stats, error) {
	sts, err := sql.ParseScript(q.SQL)
	if err != nil {
		return nil, Stats{}, err
	}
	if len(sts) == 1 && sts[0].CreateTable != nil && sts[0].CreateTable.Temp {
		return nil, Stats{}, &TableError{Msg: "Use of CREATE TEMPORARY TABLE requires a script or session"}
	}
	if typ, err := destinationRefused(q, sts); err != nil {
		return nil, Stats{StatementType: typ}, err
	}
	if q.temps == nil { // the caller's map, if any, learns the temps' names
		q.temps = map[string]TableRef{}
	}
	defer s.dropTemps(q)
	if q.Params != nil {
		q.Params.Index(q.SQL) // the ?s are numbered over the whole script
	}
	last := len(sts) - 1 // the result's statement
	if q.KeyResult == KeyResultFirstSelect {
		last = slices.IndexFunc(sts, func(st *sql.Statement) bool { return st.Type == "SELECT" })
	}
	sc := q.script // records each statement as a child job (children.go)
	if len(sts) < 2 {
		sc = nil
	} else if sc != nil {
		sc.frames = scriptFrames(q.SQL, sts)
	}
	var res *sql.Result
	var stats, total Stats
	for i, st := range sts {
		if i > 0 {
			at = s.opts.Clock()
		}
		at = s.readTime(at)
		var sk sql.Sink = dropRows{}
		if i == last {
			sk = sink
		}
		start := s.opts.Clock()
		var csink *resultSink
		if sc != nil && i != last && st.Type == "SELECT" {
			csink, sk = s.childSink(sc.placeholder(i, start)), nil
			if csink != nil {
				sk = csink
			}
		}
		// A result held for a destination table is written after the
		// last statement, which is then not the job's last change.
		q.stmts, q.last = len(sts), i == len(sts)-1 && (q.Destination == nil || res == nil)
		sctx := withReads(ctx) // what this statement's replace checks (replace.go)
		r, one, err := s.runStatement(sctx, project, q, st, at, total.BytesProcessed, sk)
		err = q.hideTemps(err)
		total.BytesProcessed += one.BytesProcessed
		if sc != nil {
			s.recordChild(ctx, sc, q, i, i == last, start, one, r, csink, err)
		}
		if err != nil {
			// A failed job still says what it ran (statementType).
			total.StatementType = one.StatementType
			if len(sts) > 1 {
				total.StatementType, total.NumChildJobs = "SCRIPT", i+1
			}
			return nil, total, err
		}
		if i == last {
			res = r
			adoptReads(ctx, sctx) // what a replace of the destination checks
		}
		stats = one
	}
	if len(sts) > 1 {
		return res, Stats{StatementType: "SCRIPT", NumChildJobs: len(sts), BytesProcessed: total.BytesProcessed}, nil
	}
	return res, stats, nil
}

// destinationRefused is BigQuery's answer for a destinationTable (q's)
// with a script, DML or DDL, and the job's statementType then; nil when
// q has none or sts is one query.
func destinationRefused(q Query, sts []*sql.Statement) (string, error) {
	if q.Destination == nil {
		return "", nil
	}
	switch {
	case len(sts) > 1:
		return "SCRIPT", &TableError{Msg: "configuration.query.destinationTable cannot be set for scripts"}
	case sts[0].Insert != nil:
		return sts[0].Type, &TableError{Msg: "Cannot set destination table in jobs with DML statements"}
	case sts[0].Type != "SELECT":
		return sts[0].Type, &TableError{Msg: "Cannot set destination table in jobs with DDL statements"}
	}
	return "", nil
}

// runStatement runs one statement of a script; spent is the bytes the
// script's earlier statements processed (for maximumBytesBilled); a query
// hands its rows to sink (nil: in the result).
func (s *Store) runStatement(ctx context.Context, project string, q Query, st *sql.Statement, at time.Time, spent int64, sink sql.Sink) (*sql.Result, Stats, error) {
	stats := Stats{StatementType: st.Type}
	q.spent = spent
	var err error
	switch {
	case st.Type == "SELECT":
		var res *sql.Result
		res, err = s.queryTo(ctx, project, q, st.Text, st.Pos, at, sink)
		if err == nil {
			stats.BytesProcessed = res.BytesProcessed
			return res, stats, nil
		}
	case st.CreateTable != nil:
		err = s.createTable(ctx, project, q, st.CreateTable, at, &stats)
	case st.Drop != nil:
		err = s.drop(ctx, project, q, st, &stats)
	case st.AlterTable != nil:
		err = s.alterTable(ctx, project, q, st, &stats)
	case st.CreateSchema != nil:
		err = s.createSchema(ctx, project, q, st.CreateSchema, &stats)
	case st.Insert != nil:
		err = s.insert(ctx, project, q, st, at, &stats)
	case st.CreateView != nil:
		err = s.createView(ctx, project, q, st, at, &stats)
	default:
		err = fmt.Errorf("jobs: statement %s has no runner", st.Type)
	}
	return nil, stats, err
}

// billable checks the maximumBytesBilled of q against the bytes of the
// script so far and those of res, the query of a statement that writes
// (INSERT ... SELECT, CREATE TABLE AS SELECT), before it writes. A query
// that reads no table is not billed.
func billable(q Query, res *sql.Result) error {
	if q.MaxBytesBilled <= 0 || len(res.Tables) == 0 {
		return nil
	}
	if b := Billed(q.spent + res.BytesProcessed); b > q.MaxBytesBilled {
		return &BytesBilledError{Limit: q.MaxBytesBilled, Required: b}
	}
	return nil
}

// query runs one query statement at snapshot time at: the one at byte
// offset from of text (a script up to the statement's end, as
// sql.Statement.Text; 0 for a query alone).
func (s *Store) query(ctx context.Context, project string, q Query, text string, from int, at time.Time) (*sql.Result, error) {
	return s.queryTo(ctx, project, q, text, from, at, nil)
}

// queryTo is query handing its rows to sink (nil: in the result).
func (s *Store) queryTo(ctx context.Context, project string, q Query, text string, from int, at time.Time, sink sql.Sink) (*sql.Result, error) {
	return sql.Run(ctx, text, func(ctx context.Context, n sql.TableName) (sql.Table, error) {
		if ref, err := qualify(project, q, n); err == nil {
			if ct, err := s.cat.Table(ref.Project, ref.Dataset, ref.Table); err == nil && ct.View != nil {
				if err := s.checkLocation(q, ref.Project, ref.Dataset); err != nil {
					return nil, err
				}
				return s.openView(ctx, ct, at)
			}
		}
		t, err := s.open(project, q, n, at)
		if tb, ok := t.(*table); ok && n.AsOf.IsZero() {
			recordRead(ctx, tb)
		}
		return t, err
	}, sql.Options{MaxMemory: s.opts.MaxMemory, Params: q.Params, Now: at, Sink: sink, Offset: from,
		Wildcard: func(ctx context.Context, n sql.TableName) ([]sql.WildcardTable, error) {
			return s.wildcard(project, q, n)
		}})
}

// qualify resolves a table name against the job's project and default
// dataset.
func qualify(project string, q Query, n sql.TableName) (TableRef, error) {
	if r, ok := q.temp(n); ok {
		return r, nil
	}
	p, d := n.Project, n.Dataset
	if d == "" {
		if q.DefaultDataset == "" {
			return TableRef{}, &TableError{Msg: fmt.Sprintf("Table \"%s\" must be qualified with a dataset (e.g. dataset.table).", n.Table)}
		}
		d = q.DefaultDataset
		if p == "" {
			p = q.DefaultProject
		}
	}
	if p == "" {
		p = project
	}
	return TableRef{Project: p, Dataset: d, Table: n.Table}, nil
}

// tableOptions applies OPTIONS(description, friendly_name,
// expiration_timestamp) to a patch.
func tableOptions(opts []sql.Option, patch *catalog.TablePatch) {
	for _, o := range opts {
		str := ""
		if v, ok := o.Value.(string); ok {
			str = v
		}
		switch o.Name {
		case "description":
			patch.Description = &str
		case "friendly_name":
			patch.FriendlyName = &str
		case "expiration_timestamp":
			var t time.Time
			if v, ok := o.Value.(int64); ok {
				t = time.UnixMicro(v).UTC()
			}
			patch.Expiration = &t
		case "labels":
			patch.Labels, patch.ReplaceLabels = labelPatch(o.Value), true
		}
	}
}

// labelPatch is OPTIONS(labels=...) as a catalog label patch (it
// replaces every label).
func labelPatch(v any) map[string]*string {
	m, _ := v.(map[string]string)
	out := make(map[string]*string, len(m))
	for k, v := range m {
		out[k] = &v
	}
	return out
}

// applyToSpec sets the metadata of patch (OPTIONS of a CREATE) on spec.
func applyToSpec(patch catalog.TablePatch, spec *catalog.TableSpec) {
	if patch.Description != nil {
		spec.Description = *patch.Description
	}
	if patch.FriendlyName != nil {
		spec.FriendlyName = *patch.FriendlyName
	}
	if patch.Expiration != nil {
		spec.Expiration = *patch.Expiration
	}
	for k, v := range patch.Labels {
		if spec.Labels == nil {
			spec.Labels = map[string]string{}
		}
		spec.Labels[k] = *v
	}
}

func isNotFound(err error) bool { return errors.Is(err, catalog.ErrNotFound) }

func (s *Store) createTable(ctx context.Context, project string, q Query, ct *sql.CreateTable, at time.Time, stats *Stats) error {
	ref, err := s.target(project, q, ct.Name)
	if ct.Temp {
		ref, err = s.newTemp(ctx, q, ct.Name.Table)
	}
	if err != nil {
		return err
	}
	stats.DDLTargetTable = &ref
	_, err = s.cat.Table(ref.Project, ref.Dataset, ref.Table)
	exists := err == nil
	if err != nil && !isNotFound(err) {
		return err
	}
	if exists && ct.IfNotExists {
		stats.DDLOperation = "SKIP"
		return nil
	}
	var res *sql.Result
	sch := ct.Schema
	if ct.Query != "" {
		if res, err = s.query(ctx, project, q, ct.Query, ct.QueryPos, at); err != nil {
			return err
		}
		stats.BytesProcessed = res.BytesProcessed
		if err := billable(q, res); err != nil {
			return err
		}
		sch = res.Schema
	}
	var patch catalog.TablePatch
	tableOptions(ct.Options, &patch)
	spec := catalog.TableSpec{ProjectID: ref.Project, DatasetID: ref.Dataset, TableID: ref.Table, Schema: sch}
	if ct.PrimaryKey != nil {
		if spec.TableConstraints, err = setPrimaryKey(nil, ct.PrimaryKey, sch, q.SQL, ct.Name.Pos); err != nil {
			return err
		}
	}
	if err := partitioning(ct, sch, q.SQL, &spec.Partitioning); err != nil {
		return err
	}
	applyToSpec(patch, &spec)
	stats.DDLOperation = "CREATE"
	replace := exists && ct.OrReplace
	if exists && !replace {
		if ct.Temp {
			return &catalog.Error{Kind: catalog.ErrExists, Msg: "Already Exists: Table " + ct.Name.Table}
		}
		return s.alreadyExists(ref)
	}
	if !replace && ct.Query == "" {
		// Nothing to write: the create is one catalog change, logged
		// before it (ddlcommit.go).
		if !ct.Temp {
			if err := s.logDDL(project, q, &commitRecord{Kind: commitCreate, Target: &ref}, *stats); err != nil {
				return err
			}
		}
		_, err := s.cat.CreateTable(ctx, spec)
		return skipExisting(err, ct.IfNotExists, stats)
	}
	// A replace, or rows to write: built aside and swapped in
	// (replace.go), so that readers see the old table (or none) until
	// the new one is whole.
	var exp *time.Time
	if patch.Expiration != nil {
		exp = &spec.Expiration
	}
	t, err := s.stageTable(ctx, q, spec)
	if err != nil {
		return err
	}
	if res != nil && len(res.Rows) > 0 {
		cols := make([]int, len(res.Schema.Fields))
		for i := range cols {
			cols[i] = i
		}
		n, err := s.appendRows(ctx, t, []rowGroup{{cols: cols, rows: res.Rows}})
		if err != nil {
			s.dropTable(q.stage)
			return err
		}
		stats.AffectedRows = n
	}
	done := *stats
	if replace {
		done.DDLOperation = "REPLACE"
	}
	// The swap is the statement's change: logged before it (commit.go).
	if err := s.logSwap(project, q, t.ID, ref, done); err != nil {
		s.dropTable(q.stage)
		return err
	}
	// A table created since the check above: OR REPLACE replaces it,
	// IF NOT EXISTS leaves it (the stage dropped by swap).
	if err := s.swap(ctx, q, ref, ct.OrReplace, exp); err != nil {
		stats.AffectedRows = 0
		return skipExisting(err, ct.IfNotExists, stats)
	}
	*stats = done
	return nil
}

// skipExisting is the outcome of a CREATE ... IF NOT EXISTS (ifNotExists)
// whose create failed with err: a table or dataset created by another
// job since the statement checked the name is the statement's SKIP
// (BigQuery: "If any table exists with the same name, the CREATE
// statement has no effect"), not an error.
func skipExisting(err error, ifNotExists bool, stats *Stats) error {
	if err != nil && ifNotExists && errors.Is(err, catalog.ErrExists) {
		stats.DDLOperation = "SKIP"
		return nil
	}
	return err
}

// alreadyExists is the error of creating table ref that exists.
func (s *Store) alreadyExists(ref TableRef) error {
	return &catalog.Error{Kind: catalog.ErrExists, Msg: fmt.Sprintf("Already Exists: Table %s:%s.%s", ref.Project, ref.Dataset, ref.Table)}
}

func (s *Store) drop(ctx context.Context, project string, q Query, st *sql.Statement, stats *Stats) error {
	d := st.Drop
	if d.What == "SCHEMA" {
		p := d.Name.Project
		if p == "" {
			p = project
		}
		stats.DDLTargetDataset = &DatasetRef{Project: p, Dataset: d.Name.Dataset}
		if _, err := s.cat.Dataset(p, d.Name.Dataset); err == nil {
			done := *stats
			done.DDLOperation = "DROP"
			if err := s.logDDL(project, q, &commitRecord{Kind: commitDrop, Dataset: stats.DDLTargetDataset}, done); err != nil {
				return err
			}
		}
		err := s.cat.DeleteDataset(ctx, p, d.Name.Dataset, d.Cascade)
		switch {
		case err == nil:
			stats.DDLOperation = "DROP"
		case d.IfExists && isNotFound(err):
			stats.DDLOperation = "SKIP"
			err = nil
		}
		return err
	}
	ref, err := s.target(project, q, d.Name)
	if err != nil {
		return err
	}
	stats.DDLTargetTable = &ref
	if d.What == "TABLE" {
		// DROP TABLE does not drop a view: DROP VIEW does.
		if ct, err := s.cat.Table(ref.Project, ref.Dataset, ref.Table); err == nil && ct.View != nil {
			return notViewError(q.SQL, d.Name.Pos, ct, true)
		}
	}
	if d.What == "VIEW" {
		if ct, err := s.cat.Table(ref.Project, ref.Dataset, ref.Table); err == nil && ct.View == nil {
			return notViewError(q.SQL, d.Name.Pos, ct, false)
		} else if err != nil && !d.IfExists && isNotFound(err) && strings.HasPrefix(err.Error(), "Not found: Table") {
			return &TableError{NotFound: true, Msg: fmt.Sprintf("Not found: View %s:%s.%s", ref.Project, ref.Dataset, ref.Table)}
		}
	}
	if cur, err := s.cat.Table(ref.Project, ref.Dataset, ref.Table); err == nil {
		done := *stats
		done.DDLOperation = "DROP"
		if err := s.logDDL(project, q, &commitRecord{Kind: commitDrop, Table: cur.ID, Target: &ref}, done); err != nil {
			return err
		}
	}
	err = s.cat.DeleteTable(ctx, ref.Project, ref.Dataset, ref.Table)
	switch {
	case err == nil:
		stats.DDLOperation = "DROP"
	case d.IfExists && isNotFound(err):
		stats.DDLOperation = "SKIP"
		err = nil
	}
	return err
}

func (s *Store) alterTable(ctx context.Context, project string, q Query, st *sql.Statement, stats *Stats) error {
	a := st.AlterTable
	if a.What == "SCHEMA" {
		return s.alterSchema(ctx, project, q, a, stats)
	}
	ref, err := s.target(project, q, a.Name)
	if err != nil {
		return err
	}
	stats.DDLTargetTable = &ref
	cur, err := s.cat.Table(ref.Project, ref.Dataset, ref.Table)
	if err != nil {
		if a.IfExists && isNotFound(err) {
			stats.DDLOperation = "SKIP"
			return nil
		}
		return err
	}
	if (cur.View != nil) != (a.What == "VIEW") {
		return notViewError(q.SQL, a.Name.Pos, cur, cur.View != nil)
	}
	if len(a.Actions) == 1 && a.Actions[0].RenameTo != nil {
		return s.renameTable(ctx, project, q, cur, a.Actions[0], stats)
	}
	var patch catalog.TablePatch
	constraints := cur.TableConstraints
	fields := append([]*schema.Field(nil), cur.Schema().Fields...)
	added := false
	for _, act := range a.Actions {
		switch {
		case act.AddColumn != nil:
			if schema.IndexNames(fields).Lookup(act.AddColumn.Name) >= 0 {
				if act.IfNotExists {
					continue
				}
				return filter.NewError(q.SQL, act.Pos, "Column already exists: %s", act.AddColumn.Name)
			}
			if act.AddColumn.Mode == schema.Required {
				return filter.NewError(q.SQL, act.Pos, "Column %s cannot be added as NOT NULL: existing rows have no value for it", act.AddColumn.Name)
			}
			fields = append(fields, act.AddColumn)
			added = true
		case act.SetOptions != nil:
			tableOptions(act.SetOptions, &patch)
		case act.AddPrimaryKey != nil:
			if hasMember(constraints, "primaryKey") {
				return filter.NewError(q.SQL, act.Pos, "Table %s already has a primary key; drop it first (ALTER TABLE ... DROP PRIMARY KEY)", cur.FullID())
			}
			if constraints, err = setPrimaryKey(constraints, act.AddPrimaryKey, &schema.Schema{Fields: fields}, q.SQL, act.Pos); err != nil {
				return err
			}
			patch.TableConstraints = &constraints
		case act.DropPrimaryKey:
			if !hasMember(constraints, "primaryKey") {
				if act.IfExists {
					continue
				}
				return filter.NewError(q.SQL, act.Pos, "Table %s has no primary key", cur.FullID())
			}
			if constraints, err = setPrimaryKey(constraints, nil, nil, q.SQL, act.Pos); err != nil {
				return err
			}
			patch.TableConstraints = &constraints
		case act.AlterColumn != nil:
			ac := act.AlterColumn
			i := schema.IndexNames(fields).Lookup(ac.Name)
			if i < 0 {
				if act.IfExists {
					continue
				}
				return filter.NewError(q.SQL, act.Pos, "Column %s not found in table %s", ac.Name, cur.FullID())
			}
			f, err := alterColumn(*fields[i], ac, q.SQL, act.Pos)
			if err != nil {
				return err
			}
			fields[i] = f
			added = true
		}
	}
	if added {
		patch.Schema = &schema.Schema{Fields: fields}
	}
	done := *stats
	done.DDLOperation = "ALTER"
	if err := s.logDDL(project, q, &commitRecord{Kind: commitAlter, Target: &ref, ETag: cur.ETag}, done); err != nil {
		return err
	}
	if _, err := s.cat.UpdateTable(ctx, ref.Project, ref.Dataset, ref.Table, patch, ""); err != nil {
		return err
	}
	stats.DDLOperation = "ALTER"
	return nil
}

// renameTable runs ALTER TABLE t RENAME TO name: a move in its dataset
// (catalog.MoveTable: the table keeps its id, rows and metadata).
func (s *Store) renameTable(ctx context.Context, project string, q Query, cur *catalog.Table, act sql.AlterAction, stats *Stats) error {
	n := act.RenameTo
	if (n.Dataset != "" && n.Dataset != cur.DatasetID) || (n.Project != "" && n.Project != cur.ProjectID) {
		return filter.NewError(q.SQL, n.Pos, "ALTER TABLE RENAME TO cannot move table %s to another dataset", cur.FullID())
	}
	to := catalog.TableName{ProjectID: cur.ProjectID, DatasetID: cur.DatasetID, TableID: n.Table}
	done := *stats
	done.DDLOperation = "ALTER"
	if err := s.logDDL(project, q, &commitRecord{Kind: commitRename, Table: cur.ID, Target: &TableRef{to.ProjectID, to.DatasetID, to.TableID}}, done); err != nil {
		return err
	}
	if _, err := s.cat.MoveTable(ctx, cur.ProjectID, cur.DatasetID, cur.TableID, to, catalog.MoveSpec{Expiration: &cur.Expiration}); err != nil {
		return err
	}
	stats.DDLOperation = "ALTER"
	return nil
}

func (s *Store) createSchema(ctx context.Context, project string, q Query, cs *sql.CreateSchema, stats *Stats) error {
	p := cs.Project
	if p == "" {
		p = project
	}
	stats.DDLTargetDataset = &DatasetRef{Project: p, Dataset: cs.Dataset}
	if _, err := s.cat.Dataset(p, cs.Dataset); err == nil {
		if cs.IfNotExists {
			stats.DDLOperation = "SKIP"
			return nil
		}
		// Failed before it logs anything: a logged create whose dataset
		// exists would recover done (ddlcommit.go).
		return &catalog.Error{Kind: catalog.ErrExists, Msg: fmt.Sprintf("Already Exists: Dataset %s:%s", p, cs.Dataset)}
	} else if !isNotFound(err) {
		return err
	}
	ds := catalog.Dataset{ProjectID: p, DatasetID: cs.Dataset}
	for _, o := range cs.Options {
		str, _ := o.Value.(string)
		switch o.Name {
		case "description":
			ds.Description = str
		case "friendly_name":
			ds.FriendlyName = str
		case "location":
			ds.Location = str
		case "default_table_expiration_days":
			if f, ok := o.Value.(float64); ok {
				ds.DefaultTableExpirationMs = int64(f * 24 * 3600 * 1000)
			}
		case "labels":
			ds.Labels, _ = o.Value.(map[string]string)
		}
	}
	done := *stats
	done.DDLOperation = "CREATE"
	if err := s.logDDL(project, q, &commitRecord{Kind: commitCreate, Dataset: stats.DDLTargetDataset}, done); err != nil {
		return err
	}
	if _, err := s.cat.CreateDataset(ctx, ds); err != nil {
		return skipExisting(err, cs.IfNotExists, stats)
	}
	stats.DDLOperation = "CREATE"
	return nil
}

// hasMember reports whether the JSON object obj has member name.
func hasMember(obj json.RawMessage, name string) bool {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(obj, &m)
	_, ok := m[name]
	return ok
}

// setPrimaryKey returns the tableConstraints object constraints with its
// primaryKey set to cols (nil: removed), its other members (foreignKeys)
// kept; every column must be a top-level column of sch. With no member
// left the result is empty (which clears tableConstraints in a patch).
func setPrimaryKey(constraints json.RawMessage, cols []string, sch *schema.Schema, src string, pos int) (json.RawMessage, error) {
	m := map[string]any{}
	if len(constraints) > 0 {
		if err := json.Unmarshal(constraints, &m); err != nil {
			return nil, fmt.Errorf("jobs: stored tableConstraints: %w", err)
		}
	}
	if cols == nil {
		delete(m, "primaryKey")
	} else {
		names := schema.IndexNames(sch.Fields)
		for i, c := range cols {
			j := names.Lookup(c)
			if j < 0 {
				return nil, filter.NewError(src, pos, "Column %s of the primary key is not a column of the table", c)
			}
			cols[i] = sch.Fields[j].Name
		}
		m["primaryKey"] = map[string]any{"columns": cols}
	}
	if len(m) == 0 {
		return json.RawMessage{}, nil
	}
	return json.Marshal(m)
}

// partitionTypes are the column types each PARTITION BY form takes.
var partitionTypes = map[string][]schema.Type{
	"":                {schema.Date},
	"DATE":            {schema.Timestamp, schema.DateTime},
	"DATE_TRUNC":      {schema.Date},
	"DATETIME_TRUNC":  {schema.DateTime},
	"TIMESTAMP_TRUNC": {schema.Timestamp},
	"RANGE":           {schema.Integer},
}

// partitioning checks PARTITION BY and CLUSTER BY against the table's
// schema and sets them as the REST members tables.insert stores.
func partitioning(ct *sql.CreateTable, sch *schema.Schema, src string, out *catalog.Partitioning) error {
	names := schema.IndexNames(sch.Fields)
	if f := ct.PartitionField; f != "" {
		i := names.Lookup(f)
		if i < 0 {
			return filter.NewError(src, ct.PartitionPos, "Unrecognized name: %s", f)
		}
		fd := sch.Fields[i]
		if fd.EffectiveMode() == schema.Repeated || !slices.Contains(partitionTypes[ct.PartitionType], fd.Type) {
			return filter.NewError(src, ct.PartitionPos, "PARTITION BY expression cannot use column %s of type %s", fd.Name, sql.TypeName(fd.Type))
		}
	}
	out.TimePartitioning, out.RangePartitioning = ct.TimePartitioning, ct.RangePartitioning
	if len(ct.ClusterBy) > 0 {
		for _, c := range ct.ClusterBy {
			i := names.Lookup(c)
			if i < 0 {
				return filter.NewError(src, ct.ClusterPos, "Unrecognized name: %s", c)
			}
			if f := sch.Fields[i]; f.EffectiveMode() == schema.Repeated || f.Type == schema.Record || f.Type == schema.Float {
				return filter.NewError(src, ct.ClusterPos, "CLUSTER BY cannot use column %s of type %s", f.Name, sql.TypeName(f.Type))
			}
		}
		b, err := json.Marshal(map[string][]string{"fields": ct.ClusterBy})
		if err != nil {
			return err
		}
		out.Clustering = b
	}
	return nil
}

// alterColumn returns column f changed by ALTER COLUMN; the catalog then
// checks the change as it checks tables.patch (a relaxed mode, a new
// description or default, a longer maxLength; not a new type).
func alterColumn(f schema.Field, ac *sql.AlterColumn, src string, pos int) (*schema.Field, error) {
	switch {
	case ac.Options != nil:
		for _, o := range ac.Options {
			str, _ := o.Value.(string)
			f.Description = str
		}
	case ac.DropNotNull:
		if f.Mode == schema.Required {
			f.Mode = schema.Nullable
		}
	case ac.DropDefault:
		f.DefaultValueExpression = ""
	case ac.SetDefault != "":
		f.DefaultValueExpression = ac.SetDefault
		if _, err := protorows.CompileDefault(&f); err != nil {
			return nil, filter.NewError(src, ac.DefaultPos, "Invalid default value for column %s: %s", f.Name, strings.TrimPrefix(err.Error(), "default value expression "))
		}
	case ac.SetType != nil:
		if ac.SetType.Mode == schema.Repeated || f.Mode == schema.Repeated || f.Type == schema.Record {
			return nil, filter.NewError(src, pos, "ALTER COLUMN %s SET DATA TYPE: only scalar columns can change type", f.Name)
		}
		if widens[[2]schema.Type{f.Type, ac.SetType.Type}] {
			// BigQuery allows it; the engine keeps a column's stored
			// type (its schema versions only add columns).
			return nil, filter.NewError(src, pos, "not supported yet by bqstore: ALTER COLUMN SET DATA TYPE from %s to %s", sql.TypeName(f.Type), sql.TypeName(ac.SetType.Type))
		}
		f.Type, f.MaxLength, f.Precision, f.Scale = ac.SetType.Type, ac.SetType.MaxLength, ac.SetType.Precision, ac.SetType.Scale
	}
	return &f, nil
}

// widens are the type changes BigQuery's ALTER COLUMN SET DATA TYPE
// makes (its coercions of a column's values), from, to.
var widens = map[[2]schema.Type]bool{
	{schema.Integer, schema.Numeric}: true, {schema.Integer, schema.BigNumeric}: true, {schema.Integer, schema.Float}: true,
	{schema.Numeric, schema.BigNumeric}: true, {schema.Numeric, schema.Float}: true,
}

// alterSchema runs ALTER SCHEMA ... SET OPTIONS.
func (s *Store) alterSchema(ctx context.Context, project string, q Query, a *sql.AlterTable, stats *Stats) error {
	p := a.Name.Project
	if p == "" {
		p = project
	}
	stats.DDLTargetDataset = &DatasetRef{Project: p, Dataset: a.Name.Dataset}
	var patch catalog.DatasetPatch
	for _, act := range a.Actions {
		for _, o := range act.SetOptions {
			str, _ := o.Value.(string)
			switch o.Name {
			case "description":
				patch.Description = &str
			case "friendly_name":
				patch.FriendlyName = &str
			case "location":
				if ds, err := s.cat.Dataset(p, a.Name.Dataset); err == nil && !strings.EqualFold(ds.Location, str) {
					return &TableError{Msg: fmt.Sprintf("Cannot change the location of dataset %s", ds.FullID())}
				}
			case "default_table_expiration_days":
				ms := int64(0)
				if f, ok := o.Value.(float64); ok {
					ms = int64(f * 24 * 3600 * 1000)
				}
				patch.DefaultTableExpirationMs = &ms
			case "labels":
				patch.Labels, patch.ReplaceLabels = labelPatch(o.Value), true
			}
		}
	}
	if ds, err := s.cat.Dataset(p, a.Name.Dataset); err == nil {
		done := *stats
		done.DDLOperation = "ALTER"
		if err := s.logDDL(project, q, &commitRecord{Kind: commitAlter, Dataset: stats.DDLTargetDataset, ETag: ds.ETag}, done); err != nil {
			return err
		}
	}
	if _, err := s.cat.PatchDataset(ctx, p, a.Name.Dataset, patch, ""); err != nil {
		if a.IfExists && isNotFound(err) {
			stats.DDLOperation = "SKIP"
			return nil
		}
		return err
	}
	stats.DDLOperation = "ALTER"
	return nil
}

// dropRows is the sink of a script's query that is neither its result
// nor a child job's (no script record: q.script nil): the rows go
// nowhere.
type dropRows struct{}

func (dropRows) Begin(context.Context, *schema.Schema) error { return nil }
func (dropRows) Write(context.Context, [][]any) error        { return nil }
