package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/bqstore/bqstore/internal/schema"
)

// FileName is the name of the catalog file in the catalog directory.
const FileName = fileName

// LogFileName is the name of the catalog's log in the catalog directory:
// the changes since the checkpoint in FileName.
const LogFileName = logFileName

// File names in the catalog directory (and logFileName, log.go).
const (
	fileName    = "CATALOG"
	tmpFileName = "CATALOG.tmp"
	// formatVersion is the "format" number of the CATALOG file this
	// version writes: format 2 is a checkpoint (its document says up to
	// which change of CATALOG.log it holds); format 1, written before
	// the log existed, is still read.
	formatVersion   = 2
	formatVersionV1 = 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// FS is the part of a file system the catalog uses. Tests inject failures
// through it.
type FS interface {
	MkdirAll(dir string) error
	// ReadFile returns fs.ErrNotExist (wrapped) for a missing file.
	ReadFile(name string) ([]byte, error)
	// WriteFileSync writes data to name, truncating it, and fsyncs it.
	WriteFileSync(name string, data []byte) error
	// AppendSync appends data to name, creating it if needed, and
	// fsyncs it (the name of a new file is durable only after SyncDir).
	AppendSync(name string, data []byte) error
	// Truncate cuts name to size bytes and fsyncs it.
	Truncate(name string, size int64) error
	Rename(oldname, newname string) error
	Remove(name string) error
	// SyncDir fsyncs a directory, making renames in it durable.
	SyncDir(dir string) error
}

type osFS struct{}

func (osFS) MkdirAll(dir string) error            { return os.MkdirAll(dir, 0o755) }
func (osFS) ReadFile(name string) ([]byte, error) { return os.ReadFile(name) }
func (osFS) Rename(o, n string) error             { return os.Rename(o, n) }
func (osFS) Remove(name string) error             { return os.Remove(name) }

func (osFS) WriteFileSync(name string, data []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (osFS) AppendSync(name string, data []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (osFS) Truncate(name string, size int64) error {
	f, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// document is the catalog as stored.
type document struct {
	// Seq is the sequence number of the last change of the log the
	// checkpoint holds (format 2; 0 in format 1).
	Seq      int64      `json:"seq,omitempty"`
	Projects []*Project `json:"projects"`
	Datasets []*Dataset `json:"datasets"`
	Tables   []*Table   `json:"tables"`
	// DroppedTables are the internal ids of deleted tables whose
	// engine drop may not be durable yet (tombstones), sorted.
	DroppedTables []string `json:"droppedTables,omitempty"`
}

// envelope is the CATALOG file: the document and its checksum.
type envelope struct {
	Format  int             `json:"format"`
	CRC32C  *uint32         `json:"crc32c"`
	Catalog json.RawMessage `json:"catalog"`
}

// encodeDocument encodes st, whose last change is seq, as a CATALOG file.
func encodeDocument(st *state, seq int64) ([]byte, error) {
	doc := document{Seq: seq, Projects: []*Project{}, Datasets: []*Dataset{}, Tables: []*Table{}}
	for _, p := range st.projects {
		doc.Projects = append(doc.Projects, p)
	}
	for _, d := range st.datasets {
		doc.Datasets = append(doc.Datasets, d)
	}
	for _, t := range st.tables {
		doc.Tables = append(doc.Tables, t)
	}
	for id := range st.dropped {
		doc.DroppedTables = append(doc.DroppedTables, id)
	}
	sortDocument(&doc)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("catalog: encode: %w", err)
	}
	body := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	out := fmt.Appendf(nil, `{"format":%d,"crc32c":%d,"catalog":`, formatVersion, crc32.Checksum(body, castagnoli))
	out = append(out, body...)
	out = append(out, "}\n"...)
	return out, nil
}

// fileFormat is the "format" of a CATALOG file that decodes.
func fileFormat(b []byte) int {
	var env struct {
		Format int `json:"format"`
	}
	_ = json.Unmarshal(b, &env)
	return env.Format
}

// decodeFile parses a CATALOG file into a state and the sequence number
// of the last change it holds.
func decodeFile(b []byte) (*state, int64, error) {
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, 0, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if env.Format != formatVersion && env.Format != formatVersionV1 {
		return nil, 0, fmt.Errorf("%w: unknown format %d (this bqstore reads formats %d and %d)", ErrCorrupt, env.Format, formatVersionV1, formatVersion)
	}
	if env.CRC32C == nil || len(env.Catalog) == 0 {
		return nil, 0, fmt.Errorf("%w: missing checksum or document", ErrCorrupt)
	}
	if got := crc32.Checksum(env.Catalog, castagnoli); got != *env.CRC32C {
		return nil, 0, fmt.Errorf("%w: checksum mismatch (file says %08x, content is %08x)", ErrCorrupt, *env.CRC32C, got)
	}
	var doc document
	if err := json.Unmarshal(env.Catalog, &doc); err != nil {
		return nil, 0, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if doc.Seq < 0 || (env.Format == formatVersionV1 && doc.Seq != 0) {
		return nil, 0, fmt.Errorf("%w: sequence number %d in format %d", ErrCorrupt, doc.Seq, env.Format)
	}
	st := emptyState()
	for _, p := range doc.Projects {
		if err := checkProject(p); err != nil {
			return nil, 0, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		st.projects[p.ID] = p
	}
	for _, d := range doc.Datasets {
		if err := checkDataset(d); err != nil {
			return nil, 0, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		st.datasets[dsKey{d.ProjectID, d.DatasetID}] = d
	}
	for _, t := range doc.Tables {
		if err := checkTable(t, st, 0); err != nil {
			return nil, 0, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		if _, dup := st.byID[t.ID]; dup {
			return nil, 0, fmt.Errorf("%w: duplicate table id %s", ErrCorrupt, t.ID)
		}
		st.tables[tKey{t.ProjectID, t.DatasetID, t.TableID}] = t
		st.byID[t.ID] = t
	}
	for _, id := range doc.DroppedTables {
		if !validInternalID(id) {
			return nil, 0, fmt.Errorf("%w: invalid dropped table id %q", ErrCorrupt, id)
		}
		if _, live := st.byID[id]; live {
			return nil, 0, fmt.Errorf("%w: table id %s is both live and dropped", ErrCorrupt, id)
		}
		st.dropped[id] = struct{}{}
	}
	return st, doc.Seq, nil
}

func checkProject(p *Project) error {
	if p == nil || ValidateProjectID(p.ID) != nil {
		return errors.New("invalid project entry")
	}
	return nil
}

func checkDataset(d *Dataset) error {
	if d == nil || validateDatasetRef(d.ProjectID, d.DatasetID) != nil {
		return errors.New("invalid dataset entry")
	}
	return nil
}

// checkTable checks a table entry of st (its dataset must be in st); the
// first valid schema versions were checked before (kept from an entry
// it replaces).
func checkTable(t *Table, st *state, valid int) error {
	if t == nil || validateTableRef(t.ProjectID, t.DatasetID, t.TableID) != nil || len(t.Schemas) == 0 || !validInternalID(t.ID) {
		return errors.New("invalid table entry")
	}
	for i, v := range t.Schemas {
		if v.Version != i+1 || v.Schema == nil {
			return fmt.Errorf("table %s: bad schema version %d", t.FullID(), v.Version)
		}
		if i < valid {
			continue
		}
		if err := schema.Validate(v.Schema); err != nil {
			return fmt.Errorf("table %s: schema version %d: %v", t.FullID(), v.Version, err)
		}
	}
	if _, ok := st.datasets[dsKey{t.ProjectID, t.DatasetID}]; !ok {
		return fmt.Errorf("table %s has no dataset", t.FullID())
	}
	return nil
}

func validInternalID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(('0' <= c && c <= '9') || ('a' <= c && c <= 'f')) {
			return false
		}
	}
	return true
}

func emptyState() *state {
	return &state{
		projects: map[string]*Project{},
		datasets: map[dsKey]*Dataset{},
		tables:   map[tKey]*Table{},
		byID:     map[string]*Table{},
		dropped:  map[string]struct{}{},
	}
}

// load reads the checkpoint and replays the log over it.
func (c *Catalog) load() (*state, error) {
	fsys := c.opts.FS
	if err := fsys.MkdirAll(c.dir); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	// A temp file is a write that never got renamed: not part of the
	// catalog.
	if err := fsys.Remove(filepath.Join(c.dir, tmpFileName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	st := emptyState()
	var seq int64
	b, err := fsys.ReadFile(filepath.Join(c.dir, fileName))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("catalog: %w", err)
	default:
		if st, seq, err = decodeFile(b); err != nil {
			return nil, fmt.Errorf("catalog: %s: %w", fileName, err)
		}
		c.dur.ckpt = true
		c.dur.ckptSize = int64(len(b))
		c.dur.v1 = fileFormat(b) == formatVersionV1
	}
	if err := c.loadLog(st, seq); err != nil {
		return nil, err
	}
	return st, nil
}

// save makes the CATALOG file b durable (see the package documentation).
func (c *Catalog) save(b []byte) error {
	fsys := c.opts.FS
	tmp := filepath.Join(c.dir, tmpFileName)
	if err := fsys.WriteFileSync(tmp, b); err != nil {
		return fmt.Errorf("catalog: write: %w", err)
	}
	if err := fsys.Rename(tmp, filepath.Join(c.dir, fileName)); err != nil {
		return fmt.Errorf("catalog: rename: %w", err)
	}
	if err := fsys.SyncDir(c.dir); err != nil {
		return fmt.Errorf("catalog: sync dir: %w", err)
	}
	return nil
}
