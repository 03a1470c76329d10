package sql

import (
	"strings"
	"time"

	"github.com/bqstore/bqstore/internal/filter"
)

// The syntax tree of a query. Expressions are kept as spans of the source
// text: the expression layer (internal/filter) parses and checks them,
// told what precedes the span (filter.At) so that its error positions are
// positions in the statement. Everything else (query structure, FROM
// items, set operations) is parsed here.

// Query is a query expression: [WITH ...] body [ORDER BY ...] [LIMIT n
// [OFFSET m]].
type Query struct {
	With    []*CTE
	Body    queryBody // *Select, *SetOp or *Query (parenthesised)
	OrderBy []OrderItem
	Limit   int64 // -1: none
	Offset  int64
	Pos     int

	// Recursive is WITH RECURSIVE: every entry sees every other, and an
	// entry may reference itself in its recursive term (recursive.go).
	Recursive bool
}

// CTE is one WITH entry.
type CTE struct {
	Name string
	Pos  int
	Q    *Query
}

// SetOp is q1 UNION|INTERSECT|EXCEPT ALL|DISTINCT q2.
type SetOp struct {
	Op          string // UNION, INTERSECT, EXCEPT
	Distinct    bool
	Left, Right queryBody
	Pos         int // of the operator keyword
}

type queryBody interface{ bodyPos() int }

func (s *Select) bodyPos() int { return s.Pos }
func (s *SetOp) bodyPos() int  { return s.Pos }
func (q *Query) bodyPos() int  { return q.Pos }

// Select is one SELECT ... FROM ... WHERE ... GROUP BY ... HAVING block.
type Select struct {
	Distinct bool
	// SELECT AS STRUCT (a subquery's rows are STRUCT values of the
	// select list) or AS VALUE (one column); AsPos is the keyword's.
	AsStruct, AsValue bool
	AsPos             int
	Items             []Item
	From              FromItem // nil: SELECT without FROM
	Where             *Span
	GroupBy           []Span
	Having            *Span
	Qualify           *Span
	Pos               int

	// GroupingSets are the grouping sets of a GROUP BY with ROLLUP, CUBE,
	// GROUPING SETS or (): indexes into GroupBy (grouping.go); nil for
	// a plain GROUP BY.
	GroupingSets [][]int
	// Windows are the WINDOW clause's named windows, by lower-case name
	// (window_named.go).
	Windows map[string]*namedWindow
}

// Item is one expression of the SELECT list.
type Item struct {
	Star    bool   // * or t.* (before expansion); an expanded column after
	Qual    string // t of t.*
	Except  []nameAt
	Replace []replaceItem
	Expr    Span
	Alias   string // explicit or implied (a column's name); "" if none
	pos     int
	col     string // expanded star: the input column's internal name
}

type nameAt struct {
	name string
	pos  int
}

type replaceItem struct {
	expr  Span
	alias string
	pos   int
}

// FromItem is a table, a subquery, an UNNEST or a join.
type FromItem interface{ fromPos() int }

// TableRef is a table path, or the name of a WITH entry, with an alias.
type TableRef struct {
	Name  TableName
	Alias string
	AsOf  *Span // FOR SYSTEM_TIME AS OF (timetravel.go)
	// Path is the path as written. When its first name is a range
	// variable of an earlier FROM item, the path is an array of that
	// item's rows, unnested (GoogleSQL's implicit UNNEST: FROM t, t.arr
	// is FROM t, UNNEST(t.arr)); only that form takes WITH OFFSET.
	Path        []string
	Offset      bool
	OffsetAlias string
}

// SubqueryRef is ( query ) [AS alias].
type SubqueryRef struct {
	Q     *Query
	Alias string
	Pos   int
}

// JoinRef joins two FROM items.
type JoinRef struct {
	Kind        string // CROSS (also comma), INNER, LEFT, RIGHT, FULL
	Comma       bool
	Left, Right FromItem
	On          *Span
	Using       []nameAt
	Pos         int
}

// UnnestRef is UNNEST(expr) [AS alias] [WITH OFFSET [AS alias]]: an
// array column of an earlier FROM item (a path), or an array literal.
type UnnestRef struct {
	Expr        Span
	Alias       string
	Offset      bool
	OffsetAlias string
	Pos         int
}

func (u *UnnestRef) fromPos() int   { return u.Pos }
func (t *TableRef) fromPos() int    { return t.Name.Pos }
func (s *SubqueryRef) fromPos() int { return s.Pos }
func (j *JoinRef) fromPos() int     { return j.Pos }

// OrderItem is one key of ORDER BY.
type OrderItem struct {
	Expr       Span
	Desc       bool
	NullsLast  bool // ASC defaults to NULLS FIRST, DESC to NULLS LAST
	explicitNl bool
}

// TableName is a table path as written: project may be empty, dataset
// too (then the job's default dataset applies).
type TableName struct {
	Project, Dataset, Table string
	Pos                     int

	// AsOf is the time FOR SYSTEM_TIME AS OF reads the table at (zero:
	// the query's snapshot), set when the query runs.
	AsOf time.Time `json:"-"`
}

// Span is a range of tokens of the statement.
type Span struct {
	toks []filter.Token
}

func (s Span) pos() int { return s.toks[0].Pos }
func (s Span) end() int { return s.toks[len(s.toks)-1].End }

// key is a normalised form of the span for matching GROUP BY
// expressions with SELECT ones: tokens, identifiers lower-cased.
func (s Span) key() string {
	var b strings.Builder
	for _, t := range s.toks {
		if t.Ident || t.QIdent {
			b.WriteString(strings.ToLower(t.Value))
		} else {
			b.WriteString(t.Text)
		}
		b.WriteByte(0)
	}
	return b.String()
}

// singleName returns the identifier if the span is one (unqualified) name.
func (s Span) singleName() (string, bool) {
	if len(s.toks) == 1 && (s.toks[0].QIdent || s.toks[0].Ident && !filter.IsReserved(s.toks[0].Text)) {
		return s.toks[0].Value, true
	}
	return "", false
}

// path returns the names of the span if it is a path a.b.c.
func (s Span) path() ([]string, bool) {
	var parts []string
	for i, t := range s.toks {
		if i%2 == 1 {
			if !(t.Op && t.Text == ".") {
				return nil, false
			}
			continue
		}
		if !(t.QIdent || t.Ident && !filter.IsReserved(t.Text)) {
			return nil, false
		}
		parts = append(parts, t.Value)
	}
	if len(s.toks)%2 == 0 {
		return nil, false
	}
	return parts, true
}
