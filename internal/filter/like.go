package filter

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// likeMatcher is a compiled LIKE pattern. Patterns made of literal text
// and % only compile to exact, prefix, suffix or contains tests (memchr
// speed); others run a wildcard matcher with backtracking on the last %,
// which is linear for most patterns and never exponential.
type likeMatcher struct {
	kind  likeKind
	lit   string     // exact, prefix, suffix, contains
	items []likeItem // general
	bytes bool       // _ matches one byte (BYTES) instead of one character
}

type likeKind uint8

const (
	likeExact likeKind = iota
	likePrefix
	likeSuffix
	likeContains
	likeAll // "%": every non-NULL value
	likeGeneral
)

type likeItem struct {
	kind byte // 'l' literal, '_' one character, '%' any run
	s    string
}

// compileLike compiles a LIKE pattern: % is any run, _ one character (one
// byte for BYTES), and a backslash escapes the next character.
func compileLike(pat string, bytes bool) (*likeMatcher, error) {
	var items []likeItem
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			items = append(items, likeItem{kind: 'l', s: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(pat); i++ {
		switch c := pat[i]; c {
		case '\\':
			if i+1 >= len(pat) {
				return nil, fmt.Errorf("LIKE pattern ends with a backslash")
			}
			i++
			lit.WriteByte(pat[i])
		case '%':
			flush()
			if len(items) == 0 || items[len(items)-1].kind != '%' {
				items = append(items, likeItem{kind: '%'})
			}
		case '_':
			flush()
			items = append(items, likeItem{kind: '_'})
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	m := &likeMatcher{kind: likeGeneral, items: items, bytes: bytes}
	shape := make([]byte, len(items))
	for i, it := range items {
		shape[i] = it.kind
	}
	switch string(shape) {
	case "":
		m.kind, m.lit = likeExact, ""
	case "l":
		m.kind, m.lit = likeExact, items[0].s
	case "%":
		m.kind = likeAll
	case "l%":
		m.kind, m.lit = likePrefix, items[0].s
	case "%l":
		m.kind, m.lit = likeSuffix, items[1].s
	case "%l%":
		m.kind, m.lit = likeContains, items[1].s
	}
	return m, nil
}

func (m *likeMatcher) match(s string) bool {
	switch m.kind {
	case likeExact:
		return s == m.lit
	case likePrefix:
		return strings.HasPrefix(s, m.lit)
	case likeSuffix:
		return strings.HasSuffix(s, m.lit)
	case likeContains:
		return containsLit(s, m.lit)
	case likeAll:
		return true
	}
	return m.matchGeneral(s)
}

// matchAll matches every value of ss into out.
func (m *likeMatcher) matchAll(ss []string, out []bool) {
	switch m.kind {
	case likeContains:
		lit := m.lit
		for i, s := range ss {
			out[i] = containsLit(s, lit)
		}
	case likePrefix:
		lit := m.lit
		for i, s := range ss {
			out[i] = len(s) >= len(lit) && s[:len(lit)] == lit
		}
	default:
		for i, s := range ss {
			out[i] = m.match(s)
		}
	}
}

func (m *likeMatcher) one(s string, i int) int {
	if m.bytes || s[i] < utf8.RuneSelf {
		return 1
	}
	_, n := utf8.DecodeRuneInString(s[i:])
	return n
}

func (m *likeMatcher) matchGeneral(s string) bool {
	p := m.items
	si, pi := 0, 0
	starP, starS := -1, 0
	for {
		if pi < len(p) {
			switch it := p[pi]; it.kind {
			case '%':
				starP, starS = pi, si
				pi++
				continue
			case '_':
				if si < len(s) {
					si += m.one(s, si)
					pi++
					continue
				}
			default:
				if strings.HasPrefix(s[si:], it.s) {
					si += len(it.s)
					pi++
					continue
				}
			}
		} else if si == len(s) {
			return true
		}
		// Mismatch: let the last % absorb one more character.
		if starP < 0 || starS >= len(s) {
			return false
		}
		starS += m.one(s, starS)
		if starP+1 < len(p) && p[starP+1].kind == 'l' {
			// Skip straight to the next place the literal after % occurs.
			k := strings.Index(s[starS:], p[starP+1].s)
			if k < 0 {
				return false
			}
			starS += k
		}
		si, pi = starS, starP+1
	}
}

// likePrefix returns the literal prefix every match starts with (for
// pruning) and whether the pattern is exactly that prefix followed by %.
func (m *likeMatcher) prefix() string {
	switch m.kind {
	case likeExact, likePrefix:
		return m.lit
	case likeGeneral:
		if len(m.items) > 0 && m.items[0].kind == 'l' {
			return m.items[0].s
		}
	}
	return ""
}

// matchCol matches every value of an Arrow offsets/data column into out.
func (m *likeMatcher) matchCol(off []int32, data []byte, out []bool) {
	switch m.kind {
	case likeContains:
		lit := m.lit
		for i := range out {
			out[i] = containsLit(bytesToString(data[off[i]:off[i+1]]), lit)
		}
	case likePrefix:
		lit := m.lit
		for i := range out {
			a, b := off[i], off[i+1]
			out[i] = int(b-a) >= len(lit) && string(data[a:a+int32(len(lit))]) == lit
		}
	default:
		for i := range out {
			out[i] = m.match(bytesToString(data[off[i]:off[i+1]]))
		}
	}
}
