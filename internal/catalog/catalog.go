package catalog

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/bqstore/bqstore/internal/schema"
)

// Sentinel errors. Every error the catalog returns for a caller's mistake
// is an *Error that wraps one of them; its message is the one BigQuery's
// REST API would give ("Not found: Table p:d.t").
var (
	ErrNotFound     = errors.New("catalog: not found")
	ErrExists       = errors.New("catalog: already exists")
	ErrInvalid      = errors.New("catalog: invalid")
	ErrPrecondition = errors.New("catalog: precondition failed")
	// ErrInUse is a dataset that still has tables, deleted without
	// deleteContents.
	ErrInUse = errors.New("catalog: in use")
	// ErrCorrupt is a CATALOG file that fails its checksum or cannot be
	// decoded.
	ErrCorrupt = errors.New("catalog: corrupt")
)

// Error is a catalog error with a message for API users. Unwrap gives the
// sentinel (ErrNotFound, ErrExists, ErrInvalid, ErrPrecondition, ErrInUse).
type Error struct {
	Kind error
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns the sentinel.
func (e *Error) Unwrap() error { return e.Kind }

// Bounds of expiration times: the latest timestamp BigQuery represents
// (9999-12-31 23:59:59.999 UTC, in milliseconds), and the longest default
// table expiration, such that now plus it stays a valid time.Duration and
// a valid timestamp (about 292 years).
const (
	MaxTimestampMs              = 253402300799999
	MaxDefaultTableExpirationMs = int64(1<<63-1) / int64(time.Millisecond)
)

func invalidf(format string, args ...any) *Error {
	return &Error{Kind: ErrInvalid, Msg: fmt.Sprintf(format, args...)}
}

// DefaultLocation is the location of a dataset created without one.
const DefaultLocation = "US"

// Project is a project: a namespace for datasets, created on first use.
type Project struct {
	ID      string    `json:"id"`
	Created time.Time `json:"creationTime"`
}

// Dataset is a dataset's metadata.
type Dataset struct {
	ProjectID    string            `json:"projectId"`
	DatasetID    string            `json:"datasetId"`
	Location     string            `json:"location"`
	Description  string            `json:"description,omitempty"`
	FriendlyName string            `json:"friendlyName,omitempty"`
	Labels       map[string]string `json:"labels,omitempty"`
	// DefaultTableExpirationMs (milliseconds) sets the expiration time of
	// tables created in the dataset without one. bqstore stores and
	// echoes expiration times but does not delete expired tables.
	DefaultTableExpirationMs int64     `json:"defaultTableExpirationMs,omitempty"`
	ETag                     string    `json:"etag"`
	Created                  time.Time `json:"creationTime"`
	Modified                 time.Time `json:"lastModifiedTime"`
}

// Table is a table's metadata with every version of its schema. Tables
// returned by the catalog are copies, except the *schema.Schema values in
// Schemas, which are shared and must not be modified.
type Table struct {
	// ID is the internal id: 32 hex digits, unique for the life of the
	// data directory (a re-created table gets a new one). The storage
	// engine names the table's directory after it.
	ID           string            `json:"id"`
	ProjectID    string            `json:"projectId"`
	DatasetID    string            `json:"datasetId"`
	TableID      string            `json:"tableId"`
	Location     string            `json:"location"`
	Description  string            `json:"description,omitempty"`
	FriendlyName string            `json:"friendlyName,omitempty"`
	Labels       map[string]string `json:"labels,omitempty"`
	// Expiration is stored and echoed; the zero time means never.
	// bqstore does not delete expired tables.
	Expiration time.Time `json:"expirationTime,omitzero"`
	// Partitioning is the table's partitioning and clustering members
	// as the client sent them, stored and echoed: bqstore neither
	// partitions nor clusters.
	Partitioning
	// View is set for a logical view (type VIEW): its query. Its schema
	// is the query's result schema when the view was created.
	View *View `json:"view,omitempty"`
	// TableConstraints is the REST tableConstraints member (primary and
	// foreign keys, NOT ENFORCED), a compact JSON object, stored and
	// echoed; nil when the table has none.
	TableConstraints json.RawMessage `json:"tableConstraints,omitempty"`
	ETag             string          `json:"etag"`
	Created          time.Time       `json:"creationTime"`
	Modified         time.Time       `json:"lastModifiedTime"`
	// Schemas holds every schema the table has had, oldest first.
	// Invariant: len(Schemas) >= 1 and Schemas[i].Version == i+1.
	Schemas []SchemaVersion `json:"schemas"`
}

// Partitioning holds a table's timePartitioning, rangePartitioning and
// clustering members of BigQuery's Table resource, each a compact JSON
// object as the client sent it, or nil when the table has none.
type Partitioning struct {
	TimePartitioning  json.RawMessage `json:"timePartitioning,omitempty"`
	RangePartitioning json.RawMessage `json:"rangePartitioning,omitempty"`
	Clustering        json.RawMessage `json:"clustering,omitempty"`
}

// View is a logical view's definition. bqstore runs GoogleSQL only, so
// UseLegacySQL is always false.
type View struct {
	Query        string `json:"query"`
	UseLegacySQL bool   `json:"useLegacySql"`
}

// SchemaVersion is one schema of a table and the time it took effect.
type SchemaVersion struct {
	Version int            `json:"version"`
	Time    time.Time      `json:"time"`
	Schema  *schema.Schema `json:"schema"`
}

// Schema returns the table's current schema. The caller must not modify
// it.
func (t *Table) Schema() *schema.Schema { return t.Schemas[len(t.Schemas)-1].Schema }

// SchemaAt returns the schema in effect at time ts: the last version whose
// time is not after ts, or the first version for earlier times.
func (t *Table) SchemaAt(ts time.Time) SchemaVersion {
	v := t.Schemas[0]
	for _, s := range t.Schemas[1:] {
		if s.Time.After(ts) {
			break
		}
		v = s
	}
	return v
}

// FullID is the table's id as BigQuery prints it: "p:d.t".
func (t *Table) FullID() string { return t.ProjectID + ":" + t.DatasetID + "." + t.TableID }

// FullID is the dataset's id as BigQuery prints it: "p:d".
func (d *Dataset) FullID() string { return d.ProjectID + ":" + d.DatasetID }

func (t *Table) clone() *Table {
	c := *t
	c.Labels = maps.Clone(t.Labels)
	c.Schemas = slices.Clone(t.Schemas)
	if t.View != nil {
		v := *t.View
		c.View = &v
	}
	return &c
}

func (d *Dataset) clone() *Dataset {
	c := *d
	c.Labels = maps.Clone(d.Labels)
	return &c
}

// Observer is told about table changes after they are durable; see the
// package documentation.
type Observer interface {
	TableCreated(t *Table) error
	TableSchemaChanged(t *Table) error
	TableDropped(t *Table) error
}

// Options configures Open.
type Options struct {
	// Now is the clock. Default time.Now. Times are kept to the
	// millisecond, as BigQuery reports them.
	Now func() time.Time
	// Rand is the source of table ids and etags. Default crypto/rand.
	Rand io.Reader
	// Observer, if set, is told about table changes.
	Observer Observer
	// FS is the file system. Default the operating system's.
	FS FS
	// StorageGone, if set, reports whether the storage of the deleted
	// table id is gone for good (the engine's drop is durable). A
	// checkpoint forgets the tombstones of such ids, so that they do not
	// accumulate; without it tombstones are kept forever. Called with
	// the catalog's write lock held.
	StorageGone func(id string) bool

	// checkpointBytes overrides defaultCheckpointBytes (tests).
	checkpointBytes int64
}

// Catalog is the catalog of one data directory. See the package
// documentation for the durability and concurrency contract.
type Catalog struct {
	dir  string
	opts Options

	// writeMu serializes mutations, including their file writes and
	// observer calls.
	writeMu sync.Mutex
	// dur is the state of the files. Guarded by writeMu.
	dur durable
	mu  struct {
		sync.RWMutex
		// state is immutable once published; mutations build a new one.
		state *state
	}
}

// state is one version of the whole catalog. Values are shared between
// versions and never modified after publication.
type state struct {
	projects map[string]*Project
	datasets map[dsKey]*Dataset
	tables   map[tKey]*Table
	byID     map[string]*Table
	// dropped holds the internal ids of deleted tables (tombstones):
	// start-up reconciliation finishes the engine's drop of these ids,
	// and quarantines rather than drops an engine table whose id is
	// neither here nor in byID. Invariant: no id is in both.
	dropped map[string]struct{}
}

type dsKey struct{ p, d string }
type tKey struct{ p, d, t string }

func (s *state) copy() *state {
	return &state{
		projects: maps.Clone(s.projects),
		datasets: maps.Clone(s.datasets),
		tables:   maps.Clone(s.tables),
		byID:     maps.Clone(s.byID),
		dropped:  maps.Clone(s.dropped),
	}
}

// Open opens (or creates) the catalog in dir.
func Open(dir string, opts Options) (*Catalog, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Rand == nil {
		opts.Rand = rand.Reader
	}
	if opts.FS == nil {
		opts.FS = osFS{}
	}
	c := &Catalog{dir: dir, opts: opts}
	st, err := c.load()
	if err != nil {
		return nil, err
	}
	c.mu.state = st
	return c, nil
}

func (c *Catalog) now() time.Time { return c.opts.Now().UTC().Truncate(time.Millisecond) }

func (c *Catalog) current() *state {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.mu.state
}

// commitLocked makes next durable and publishes it. On error nothing is
// published; the file holds either the old or the new catalog.
// REQUIRES: c.writeMu held.
func (c *Catalog) commitLocked(next *state) error {
	if err := c.commitDurable(c.current(), next); err != nil {
		return err
	}
	c.mu.Lock()
	c.mu.state = next
	c.mu.Unlock()
	return nil
}

func (c *Catalog) newID(n int) (string, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(c.opts.Rand, b); err != nil {
		return "", fmt.Errorf("catalog: random id: %w", err)
	}
	return hex.EncodeToString(b), nil
}

func (c *Catalog) newETag() (string, error) {
	b := make([]byte, 12)
	if _, err := io.ReadFull(c.opts.Rand, b); err != nil {
		return "", fmt.Errorf("catalog: random etag: %w", err)
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

func notFoundDataset(p, d string) error {
	return &Error{Kind: ErrNotFound, Msg: fmt.Sprintf("Not found: Dataset %s:%s", p, d)}
}

func notFoundTable(p, d, t string) error {
	return &Error{Kind: ErrNotFound, Msg: fmt.Sprintf("Not found: Table %s:%s.%s", p, d, t)}
}

// ensureProject adds project p to next if it is new.
func (c *Catalog) ensureProject(next *state, p string, now time.Time) (added bool, err error) {
	if err := ValidateProjectID(p); err != nil {
		return false, err
	}
	if _, ok := next.projects[p]; ok {
		return false, nil
	}
	next.projects[p] = &Project{ID: p, Created: now}
	return true, nil
}

// EnsureProject creates project p if it does not exist yet.
func (c *Catalog) EnsureProject(ctx context.Context, p string) error {
	if err := ValidateProjectID(p); err != nil {
		return err
	}
	if _, ok := c.current().projects[p]; ok {
		return nil
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	next := c.current().copy()
	added, err := c.ensureProject(next, p, c.now())
	if err != nil || !added {
		return err
	}
	return c.commitLocked(next)
}

// Projects lists the projects, sorted by id.
func (c *Catalog) Projects() []Project {
	st := c.current()
	out := make([]Project, 0, len(st.projects))
	for _, p := range st.projects {
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b Project) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func validateDatasetRef(p, d string) error {
	if err := ValidateProjectID(p); err != nil {
		return err
	}
	return ValidateDatasetID(d)
}

func validateTableRef(p, d, t string) error {
	if err := validateDatasetRef(p, d); err != nil {
		return err
	}
	return ValidateTableID(t)
}

// CreateDataset creates a dataset from ds (ProjectID, DatasetID, Location,
// Description, FriendlyName, Labels, DefaultTableExpirationMs; the rest is
// set by the catalog) and returns it. The project is created if new.
func (c *Catalog) CreateDataset(ctx context.Context, ds Dataset) (*Dataset, error) {
	if err := validateDatasetRef(ds.ProjectID, ds.DatasetID); err != nil {
		return nil, err
	}
	if err := validateMeta(ds.Description, ds.FriendlyName, ds.Labels); err != nil {
		return nil, err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	next := c.current().copy()
	k := dsKey{ds.ProjectID, ds.DatasetID}
	if _, ok := next.datasets[k]; ok {
		return nil, &Error{Kind: ErrExists, Msg: fmt.Sprintf("Already Exists: Dataset %s:%s", ds.ProjectID, ds.DatasetID)}
	}
	now := c.now()
	if _, err := c.ensureProject(next, ds.ProjectID, now); err != nil {
		return nil, err
	}
	etag, err := c.newETag()
	if err != nil {
		return nil, err
	}
	n := ds.clone()
	if n.Location == "" {
		n.Location = DefaultLocation
	}
	n.ETag, n.Created, n.Modified = etag, now, now
	next.datasets[k] = n
	if err := c.commitLocked(next); err != nil {
		return nil, err
	}
	return n.clone(), nil
}

// Dataset returns dataset p:d.
func (c *Catalog) Dataset(p, d string) (*Dataset, error) {
	ds, ok := c.current().datasets[dsKey{p, d}]
	if !ok {
		return nil, notFoundDataset(p, d)
	}
	return ds.clone(), nil
}

// ListDatasets returns the datasets of project p, sorted by id. An unknown
// project has none.
func (c *Catalog) ListDatasets(p string) []*Dataset {
	var out []*Dataset
	for k, ds := range c.current().datasets {
		if k.p == p {
			out = append(out, ds.clone())
		}
	}
	slices.SortFunc(out, func(a, b *Dataset) int { return strings.Compare(a.DatasetID, b.DatasetID) })
	return out
}

// DatasetPatch is a change to a dataset's metadata. Nil fields are left
// alone. In Labels a nil value deletes the label; with ReplaceLabels the
// labels become exactly the non-nil entries.
type DatasetPatch struct {
	Description              *string
	FriendlyName             *string
	Location                 *string
	DefaultTableExpirationMs *int64
	Labels                   map[string]*string
	ReplaceLabels            bool
}

// PatchDataset applies patch to dataset p:d. A non-empty ifMatch must equal
// the dataset's etag (else ErrPrecondition). The location cannot change.
func (c *Catalog) PatchDataset(ctx context.Context, p, d string, patch DatasetPatch, ifMatch string) (*Dataset, error) {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	next := c.current().copy()
	k := dsKey{p, d}
	old, ok := next.datasets[k]
	if !ok {
		return nil, notFoundDataset(p, d)
	}
	if ifMatch != "" && ifMatch != old.ETag {
		return nil, &Error{Kind: ErrPrecondition, Msg: "Precondition check failed."}
	}
	n := old.clone()
	if patch.Location != nil && *patch.Location != "" && !strings.EqualFold(*patch.Location, old.Location) {
		return nil, invalidf("Cannot change location of dataset %s:%s from %s to %s", p, d, old.Location, *patch.Location)
	}
	if patch.Description != nil {
		n.Description = *patch.Description
	}
	if patch.FriendlyName != nil {
		n.FriendlyName = *patch.FriendlyName
	}
	if patch.DefaultTableExpirationMs != nil {
		if *patch.DefaultTableExpirationMs < 0 || *patch.DefaultTableExpirationMs > MaxDefaultTableExpirationMs {
			return nil, invalidf("Invalid defaultTableExpirationMs %d", *patch.DefaultTableExpirationMs)
		}
		n.DefaultTableExpirationMs = *patch.DefaultTableExpirationMs
	}
	n.Labels = applyLabels(n.Labels, patch.Labels, patch.ReplaceLabels)
	if err := validateMeta(n.Description, n.FriendlyName, n.Labels); err != nil {
		return nil, err
	}
	etag, err := c.newETag()
	if err != nil {
		return nil, err
	}
	n.ETag, n.Modified = etag, c.now()
	next.datasets[k] = n
	if err := c.commitLocked(next); err != nil {
		return nil, err
	}
	return n.clone(), nil
}

// DeleteDataset deletes dataset p:d. A dataset with tables is deleted only
// with deleteContents (else ErrInUse); its tables are dropped with it.
func (c *Catalog) DeleteDataset(ctx context.Context, p, d string, deleteContents bool) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	next := c.current().copy()
	k := dsKey{p, d}
	if _, ok := next.datasets[k]; !ok {
		return notFoundDataset(p, d)
	}
	var dropped []*Table
	for tk, t := range next.tables {
		if tk.p == p && tk.d == d {
			dropped = append(dropped, t)
		}
	}
	if len(dropped) > 0 && !deleteContents {
		return &Error{Kind: ErrInUse, Msg: fmt.Sprintf("Dataset %s:%s is still in use", p, d)}
	}
	slices.SortFunc(dropped, func(a, b *Table) int { return strings.Compare(a.TableID, b.TableID) })
	for _, t := range dropped {
		next.dropTable(t)
	}
	delete(next.datasets, k)
	if err := c.commitLocked(next); err != nil {
		return err
	}
	var errs []error
	if o := c.opts.Observer; o != nil {
		for _, t := range dropped {
			if err := o.TableDropped(t.clone()); err != nil {
				errs = append(errs, fmt.Errorf("catalog: drop table %s: %w", t.FullID(), err))
			}
		}
	}
	return errors.Join(errs...)
}

// TableSpec is what CreateTable takes: the table's name, schema and
// metadata.
type TableSpec struct {
	ProjectID, DatasetID, TableID string
	Schema                        *schema.Schema
	Description                   string
	FriendlyName                  string
	Labels                        map[string]string
	Expiration                    time.Time
	Partitioning                  Partitioning
	View                          *View
	TableConstraints              json.RawMessage
}

// CreateTable creates a table in an existing dataset. The schema is
// normalized and validated (a nil schema is a table without columns).
func (c *Catalog) CreateTable(ctx context.Context, spec TableSpec) (*Table, error) {
	if err := validateTableRef(spec.ProjectID, spec.DatasetID, spec.TableID); err != nil {
		return nil, err
	}
	sch, err := schema.Normalize(spec.Schema)
	if err != nil {
		return nil, schemaError(err)
	}
	if err := validateMeta(spec.Description, spec.FriendlyName, spec.Labels); err != nil {
		return nil, err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	cur := c.current()
	next := cur.copy()
	ds, ok := next.datasets[dsKey{spec.ProjectID, spec.DatasetID}]
	if !ok {
		return nil, notFoundDataset(spec.ProjectID, spec.DatasetID)
	}
	k := tKey{spec.ProjectID, spec.DatasetID, spec.TableID}
	if _, ok := next.tables[k]; ok {
		return nil, &Error{Kind: ErrExists, Msg: fmt.Sprintf("Already Exists: Table %s:%s.%s", spec.ProjectID, spec.DatasetID, spec.TableID)}
	}
	id, err := c.newID(16)
	if err != nil {
		return nil, err
	}
	if _, dup := next.byID[id]; dup || next.isDropped(id) {
		return nil, fmt.Errorf("catalog: random table id %s collides", id)
	}
	etag, err := c.newETag()
	if err != nil {
		return nil, err
	}
	now := c.now()
	t := &Table{
		ID: id, ProjectID: spec.ProjectID, DatasetID: spec.DatasetID, TableID: spec.TableID,
		Location: ds.Location, Description: spec.Description, FriendlyName: spec.FriendlyName,
		Labels: maps.Clone(spec.Labels), Expiration: spec.Expiration.UTC().Truncate(time.Millisecond),
		Partitioning: spec.Partitioning, TableConstraints: spec.TableConstraints,
		ETag: etag, Created: now, Modified: now,
		Schemas: []SchemaVersion{{Version: 1, Time: now, Schema: sch}},
	}
	if spec.View != nil {
		v := *spec.View
		t.View = &v
	}
	if spec.Expiration.IsZero() {
		t.Expiration = time.Time{}
		if ds.DefaultTableExpirationMs > 0 && ds.DefaultTableExpirationMs <= MaxDefaultTableExpirationMs {
			// The dataset's default applies to tables created without
			// an expiration, as in BigQuery.
			t.Expiration = now.Add(time.Duration(ds.DefaultTableExpirationMs) * time.Millisecond)
		}
	}
	next.tables[k] = t
	next.byID[id] = t
	if err := c.commitLocked(next); err != nil {
		return nil, err
	}
	if o := c.opts.Observer; o != nil {
		if oerr := o.TableCreated(t.clone()); oerr != nil {
			// Roll back: the table must not exist without its
			// storage. Its id is tombstoned (as replaying the log's
			// drop record does), so that start-up drops whatever
			// part of its storage the engine made.
			back := cur.copy()
			back.dropped[t.ID] = struct{}{}
			if err := c.commitLocked(back); err != nil {
				return nil, fmt.Errorf("catalog: create table %s: %w (and the rollback failed: %v)", t.FullID(), oerr, err)
			}
			return nil, fmt.Errorf("catalog: create table %s: %w", t.FullID(), oerr)
		}
	}
	return t.clone(), nil
}

func schemaError(err error) error {
	var ie *schema.InvalidError
	if errors.As(err, &ie) {
		return &Error{Kind: ErrInvalid, Msg: ie.Msg}
	}
	return err
}

// Table returns table p:d.t.
func (c *Catalog) Table(p, d, t string) (*Table, error) {
	st := c.current()
	tb, ok := st.tables[tKey{p, d, t}]
	if !ok {
		if _, ok := st.datasets[dsKey{p, d}]; !ok {
			return nil, notFoundDataset(p, d)
		}
		return nil, notFoundTable(p, d, t)
	}
	return tb.clone(), nil
}

// TableByID returns the table with internal id id.
func (c *Catalog) TableByID(id string) (*Table, error) {
	tb, ok := c.current().byID[id]
	if !ok {
		return nil, &Error{Kind: ErrNotFound, Msg: fmt.Sprintf("Not found: Table with id %s", id)}
	}
	return tb.clone(), nil
}

// ListTables returns the tables of dataset p:d, sorted by id.
func (c *Catalog) ListTables(p, d string) ([]*Table, error) {
	st := c.current()
	if _, ok := st.datasets[dsKey{p, d}]; !ok {
		return nil, notFoundDataset(p, d)
	}
	var out []*Table
	for k, t := range st.tables {
		if k.p == p && k.d == d {
			out = append(out, t.clone())
		}
	}
	slices.SortFunc(out, func(a, b *Table) int { return strings.Compare(a.TableID, b.TableID) })
	return out, nil
}

// Tables returns every table, sorted by project, dataset and table id (for
// the server's start-up reconciliation with the storage engine).
func (c *Catalog) Tables() []*Table {
	st := c.current()
	out := make([]*Table, 0, len(st.tables))
	for _, t := range st.tables {
		out = append(out, t.clone())
	}
	slices.SortFunc(out, func(a, b *Table) int {
		return strings.Compare(a.ProjectID+"\x00"+a.DatasetID+"\x00"+a.TableID, b.ProjectID+"\x00"+b.DatasetID+"\x00"+b.TableID)
	})
	return out
}

// TablePatch is a change to a table. Nil fields are left alone. In Labels a
// nil value deletes the label; with ReplaceLabels the labels become
// exactly the non-nil entries. Expiration set to the zero time clears it.
// A Schema must be an allowed evolution of the current one
// (schema.CheckEvolution); it becomes a new schema version if it differs.
type TablePatch struct {
	Description   *string
	FriendlyName  *string
	Labels        map[string]*string
	ReplaceLabels bool
	Expiration    *time.Time
	Schema        *schema.Schema
	// TimePartitioning, RangePartitioning, Clustering and
	// TableConstraints, when set, replace the table's member (an empty
	// value clears it).
	TimePartitioning, RangePartitioning, Clustering, TableConstraints *json.RawMessage
	// View, when set, replaces a view's definition (the table must be a
	// view), and Schema, then required, is its new query's result
	// schema: it replaces the view's schema whatever the change, since
	// a view stores no rows that an older schema would have to read.
	View *View
}

// UpdateTable applies patch to table p:d.t. A non-empty ifMatch must equal
// the table's etag (else ErrPrecondition). Every update gets a new etag
// and last-modified time.
func (c *Catalog) UpdateTable(ctx context.Context, p, d, t string, patch TablePatch, ifMatch string) (*Table, error) {
	var newSchema *schema.Schema
	if patch.Schema != nil {
		s, err := schema.Normalize(patch.Schema)
		if err != nil {
			return nil, schemaError(err)
		}
		newSchema = s
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	next := c.current().copy()
	k := tKey{p, d, t}
	old, ok := next.tables[k]
	if !ok {
		if _, ok := next.datasets[dsKey{p, d}]; !ok {
			return nil, notFoundDataset(p, d)
		}
		return nil, notFoundTable(p, d, t)
	}
	if ifMatch != "" && ifMatch != old.ETag {
		return nil, &Error{Kind: ErrPrecondition, Msg: "Precondition check failed."}
	}
	n := old.clone()
	now := c.now()
	schemaChanged := false
	if patch.View != nil {
		if old.View == nil {
			return nil, &Error{Kind: ErrInvalid, Msg: fmt.Sprintf("Invalid value for table.view: %s is a table, not a view", old.FullID())}
		}
		if newSchema == nil {
			return nil, fmt.Errorf("catalog: a new view definition of %s without its schema", old.FullID())
		}
		v := *patch.View
		n.View = &v
		// The last version is edited in place (n.Schemas is n's own
		// copy): no reader or writer decodes a view's rows.
		cur := n.Schemas[len(n.Schemas)-1]
		cur.Schema = newSchema
		n.Schemas[len(n.Schemas)-1] = cur
	} else if newSchema != nil {
		if err := schema.CheckEvolution(old.Schema(), newSchema); err != nil {
			return nil, &Error{Kind: ErrInvalid, Msg: fmt.Sprintf("Provided Schema does not match Table %s. %s", old.FullID(), err.Error())}
		}
		switch {
		case schemaEqual(old.Schema(), newSchema):
		case fieldsEqualBut(old.Schema().Fields, newSchema.Fields, false):
			// Only column descriptions changed: nothing a reader or a
			// writer decodes with, so the current version is edited
			// in place instead of copying the whole schema into a new
			// version (60 description PATCHes of a 3,000-column table
			// grew the catalog to 195 MB). n.Schemas is n's own copy.
			cur := n.Schemas[len(n.Schemas)-1]
			cur.Schema = newSchema
			n.Schemas[len(n.Schemas)-1] = cur
		default:
			n.Schemas = append(n.Schemas, SchemaVersion{Version: len(n.Schemas) + 1, Time: now, Schema: newSchema})
			schemaChanged = true
		}
	}
	if patch.Description != nil {
		n.Description = *patch.Description
	}
	if patch.FriendlyName != nil {
		n.FriendlyName = *patch.FriendlyName
	}
	if patch.Expiration != nil {
		n.Expiration = time.Time{}
		if !patch.Expiration.IsZero() {
			n.Expiration = patch.Expiration.UTC().Truncate(time.Millisecond)
		}
	}
	for _, m := range [...]struct{ dst, src *json.RawMessage }{
		{&n.TimePartitioning, patch.TimePartitioning},
		{&n.RangePartitioning, patch.RangePartitioning},
		{&n.Clustering, patch.Clustering},
		{&n.TableConstraints, patch.TableConstraints},
	} {
		if m.src != nil {
			*m.dst = *m.src
			if len(*m.dst) == 0 {
				*m.dst = nil
			}
		}
	}
	n.Labels = applyLabels(n.Labels, patch.Labels, patch.ReplaceLabels)
	if err := validateMeta(n.Description, n.FriendlyName, n.Labels); err != nil {
		return nil, err
	}
	etag, err := c.newETag()
	if err != nil {
		return nil, err
	}
	n.ETag, n.Modified = etag, now
	next.tables[k] = n
	next.byID[n.ID] = n
	if err := c.commitLocked(next); err != nil {
		return nil, err
	}
	if o := c.opts.Observer; o != nil && schemaChanged {
		if err := o.TableSchemaChanged(n.clone()); err != nil {
			return nil, fmt.Errorf("catalog: schema change of %s: %w", n.FullID(), err)
		}
	}
	return n.clone(), nil
}

// DeleteTable deletes table p:d.t.
func (c *Catalog) DeleteTable(ctx context.Context, p, d, t string) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	next := c.current().copy()
	k := tKey{p, d, t}
	old, ok := next.tables[k]
	if !ok {
		if _, ok := next.datasets[dsKey{p, d}]; !ok {
			return notFoundDataset(p, d)
		}
		return notFoundTable(p, d, t)
	}
	next.dropTable(old)
	if err := c.commitLocked(next); err != nil {
		return err
	}
	if o := c.opts.Observer; o != nil {
		if err := o.TableDropped(old.clone()); err != nil {
			return fmt.Errorf("catalog: drop table %s: %w", old.FullID(), err)
		}
	}
	return nil
}

func applyLabels(cur map[string]string, patch map[string]*string, replace bool) map[string]string {
	if replace {
		cur = nil
	}
	if len(patch) == 0 {
		return cur
	}
	out := maps.Clone(cur)
	if out == nil {
		out = make(map[string]string, len(patch))
	}
	for k, v := range patch {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = *v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// MaxDescriptionLen is the longest dataset or table description (and
// friendly name), in characters: BigQuery's limit for table descriptions.
const MaxDescriptionLen = 16384

func validateMeta(description, friendlyName string, labels map[string]string) error {
	if utf8.RuneCountInString(description) > MaxDescriptionLen {
		return invalidf("The description is longer than %d characters", MaxDescriptionLen)
	}
	if utf8.RuneCountInString(friendlyName) > MaxDescriptionLen {
		return invalidf("The friendly name is longer than %d characters", MaxDescriptionLen)
	}
	return validateLabels(labels)
}

// validateLabels applies BigQuery's label rules: at most 64 labels; keys
// 1-63 characters of lowercase letters, digits, underscores and dashes,
// starting with a letter; values at most 63 such characters.
func validateLabels(l map[string]string) error {
	if len(l) > 64 {
		return invalidf("Too many labels: %d (at most 64)", len(l))
	}
	for k, v := range l {
		if !labelText(k, true) {
			return invalidf("Invalid label key %q: keys are 1-63 lowercase letters, digits, underscores or dashes and start with a lowercase letter", printable(k))
		}
		if !labelText(v, false) {
			return invalidf("Invalid value %q for label %q: values are at most 63 lowercase letters, digits, underscores or dashes", printable(v), k)
		}
	}
	return nil
}

func labelText(s string, key bool) bool {
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) > 63 || (key && s == "") {
		return false
	}
	for i, r := range s {
		lower := unicode.IsLetter(r) && !unicode.IsUpper(r) && !unicode.IsTitle(r)
		if key && i == 0 && !lower {
			return false
		}
		if !lower && !unicode.IsDigit(r) && r != '_' && r != '-' {
			return false
		}
	}
	return true
}

func schemaEqual(a, b *schema.Schema) bool {
	return fieldsEqual(a.Fields, b.Fields)
}

func fieldsEqual(a, b []*schema.Field) bool { return fieldsEqualBut(a, b, true) }

// fieldsEqualBut compares fields, their descriptions only when withDesc.
func fieldsEqualBut(a, b []*schema.Field, withDesc bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Name != y.Name || x.Type != y.Type || x.Mode != y.Mode || (withDesc && x.Description != y.Description) ||
			x.MaxLength != y.MaxLength || x.Precision != y.Precision || x.Scale != y.Scale ||
			x.DefaultValueExpression != y.DefaultValueExpression ||
			(x.RangeElementType == nil) != (y.RangeElementType == nil) ||
			(x.RangeElementType != nil && x.RangeElementType.Type != y.RangeElementType.Type) ||
			!fieldsEqualBut(x.Fields, y.Fields, withDesc) {
			return false
		}
	}
	return true
}
