package schema

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// FoldKey returns a key under which two names collide exactly when
// strings.EqualFold reports them equal: every rune is replaced by the
// smallest rune of its simple case-folding orbit. Matching names through a
// map of FoldKeys keeps name resolution linear in the number of names,
// where comparing every name with every column is quadratic.
func FoldKey(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		// The smallest rune of an ASCII letter's orbit is its upper case
		// (the other members, lower case and e.g. KELVIN SIGN, are larger).
		return strings.ToUpper(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < m {
				m = f
			}
		}
		b.WriteRune(m)
	}
	return b.String()
}

// NameIndex finds fields by name, case-insensitively as strings.EqualFold,
// in constant time. Where several fields fold to one key, the first wins
// (as a linear scan would find it).
type NameIndex map[string]int

// IndexNames indexes fields by FoldKey of their names.
func IndexNames(fields []*Field) NameIndex {
	ix := make(NameIndex, len(fields))
	for i, f := range fields {
		k := FoldKey(f.Name)
		if _, dup := ix[k]; !dup {
			ix[k] = i
		}
	}
	return ix
}

// Lookup returns the index of the field named name, or -1.
func (ix NameIndex) Lookup(name string) int {
	if i, ok := ix[FoldKey(name)]; ok {
		return i
	}
	return -1
}
