package readapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// sessionMeta is what a read session is, independent of the process that
// serves it: enough to re-open the same snapshot and plan after a restart
// or after the plan was released. Persisted one file per session
// (docs/format/readsession.md).
type sessionMeta struct {
	ID       string `json:"id"`
	Project  string `json:"project"`
	Location string `json:"location"`
	// Table is the table's resource name; TableID the engine's id of it
	// (a table dropped and re-created under the same name is another
	// table, and the session can no longer be read).
	Table   string    `json:"table"`
	TableID string    `json:"tableId"`
	Format  string    `json:"format"` // ARROW or AVRO
	Created time.Time `json:"created"`
	Expire  time.Time `json:"expire"`
	// SnapshotMicros is the snapshot time in microseconds since the
	// epoch: the engine's timestamp resolution, so a snapshot re-opened
	// at it holds exactly the same rows.
	SnapshotMicros int64    `json:"snapshotMicros"`
	SelectedFields []string `json:"selectedFields,omitempty"`
	RowRestriction string   `json:"rowRestriction,omitempty"`
	Compression    string   `json:"compression,omitempty"`
	// Rows is the number of plan rows; a re-opened plan must have as many.
	Rows    int64        `json:"rows"`
	Streams []streamMeta `json:"streams"`
}

// streamMeta is one read stream: an id and its range of plan rows.
type streamMeta struct {
	ID    string `json:"id"`
	Start int64  `json:"start"`
	End   int64  `json:"end"`
}

func (m *sessionMeta) clone() *sessionMeta {
	c := *m
	c.SelectedFields = append([]string(nil), m.SelectedFields...)
	c.Streams = append([]streamMeta(nil), m.Streams...)
	return &c
}

// sessionFormat is the version of the session file.
const sessionFormat = 1

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// sessionStore keeps one file per session in a directory. Writes are
// atomic (temporary file, fsync, rename, fsync of the directory), so a
// crash leaves either the old or the new version of a file.
type sessionStore struct {
	dir string
}

const sessionExt = ".session"

// openSessionStore creates dir if needed.
func openSessionStore(dir string) (*sessionStore, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("readapi: session dir: %w", err)
	}
	return &sessionStore{dir: dir}, nil
}

func (st *sessionStore) path(id string) string { return filepath.Join(st.dir, id+sessionExt) }

func encodeSession(m *sessionMeta) ([]byte, error) {
	var doc bytes.Buffer
	enc := json.NewEncoder(&doc)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	body := bytes.TrimRight(doc.Bytes(), "\n")
	return fmt.Appendf(nil, `{"format":%d,"crc32c":%d,"session":%s}`+"\n", sessionFormat, crc32.Checksum(body, castagnoli), body), nil
}

func decodeSession(b []byte) (*sessionMeta, error) {
	var env struct {
		Format  int             `json:"format"`
		CRC     uint32          `json:"crc32c"`
		Session json.RawMessage `json:"session"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, fmt.Errorf("readapi: session file: %w", err)
	}
	if env.Format != sessionFormat {
		return nil, fmt.Errorf("readapi: session file: format %d, want %d", env.Format, sessionFormat)
	}
	if got := crc32.Checksum(env.Session, castagnoli); got != env.CRC {
		return nil, fmt.Errorf("readapi: session file: crc32c %d, want %d", got, env.CRC)
	}
	var m sessionMeta
	if err := json.Unmarshal(env.Session, &m); err != nil {
		return nil, fmt.Errorf("readapi: session file: %w", err)
	}
	return &m, nil
}

// put writes m durably.
func (st *sessionStore) put(m *sessionMeta) error {
	b, err := encodeSession(m)
	if err != nil {
		return err
	}
	tmp := st.path(m.ID) + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, st.path(m.ID))
	}
	if err == nil {
		err = st.syncDir()
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("readapi: write session %s: %w", m.ID, err)
	}
	return nil
}

func (st *sessionStore) syncDir() error {
	d, err := os.Open(st.dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// get reads one session.
func (st *sessionStore) get(id string) (*sessionMeta, error) {
	b, err := os.ReadFile(st.path(id))
	if err != nil {
		return nil, err
	}
	return decodeSession(b)
}

// remove deletes a session's file (a missing file is not an error).
func (st *sessionStore) remove(id string) error {
	if err := os.Remove(st.path(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// list reads every session file. Files that do not decode are returned
// by name in bad (with the reason) and left in place.
func (st *sessionStore) list() (metas []*sessionMeta, bad map[string]error, err error) {
	ents, err := os.ReadDir(st.dir)
	if err != nil {
		return nil, nil, err
	}
	bad = map[string]error{}
	for _, e := range ents {
		name := e.Name()
		if strings.HasSuffix(name, sessionExt+".tmp") {
			_ = os.Remove(filepath.Join(st.dir, name)) // a write that did not complete
			continue
		}
		id, ok := strings.CutSuffix(name, sessionExt)
		if !ok {
			continue
		}
		m, err := st.get(id)
		if err == nil && m.ID != id {
			err = fmt.Errorf("readapi: session file %s names session %s", name, m.ID)
		}
		if err != nil {
			bad[name] = err
			continue
		}
		metas = append(metas, m)
	}
	return metas, bad, nil
}
