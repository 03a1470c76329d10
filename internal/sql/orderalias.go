package sql

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
)

// Select-list aliases inside ORDER BY expressions (`SELECT a + 1 AS x
// FROM t ORDER BY x * 2`), as ZetaSQL resolves them (its
// analyzer/testdata/orderby.test: `select key + 2 as foo from KeyValue
// order by key + foo`). A whole ORDER BY item that is an alias is that
// select-list column (resolveOrder); a name inside an expression is the
// item's value through a column __k<i> of a record holding the items'
// values beside the input's columns. An alias comes before an input
// column of the same name, as for a whole item, and as GROUP BY aliases
// "override names in the corresponding FROM clause" (BigQuery's query
// syntax reference).

// orderAliases maps the lower-case aliases of the items an ORDER BY
// expression may name to the item's index (the first of those sharing
// one, as resolveOrder takes). An item that is the bare name it is
// called by is left to the input's name, which has the same value.
func orderAliases(items []Item) map[string]int {
	m := map[string]int{}
	for k, it := range items {
		if it.Star || it.Alias == "" {
			continue
		}
		if p, ok := it.Expr.path(); ok && len(p) == 1 && strings.EqualFold(p[0], it.Alias) {
			continue
		}
		if _, dup := m[strings.ToLower(it.Alias)]; !dup {
			m[strings.ToLower(it.Alias)] = k
		}
	}
	return m
}

// aliasColumn is the column of item k's values an ORDER BY expression
// naming its alias reads.
func aliasColumn(k int) string { return fmt.Sprintf("__k%d", k) }

// aliasNames resolves a name of an ORDER BY expression: an item's alias
// (recorded in used), else through next.
func aliasNames(aliases map[string]int, used map[string]bool, next filter.NameResolver) filter.NameResolver {
	return func(parts []string, pos int) (string, int, error) {
		if k, ok := aliases[strings.ToLower(parts[0])]; ok {
			used[aliasColumn(k)] = true
			return aliasColumn(k), 1, nil
		}
		return next(parts, pos)
	}
}

// aliasSchema is s with a column __k<i> of each item's type.
func aliasSchema(s *schema.Schema, types []string) *schema.Schema {
	out := &schema.Schema{Fields: append([]*schema.Field(nil), s.Fields...)}
	for k, t := range types {
		out.Fields = append(out.Fields, resultField(aliasColumn(k), t))
	}
	return out
}

// compileOrder compiles an ORDER BY expression of a block without
// aggregation over its input and the items' aliases (types are the
// items'); used names the alias columns it reads (none: it reads the
// input only, as q.compile's).
func (q *selectQuery) compileOrder(sp Span, items []Item, types []string) (x *filter.Scalar, used map[string]bool, err error) {
	aliases := orderAliases(items)
	if len(aliases) == 0 {
		x, err = q.compile(sp)
		return x, nil, err
	}
	text := q.text(sp.pos(), sp.end())
	if len(q.windows) > 0 {
		text = q.windowText(sp)
	}
	// Subqueries first: a correlated one adds a column to q.in.
	text, consts, err := q.substituteText(text, q.scope())
	if err != nil {
		return nil, nil, err
	}
	used = map[string]bool{}
	x, err = q.compileText(text, aliasSchema(q.in.schema, types), nil, filter.WithConstants(consts), filter.WithNames(aliasNames(aliases, used, q.names)))
	return x, used, err
}

// compileDistinctOrder compiles an ORDER BY expression after SELECT
// DISTINCT (no aggregation), which sees the select list's columns only,
// as ZetaSQL resolves it (`SELECT DISTINCT key FROM t ORDER BY key + 1`):
// a name is an item's alias, or the input column an item is (t.key);
// any other column is "ORDER BY clause expression references column v
// which is not visible after SELECT DISTINCT". It reads the alias
// columns (used) only, so the rows DISTINCT keeps sort alike.
func (q *selectQuery) compileDistinctOrder(sp Span, items []Item, types []string) (*filter.Scalar, map[string]bool, error) {
	if len(q.windows) > 0 {
		return nil, nil, q.errf(sp.pos(), "ORDER BY clause expression references columns that are not visible after SELECT DISTINCT")
	}
	used := map[string]bool{}
	names := func(parts []string, pos int) (string, int, error) {
		for k, it := range items {
			if strings.EqualFold(it.Alias, parts[0]) {
				used[aliasColumn(k)] = true
				return aliasColumn(k), 1, nil
			}
		}
		i, u, err := q.in.resolve(q.src, parts, pos)
		if err != nil {
			return "", 0, err
		}
		for k, it := range items {
			same := it.Star && strings.EqualFold(it.col, q.in.cols[i].internal)
			if p, ok := it.Expr.path(); ok && !it.Star {
				j, u2, err := q.in.resolve(q.src, p, pos)
				same = err == nil && u2 == len(p) && j == i
			}
			if same {
				used[aliasColumn(k)] = true
				return aliasColumn(k), u, nil
			}
		}
		return "", 0, q.errf(pos, "ORDER BY clause expression references column %s which is not visible after SELECT DISTINCT", parts[0])
	}
	x, err := q.compileText(q.text(sp.pos(), sp.end()), aliasSchema(&schema.Schema{}, types), nil, filter.WithNames(names))
	return x, used, err
}

// withAliases is rec (nil: a batch of n rows and no column) with the
// items' values, vals[k] for item k, as the columns __k<k>; release
// frees what it made.
func withAliases(rec arrow.RecordBatch, n int, types []string, vals [][]any) (arrow.RecordBatch, func(), error) {
	irec, err := buildRecord(aliasSchema(&schema.Schema{}, types), n, func(col, row int) any { return vals[col][row] })
	if err != nil {
		return nil, nil, err
	}
	if rec == nil {
		return irec, irec.Release, nil
	}
	joined := joinRecords(rec, irec)
	irec.Release()
	return joined, joined.Release, nil
}
