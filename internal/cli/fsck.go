package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/storage"
)

// runFsck checks a data directory offline: every table's files (what
// start-up recovery checks, plus every batch's CRC) and the catalog's
// agreement with the engine's tables. With --repair it makes the changes
// start-up recovery makes (truncating torn, never-acknowledged tails,
// removing leftovers); it never deletes acknowledged data, and leaves a
// failing table's files alone (the server quarantines it).
func runFsck(_ context.Context, env *Env, args []string) error {
	fset := newFlagSet(env, "fsck", "[--repair | --adopt ID=[PROJECT:]DATASET.TABLE] DATA_DIR")
	repair := fset.Bool("repair", false, "make the changes recovery makes (truncate torn tails, remove leftovers); never deletes acknowledged data")
	adopt := fset.String("adopt", "", "`ID=[PROJECT:]DATASET.TABLE`: give the engine table ID, which the catalog lost (the server quarantines it), that name, with the engine's schema (the server must be stopped)")
	pos, err := parseFlags(fset, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want one DATA_DIR")
	}
	dir := pos[0]
	w := env.Stdout
	if *adopt != "" {
		return adoptTable(w, dir, *adopt)
	}
	rep, err := storage.Check(filepath.Join(dir, "tables"), nil, *repair)
	if err != nil {
		return err
	}
	verb := "would"
	if *repair {
		verb = "did"
	}
	problems := 0
	engine := map[string]*storage.TableReport{}
	for _, a := range rep.Actions {
		fmt.Fprintf(w, "%s: %s\n", verb, a)
	}
	for i, t := range rep.Tables {
		engine[t.ID] = &rep.Tables[i]
		if t.Err != nil {
			problems++
			fmt.Fprintf(w, "table %s (%s): FAILED (the server quarantines it; its files are left as they are): %v\n", t.ID, filepath.Base(t.Dir), t.Err)
		} else {
			fmt.Fprintf(w, "table %s (%s): ok: %d files, %d batches, %d rows, %d streams\n", t.ID, filepath.Base(t.Dir), t.Files, t.Batches, t.Rows, t.Streams)
		}
		for _, a := range t.Actions {
			fmt.Fprintf(w, "  %s: %s\n", verb, a)
		}
	}
	problems += checkCatalog(w, dir, engine)
	fmt.Fprintf(w, "%d tables, %d problems\n", len(rep.Tables), problems)
	if problems > 0 {
		return fmt.Errorf("fsck: %d problems in %s", problems, dir)
	}
	return nil
}

// adoptTable names an unknown engine table (one the catalog lost): arg
// is ID=[PROJECT:]DATASET.TABLE. It holds the data dir's lock, as the
// server does, so it cannot run next to one.
func adoptTable(w io.Writer, dir, arg string) error {
	id, name, ok := strings.Cut(arg, "=")
	if !ok || id == "" {
		return usagef("--adopt %q: want ID=[PROJECT:]DATASET.TABLE", arg)
	}
	r, err := parseRef(name, "local")
	if err != nil {
		return err
	}
	if r.table == "" {
		return usagef("--adopt %q: want ID=[PROJECT:]DATASET.TABLE", arg)
	}
	lock, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("fsck: adopt: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return fmt.Errorf("fsck: adopt: data dir %s is in use by a bqstore process (stop the server first): %w", dir, err)
	}
	db, err := storage.Open(filepath.Join(dir, "tables"), nil)
	if err != nil {
		return fmt.Errorf("fsck: adopt: %w", err)
	}
	defer db.Close()
	tbl, err := db.Table(id)
	if err != nil {
		return fmt.Errorf("fsck: adopt: engine table %s: %w", id, err)
	}
	version, as := tbl.Schema()
	sch, err := schema.FromArrow(as)
	if err != nil {
		return fmt.Errorf("fsck: adopt: engine table %s: its schema: %w", id, err)
	}
	cat, err := catalog.Open(dir, catalog.Options{})
	if err != nil {
		return fmt.Errorf("fsck: adopt: %w", err)
	}
	ctx := context.Background()
	if _, err := cat.Dataset(r.project, r.dataset); errors.Is(err, catalog.ErrNotFound) {
		if _, err := cat.CreateDataset(ctx, catalog.Dataset{ProjectID: r.project, DatasetID: r.dataset}); err != nil {
			return fmt.Errorf("fsck: adopt: %w", err)
		}
		fmt.Fprintf(w, "created dataset %s:%s\n", r.project, r.dataset)
	}
	t, err := cat.AdoptTable(ctx, catalog.TableSpec{ProjectID: r.project, DatasetID: r.dataset, TableID: r.table, Schema: sch}, id, version)
	if err != nil {
		return fmt.Errorf("fsck: adopt: %w", err)
	}
	rows, _ := tbl.Stats()
	fmt.Fprintf(w, "adopted engine table %s as %s: %d rows, %d columns (schema version %d; descriptions, labels and expiration were in the lost catalog)\n",
		id, t.FullID(), rows, len(sch.Fields), version)
	return nil
}

// checkCatalog reports disagreements between the catalog and the
// engine's tables and returns how many it found.
func checkCatalog(w io.Writer, dir string, engine map[string]*storage.TableReport) int {
	name := filepath.Join(dir, catalog.FileName)
	if _, err := os.Stat(name); errors.Is(err, fs.ErrNotExist) {
		logName := filepath.Join(dir, catalog.LogFileName)
		_, lerr := os.Stat(logName)
		switch {
		case len(engine) > 0 && lerr == nil:
			fmt.Fprintf(w, "catalog: %s is missing but the engine has %d tables (%s, which holds only the changes since that checkpoint, is there): the server refuses to start; restore CATALOG\n", name, len(engine), logName)
		case len(engine) > 0:
			fmt.Fprintf(w, "catalog: %s is missing, and %s, but the engine has %d tables: the server refuses to start; restore CATALOG and CATALOG.log together, as of the same moment (CATALOG alone lacks the changes since its last checkpoint: the tables they created would be quarantined, not served), or, with both lost for good, name each table with --adopt ID=PROJECT:DATASET.TABLE\n", name, logName, len(engine))
		case lerr == nil:
			fmt.Fprintf(w, "catalog: %s is missing but %s is there: the server refuses to open the catalog; restore CATALOG\n", name, logName)
		default:
			fmt.Fprintf(w, "catalog: none (an empty data dir)\n")
			return 0
		}
		return 1
	}
	cat, err := catalog.Open(dir, catalog.Options{FS: readOnlyFS{}})
	if err != nil {
		fmt.Fprintf(w, "catalog: FAILED: %v\n", err)
		return 1
	}
	problems := 0
	known := map[string]bool{}
	tables := cat.Tables()
	for _, t := range tables {
		known[t.ID] = true
		e := engine[t.ID]
		want := t.Schemas[len(t.Schemas)-1].Version
		switch {
		case e == nil:
			problems++
			fmt.Fprintf(w, "catalog: table %s (id %s) has no data in the engine: the server would create it empty\n", t.FullID(), t.ID)
		case e.Err != nil:
		case e.SchemaVersion > want:
			problems++
			fmt.Fprintf(w, "catalog: table %s (id %s) is at schema version %d in the engine, past the catalog's %d\n", t.FullID(), t.ID, e.SchemaVersion, want)
		case e.SchemaVersion < want:
			fmt.Fprintf(w, "catalog: table %s (id %s) is at schema version %d in the engine; the server brings it to the catalog's %d at start\n", t.FullID(), t.ID, e.SchemaVersion, want)
		}
	}
	var orphans []string
	for id := range engine {
		if !known[id] {
			orphans = append(orphans, id)
		}
	}
	sort.Strings(orphans)
	for _, id := range orphans {
		if cat.Dropped(id) {
			fmt.Fprintf(w, "catalog: engine table %s was deleted from the catalog: the server finishes its drop at start (a crash came between the two)\n", id)
			continue
		}
		problems++
		fmt.Fprintf(w, "catalog: engine table %s (%s) is not in the catalog, which did not delete it (CATALOG.log lost or cut?): the server keeps it quarantined, not served; with the server stopped, restore CATALOG and CATALOG.log together to serve it again, or name it with bqstore fsck --adopt %s=PROJECT:DATASET.TABLE, or remove %s to delete it\n",
			id, filepath.Base(engine[id].Dir), id, engine[id].Dir)
	}
	fmt.Fprintf(w, "catalog: %d tables\n", len(tables))
	return problems
}

// readOnlyFS lets catalog.Open read the catalog without changing
// anything (it would remove a leftover CATALOG.tmp).
type readOnlyFS struct{}

func (readOnlyFS) MkdirAll(dir string) error {
	_, err := os.Stat(dir)
	return err
}
func (readOnlyFS) ReadFile(name string) ([]byte, error) { return os.ReadFile(name) }
func (readOnlyFS) WriteFileSync(name string, _ []byte) error {
	return fmt.Errorf("fsck: write %s: read-only", name)
}
func (readOnlyFS) AppendSync(name string, _ []byte) error {
	return fmt.Errorf("fsck: append to %s: read-only", name)
}

// Truncate leaves a torn tail of the catalog log in place (Open cuts it;
// fsck only reads).
func (readOnlyFS) Truncate(string, int64) error { return nil }
func (readOnlyFS) Rename(o, _ string) error     { return fmt.Errorf("fsck: rename %s: read-only", o) }
func (readOnlyFS) Remove(string) error          { return nil }
func (readOnlyFS) SyncDir(string) error         { return nil }
