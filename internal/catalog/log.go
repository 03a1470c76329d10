package catalog

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
)

// The catalog log (CATALOG.log, docs/format/catalog.md) holds the changes
// made since the checkpoint (CATALOG), one record per change, each synced
// before the change is acknowledged. A record holds what the change
// changed: the entries it adds or replaces, the ones it removes, and for
// a table only the schema versions that are new (keepSchemas says how
// many of the previous entry's versions stay). So a change costs bytes in
// proportion to itself, not to the catalog: an unrelated create next to
// a 3,000-column table writes a few hundred bytes, not the whole catalog.
//
// Frame: uint32 LE payload length, uint32 LE CRC-32C of the length bytes
// and the payload, the payload (JSON: logRecord), zero padding to a
// multiple of 8. Every record is synced before the next one is written,
// so a crash can damage only the last: an invalid frame with no valid
// frame after it is a torn tail (an unacknowledged change), cut at open;
// one followed by a valid frame is corruption (ErrCorrupt).
//
// When the log outgrows the checkpoint (and at least
// defaultCheckpointBytes), the next change also writes a new checkpoint
// (the update protocol of CATALOG: tmp file, fsync, rename, directory
// fsync) and removes the log. Records carry consecutive sequence numbers
// and the checkpoint the number of the last change it holds, so records
// a checkpoint already holds (a log whose removal a crash undid) are
// skipped, and a gap fails loudly.

const (
	logFileName = "CATALOG.log"
	// logHeaderLen is the length and CRC before each record's payload.
	logHeaderLen = 8
	// defaultCheckpointBytes is the log size below which no checkpoint
	// is written, however small the catalog.
	defaultCheckpointBytes = 1 << 20
)

// logRecord is one change. Removals apply first, then additions and
// replacements.
type logRecord struct {
	Seq          int64        `json:"seq"`
	DropTables   []string     `json:"dropTables,omitempty"` // internal ids; each leaves a tombstone
	DropDatasets []datasetRef `json:"dropDatasets,omitempty"`
	DropProjects []string     `json:"dropProjects,omitempty"`
	Projects     []*Project   `json:"projects,omitempty"`
	Datasets     []*Dataset   `json:"datasets,omitempty"`
	Tables       []tableDelta `json:"tables,omitempty"`
}

type datasetRef struct {
	ProjectID string `json:"projectId"`
	DatasetID string `json:"datasetId"`
}

// tableDelta is a table added or replaced: its metadata and the schema
// versions after the first KeepSchemas of the entry it replaces (the
// entry with the same internal id; 0 for a new table). A replaced entry
// may change its name: a move (MoveTable).
type tableDelta struct {
	KeepSchemas int    `json:"keepSchemas"`
	Table       *Table `json:"table"`
}

// sameVersion reports whether two schema versions are the same entry
// (the schema is compared by identity: versions are shared between
// catalog states until replaced).
func sameVersion(a, b SchemaVersion) bool {
	return a.Version == b.Version && a.Time.Equal(b.Time) && a.Schema == b.Schema
}

// diff is the record that turns prev into next (states of the catalog,
// next derived from prev by one change).
func diff(prev, next *state) *logRecord {
	r := &logRecord{}
	for id := range prev.byID {
		if _, ok := next.byID[id]; !ok {
			r.DropTables = append(r.DropTables, id)
		}
	}
	for k := range prev.datasets {
		if _, ok := next.datasets[k]; !ok {
			r.DropDatasets = append(r.DropDatasets, datasetRef{k.p, k.d})
		}
	}
	for id := range prev.projects {
		if _, ok := next.projects[id]; !ok {
			r.DropProjects = append(r.DropProjects, id)
		}
	}
	for id, p := range next.projects {
		if prev.projects[id] != p {
			r.Projects = append(r.Projects, p)
		}
	}
	for k, d := range next.datasets {
		if prev.datasets[k] != d {
			r.Datasets = append(r.Datasets, d)
		}
	}
	for id, t := range next.byID {
		old := prev.byID[id]
		if old == t {
			continue
		}
		keep := 0
		if old != nil {
			for keep < len(old.Schemas) && keep < len(t.Schemas) && sameVersion(old.Schemas[keep], t.Schemas[keep]) {
				keep++
			}
		}
		tail := *t
		tail.Schemas = t.Schemas[keep:]
		r.Tables = append(r.Tables, tableDelta{KeepSchemas: keep, Table: &tail})
	}
	// A deterministic order (map iteration is not).
	slices.Sort(r.DropTables)
	slices.Sort(r.DropProjects)
	slices.SortFunc(r.DropDatasets, func(a, b datasetRef) int {
		return strings.Compare(a.ProjectID+"\x00"+a.DatasetID, b.ProjectID+"\x00"+b.DatasetID)
	})
	slices.SortFunc(r.Projects, func(a, b *Project) int { return strings.Compare(a.ID, b.ID) })
	slices.SortFunc(r.Datasets, func(a, b *Dataset) int {
		return strings.Compare(a.ProjectID+"\x00"+a.DatasetID, b.ProjectID+"\x00"+b.DatasetID)
	})
	slices.SortFunc(r.Tables, func(a, b tableDelta) int { return strings.Compare(a.Table.ID, b.Table.ID) })
	return r
}

// empty reports whether r changes nothing.
func (r *logRecord) empty() bool {
	return len(r.DropTables)+len(r.DropDatasets)+len(r.DropProjects)+len(r.Projects)+len(r.Datasets)+len(r.Tables) == 0
}

// apply applies r to st (in place; st is not yet published), validating
// every entry as a checkpoint's are (a record that does not apply is
// corruption).
func (r *logRecord) apply(st *state) error {
	for _, id := range r.DropTables {
		t, ok := st.byID[id]
		if !ok {
			return fmt.Errorf("drop of unknown table id %s", id)
		}
		st.dropTable(t)
	}
	for _, d := range r.DropDatasets {
		k := dsKey{d.ProjectID, d.DatasetID}
		if _, ok := st.datasets[k]; !ok {
			return fmt.Errorf("drop of unknown dataset %s:%s", d.ProjectID, d.DatasetID)
		}
		delete(st.datasets, k)
	}
	for _, p := range r.DropProjects {
		if _, ok := st.projects[p]; !ok {
			return fmt.Errorf("drop of unknown project %s", p)
		}
		delete(st.projects, p)
	}
	for _, p := range r.Projects {
		if err := checkProject(p); err != nil {
			return err
		}
		st.projects[p.ID] = p
	}
	for _, d := range r.Datasets {
		if err := checkDataset(d); err != nil {
			return err
		}
		st.datasets[dsKey{d.ProjectID, d.DatasetID}] = d
	}
	for _, td := range r.Tables {
		t := td.Table
		if t == nil {
			return errors.New("table entry without a table")
		}
		old := st.byID[t.ID]
		var schemas []SchemaVersion
		if td.KeepSchemas > 0 {
			if old == nil || td.KeepSchemas > len(old.Schemas) {
				return fmt.Errorf("table id %s keeps %d schema versions of an entry that does not have them", t.ID, td.KeepSchemas)
			}
			schemas = append(schemas, old.Schemas[:td.KeepSchemas]...)
		}
		t.Schemas = append(schemas, t.Schemas...)
		k := tKey{t.ProjectID, t.DatasetID, t.TableID}
		if _, ok := st.dropped[t.ID]; ok {
			return fmt.Errorf("table id %s was dropped", t.ID)
		}
		if cur, ok := st.tables[k]; ok && cur.ID != t.ID {
			return fmt.Errorf("table %s is id %s, and id %s", t.FullID(), cur.ID, t.ID)
		}
		if err := checkTable(t, st, td.KeepSchemas); err != nil {
			return err
		}
		if old != nil {
			// A moved table (MoveTable): same id, new name.
			delete(st.tables, tKey{old.ProjectID, old.DatasetID, old.TableID})
		}
		st.tables[k] = t
		st.byID[t.ID] = t
	}
	// Every table's dataset exists (a dataset is dropped with its
	// tables).
	if len(r.DropDatasets) > 0 {
		for _, t := range st.tables {
			if _, ok := st.datasets[dsKey{t.ProjectID, t.DatasetID}]; !ok {
				return fmt.Errorf("table %s has no dataset", t.FullID())
			}
		}
	}
	return nil
}

// appendLogFrame appends payload as one log frame.
func appendLogFrame(dst, payload []byte) []byte {
	var h [logHeaderLen]byte
	binary.LittleEndian.PutUint32(h[0:], uint32(len(payload)))
	crc := crc32.Update(crc32.Checksum(h[:4], castagnoli), castagnoli, payload)
	binary.LittleEndian.PutUint32(h[4:], crc)
	dst = append(dst, h[:]...)
	dst = append(dst, payload...)
	for len(dst)%8 != 0 {
		dst = append(dst, 0)
	}
	return dst
}

// readLogFrame returns the payload of the frame at off in b and the
// offset after it, or ok false if there is no valid frame at off.
func readLogFrame(b []byte, off int) (payload []byte, next int, ok bool) {
	if off < 0 || len(b)-off < logHeaderLen {
		return nil, 0, false
	}
	n := int(binary.LittleEndian.Uint32(b[off:]))
	if n == 0 || n > len(b)-off-logHeaderLen {
		return nil, 0, false
	}
	p := b[off+logHeaderLen : off+logHeaderLen+n]
	crc := crc32.Update(crc32.Checksum(b[off:off+4], castagnoli), castagnoli, p)
	if crc != binary.LittleEndian.Uint32(b[off+4:]) {
		return nil, 0, false
	}
	next = off + logHeaderLen + n
	for next%8 != 0 {
		if next >= len(b) || b[next] != 0 {
			return nil, 0, false
		}
		next++
	}
	return p, next, true
}

// replayLog applies the records of log b after sequence number seq (the
// checkpoint's) to st, and returns the last sequence number and the
// length of the valid prefix of b (shorter than b: a torn tail to cut).
func replayLog(st *state, seq int64, b []byte) (last int64, valid int, err error) {
	last = seq
	prev := int64(-1) // the previous record's sequence number
	off := 0
	for off < len(b) {
		p, next, ok := readLogFrame(b, off)
		if !ok {
			// Torn (the last write, cut by a crash) unless a valid
			// frame follows: every record was synced before the next
			// one was written.
			for o := off + 8; o+logHeaderLen <= len(b); o += 8 {
				if _, _, ok := readLogFrame(b, o); ok {
					return 0, 0, fmt.Errorf("%w: %s: invalid record at offset %d before a valid one at %d", ErrCorrupt, logFileName, off, o)
				}
			}
			return last, off, nil
		}
		var r logRecord
		if err := json.Unmarshal(p, &r); err != nil {
			return 0, 0, fmt.Errorf("%w: %s: record at offset %d: %v", ErrCorrupt, logFileName, off, err)
		}
		if prev >= 0 && r.Seq != prev+1 {
			return 0, 0, fmt.Errorf("%w: %s: record %d at offset %d follows record %d", ErrCorrupt, logFileName, r.Seq, off, prev)
		}
		prev = r.Seq
		if r.Seq > last {
			if r.Seq != last+1 {
				return 0, 0, fmt.Errorf("%w: %s: record %d at offset %d, but the catalog holds changes up to %d: changes are missing", ErrCorrupt, logFileName, r.Seq, off, last)
			}
			if err := r.apply(st); err != nil {
				return 0, 0, fmt.Errorf("%w: %s: record %d at offset %d: %v", ErrCorrupt, logFileName, r.Seq, off, err)
			}
			last = r.Seq
		}
		off = next
	}
	return last, off, nil
}

// durable is the state of the catalog's files. Guarded by Catalog.writeMu.
type durable struct {
	seq      int64 // sequence number of the last durable change
	ckpt     bool  // CATALOG exists
	ckptSize int64 // bytes of CATALOG
	logSize  int64 // bytes of valid records in CATALOG.log (0: no log)
	// v1 is set when CATALOG is of format 1 (written before the log
	// existed): the next change replaces it with a checkpoint instead
	// of appending to the log. A bqstore older than the log reads
	// format 1 and knows nothing of CATALOG.log: it would miss the
	// changes in it and drop the data of the tables they created.
	// Format 2 it refuses.
	v1 bool
	// broken is set when a failed log write could not be undone: the
	// log may end in a partial record that a later record would turn
	// into corruption, so no change is accepted until reopen.
	broken error
}

// commitDurable makes next (derived from prev by one change) durable:
// appended to the log, or written as the first checkpoint.
// REQUIRES: c.writeMu held.
func (c *Catalog) commitDurable(prev, next *state) error {
	d := &c.dur
	if d.broken != nil {
		return d.broken
	}
	if !d.ckpt || d.v1 {
		// The first change writes CATALOG itself, so that a data dir
		// with tables always has one (the server refuses to start
		// without it); and the first change on a format 1 CATALOG
		// replaces it with format 2 (see durable.v1).
		if err := c.checkpoint(next, d.seq+1); err != nil {
			return err
		}
		if d.logSize > 0 {
			// A log on top of format 1 (written by a bqstore of the
			// same day as the log): the checkpoint holds it. The next
			// record must follow the checkpoint's, not the log's last.
			name := filepath.Join(c.dir, logFileName)
			if err := c.opts.FS.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
				// The change is durable (in the checkpoint); the log
				// is skipped at the next open.
				d.broken = fmt.Errorf("catalog: remove %s after a checkpoint: %w: reopen the catalog", logFileName, err)
				return nil
			}
			d.logSize = 0
		}
		return nil
	}
	r := diff(prev, next)
	if r.empty() {
		return nil
	}
	r.Seq = d.seq + 1
	p, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("catalog: encode change: %w", err)
	}
	frame := appendLogFrame(nil, p)
	fsys := c.opts.FS
	name := filepath.Join(c.dir, logFileName)
	if err := fsys.AppendSync(name, frame); err != nil {
		// Undo a partial append: the next record must follow the last
		// valid one.
		if terr := fsys.Truncate(name, d.logSize); terr != nil && !(d.logSize == 0 && errors.Is(terr, fs.ErrNotExist)) {
			d.broken = fmt.Errorf("catalog: log write failed and could not be undone (%v): reopen the catalog: %w", terr, err)
		}
		return fmt.Errorf("catalog: write log: %w", err)
	}
	if d.logSize == 0 {
		// The log file may be new: make its name durable.
		if err := fsys.SyncDir(c.dir); err != nil {
			d.broken = fmt.Errorf("catalog: sync dir after creating the log: %w", err)
			return d.broken
		}
	}
	d.seq = r.Seq
	d.logSize += int64(len(frame))
	if d.logSize > max(c.checkpointBytes(), d.ckptSize) {
		// The change is durable in the log; a failed checkpoint
		// leaves the log in place and is tried again at the next
		// change.
		if err := c.checkpoint(next, d.seq); err == nil {
			if err := fsys.Remove(name); err == nil || errors.Is(err, fs.ErrNotExist) {
				d.logSize = 0
			}
		}
	}
	return nil
}

func (c *Catalog) checkpointBytes() int64 {
	if c.opts.checkpointBytes > 0 {
		return c.opts.checkpointBytes
	}
	return defaultCheckpointBytes
}

// checkpoint makes st, whose last change is seq, the durable CATALOG.
// REQUIRES: c.writeMu held.
// Tombstones of tables whose storage is gone (Options.StorageGone) are
// left out, and removed from st once the checkpoint is durable: st must
// not be published yet.
func (c *Catalog) checkpoint(st *state, seq int64) error {
	enc := st
	var gone []string
	if f := c.opts.StorageGone; f != nil {
		for id := range st.dropped {
			if f(id) {
				gone = append(gone, id)
			}
		}
	}
	if len(gone) > 0 {
		e := *st
		e.dropped = maps.Clone(st.dropped)
		for _, id := range gone {
			delete(e.dropped, id)
		}
		enc = &e
	}
	b, err := encodeDocument(enc, seq)
	if err != nil {
		return err
	}
	if err := c.save(b); err != nil {
		return err
	}
	for _, id := range gone {
		delete(st.dropped, id)
	}
	c.dur.seq = seq
	c.dur.ckpt = true
	c.dur.v1 = false
	c.dur.ckptSize = int64(len(b))
	return nil
}

// loadLog replays CATALOG.log over st (the checkpoint's state, seq its
// last change) and cuts a torn tail.
func (c *Catalog) loadLog(st *state, seq int64) error {
	fsys := c.opts.FS
	name := filepath.Join(c.dir, logFileName)
	b, err := fsys.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		c.dur.seq = seq
		return nil
	}
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	if !c.dur.ckpt && len(b) > 0 {
		return fmt.Errorf("catalog: %w: %s without %s: the checkpoint is missing", ErrCorrupt, logFileName, fileName)
	}
	last, valid, err := replayLog(st, seq, b)
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	if last == seq {
		// Nothing the checkpoint does not hold (a log whose removal
		// after the checkpoint a crash undid): start the log afresh.
		valid = 0
	}
	if valid < len(b) {
		if err := fsys.Truncate(name, int64(valid)); err != nil {
			return fmt.Errorf("catalog: cut the torn tail of %s: %w", logFileName, err)
		}
	}
	c.dur.seq = last
	c.dur.logSize = int64(valid)
	return nil
}
