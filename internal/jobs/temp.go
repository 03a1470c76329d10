package jobs

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/sql"
)

// Temporary tables (CREATE TEMP TABLE name, in a script): each is a table
// of the job's hidden dataset (AnonDataset), "temp", 40 hex digits of the
// job and "_" name, which the rest of the script names without a dataset
// (before any table of the default dataset). The script drops them when
// it ends, whether it succeeded or not; after a crash, Open drops those of
// a job that was running.

// tempPrefix is the table id prefix of job project/id's temporary tables.
func tempPrefix(project, id string) string {
	h := sha1.Sum([]byte("bqstore temp tables\x00" + project + "\x00" + id))
	return "temp" + hex.EncodeToString(h[:]) + "_"
}

// temp returns the temporary table n names, if n is an unqualified name
// of one of the script's.
func (q Query) temp(n sql.TableName) (TableRef, bool) {
	if n.Project != "" || n.Dataset != "" {
		return TableRef{}, false
	}
	r, ok := q.temps[n.Table]
	return r, ok
}

// newTemp names the script's temporary table name (creating the hidden
// dataset if needed); the caller creates it.
func (s *Store) newTemp(ctx context.Context, q Query, name string) (TableRef, error) {
	if q.temps == nil || q.stage == (TableRef{}) {
		return TableRef{}, &TableError{Msg: "Use of CREATE TEMPORARY TABLE requires a script or session"}
	}
	if r, ok := q.temps[name]; ok {
		return r, nil
	}
	if err := s.ensureHidden(ctx, q); err != nil {
		return TableRef{}, err
	}
	r := TableRef{Project: q.stage.Project, Dataset: q.stage.Dataset, Table: tempPrefix(q.stage.Project, q.job) + name}
	q.temps[name] = r
	return r, nil
}

// publicRef is r as the user names it: a temporary table of the
// script by its name (in the job's hidden dataset), any other table
// unchanged.
func (q Query) publicRef(r TableRef) TableRef {
	for name, t := range q.temps {
		if t == r {
			return TableRef{Project: r.Project, Dataset: r.Dataset, Table: name}
		}
	}
	return r
}

// hideTemps is err with the internal names of the script's temporary
// tables in its message replaced by the names the script gave them.
func (q Query) hideTemps(err error) error {
	if err == nil || len(q.temps) == 0 {
		return err
	}
	hide := func(msg string) string {
		for name, t := range q.temps {
			if !strings.Contains(msg, t.Table) {
				continue
			}
			for _, full := range []string{t.Project + ":" + t.Dataset + "." + t.Table, t.Project + "." + t.Dataset + "." + t.Table, t.Dataset + "." + t.Table, t.Table} {
				msg = strings.ReplaceAll(msg, full, name)
			}
		}
		return msg
	}
	if hide(err.Error()) == err.Error() {
		return err // none named (the error unchanged, with its chain)
	}
	var fe *filter.Error
	var te *TableError
	var de *DestinationError
	switch {
	case errors.As(err, &fe):
		c := *fe
		c.Msg = hide(c.Msg)
		return &c
	case errors.As(err, &te):
		return &TableError{NotFound: te.NotFound, Msg: hide(te.Msg)}
	case errors.As(err, &de):
		return &DestinationError{Reason: de.Reason, Msg: hide(de.Msg)}
	}
	return err
}

// dropTemps drops the script's temporary tables.
func (s *Store) dropTemps(q Query) {
	for _, r := range q.temps {
		s.dropTable(r)
	}
}

// tempTables lists the temporary tables job project/id left in its
// hidden dataset (a crash cut the script).
func tempTables(cat *catalog.Catalog, project, location, id string) []TableRef {
	ds := AnonDataset(project, location)
	ts, err := cat.ListTables(project, ds)
	if err != nil {
		return nil
	}
	prefix := tempPrefix(project, id)
	var out []TableRef
	for _, t := range ts {
		if strings.HasPrefix(t.TableID, prefix) {
			out = append(out, TableRef{Project: project, Dataset: ds, Table: t.TableID})
		}
	}
	return out
}

// ensureHidden creates the hidden dataset of q's job if needed.
func (s *Store) ensureHidden(ctx context.Context, q Query) error {
	_, err := s.cat.CreateDataset(ctx, catalog.Dataset{ProjectID: q.stage.Project, DatasetID: q.stage.Dataset, Location: q.location,
		Description: "Anonymous query results (hidden; each table expires with its job)"})
	if err != nil && !errors.Is(err, catalog.ErrExists) {
		return err
	}
	return nil
}
