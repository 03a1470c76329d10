package sql

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
)

// relation is the input of a SELECT block (a FROM item, or the join of
// several): columns that names resolve to, and batches of rows.
//
// Each column has an internal name, unique within the relation, by which
// the expression layer knows it (the schema's field names); users name it
// by its name, qualified or not by the range variable (table alias) it
// came from. A base table's internal names are its own column names, so
// that scans project by them; a derived relation (a subquery, a join)
// names its columns __c0, __c1, ...
type relation struct {
	cols   []relCol
	schema *schema.Schema // field i is cols[i], named cols[i].internal
	// scan calls fn with batches holding the named internal columns, in
	// that order; with none, fn gets a nil record and the row count.
	scan func(ctx context.Context, cols []string, fn func(rec arrow.RecordBatch, n int) error) error
	// pruning, set for a base table that can prune (prune.go), is scan
	// skipping the batches for which may (given their zone maps) is
	// false.
	pruning func(ctx context.Context, may func(filter.ColumnStatsFunc) bool, cols []string, fn func(rec arrow.RecordBatch, n int) error) error
	// vars are the range variables (lower case) the relation's columns
	// are qualified by.
	vars map[string]bool
}

type relCol struct {
	internal string
	qual     string // range variable (lower case), "" if none
	name     string // as users name it; "" for an anonymous column
	star     bool   // expanded by * (false for the sides of a USING column)
	unq      bool   // resolvable without a qualifier
	elem     bool   // an UNNEST's element: its name is a range variable for array paths
}

func (r *relation) field(i int) *schema.Field { return r.schema.Fields[i] }

func (r *relation) index(internal string) int {
	for i, c := range r.cols {
		if strings.EqualFold(c.internal, internal) {
			return i
		}
	}
	return -1
}

// names returns the expression layer's resolver for the relation.
func (r *relation) names(src string) filter.NameResolver {
	return func(parts []string, pos int) (string, int, error) {
		i, used, err := r.resolve(src, parts, pos)
		if err != nil {
			return "", 0, err
		}
		return r.cols[i].internal, used, nil
	}
}

// resolve finds the column a path names: a range variable then a column
// (t.col...), or a column (col...).
func (r *relation) resolve(src string, parts []string, pos int) (int, int, error) {
	first := strings.ToLower(parts[0])
	if r.vars[first] {
		if len(parts) == 1 {
			return 0, 0, notSupported(src, pos, "a table alias as a value (STRUCT of the row): "+parts[0])
		}
		found := -1
		for i, c := range r.cols {
			if c.qual == first && c.name != "" && strings.EqualFold(c.name, parts[1]) {
				if found >= 0 {
					return 0, 0, filter.NewError(src, pos, "Column name %s is ambiguous", parts[1])
				}
				found = i
			}
		}
		if found < 0 {
			return 0, 0, filter.NewError(src, pos, "Name %s not found inside %s", parts[1], parts[0])
		}
		return found, 2, nil
	}
	found := -1
	for i, c := range r.cols {
		if c.unq && c.name != "" && strings.EqualFold(c.name, parts[0]) {
			if found >= 0 {
				return 0, 0, filter.NewError(src, pos, "Column name %s is ambiguous", parts[0])
			}
			found = i
		}
	}
	if found < 0 {
		return 0, 0, filter.NewError(src, pos, "Unrecognized name: %s", parts[0])
	}
	return found, 1, nil
}

// has reports whether an unqualified name resolves to a column.
func (r *relation) has(name string) bool {
	for _, c := range r.cols {
		if c.unq && strings.EqualFold(c.name, name) {
			return true
		}
	}
	return false
}

// noRows is the input of SELECT without FROM: one row of no columns.
func noRows() *relation {
	return &relation{schema: &schema.Schema{}, vars: map[string]bool{},
		scan: func(ctx context.Context, cols []string, fn func(arrow.RecordBatch, int) error) error {
			return fn(nil, 1)
		}}
}

// tableRelation reads a base table; its columns keep their names.
func (r *runner) tableRelation(t Table, qual string) *relation {
	qual = strings.ToLower(qual)
	rel := &relation{schema: &schema.Schema{}, vars: map[string]bool{qual: true}}
	for _, f := range t.Schema().Fields {
		rel.cols = append(rel.cols, relCol{internal: f.Name, qual: qual, name: f.Name, star: true, unq: true})
		rel.schema.Fields = append(rel.schema.Fields, f)
	}
	computed, _ := t.(ComputedTable)
	rel.scan = func(ctx context.Context, cols []string, fn func(arrow.RecordBatch, int) error) error {
		if computed != nil {
			r.bytes += computed.ReadBytes()
		}
		return t.Scan(ctx, cols, func(rec arrow.RecordBatch) error {
			if computed == nil {
				r.bytes += logicalBytes(rec)
			}
			if len(cols) == 0 {
				return fn(nil, int(rec.NumRows()))
			}
			return fn(rec, int(rec.NumRows()))
		})
	}
	if pt, ok := t.(PruningTable); ok {
		rel.pruning = r.pruningScan(pt, rel.scan)
	}
	return rel
}

// rowsRelation serves a materialised result (a subquery's, a WITH
// entry's) as a relation qualified by qual ("" for none).
func rowsRelation(rs *rowset, qual string) *relation {
	qual = strings.ToLower(qual)
	rel := &relation{schema: &schema.Schema{}, vars: map[string]bool{}}
	if qual != "" {
		rel.vars[qual] = true
	}
	for i, n := range rs.names {
		in := fmt.Sprintf("__c%d", i)
		rel.cols = append(rel.cols, relCol{internal: in, qual: qual, name: n, star: true, unq: true})
		rel.schema.Fields = append(rel.schema.Fields, resultField(in, rs.types[i]))
	}
	rel.scan = func(ctx context.Context, cols []string, fn func(arrow.RecordBatch, int) error) error {
		if rs.held != nil {
			return rs.held.scan(rel, cols, fn) // derived.go
		}
		if len(cols) == 0 {
			if len(rs.rows) == 0 {
				return nil
			}
			return fn(nil, len(rs.rows))
		}
		sub := &schema.Schema{}
		idx := make([]int, len(cols))
		for k, c := range cols {
			idx[k] = rel.index(c)
			if idx[k] < 0 {
				return fmt.Errorf("sql: no column %s in a derived table", c)
			}
			sub.Fields = append(sub.Fields, rel.schema.Fields[idx[k]])
		}
		const chunk = 8192
		for lo := 0; lo < len(rs.rows); lo += chunk {
			hi := min(len(rs.rows), lo+chunk)
			rec, err := buildRecord(sub, hi-lo, func(col, row int) any { return rs.rows[lo+row][idx[col]] })
			if err != nil {
				return err
			}
			err = fn(rec, hi-lo)
			rec.Release()
			if err != nil {
				return err
			}
		}
		return nil
	}
	return rel
}

// rowset is a materialised query result: column names ("" anonymous),
// GoogleSQL type names, rows of values as filter.Scalar.Values returns.
type rowset struct {
	names []string
	types []string
	rows  [][]any
	// held, for a derived table, holds the rows as Arrow batches instead
	// of rows (derived.go).
	held *heldRows
	// charged is what rows were charged to the memory budget by the
	// block that made them, released once they are held.
	charged int64
}
