package sql

import (
	"strings"

	"github.com/bqstore/bqstore/internal/filter"
)

// GROUP BY ROLLUP, CUBE and GROUPING SETS, and GROUPING(): a GROUP BY
// whose items are these (or `()`) groups the rows once per grouping set,
// a list of the GROUP BY's expressions; the expressions a set leaves
// out are NULL in its rows, and GROUPING(x) is 1 there (0 where x is
// grouped). Items of a GROUP BY combine as GoogleSQL's do: the grouping
// sets are the cross product of each item's (a plain expression is the
// one set {x}).

// groupBy parses the items of a GROUP BY (after GROUP BY) into s.
func (p *parser) groupBy(s *Select) error {
	sets := [][]int{{}}
	multi := false
	for {
		item, isSets, err := p.groupingItem(s, true)
		if err != nil {
			return err
		}
		multi = multi || isSets
		var out [][]int
		for _, a := range sets {
			for _, b := range item {
				out = append(out, append(append([]int(nil), a...), b...))
			}
		}
		sets = out
		if len(sets) > maxGroupingSets {
			return p.errf(p.tok().Pos, "Too many grouping sets: more than %d", maxGroupingSets)
		}
		if !p.isOp(",") {
			break
		}
		p.i++
	}
	if multi {
		s.GroupingSets = sets
	}
	return nil
}

// maxGroupingSets bounds the grouping sets of one GROUP BY (CUBE of n
// expressions has 2^n); BigQuery's own limit is 4096.
const maxGroupingSets = 4096

// groupingItem parses one GROUP BY item and returns its grouping sets;
// isSets: it is ROLLUP, CUBE, GROUPING SETS or (). top: directly in
// GROUP BY (GROUPING SETS may not nest in another).
func (p *parser) groupingItem(s *Select, top bool) ([][]int, bool, error) {
	switch {
	case p.isKw("ROLLUP") && p.i+1 < len(p.toks) && p.toks[p.i+1].Op && p.toks[p.i+1].Text == "(":
		p.i += 2
		units, err := p.groupingUnits(s)
		if err != nil {
			return nil, false, err
		}
		// (a, b, c): {a,b,c}, {a,b}, {a}, {}.
		var sets [][]int
		for n := len(units); n >= 0; n-- {
			var set []int
			for _, u := range units[:n] {
				set = append(set, u...)
			}
			sets = append(sets, set)
		}
		return sets, true, nil
	case p.isKw("CUBE") && p.i+1 < len(p.toks) && p.toks[p.i+1].Op && p.toks[p.i+1].Text == "(":
		pos := p.tok().Pos
		p.i += 2
		units, err := p.groupingUnits(s)
		if err != nil {
			return nil, false, err
		}
		if 1<<len(units) > maxGroupingSets {
			return nil, false, p.errf(pos, "Too many grouping sets: more than %d", maxGroupingSets)
		}
		// Every subset, the largest first.
		var sets [][]int
		for mask := 1<<len(units) - 1; mask >= 0; mask-- {
			var set []int
			for k, u := range units {
				if mask&(1<<k) != 0 {
					set = append(set, u...)
				}
			}
			sets = append(sets, set)
		}
		return sets, true, nil
	case p.isKw("GROUPING", "SETS"):
		if !top {
			return nil, false, p.errf(p.tok().Pos, "Nested GROUPING SETS are not supported")
		}
		p.i += 2
		if err := p.expect("\"(\"", p.isOp("(")); err != nil {
			return nil, false, err
		}
		var sets [][]int
		for {
			if p.isOp("(") && p.tuple() {
				units, err := p.parenList(s)
				if err != nil {
					return nil, false, err
				}
				var set []int
				for _, u := range units {
					set = append(set, u...)
				}
				sets = append(sets, set)
			} else {
				item, _, err := p.groupingItem(s, false)
				if err != nil {
					return nil, false, err
				}
				sets = append(sets, item...)
			}
			if !p.isOp(",") {
				break
			}
			p.i++
		}
		if err := p.expect("\")\"", p.isOp(")")); err != nil {
			return nil, false, err
		}
		return sets, true, nil
	case p.isOp("(") && p.i+1 < len(p.toks) && p.toks[p.i+1].Op && p.toks[p.i+1].Text == ")":
		p.i += 2
		return [][]int{{}}, true, nil
	}
	sp, err := p.expr()
	if err != nil {
		return nil, false, err
	}
	return [][]int{{s.groupIndex(sp)}}, false, nil
}

// groupingUnits parses the units of ROLLUP( or CUBE( through the
// closing parenthesis: expressions, or parenthesised lists of them.
func (p *parser) groupingUnits(s *Select) ([][]int, error) {
	var units [][]int
	for {
		if p.isOp("(") && p.tuple() {
			u, err := p.parenList(s)
			if err != nil {
				return nil, err
			}
			var unit []int
			for _, x := range u {
				unit = append(unit, x...)
			}
			units = append(units, unit)
		} else {
			sp, err := p.expr()
			if err != nil {
				return nil, err
			}
			units = append(units, []int{s.groupIndex(sp)})
		}
		if !p.isOp(",") {
			break
		}
		p.i++
	}
	return units, p.expect("\")\"", p.isOp(")"))
}

// tuple reports whether the parenthesis at the parser is a list (a
// comma at its depth, empty, or the whole item: (x) is the list of x)
// rather than a parenthesised expression.
func (p *parser) tuple() bool {
	end := closing(p.toks, p.i)
	if end < 0 {
		return false
	}
	if nx := p.toks[end+1]; end == p.i+1 || nx.Op && (nx.Text == "," || nx.Text == ")") {
		return true
	}
	depth := 0
	for k := p.i + 1; k < end; k++ {
		t := p.toks[k]
		if t.Op {
			switch t.Text {
			case "(", "[":
				depth++
			case ")", "]":
				depth--
			case ",":
				if depth == 0 {
					return true
				}
			}
		}
	}
	return false
}

// parenList parses ( x, y, ... ) or ().
func (p *parser) parenList(s *Select) ([][]int, error) {
	p.i++
	if p.isOp(")") {
		p.i++
		return nil, nil
	}
	var out [][]int
	for {
		sp, err := p.expr()
		if err != nil {
			return nil, err
		}
		out = append(out, []int{s.groupIndex(sp)})
		if !p.isOp(",") {
			break
		}
		p.i++
	}
	return out, p.expect("\")\"", p.isOp(")"))
}

// groupIndex returns the index of a grouping expression in s.GroupBy,
// adding it if it is new.
func (s *Select) groupIndex(sp Span) int {
	for i, g := range s.GroupBy {
		if g.key() == sp.key() {
			return i
		}
	}
	s.GroupBy = append(s.GroupBy, sp)
	return len(s.GroupBy) - 1
}

// groupingCall returns, for a GROUPING(x) call at toks[i], the index of
// its closing parenthesis and of the GROUP BY expression x is (-1 if
// none).
func groupingCall(toks []filter.Token, i int, groups []Span) (int, int, bool) {
	if !isCall(toks, i) || !strings.EqualFold(toks[i].Text, "GROUPING") {
		return 0, 0, false
	}
	end := closing(toks, i+1)
	if end < 0 {
		return 0, 0, false
	}
	arg := Span{toks: toks[i+2 : end]}
	if len(arg.toks) == 0 {
		return end, -1, true
	}
	for g, gs := range groups {
		if gs.key() == arg.key() {
			return end, g, true
		}
	}
	return end, -1, true
}
