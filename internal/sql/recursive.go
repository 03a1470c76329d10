package sql

import (
	"context"
	"strings"
)

// WITH entries, and WITH RECURSIVE. An entry runs once per query, when
// first referenced. In a WITH RECURSIVE every entry sees every other (a
// reference may go forwards), cycles between entries are an error, and
// an entry of the form
//
//	base_term UNION ALL|DISTINCT recursive_term
//
// whose recursive term references the entry itself is recursive: the
// base term runs once, then the recursive term runs over the rows the
// previous iteration produced (the entry's name reads them) until it
// produces no rows (UNION DISTINCT: no rows not produced before). The
// base term fixes the columns' names and types. As GoogleSQL's query
// syntax reference lays down, the self-reference must be exactly one,
// in a FROM clause of the recursive term, not under an outer join's
// NULL-filled side, nor in a SELECT with DISTINCT or GROUP BY, nor in a
// query with ORDER BY or LIMIT, nor in a set operation, nor inside an
// expression subquery.

// maxRecursiveIterations is BigQuery's iteration limit of a recursive
// WITH entry ("Quotas and limits": recursive CTEs), the base term
// counting as the first.
const maxRecursiveIterations = 500

// cteResult returns the rows of the WITH entry c, which ref names.
func (r *runner) cteResult(ctx context.Context, c *env, ref *TableRef) (*rowset, error) {
	if c.result != nil {
		return c.result, nil
	}
	pos := ref.Name.Pos
	if c.working != nil {
		if r.defining[len(r.defining)-1] != c {
			return nil, r.cycle(c, pos)
		}
		if r.exprSub != c.exprSub {
			return nil, r.errf(pos, "A recursive reference cannot be used inside an expression subquery")
		}
		return c.working, nil
	}
	if c.busy {
		if r.defining[len(r.defining)-1] == c {
			return nil, r.errf(pos, "Table %s is referenced by itself outside a recursive term (base term UNION ALL|DISTINCT recursive term)", ref.Name.Table)
		}
		return nil, r.cycle(c, pos)
	}
	c.busy = true
	r.defining = append(r.defining, c)
	rs, err := r.cteQuery(ctx, c)
	r.defining = r.defining[:len(r.defining)-1]
	c.busy = false
	if err != nil {
		return nil, err
	}
	if rs, err = r.holdRowset(rs); err != nil { // derived.go
		return nil, err
	}
	c.result = rs
	return rs, nil
}

// cycle reports a reference to c from an entry c's definition depends on.
func (r *runner) cycle(c *env, pos int) error {
	var path []string
	for i, d := range r.defining {
		if d == c {
			for _, d := range r.defining[i:] {
				path = append(path, d.cte.Name)
			}
			break
		}
	}
	path = append(path, c.cte.Name)
	return r.errf(pos, "Unsupported WITH entry dependency cycle: %s", strings.Join(path, " => "))
}

// cteQuery runs the definition of the WITH entry c.
func (r *runner) cteQuery(ctx context.Context, c *env) (*rowset, error) {
	q := c.cte.Q
	op, ok := q.Body.(*SetOp)
	if !c.recursive || !ok || op.Op != "UNION" || countRefs(op.Right, c.name) == 0 {
		return r.derived(ctx, q, c.def)
	}
	if len(q.OrderBy) > 0 || q.Limit >= 0 {
		return nil, r.errf(op.Pos, "A recursive WITH entry cannot have ORDER BY or LIMIT after its recursive union")
	}
	if err := r.checkRecursiveTerm(op.Right, c.name, false); err != nil {
		return nil, err
	}
	if n := countRefs(op.Right, c.name); n > 1 {
		return nil, r.errf(op.Pos, "The recursive term of %s must reference it exactly once; it references it %d times", c.cte.Name, n)
	}
	e := c.def
	for _, w := range q.With {
		e = &env{name: strings.ToLower(w.Name), cte: w, def: e, parent: e}
	}
	base, err := r.body(ctx, op.Left, e)
	if err != nil {
		return nil, err
	}
	name := "UNION ALL"
	if op.Distinct {
		name = "UNION DISTINCT"
	}
	start := firstPos(op.Left)
	out := &rowset{names: base.names, types: base.types}
	seen := map[string]bool{}
	add := func(rows [][]any) ([][]any, error) {
		var added [][]any
		for _, row := range rows {
			if op.Distinct {
				k := rowKey(row)
				if seen[k] {
					continue
				}
				seen[k] = true
			}
			if err := r.chargeRow(row, "WITH RECURSIVE"); err != nil {
				return nil, err
			}
			added = append(added, row)
		}
		out.rows = append(out.rows, added...)
		return added, nil
	}
	working, err := add(base.rows)
	if err != nil {
		return nil, err
	}
	for iter := 1; len(working) > 0; iter++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c.working = &rowset{names: base.names, types: base.types, rows: working}
		c.exprSub = r.exprSub
		rs, err := r.body(ctx, op.Right, e)
		c.working = nil
		if err != nil {
			return nil, err
		}
		if len(rs.types) != len(base.types) {
			return nil, r.errf(start, "Queries in %s have mismatched column count; query 1 has %d column%s, query 2 has %d column%s",
				name, len(base.types), plural(len(base.types)), len(rs.types), plural(len(rs.types)))
		}
		for i, t := range rs.types {
			if st, ok := supertype(base.types[i], t); !ok || st != base.types[i] {
				return nil, r.errf(start, "Column %d in %s has incompatible types: %s, %s", i+1, name, base.types[i], t)
			}
			for _, row := range rs.rows {
				row[i] = coerce(row[i], t, base.types[i])
			}
		}
		if working, err = add(rs.rows); err != nil {
			return nil, err
		}
		if len(working) > 0 && iter+1 > maxRecursiveIterations {
			return nil, r.errf(c.cte.Pos, "Recursive query exceeded the maximum number of iterations: %d", maxRecursiveIterations)
		}
	}
	return out, nil
}

// countRefs counts the FROM items of b naming the WITH entry name
// (unqualified), in b's blocks and their FROM subqueries.
func countRefs(b queryBody, name string) int {
	n := 0
	var from func(f FromItem)
	var body func(b queryBody)
	from = func(f FromItem) {
		switch f := f.(type) {
		case *TableRef:
			if f.Name.Project == "" && f.Name.Dataset == "" && strings.EqualFold(f.Name.Table, name) {
				n++
			}
		case *SubqueryRef:
			body(f.Q)
		case *JoinRef:
			from(f.Left)
			from(f.Right)
		}
	}
	body = func(b queryBody) {
		switch b := b.(type) {
		case *Select:
			from(b.From)
		case *SetOp:
			body(b.Left)
			body(b.Right)
		case *Query:
			for _, w := range b.With {
				if strings.EqualFold(w.Name, name) {
					return // shadowed
				}
			}
			for _, w := range b.With {
				body(w.Q)
			}
			body(b.Body)
		}
	}
	body(b)
	return n
}

// checkRecursiveTerm reports a self-reference where GoogleSQL forbids it
// in a recursive term. inner: b is a subquery of the term.
func (r *runner) checkRecursiveTerm(b queryBody, name string, inner bool) error {
	switch b := b.(type) {
	case *Query:
		if countRefs(b, name) == 0 {
			return nil
		}
		for _, w := range b.With {
			if countRefs(w.Q, name) > 0 {
				return r.errf(w.Pos, "A recursive reference cannot be used inside a WITH clause of the recursive term")
			}
		}
		if len(b.OrderBy) > 0 || b.Limit >= 0 {
			return r.errf(refPos(b.Body, name), "A recursive reference cannot be used in a query with ORDER BY or LIMIT")
		}
		return r.checkRecursiveTerm(b.Body, name, inner)
	case *SetOp:
		if inner && countRefs(b, name) > 0 {
			return r.errf(refPos(b, name), "A recursive reference cannot be used in a set operation inside the recursive term")
		}
		if err := r.checkRecursiveTerm(b.Left, name, true); err != nil {
			return err
		}
		return r.checkRecursiveTerm(b.Right, name, true)
	case *Select:
		if countRefs(b, name) == 0 {
			return nil
		}
		if b.Distinct || len(b.GroupBy) > 0 {
			return r.errf(refPos(b, name), "A recursive reference cannot be used in a SELECT with DISTINCT or GROUP BY")
		}
		return r.checkRecursiveFrom(b.From, name)
	}
	return nil
}

func (r *runner) checkRecursiveFrom(f FromItem, name string) error {
	switch f := f.(type) {
	case *SubqueryRef:
		return r.checkRecursiveTerm(f.Q, name, true)
	case *JoinRef:
		bad := func(side FromItem) bool { return countRefs(&Select{From: side}, name) > 0 }
		if f.Kind == "FULL" && (bad(f.Left) || bad(f.Right)) || f.Kind == "LEFT" && bad(f.Right) || f.Kind == "RIGHT" && bad(f.Left) {
			return r.errf(refPos(&Select{From: f}, name), "A recursive reference cannot be an operand of FULL JOIN, the right side of LEFT JOIN or the left side of RIGHT JOIN")
		}
		if err := r.checkRecursiveFrom(f.Left, name); err != nil {
			return err
		}
		return r.checkRecursiveFrom(f.Right, name)
	}
	return nil
}

// refPos is the position of the first reference to name in b's FROM
// items.
func refPos(b queryBody, name string) int {
	pos := -1
	var from func(f FromItem)
	var body func(b queryBody)
	from = func(f FromItem) {
		switch f := f.(type) {
		case *TableRef:
			if pos < 0 && f.Name.Project == "" && f.Name.Dataset == "" && strings.EqualFold(f.Name.Table, name) {
				pos = f.Name.Pos
			}
		case *SubqueryRef:
			body(f.Q)
		case *JoinRef:
			from(f.Left)
			from(f.Right)
		}
	}
	body = func(b queryBody) {
		switch b := b.(type) {
		case *Select:
			from(b.From)
		case *SetOp:
			body(b.Left)
			body(b.Right)
		case *Query:
			body(b.Body)
		}
	}
	body(b)
	if pos < 0 {
		return b.bodyPos()
	}
	return pos
}
