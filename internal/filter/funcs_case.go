package filter

import (
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/language"
)

// UPPER and LOWER on STRING use Unicode's full case mapping with the root
// locale, as ZetaSQL does (icu::CaseMap::utf8ToUpper / utf8ToLower): one
// character may map to several (UPPER('ß') = 'SS', UPPER('ﬃ') = 'FFI',
// LOWER('İ') = 'i̇'), and LOWER maps a final Σ to ς. ASCII text takes the
// standard library's path, which allocates nothing when nothing changes.
// A cases.Caser keeps state between calls, so each use takes one from a
// pool.

var upperCasers = sync.Pool{New: func() any { c := cases.Upper(language.Und); return &c }}
var lowerCasers = sync.Pool{New: func() any { c := cases.Lower(language.Und); return &c }}

func upperFull(s string) string {
	if isASCII(s) {
		return strings.ToUpper(s)
	}
	return mapCase(&upperCasers, s)
}

func lowerFull(s string) string {
	if isASCII(s) {
		return strings.ToLower(s)
	}
	return mapCase(&lowerCasers, s)
}

func mapCase(pool *sync.Pool, s string) string {
	c := pool.Get().(*cases.Caser)
	out := c.String(s) // String resets c first
	pool.Put(c)
	return out
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
