package sql

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bqstore/bqstore/internal/schema"
)

// TestPropertyReference runs random queries from a small grammar
// (filters, GROUP BY, joins of every kind, set operations, DISTINCT) over
// random small tables and compares the executor's rows, as multisets,
// with a naive row-at-a-time evaluator written here. The seed is logged;
// -seed reproduces a run.
var propSeed = flag.Int64("seed", 1, "seed of TestPropertyReference (0: time-based)")

func TestPropertyReference(t *testing.T) {
	seed := *propSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (go test -run TestPropertyReference -seed %d)", seed, seed)
	rng := rand.New(rand.NewSource(seed))
	for iter := 0; iter < 300; iter++ {
		l, r := randTable(rng, "l"), randTable(rng, "r")
		tables := map[string]*memTable{"l": l.mem, "r": r.mem}
		resolve := func(_ context.Context, n TableName) (Table, error) {
			if mt, ok := tables[strings.ToLower(n.Table)]; ok {
				return mt, nil
			}
			return nil, errors.New("no table " + n.Table)
		}
		sqlText, want := randQuery(rng, l, r)
		res, err := Run(context.Background(), sqlText, resolve, Options{})
		if err != nil {
			t.Fatalf("iteration %d: %s: %v", iter, sqlText, err)
		}
		got := canonRows(res.Rows)
		exp := canonRows(want)
		if strings.HasPrefix(sqlText, orderedMark) {
			// ORDER BY ... LIMIT: the rows in their order.
			got, exp = []string{fmt.Sprint(res.Rows)}, []string{fmt.Sprint(want)}
		}
		if !slices.Equal(got, exp) {
			t.Fatalf("iteration %d: %s\ngot  %v\nwant %v\ntables l=%v r=%v", iter, sqlText, got, exp, l.rows, r.rows)
		}
	}
}

type propTable struct {
	name string
	rows [][]any // a INT64, b STRING, c INT64
	mem  *memTable
}

func randTable(rng *rand.Rand, name string) *propTable {
	n := rng.Intn(7)
	pt := &propTable{name: name}
	for i := 0; i < n; i++ {
		var a, b, c any
		if rng.Intn(5) > 0 {
			a = int64(rng.Intn(4))
		}
		if rng.Intn(5) > 0 {
			b = string(rune('p' + rng.Intn(3)))
		}
		if rng.Intn(5) > 0 {
			c = int64(rng.Intn(10) - 3)
		}
		pt.rows = append(pt.rows, []any{a, b, c})
	}
	pt.mem = &memTable{schema: &schema.Schema{Fields: []*schema.Field{
		{Name: "a", Type: schema.Integer}, {Name: "b", Type: schema.String}, {Name: "c", Type: schema.Integer}}},
		rows: pt.rows, batch: 1 + rng.Intn(3)}
	return pt
}

// tri is SQL's three-valued logic: nil is UNKNOWN.
type tri *bool

func triOf(b bool) tri { return &b }

func triAnd(x, y tri) tri {
	if x != nil && !*x || y != nil && !*y {
		return triOf(false)
	}
	if x == nil || y == nil {
		return nil
	}
	return triOf(true)
}

func triOr(x, y tri) tri {
	if x != nil && *x || y != nil && *y {
		return triOf(true)
	}
	if x == nil || y == nil {
		return nil
	}
	return triOf(false)
}

// pred is a predicate as SQL text over one range variable and as a Go
// function of that variable's row.
type pred struct {
	text string
	eval func(row []any) tri
}

func randPred(rng *rand.Rand, v string, depth int) pred {
	if depth > 0 && rng.Intn(3) == 0 {
		p, q := randPred(rng, v, depth-1), randPred(rng, v, depth-1)
		switch rng.Intn(3) {
		case 0:
			return pred{"(" + p.text + " AND " + q.text + ")", func(r []any) tri { return triAnd(p.eval(r), q.eval(r)) }}
		case 1:
			return pred{"(" + p.text + " OR " + q.text + ")", func(r []any) tri { return triOr(p.eval(r), q.eval(r)) }}
		default:
			return pred{"NOT " + p.text, func(r []any) tri {
				x := p.eval(r)
				if x == nil {
					return nil
				}
				return triOf(!*x)
			}}
		}
	}
	switch rng.Intn(4) {
	case 0:
		col := []int{0, 2}[rng.Intn(2)]
		name := []string{"a", "b", "c"}[col]
		return pred{v + "." + name + " IS NULL", func(r []any) tri { return triOf(r[col] == nil) }}
	case 1:
		s := string(rune('p' + rng.Intn(3)))
		return pred{v + ".b = '" + s + "'", func(r []any) tri {
			if r[1] == nil {
				return nil
			}
			return triOf(r[1].(string) == s)
		}}
	default:
		col := []int{0, 2}[rng.Intn(2)]
		name := []string{"a", "b", "c"}[col]
		k := int64(rng.Intn(5) - 1)
		ops := []string{"=", "<", ">", "!="}
		op := ops[rng.Intn(len(ops))]
		return pred{fmt.Sprintf("%s.%s %s %d", v, name, op, k), func(r []any) tri {
			if r[col] == nil {
				return nil
			}
			x := r[col].(int64)
			switch op {
			case "=":
				return triOf(x == k)
			case "<":
				return triOf(x < k)
			case ">":
				return triOf(x > k)
			}
			return triOf(x != k)
		}}
	}
}

// orderedMark starts a query whose rows are compared in order.
const orderedMark = "/* ordered */ "

func randQuery(rng *rand.Rand, l, r *propTable) (string, [][]any) {
	switch rng.Intn(12) {
	case 11: // correlated subqueries over the groups of b (select list and HAVING)
		p, q := randPred(rng, "l", 1), randPred(rng, "r", 1)
		counts := map[any]int64{}
		var order []any
		for _, row := range l.rows {
			if x := p.eval(row); x == nil || !*x {
				continue
			}
			if _, ok := counts[row[1]]; !ok {
				order = append(order, row[1])
			}
			counts[row[1]]++
		}
		var out [][]any
		for _, b := range order {
			exists, n := false, int64(0)
			for _, y := range r.rows {
				if b == nil || y[1] == nil || y[1].(string) != b.(string) {
					continue
				}
				exists = true
				if t := q.eval(y); t != nil && *t {
					n++
				}
			}
			if exists {
				out = append(out, []any{b, counts[b], n})
			}
		}
		return "SELECT b, COUNT(*), (SELECT COUNT(*) FROM r WHERE r.b = l.b AND " + q.text + ") FROM l WHERE " + p.text +
			" GROUP BY b HAVING EXISTS (SELECT 1 FROM r WHERE r.b = l.b)", out
	case 10: // ORDER BY some columns [DESC] [NULLS FIRST|LAST] LIMIT [OFFSET]: top-k
		p := randPred(rng, "l", 1)
		var rows [][]any
		for _, row := range l.rows {
			if x := p.eval(row); x != nil && *x {
				rows = append(rows, row)
			}
		}
		type key struct {
			col             int
			desc, nullsLast bool
		}
		var keys []key
		var items []string
		for _, col := range rng.Perm(3)[:1+rng.Intn(3)] {
			k := key{col: col}
			item := []string{"a", "b", "c"}[col]
			if rng.Intn(2) == 0 {
				k.desc, k.nullsLast = true, true // BigQuery: DESC puts NULLs last
				item += " DESC"
			}
			switch rng.Intn(3) {
			case 0:
				k.nullsLast = false
				item += " NULLS FIRST"
			case 1:
				k.nullsLast = true
				item += " NULLS LAST"
			}
			keys = append(keys, k)
			items = append(items, item)
		}
		slices.SortStableFunc(rows, func(x, y []any) int {
			for _, k := range keys {
				a, b := x[k.col], y[k.col]
				switch {
				case a == nil && b == nil:
					continue
				case a == nil || b == nil:
					if (a == nil) != k.nullsLast {
						return -1
					}
					return 1
				}
				var c int
				if ai, ok := a.(int64); ok {
					c = cmp.Compare(ai, b.(int64))
				} else {
					c = strings.Compare(a.(string), b.(string))
				}
				if k.desc {
					c = -c
				}
				if c != 0 {
					return c
				}
			}
			return 0 // a tie keeps the table's order
		})
		limit, offset := rng.Intn(5), rng.Intn(3)
		text := fmt.Sprintf("%sSELECT a, b, c FROM l WHERE %s ORDER BY %s LIMIT %d", orderedMark, p.text, strings.Join(items, ", "), limit)
		if offset > 0 || rng.Intn(2) == 0 {
			text += fmt.Sprintf(" OFFSET %d", offset)
		}
		rows = rows[min(offset, len(rows)):]
		return text, rows[:min(limit, len(rows))]
	case 9: // COUNT and SUM over RANGE frames with offsets, in a named window
		offsets := []int64{0, 1, 2, math.MaxInt64}
		bound := func(unb string) (string, bool, int64) {
			switch rng.Intn(4) {
			case 0:
				return unb, true, 0
			case 1:
				return "CURRENT ROW", false, 0
			case 2:
				n := offsets[rng.Intn(len(offsets))]
				return fmt.Sprintf("%d PRECEDING", n), false, -n
			}
			n := offsets[rng.Intn(len(offsets))]
			return fmt.Sprintf("%d FOLLOWING", n), false, n
		}
		var st, en string
		var sUnb, eUnb bool
		var so, eo int64
		for {
			st, sUnb, so = bound("UNBOUNDED PRECEDING")
			en, eUnb, eo = bound("UNBOUNDED FOLLOWING")
			if sUnb || eUnb || so <= eo {
				break
			}
		}
		desc := rng.Intn(2) == 0
		// Row k is in row i's frame: by key distance for non-NULL keys;
		// NULL keys sort first ascending, last descending, so an
		// UNBOUNDED bound on their side reaches them.
		in := func(ka, kk any) bool {
			nullSideUnb := sUnb
			if desc {
				nullSideUnb = eUnb
			}
			if ka == nil {
				return kk == nil || !desc && eUnb || desc && sUnb
			}
			if kk == nil {
				return nullSideUnb
			}
			d := kk.(int64) - ka.(int64)
			if desc {
				d = -d
			}
			return (sUnb || d >= so) && (eUnb || d <= eo)
		}
		var out [][]any
		for _, row := range l.rows {
			var sum any
			var n int64
			for _, o := range l.rows {
				if in(row[0], o[0]) {
					n++
					if c, ok := o[2].(int64); ok {
						s, _ := sum.(int64)
						sum = s + c
					}
				}
			}
			out = append(out, []any{row[0], row[2], n, sum})
		}
		dir := ""
		if desc {
			dir = " DESC"
		}
		return "SELECT a, c, COUNT(*) OVER w, SUM(c) OVER w FROM l WINDOW w AS (ORDER BY a" + dir + " RANGE BETWEEN " + st + " AND " + en + ")", out
	case 8: // SUM and COUNT over ROWS frames with offsets up to INT64's limit
		rows := slices.Clone(l.rows)
		cmp1 := func(x, y any) int { // NULLs first
			switch {
			case x == nil && y == nil:
				return 0
			case x == nil:
				return -1
			case y == nil:
				return 1
			}
			if xi, ok := x.(int64); ok {
				return cmp.Compare(xi, y.(int64))
			}
			return strings.Compare(x.(string), y.(string))
		}
		slices.SortStableFunc(rows, func(x, y []any) int {
			for k := range x {
				if c := cmp1(x[k], y[k]); c != 0 {
					return c
				}
			}
			return 0
		})
		offsets := []int64{0, 1, 2, 3, math.MaxInt64}
		bound := func(unb string) (string, bool, int64) {
			switch rng.Intn(4) {
			case 0:
				return unb, true, 0
			case 1:
				return "CURRENT ROW", false, 0
			case 2:
				n := offsets[rng.Intn(len(offsets))]
				return fmt.Sprintf("%d PRECEDING", n), false, -n
			}
			n := offsets[rng.Intn(len(offsets))]
			return fmt.Sprintf("%d FOLLOWING", n), false, n
		}
		var st, en string
		var sUnb, eUnb bool
		var so, eo int64
		for {
			st, sUnb, so = bound("UNBOUNDED PRECEDING")
			en, eUnb, eo = bound("UNBOUNDED FOLLOWING")
			if sUnb || eUnb || so <= eo {
				break
			}
		}
		m := int64(len(rows))
		var out [][]any
		for i, row := range rows {
			lo, hi := int64(0), m // [lo, hi)
			if !sUnb {
				lo = int64(i) + max(min(so, m), -m)
			}
			if !eUnb {
				hi = int64(i) + max(min(eo, m), -m) + 1
			}
			lo, hi = max(lo, 0), min(hi, m)
			var sum any
			var n int64
			for k := lo; k < hi; k++ {
				n++
				if a, ok := rows[k][0].(int64); ok {
					s, _ := sum.(int64)
					sum = s + a
				}
			}
			out = append(out, []any{row[0], row[1], row[2], sum, n})
		}
		frame := " OVER (ORDER BY a, b, c ROWS BETWEEN " + st + " AND " + en + ")"
		return "SELECT a, b, c, SUM(a)" + frame + ", COUNT(*)" + frame + " FROM l", out
	case 7: // correlated EXISTS and a correlated scalar COUNT
		p, q := randPred(rng, "l", 1), randPred(rng, "r", 1)
		var out [][]any
		for _, x := range l.rows {
			if t := p.eval(x); t == nil || !*t {
				continue
			}
			exists, count := false, int64(0)
			for _, y := range r.rows {
				t := q.eval(y)
				if t != nil && *t && x[0] != nil && y[0] != nil && x[0].(int64) == y[0].(int64) {
					exists = true
				}
				if x[2] != nil && y[2] != nil && y[2].(int64) < x[2].(int64) {
					count++
				}
			}
			if exists {
				out = append(out, []any{x[0], count})
			}
		}
		return "SELECT a, (SELECT COUNT(*) FROM r WHERE r.c < l.c) FROM l WHERE " + p.text +
			" AND EXISTS (SELECT 1 FROM r WHERE r.a = l.a AND " + q.text + ")", out
	case 6: // window functions over partitions of b, ordered by a
		p := randPred(rng, "l", 1)
		var kept [][]any
		for _, row := range l.rows {
			if x := p.eval(row); x != nil && *x {
				kept = append(kept, row)
			}
		}
		less := func(x, y any) bool { // NULLs first
			if x == nil || y == nil {
				return x == nil && y != nil
			}
			return x.(int64) < y.(int64)
		}
		var out [][]any
		for _, row := range kept {
			var n, rank int64 = 0, 1
			var sum any
			for _, o := range kept {
				if fmt.Sprint(o[1]) != fmt.Sprint(row[1]) || (o[1] == nil) != (row[1] == nil) {
					continue
				}
				n++
				if a, ok := o[0].(int64); ok {
					s, _ := sum.(int64)
					sum = s + a
				}
				if less(o[0], row[0]) {
					rank++
				}
			}
			out = append(out, []any{row[0], row[1], n, sum, rank})
		}
		return "SELECT a, b, COUNT(*) OVER (PARTITION BY b), SUM(a) OVER (PARTITION BY l.b), RANK() OVER (PARTITION BY b ORDER BY a) FROM l WHERE " + p.text, out
	case 5: // [NOT] IN (subquery), with SQL's NULL rules; correlated on b or not
		p, q := randPred(rng, "l", 1), randPred(rng, "r", 1)
		not := rng.Intn(2) == 0
		correlated := rng.Intn(2) == 0
		var out [][]any
		for _, row := range l.rows {
			if x := p.eval(row); x == nil || !*x {
				continue
			}
			var list []any
			for _, rr := range r.rows {
				if correlated && (rr[1] == nil || row[1] == nil || rr[1].(string) != row[1].(string)) {
					continue
				}
				if x := q.eval(rr); x != nil && *x {
					list = append(list, rr[0])
				}
			}
			var in tri = triOf(false)
			for _, v := range list {
				switch {
				case v == nil || row[0] == nil:
					if in != nil && !*in {
						in = nil
					}
				case v.(int64) == row[0].(int64):
					in = triOf(true)
				}
			}
			if len(list) == 0 {
				in = triOf(false)
			}
			if not && in != nil {
				in = triOf(!*in)
			}
			if in != nil && *in {
				out = append(out, []any{row[0], row[1]})
			}
		}
		op := " IN "
		if not {
			op = " NOT IN "
		}
		corr := ""
		if correlated {
			corr = " AND r.b = l.b"
		}
		return "SELECT a, b FROM l WHERE " + p.text + " AND a" + op + "(SELECT r.a FROM r WHERE " + q.text + corr + ")", out
	case 0: // filter and project
		p := randPred(rng, "l", 2)
		var out [][]any
		for _, row := range l.rows {
			if x := p.eval(row); x != nil && *x {
				out = append(out, []any{row[2], row[1]})
			}
		}
		return "SELECT l.c, b FROM l WHERE " + p.text, out
	case 1: // group
		p := randPred(rng, "l", 1)
		type acc struct {
			key      any
			n, na    int64
			sum      int64
			min, max any
			sawSum   bool
		}
		groups := map[any]*acc{}
		var order []any
		for _, row := range l.rows {
			if x := p.eval(row); x == nil || !*x {
				continue
			}
			g := groups[row[1]]
			if g == nil {
				g = &acc{key: row[1]}
				groups[row[1]] = g
				order = append(order, row[1])
			}
			g.n++
			if a, ok := row[0].(int64); ok {
				g.na++
				g.sum += a
				g.sawSum = true
				if g.min == nil || a < g.min.(int64) {
					g.min = a
				}
				if g.max == nil || a > g.max.(int64) {
					g.max = a
				}
			}
		}
		var out [][]any
		for _, k := range order {
			g := groups[k]
			var sum any
			if g.sawSum {
				sum = g.sum
			}
			out = append(out, []any{g.key, g.n, g.na, sum, g.min, g.max})
		}
		if rng.Intn(2) == 0 {
			// ROLLUP(b): the groups, each with GROUPING(b) = 0, and the
			// total row (one even of no rows) with b NULL and 1.
			total := &acc{}
			for _, k := range order {
				g := groups[k]
				total.n += g.n
				total.na += g.na
				total.sum += g.sum
				total.sawSum = total.sawSum || g.sawSum
				if g.min != nil && (total.min == nil || g.min.(int64) < total.min.(int64)) {
					total.min = g.min
				}
				if g.max != nil && (total.max == nil || g.max.(int64) > total.max.(int64)) {
					total.max = g.max
				}
			}
			var sum any
			if total.sawSum {
				sum = total.sum
			}
			for i := range out {
				out[i] = append(out[i], int64(0))
			}
			out = append(out, []any{nil, total.n, total.na, sum, total.min, total.max, int64(1)})
			return "SELECT b, COUNT(*), COUNT(a), SUM(l.a), MIN(a), MAX(l.a), GROUPING(b) FROM l WHERE " + p.text + " GROUP BY ROLLUP(b)", out
		}
		return "SELECT b, COUNT(*), COUNT(a), SUM(l.a), MIN(a), MAX(l.a) FROM l WHERE " + p.text + " GROUP BY b", out
	case 2, 3: // join
		kinds := []string{"INNER", "LEFT", "RIGHT", "FULL", "CROSS"}
		kind := kinds[rng.Intn(len(kinds))]
		var on string
		var match func(x, y []any) bool
		eqA := func(x, y []any) bool { return x[0] != nil && y[0] != nil && x[0].(int64) == y[0].(int64) }
		switch rng.Intn(3) {
		case 0:
			on, match = "ON l.a = r.a", eqA
		case 1:
			q := randPred(rng, "r", 1)
			on = "ON l.a = r.a AND " + q.text
			match = func(x, y []any) bool {
				t := q.eval(y)
				return eqA(x, y) && t != nil && *t
			}
		default:
			on = "ON l.c < r.c"
			match = func(x, y []any) bool { return x[2] != nil && y[2] != nil && x[2].(int64) < y[2].(int64) }
		}
		if kind == "CROSS" {
			on, match = "", func(x, y []any) bool { return true }
		}
		null := []any{nil, nil, nil}
		var pairs [][2][]any
		matchedR := make([]bool, len(r.rows))
		for _, x := range l.rows {
			found := false
			for j, y := range r.rows {
				if match(x, y) {
					found = true
					matchedR[j] = true
					pairs = append(pairs, [2][]any{x, y})
				}
			}
			if !found && (kind == "LEFT" || kind == "FULL") {
				pairs = append(pairs, [2][]any{x, null})
			}
		}
		if kind == "RIGHT" || kind == "FULL" {
			for j, y := range r.rows {
				if !matchedR[j] {
					pairs = append(pairs, [2][]any{null, y})
				}
			}
		}
		from := "FROM l " + kind + " JOIN r " + on
		if rng.Intn(2) == 0 {
			var out [][]any
			for _, p := range pairs {
				out = append(out, []any{p[0][0], p[0][1], p[1][0], p[1][2]})
			}
			return "SELECT l.a, l.b, r.a AS ra, r.c " + from, out
		}
		counts := map[any]int64{}
		sums := map[any]any{}
		var keys []any
		for _, p := range pairs {
			k := p[1][1]
			if _, ok := counts[k]; !ok {
				keys = append(keys, k)
				sums[k] = nil
			}
			counts[k]++
			if c, ok := p[0][2].(int64); ok {
				s, _ := sums[k].(int64)
				sums[k] = s + c
			}
		}
		var out [][]any
		for _, k := range keys {
			out = append(out, []any{k, counts[k], sums[k]})
		}
		return "SELECT r.b, COUNT(*), SUM(l.c) " + from + " GROUP BY r.b", out
	default: // set operations and DISTINCT
		p, q := randPred(rng, "l", 1), randPred(rng, "r", 1)
		var left, right [][]any
		for _, row := range l.rows {
			if x := p.eval(row); x != nil && *x {
				left = append(left, []any{row[0], row[1]})
			}
		}
		for _, row := range r.rows {
			if x := q.eval(row); x != nil && *x {
				right = append(right, []any{row[0], row[1]})
			}
		}
		ops := []string{"UNION ALL", "UNION DISTINCT", "INTERSECT DISTINCT", "EXCEPT DISTINCT", "INTERSECT ALL", "EXCEPT ALL", "DISTINCT"}
		op := ops[rng.Intn(len(ops))]
		key := func(row []any) string { return fmt.Sprint(row) }
		dedupe := func(rows [][]any) [][]any {
			seen := map[string]bool{}
			var out [][]any
			for _, row := range rows {
				if !seen[key(row)] {
					seen[key(row)] = true
					out = append(out, row)
				}
			}
			return out
		}
		in := func(rows [][]any, row []any) bool {
			for _, x := range rows {
				if key(x) == key(row) {
					return true
				}
			}
			return false
		}
		var out [][]any
		switch op {
		case "UNION ALL":
			out = append(append(out, left...), right...)
		case "UNION DISTINCT":
			out = dedupe(append(append(out, left...), right...))
		case "INTERSECT DISTINCT", "EXCEPT DISTINCT":
			for _, row := range dedupe(left) {
				if in(right, row) == (op == "INTERSECT DISTINCT") {
					out = append(out, row)
				}
			}
		case "INTERSECT ALL", "EXCEPT ALL":
			// Each left row consumes one equal right row, if any is left.
			used := make([]bool, len(right))
			for _, row := range left {
				matched := false
				for j, x := range right {
					if !used[j] && key(x) == key(row) {
						used[j], matched = true, true
						break
					}
				}
				if matched == (op == "INTERSECT ALL") {
					out = append(out, row)
				}
			}
		case "DISTINCT":
			return "SELECT DISTINCT a, l.b FROM l WHERE " + p.text, dedupe(left)
		}
		return "SELECT a, b FROM l WHERE " + p.text + " " + op + " SELECT r.a, b FROM r AS r WHERE " + q.text, out
	}
}

func canonRows(rows [][]any) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		parts := make([]string, len(r))
		for j, v := range r {
			if v == nil {
				parts[j] = "NULL"
			} else {
				parts[j] = fmt.Sprint(v)
			}
		}
		out[i] = strings.Join(parts, "|")
	}
	slices.Sort(out)
	return out
}
