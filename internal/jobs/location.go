package jobs

import (
	"context"
	"fmt"
	"strings"

	"github.com/bqstore/bqstore/internal/sql"
)

// Job locations. BigQuery runs a query in the location of the datasets
// it references when the request names no location, and a query naming
// a dataset of another location than its job's fails: "Not found:
// Dataset p:d was not found in location L" (404 notFound).

// Location is the location a query job q of project runs in when the
// request names none: that of the first existing dataset it names, in
// this order: its destination table's, each statement's (the tables its
// query names, in the order of its syntax tree; an INSERT's, a
// CREATE TABLE's or a CREATE VIEW's target first), its default
// dataset's. "" when it names none (the caller's default then).
func (s *Store) Location(ctx context.Context, project string, q Query) string {
	if d := q.Destination; d != nil {
		if loc := s.datasetLocation(d.Project, d.Dataset); loc != "" {
			return loc
		}
	}
	if sts, err := sql.ParseScript(q.SQL); err == nil {
		for _, st := range sts {
			var names []sql.TableName
			var text string // a query, run from offset from
			var from int
			switch {
			case st.Type == "SELECT":
				text, from = st.Text, st.Pos
			case st.Insert != nil:
				names, text, from = []sql.TableName{st.Insert.Table}, st.Insert.Query, st.Insert.QueryPos
			case st.CreateTable != nil:
				if !st.CreateTable.Temp {
					names = []sql.TableName{st.CreateTable.Name}
				}
				text, from = st.CreateTable.Query, st.CreateTable.QueryPos
			case st.CreateView != nil:
				names, text, from = []sql.TableName{st.CreateView.Name}, st.CreateView.QueryText, st.CreateView.QueryPos
			}
			for _, n := range names {
				if ref, err := qualify(project, q, n); err == nil {
					if loc := s.datasetLocation(ref.Project, ref.Dataset); loc != "" {
						return loc
					}
				}
			}
			if text != "" {
				if loc := s.readLocation(project, q, text, from); loc != "" {
					return loc
				}
			}
		}
	}
	if q.DefaultDataset != "" {
		return s.datasetLocation(cmpOr(q.DefaultProject, project), q.DefaultDataset)
	}
	return ""
}

// readLocation is the location of the first table the query at offset
// from of text names whose dataset exists. It reads the query's syntax
// tree only: locating runs inside the jobs.insert request, before the
// job exists, where nothing could cancel a query it ran.
func (s *Store) readLocation(project string, q Query, text string, from int) string {
	for _, n := range sql.Tables(text, from) {
		if ref, err := qualify(project, q, n); err == nil {
			if loc := s.datasetLocation(ref.Project, ref.Dataset); loc != "" {
				return loc
			}
		}
	}
	return ""
}

// datasetLocation is dataset p:d's location, "" if it does not exist.
func (s *Store) datasetLocation(p, d string) string {
	ds, err := s.cat.Dataset(p, d)
	if err != nil {
		return ""
	}
	return ds.Location
}

// checkLocation fails a read of dataset p:d, which exists, by a job of
// another location (compared ignoring case) as BigQuery fails it; q's
// location "" (a dry run, a view's query) checks nothing.
func (s *Store) checkLocation(q Query, p, d string) error {
	if q.location == "" {
		return nil
	}
	if loc := s.datasetLocation(p, d); loc != "" && !strings.EqualFold(loc, q.location) {
		return &TableError{NotFound: true, Msg: fmt.Sprintf("Not found: Dataset %s:%s was not found in location %s", p, d, q.location)}
	}
	return nil
}

// inLocation is what BigQuery appends to a query's "Not found: Table
// p:d.t" or "Not found: Dataset p:d": " was not found in location US"
// (the job's location; users' reports: "Not found: Table
// p:d.t was not found in location US", "Not found: Dataset p:d was not
// found in location US"), "" when q has none (a view's query). tables.get
// and the other REST verbs keep the bare form.
func (q Query) inLocation() string {
	if q.location == "" {
		return ""
	}
	return " was not found in location " + q.location
}

// target resolves the table a DDL or DML statement of q changes, which
// must be in the job's location as a table it reads (checkLocation).
func (s *Store) target(project string, q Query, n sql.TableName) (TableRef, error) {
	ref, err := qualify(project, q, n)
	if err != nil {
		return ref, err
	}
	return ref, s.checkLocation(q, ref.Project, ref.Dataset)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
