// Package resource parses and forms the Storage API's resource names:
//
//	table:        projects/{p}/datasets/{d}/tables/{t}
//	write stream: {table}/streams/{id}, and {table}/_default for the default stream
//	read session: projects/{p}/locations/{loc}/sessions/{id}
//	read stream:  {session}/streams/{id}
//
// Parse errors are INVALID_ARGUMENT errors (internal/apierr) naming the
// request field and the expected form.
package resource

import (
	"strings"

	"github.com/bqstore/bqstore/internal/apierr"
)

// DefaultStream is the id of every table's implicit default write stream.
const DefaultStream = "_default"

// Table names a table.
type Table struct{ Project, Dataset, Table string }

func (r Table) String() string {
	return "projects/" + r.Project + "/datasets/" + r.Dataset + "/tables/" + r.Table
}

// WriteStream names a write stream of a table.
type WriteStream struct {
	Table
	ID string
}

func (r WriteStream) String() string { return r.Table.String() + "/streams/" + r.ID }

// IsDefault reports whether r is the table's default stream.
func (r WriteStream) IsDefault() bool { return r.ID == DefaultStream }

// ReadStream names a stream of a read session.
type ReadStream struct {
	Project, Location, Session, ID string
}

// SessionName is the name of the stream's session.
func (r ReadStream) SessionName() string { return SessionName(r.Project, r.Location, r.Session) }

func (r ReadStream) String() string { return r.SessionName() + "/streams/" + r.ID }

// SessionName forms a read session name.
func SessionName(project, location, id string) string {
	return "projects/" + project + "/locations/" + location + "/sessions/" + id
}

func nonEmpty(p []string) bool {
	for _, s := range p {
		if s == "" {
			return false
		}
	}
	return true
}

// ParseProject parses projects/{p}; field names the request field.
func ParseProject(field, name string) (string, error) {
	p := strings.Split(name, "/")
	if len(p) != 2 || p[0] != "projects" || !nonEmpty(p) {
		return "", apierr.InvalidArgument("%s: %q is not a project name of the form projects/{project}", field, name)
	}
	return p[1], nil
}

// ParseTable parses a table name.
func ParseTable(field, name string) (Table, error) {
	p := strings.Split(name, "/")
	if len(p) != 6 || p[0] != "projects" || p[2] != "datasets" || p[4] != "tables" || !nonEmpty(p) {
		return Table{}, apierr.InvalidArgument("%s: %q is not a table name of the form projects/{project}/datasets/{dataset}/tables/{table}", field, name)
	}
	return Table{Project: p[1], Dataset: p[3], Table: p[5]}, nil
}

// ParseWriteStream parses a write stream name; the default stream is
// accepted both as {table}/streams/_default and {table}/_default.
func ParseWriteStream(field, name string) (WriteStream, error) {
	p := strings.Split(name, "/")
	var id string
	switch {
	case len(p) == 7 && p[6] == DefaultStream:
		id = DefaultStream
	case len(p) == 8 && p[6] == "streams" && p[7] != "":
		id = p[7]
	default:
		return WriteStream{}, apierr.InvalidArgument("%s: %q is not a write stream name of the form projects/{project}/datasets/{dataset}/tables/{table}/streams/{stream}", field, name)
	}
	t, err := ParseTable(field, strings.Join(p[:6], "/"))
	if err != nil {
		return WriteStream{}, apierr.InvalidArgument("%s: %q is not a write stream name of the form projects/{project}/datasets/{dataset}/tables/{table}/streams/{stream}", field, name)
	}
	return WriteStream{Table: t, ID: id}, nil
}

// ParseReadStream parses a read stream name.
func ParseReadStream(field, name string) (ReadStream, error) {
	p := strings.Split(name, "/")
	if len(p) != 8 || p[0] != "projects" || p[2] != "locations" || p[4] != "sessions" || p[6] != "streams" || !nonEmpty(p) {
		return ReadStream{}, apierr.InvalidArgument("%s: %q is not a read stream name of the form projects/{project}/locations/{location}/sessions/{session}/streams/{stream}", field, name)
	}
	return ReadStream{Project: p[1], Location: p[3], Session: p[5], ID: p[7]}, nil
}
