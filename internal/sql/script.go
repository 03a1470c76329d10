package sql

import (
	"encoding/json"
	"strings"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
)

// Statement is one statement of a script (a query text of one or more
// semicolon-separated statements), parsed far enough to dispatch it:
// queries are kept as text for Run; DDL and DML are parsed here
// (parse_ddl.go, parse_dml.go) and executed by the job runner, which owns
// the catalog and the engine.
type Statement struct {
	// Type is BigQuery's statementType: SELECT, INSERT, CREATE_TABLE,
	// CREATE_TABLE_AS_SELECT, DROP_TABLE, ALTER_TABLE, CREATE_SCHEMA,
	// DROP_SCHEMA, CREATE_VIEW, DROP_VIEW.
	Type string
	// Text is the script up to the statement's end (a slice of it, not
	// a copy): positions here are the script's, so that errors carry its
	// [line:column]. A query statement runs from it at Pos
	// (Run with Options.Offset = Pos), which reads nothing before.
	Text string
	// Pos is the offset of the statement's first token in the script,
	// and End that of its ';' (the script's length if it has none).
	Pos, End int

	CreateTable  *CreateTable
	CreateView   *CreateView
	Drop         *Drop
	AlterTable   *AlterTable
	CreateSchema *CreateSchema
	Insert       *Insert
}

// ParseScript splits src at its top-level semicolons and parses each
// statement. Errors are *filter.Error with the script's positions.
func ParseScript(src string) ([]*Statement, error) {
	if len(src) > filter.MaxLength {
		return nil, &filter.Error{Line: 1, Column: 1, Msg: "The query is too large. The maximum standard SQL query length is 1024.00K characters"}
	}
	var out []*Statement
	for _, r := range splitStatements(src) {
		// Each statement is lexed alone, its positions the script's:
		// the work is linear in the script, however many statements.
		text := src[:r[1]]
		toks, err := filter.TokensAt(src[:r[0]], src[r[0]:r[1]])
		if err != nil {
			return nil, err
		}
		if toks[0].EOF {
			if len(out) == 0 && r[1] == len(src) {
				return nil, filter.NewError(src, toks[0].Pos, "Syntax error: Unexpected end of input")
			}
			if r[1] == len(src) {
				continue // the script's trailing semicolon
			}
			return nil, filter.NewError(src, r[1], "Syntax error: Unexpected \";\"")
		}
		st, err := parseStatement(text, toks)
		if err != nil {
			return nil, err
		}
		st.End = r[1]
		out = append(out, st)
	}
	// The whole script parses before any statement runs (syntax.go).
	for _, st := range out {
		if err := st.checkSyntax(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checkSyntax checks the syntax of the statement's queries (syntax.go).
func (st *Statement) checkSyntax() error {
	switch {
	case st.Type == "SELECT":
		return checkQuerySyntax(st.Text, st.Pos)
	case st.CreateTable != nil && st.CreateTable.Query != "":
		return checkQuerySyntax(st.CreateTable.Query, st.CreateTable.QueryPos)
	case st.CreateView != nil && st.CreateView.QueryText != "":
		return checkQuerySyntax(st.CreateView.QueryText, st.CreateView.QueryPos)
	case st.Insert != nil && st.Insert.Query != "":
		return checkQuerySyntax(st.Insert.Query, st.Insert.QueryPos)
	}
	return nil
}

// splitStatements returns the [start, end) ranges of src between its
// top-level semicolons (not in strings, quoted identifiers or comments).
func splitStatements(src string) [][2]int {
	var out [][2]int
	start := 0
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ';':
			out = append(out, [2]int{start, i})
			start = i + 1
			i++
		case c == '-' && strings.HasPrefix(src[i:], "--"), c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '/' && strings.HasPrefix(src[i:], "/*"):
			if j := strings.Index(src[i+2:], "*/"); j >= 0 {
				i += j + 4
			} else {
				i = len(src)
			}
		case c == '\'' || c == '"' || c == '`':
			q := string(c)
			if c != '`' && strings.HasPrefix(src[i:], q+q+q) {
				q = q + q + q
			}
			raw := i > 0 && (src[i-1] == 'r' || src[i-1] == 'R') || i > 1 && (src[i-2] == 'r' || src[i-2] == 'R') && (src[i-1] == 'b' || src[i-1] == 'B')
			i += len(q)
			for i < len(src) && !strings.HasPrefix(src[i:], q) {
				if src[i] == '\\' && !raw {
					i++
				}
				i++
			}
			i += len(q)
		default:
			i++
		}
	}
	return append(out, [2]int{start, len(src)})
}

// parseStatement dispatches on the statement's first keywords.
func parseStatement(text string, toks []filter.Token) (*Statement, error) {
	p := &parser{src: text, toks: toks}
	t := p.tok()
	st := &Statement{Text: text, Pos: t.Pos}
	kw := ""
	if t.Ident {
		kw = strings.ToUpper(t.Text)
	}
	var err error
	switch kw {
	case "SELECT", "WITH":
		st.Type = "SELECT"
		return st, nil
	case "CREATE":
		err = p.create(st)
	case "DROP":
		err = p.drop(st)
	case "ALTER":
		err = p.alter(st)
	case "INSERT":
		st.Type = "INSERT"
		st.Insert, err = p.insert()
	case "UPDATE", "DELETE", "MERGE", "TRUNCATE":
		return nil, notSupported(text, t.Pos, statementKw[kw]+" statements (they need row-level changes in the engine)")
	default:
		if t.Op && t.Text == "(" {
			st.Type = "SELECT"
			return st, nil
		}
		if f, ok := statementKw[kw]; ok {
			return nil, notSupported(text, t.Pos, f+" statements")
		}
		// Run reports the syntax error as a query would.
		st.Type = "SELECT"
		return st, nil
	}
	if err != nil {
		return nil, err
	}
	return st, nil
}

// Option is one name = value of an OPTIONS(...) list, its value a
// constant expression evaluated as filter.Scalar.Values returns it
// (labels: a map[string]string, Type "LABELS").
type Option struct {
	Name  string
	Type  string // the value's GoogleSQL type ("NULL" for NULL)
	Value any
	Pos   int
}

// CreateTable is CREATE [OR REPLACE] TABLE [IF NOT EXISTS].
type CreateTable struct {
	Name        TableName
	OrReplace   bool
	IfNotExists bool
	// Schema is the column list (nil with AS SELECT).
	Schema  *schema.Schema
	Options []Option
	// PrimaryKey are the columns of PRIMARY KEY (...) NOT ENFORCED.
	PrimaryKey []string
	// TimePartitioning and RangePartitioning are PARTITION BY as the
	// REST members (compact JSON), nil if none; PartitionField is the
	// column (the job checks its type: PartitionType is "" for a bare
	// column, DATE, DATE_TRUNC, DATETIME_TRUNC, TIMESTAMP_TRUNC or RANGE).
	TimePartitioning, RangePartitioning json.RawMessage
	PartitionField, PartitionType       string
	PartitionPos                        int
	// ClusterBy are the columns of CLUSTER BY.
	ClusterBy  []string
	ClusterPos int
	// Query is the script up to the end of AS SELECT's query, which
	// starts at QueryPos (Run at that Offset); "" if none.
	Query    string
	QueryPos int `json:",omitempty"`

	// Temp is CREATE TEMP|TEMPORARY TABLE: a table of the script, named
	// without a dataset, dropped when the script ends.
	Temp bool `json:",omitempty"`
}

// CreateView is CREATE [OR REPLACE] VIEW [IF NOT EXISTS].
type CreateView struct {
	Name        TableName
	OrReplace   bool
	IfNotExists bool
	Options     []Option
	// Query is the view's query as written.
	Query string
	// QueryText is the script up to the end of the query, which starts
	// at QueryPos (Run at that Offset).
	QueryText string
	QueryPos  int `json:",omitempty"`
}

// Drop is DROP TABLE|VIEW|SCHEMA [IF EXISTS].
type Drop struct {
	// What is TABLE, VIEW or SCHEMA.
	What     string
	Name     TableName // SCHEMA: Project, Dataset only
	IfExists bool
	Cascade  bool
}

// AlterTable is ALTER TABLE|VIEW|SCHEMA [IF EXISTS] with its actions in
// order (VIEW and SCHEMA: SET OPTIONS only; SCHEMA names Project and
// Dataset only).
type AlterTable struct {
	What     string // TABLE, VIEW or SCHEMA
	Name     TableName
	IfExists bool
	Actions  []AlterAction
}

// AlterColumn is ALTER COLUMN [IF EXISTS] name and one change.
type AlterColumn struct {
	Name        string
	Options     []Option // SET OPTIONS(description)
	DropNotNull bool
	DropDefault bool
	// SetDefault is the expression of SET DEFAULT, at DefaultPos.
	SetDefault string
	DefaultPos int
	// SetType is SET DATA TYPE's type.
	SetType *schema.Field
}

// AlterAction is one action of ALTER TABLE: exactly one field is set.
type AlterAction struct {
	// AddColumn: ADD COLUMN [IF NOT EXISTS] name type.
	AddColumn   *schema.Field
	IfNotExists bool
	// SetOptions: SET OPTIONS(...).
	SetOptions []Option
	// AddPrimaryKey: ADD PRIMARY KEY (cols) NOT ENFORCED.
	AddPrimaryKey []string
	// DropPrimaryKey: DROP PRIMARY KEY [IF EXISTS].
	DropPrimaryKey bool
	// AlterColumn: ALTER COLUMN [IF EXISTS] name ....
	AlterColumn *AlterColumn
	IfExists    bool
	Pos         int

	// RenameTo: RENAME TO name (the only action of its statement).
	RenameTo *TableName `json:",omitempty"`
}

// CreateSchema is CREATE SCHEMA [IF NOT EXISTS].
type CreateSchema struct {
	Project, Dataset string
	IfNotExists      bool
	Options          []Option
	Pos              int
}

// Insert is INSERT [INTO] table [(columns)] VALUES (...), ... | query.
type Insert struct {
	Table   TableName
	Columns []string // nil: every column in table order
	// Rows are the VALUES rows: one compiled constant expression per
	// column (nil for DEFAULT).
	Rows [][]*ValueExpr
	// Query is the script up to the end of the SELECT, which starts at
	// QueryPos (Run at that Offset); "" with VALUES.
	Query    string
	QueryPos int
}

// ValueExpr is one value of a VALUES row.
type ValueExpr struct {
	// Text is the expression, at Pos in the script; prefix is the
	// script before it (a slice: it only counts errors' lines and
	// columns).
	Text   string
	Pos    int
	prefix string
	// Literal is the text of a string literal as written ("" for other
	// expressions): it coerces to DATE, TIMESTAMP and other types as
	// BigQuery's literals do (Coerce).
	Literal string
}
