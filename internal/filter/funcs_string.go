// String, regular-expression and encoding functions beyond the basic ones
// of funcs.go: REPEAT, LPAD/RPAD, INITCAP, INSTR, ASCII/CHR/UNICODE,
// TRANSLATE, SOUNDEX, REGEXP_REPLACE/INSTR/SUBSTR, TO_/FROM_HEX,
// BASE64 and BASE32, SAFE_CONVERT_BYTES_TO_STRING, EDIT_DISTANCE.

package filter

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxStringResult caps the bytes a string function may build for one row
// (REPEAT, LPAD, RPAD): a query cannot ask for gigabytes with one call.
const maxStringResult = 1 << 20

// units splits s into the units a STRING (characters) or BYTES (bytes)
// function counts.
func units(t typ, s string) []string {
	if t == tBytes {
		out := make([]string, len(s))
		for i := 0; i < len(s); i++ { // not range: that steps by rune
			out[i] = s[i : i+1]
		}
		return out
	}
	out := make([]string, 0, len(s))
	for i, r := range s {
		out = append(out, s[i:i+utf8.RuneLen(r)])
	}
	return out
}

func unitCount(t typ, s string) int {
	if t == tBytes {
		return len(s)
	}
	return utf8.RuneCountInString(s)
}

// regexpArg compiles a constant pattern once at check time (an invalid one
// is a compile error at the pattern) and otherwise per row, with a cache.
// A BYTES pattern (latin1) compiles as Latin-1 text, each byte one
// character, as ZetaSQL compiles it (RE2's EncodingLatin1): the caller
// matches it against toLatin1 of the input and maps the results back with
// fromLatin1.
type regexpArg struct {
	cache map[string]*regexp.Regexp
	// groups > 0: the most capturing groups allowed (extraction).
	groups int
	latin1 bool
}

func (c *checker) regexpArg(e *Call, args []node, i, groups int, t typ) (*regexpArg, error) {
	ra := &regexpArg{cache: map[string]*regexp.Regexp{}, groups: groups, latin1: t == tBytes}
	if v, ok := constValue(args[i]); ok && !v.null {
		if _, err := ra.get(v.s); err != nil {
			return nil, c.errf(e.Args[i].Pos(), "%s", err.Error())
		}
	}
	return ra, nil
}

func (ra *regexpArg) get(p string) (*regexp.Regexp, error) {
	if re := ra.cache[p]; re != nil {
		return re, nil
	}
	re, err := compileRegexp(p, ra.latin1)
	if err != nil {
		return nil, err
	}
	if ra.groups > 0 && re.NumSubexp() > ra.groups {
		return nil, fmt.Errorf("Regular expressions passed into extraction functions must not have more than 1 capturing group")
	}
	if len(ra.cache) < 64 {
		ra.cache[p] = re
	}
	return re, nil
}

// compileRegexp compiles a pattern; a BYTES one (latin1) as Latin-1 text.
func compileRegexp(p string, latin1 bool) (*regexp.Regexp, error) {
	if latin1 {
		p = toLatin1(p)
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, fmt.Errorf("Cannot parse regular expression: %v", err)
	}
	return re, nil
}

// toLatin1 maps BYTES to the UTF-8 text whose characters are its bytes
// (byte b is rune U+00b), so that Go's regexp, which works on UTF-8,
// matches BYTES byte by byte: '.' is one byte, and a multibyte UTF-8
// sequence or an invalid one is as many characters as it has bytes. ASCII
// input maps to itself without copying.
func toLatin1(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			n++
		}
	}
	if n == 0 {
		return s
	}
	b := make([]byte, 0, len(s)+n)
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < utf8.RuneSelf {
			b = append(b, c)
		} else {
			b = append(b, 0xC0|c>>6, 0x80|c&0x3F)
		}
	}
	return string(b)
}

// fromLatin1 is toLatin1's inverse, on text whose characters are all at
// most U+00FF (substrings of toLatin1's results and their concatenations).
func fromLatin1(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	b := make([]byte, 0, len(s))
	for _, r := range s {
		b = append(b, byte(r))
	}
	return string(b)
}

func registerString() {
	builtins["OCTET_LENGTH"] = builtins["BYTE_LENGTH"]
	builtins["REPEAT"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 2, 2); err != nil {
			return nil, err
		}
		t, ok := stringOrBytes(args[:1])
		if !ok {
			return nil, c.noSig(e, args)
		}
		return c.sig(e, args, []typ{t, tInt}, t, func(a []value) (value, error) {
			n := a[1].i
			if n < 0 {
				return value{}, fmt.Errorf("Second argument in REPEAT() cannot be negative: %d", n)
			}
			if len(a[0].s) > 0 && n > int64(maxStringResult/len(a[0].s)) {
				return value{}, fmt.Errorf("Output of REPEAT exceeds max allowed output size of %d bytes", maxStringResult)
			}
			return value{s: strings.Repeat(a[0].s, int(n))}, nil
		})
	}
	pad := func(left bool) builtin {
		return func(c *checker, e *Call, args []node) (node, error) {
			if err := c.arity(e, args, 2, 3); err != nil {
				return nil, err
			}
			t, ok := stringOrBytes([]node{args[0]})
			if ok && len(args) == 3 {
				t, ok = stringOrBytes([]node{args[0], args[2]})
			}
			if !ok {
				return nil, c.noSig(e, args)
			}
			want := []typ{t, tInt, t}[:len(args)]
			return c.sig(e, args, want, t, func(a []value) (value, error) {
				n := a[1].i
				if n < 0 {
					return value{}, fmt.Errorf("Second argument (length) of %s() cannot be negative: %d", e.Name, n)
				}
				if n > maxStringResult {
					return value{}, fmt.Errorf("Output of %s exceeds max allowed output size of %d bytes", e.Name, maxStringResult)
				}
				p := " "
				if len(a) == 3 {
					p = a[2].s
				}
				if p == "" {
					return value{}, fmt.Errorf("Third argument (pattern) of %s() cannot be empty", e.Name)
				}
				us := units(t, a[0].s)
				if int64(len(us)) >= n {
					return value{s: strings.Join(us[:n], "")}, nil
				}
				pu := units(t, p)
				var fill strings.Builder
				for k := int64(0); k < n-int64(len(us)); k++ {
					fill.WriteString(pu[k%int64(len(pu))])
				}
				if fill.Len()+len(a[0].s) > maxStringResult {
					return value{}, fmt.Errorf("Output of %s exceeds max allowed output size of %d bytes", e.Name, maxStringResult)
				}
				if left {
					return value{s: fill.String() + a[0].s}, nil
				}
				return value{s: a[0].s + fill.String()}, nil
			})
		}
	}
	builtins["LPAD"] = pad(true)
	builtins["RPAD"] = pad(false)
	builtins["INITCAP"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 1, 2); err != nil {
			return nil, err
		}
		return c.sig(e, args, repeatT(tString, len(args)), tString, func(a []value) (value, error) {
			delims := " \t\n\r\v\f[](){}/|\\<>!?@\"^#$&~_,.:;*%+-"
			if len(a) == 2 {
				delims = a[1].s
			}
			var b strings.Builder
			start := true
			for _, r := range a[0].s {
				if strings.ContainsRune(delims, r) {
					b.WriteRune(r)
					start = true
					continue
				}
				if start {
					b.WriteRune(unicode.ToUpper(r))
				} else {
					b.WriteRune(unicode.ToLower(r))
				}
				start = false
			}
			return value{s: b.String()}, nil
		})
	}
	builtins["INSTR"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 2, 4); err != nil {
			return nil, err
		}
		t, ok := stringOrBytes(args[:2])
		if !ok {
			return nil, c.noSig(e, args)
		}
		want := []typ{t, t, tInt, tInt}[:len(args)]
		return c.sig(e, args, want, tInt, func(a []value) (value, error) {
			pos, occ := int64(1), int64(1)
			if len(a) > 2 {
				pos = a[2].i
			}
			if len(a) > 3 {
				occ = a[3].i
			}
			if pos == 0 {
				return value{}, fmt.Errorf("Position must be non-zero")
			}
			if occ <= 0 {
				return value{}, fmt.Errorf("Occurrence must be positive")
			}
			return value{i: instr(t, a[0].s, a[1].s, pos, occ)}, nil
		})
	}
	builtins["ASCII"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 1, 1); err != nil {
			return nil, err
		}
		t, ok := stringOrBytes(args)
		if !ok {
			return nil, c.noSig(e, args)
		}
		return c.sig(e, args, []typ{t}, tInt, func(a []value) (value, error) {
			s := a[0].s
			if s == "" {
				return value{i: 0}, nil
			}
			if t == tString && s[0] >= utf8.RuneSelf {
				return value{}, fmt.Errorf("First character of input string is not ASCII: %s", s)
			}
			return value{i: int64(s[0])}, nil
		})
	}
	builtins["UNICODE"] = func(c *checker, e *Call, args []node) (node, error) {
		return c.sig(e, args, []typ{tString}, tInt, func(a []value) (value, error) {
			if a[0].s == "" {
				return value{i: 0}, nil
			}
			r, _ := utf8.DecodeRuneInString(a[0].s)
			return value{i: int64(r)}, nil
		})
	}
	builtins["CHR"] = func(c *checker, e *Call, args []node) (node, error) {
		return c.sig(e, args, []typ{tInt}, tString, func(a []value) (value, error) {
			x := a[0].i
			if x == 0 {
				return value{s: ""}, nil
			}
			if x < 0 || x > unicode.MaxRune || (x >= 0xD800 && x <= 0xDFFF) {
				return value{}, fmt.Errorf("Invalid codepoint %d", x)
			}
			return value{s: string(rune(x))}, nil
		})
	}
	builtins["TRANSLATE"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 3, 3); err != nil {
			return nil, err
		}
		t, ok := stringOrBytes(args)
		if !ok {
			return nil, c.noSig(e, args)
		}
		return c.sig(e, args, []typ{t, t, t}, t, func(a []value) (value, error) {
			from, to := units(t, a[1].s), units(t, a[2].s)
			m := make(map[string]int, len(from))
			for i, u := range from {
				if _, dup := m[u]; dup {
					return value{}, fmt.Errorf("Duplicate character %q in TRANSLATE source characters", u)
				}
				m[u] = i
			}
			var b strings.Builder
			for _, u := range units(t, a[0].s) {
				i, ok := m[u]
				switch {
				case !ok:
					b.WriteString(u)
				case i < len(to):
					b.WriteString(to[i])
				}
			}
			return value{s: b.String()}, nil
		})
	}
	builtins["SOUNDEX"] = func(c *checker, e *Call, args []node) (node, error) {
		return c.sig(e, args, []typ{tString}, tString, func(a []value) (value, error) { return value{s: soundex(a[0].s)}, nil })
	}
	builtins["REGEXP_REPLACE"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 3, 3); err != nil {
			return nil, err
		}
		t, ok := stringOrBytes(args)
		if !ok {
			return nil, c.noSig(e, args)
		}
		ra, err := c.regexpArg(e, args, 1, 0, t)
		if err != nil {
			return nil, err
		}
		return c.sig(e, args, []typ{t, t, t}, t, func(a []value) (value, error) {
			re, err := ra.get(a[1].s)
			if err != nil {
				return value{}, err
			}
			if t == tBytes {
				v, err := regexpReplace(re, toLatin1(a[0].s), toLatin1(a[2].s))
				v.s = fromLatin1(v.s)
				return v, err
			}
			return regexpReplace(re, a[0].s, a[2].s)
		})
	}
	// REGEXP_EXTRACT and REGEXP_SUBSTR (its synonym) with the optional
	// position and occurrence.
	extract := func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 2, 4); err != nil {
			return nil, err
		}
		t, ok := stringOrBytes(args[:2])
		if !ok {
			return nil, c.noSig(e, args)
		}
		ra, err := c.regexpArg(e, args, 1, 1, t)
		if err != nil {
			return nil, err
		}
		want := []typ{t, t, tInt, tInt}[:len(args)]
		return c.sig(e, args, want, t, func(a []value) (value, error) {
			re, err := ra.get(a[1].s)
			if err != nil {
				return value{}, err
			}
			pos, occ := int64(1), int64(1)
			if len(a) > 2 {
				pos = a[2].i
			}
			if len(a) > 3 {
				occ = a[3].i
			}
			if pos <= 0 {
				return value{}, fmt.Errorf("Position parameter in %s must be positive", e.Name)
			}
			if occ <= 0 {
				return value{}, fmt.Errorf("Occurrence parameter in %s must be positive", e.Name)
			}
			s := a[0].s
			if t == tBytes {
				s = toLatin1(s) // one character a byte: offsets count characters
			}
			off, ok := unitOffset(tString, s, pos-1)
			if !ok {
				return nullValue, nil
			}
			ms := re.FindAllStringSubmatchIndex(s[off:], int(min(occ, 1<<20)))
			if int64(len(ms)) < occ {
				return nullValue, nil
			}
			m := ms[occ-1]
			g := len(m)/2 - 1
			if m[2*g] < 0 {
				return nullValue, nil
			}
			if t == tBytes {
				return value{s: fromLatin1(s[off+m[2*g] : off+m[2*g+1]])}, nil
			}
			return value{s: s[off+m[2*g] : off+m[2*g+1]]}, nil
		})
	}
	builtins["REGEXP_EXTRACT"] = extract
	builtins["REGEXP_SUBSTR"] = extract
	builtins["REGEXP_INSTR"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 2, 5); err != nil {
			return nil, err
		}
		t, ok := stringOrBytes(args[:2])
		if !ok {
			return nil, c.noSig(e, args)
		}
		ra, err := c.regexpArg(e, args, 1, 1, t)
		if err != nil {
			return nil, err
		}
		want := []typ{t, t, tInt, tInt, tInt}[:len(args)]
		return c.sig(e, args, want, tInt, func(a []value) (value, error) {
			re, err := ra.get(a[1].s)
			if err != nil {
				return value{}, err
			}
			pos, occ, after := int64(1), int64(1), int64(0)
			if len(a) > 2 {
				pos = a[2].i
			}
			if len(a) > 3 {
				occ = a[3].i
			}
			if len(a) > 4 {
				after = a[4].i
			}
			if pos <= 0 {
				return value{}, fmt.Errorf("Position parameter in REGEXP_INSTR must be positive")
			}
			if occ <= 0 {
				return value{}, fmt.Errorf("Occurrence parameter in REGEXP_INSTR must be positive")
			}
			if after != 0 && after != 1 {
				return value{}, fmt.Errorf("Occurrence position parameter in REGEXP_INSTR must be 0 or 1")
			}
			s := a[0].s
			if t == tBytes {
				s = toLatin1(s) // one character a byte: positions count characters
			}
			off, ok := unitOffset(tString, s, pos-1)
			if !ok {
				return value{i: 0}, nil
			}
			ms := re.FindAllStringSubmatchIndex(s[off:], int(min(occ, 1<<20)))
			if int64(len(ms)) < occ {
				return value{i: 0}, nil
			}
			m := ms[occ-1]
			g := len(m)/2 - 1
			at := m[2*g]
			if after == 1 {
				at = m[2*g+1]
			}
			if at < 0 {
				return value{i: 0}, nil
			}
			return value{i: int64(unitCount(tString, s[:off+at])) + 1}, nil
		})
	}
	bytesToStr := func(name string, f func([]byte) string) {
		builtins[name] = func(c *checker, e *Call, args []node) (node, error) {
			return c.sig(e, args, []typ{tBytes}, tString, func(a []value) (value, error) { return value{s: f([]byte(a[0].s))}, nil })
		}
	}
	strToBytes := func(name string, f func(string) ([]byte, error)) {
		builtins[name] = func(c *checker, e *Call, args []node) (node, error) {
			return c.sig(e, args, []typ{tString}, tBytes, func(a []value) (value, error) {
				b, err := f(a[0].s)
				if err != nil {
					return value{}, fmt.Errorf("Failed to decode invalid %s string: %q", strings.TrimPrefix(name, "FROM_"), a[0].s)
				}
				return value{s: string(b)}, nil
			})
		}
	}
	bytesToStr("TO_HEX", hex.EncodeToString)
	bytesToStr("TO_BASE64", base64.StdEncoding.EncodeToString)
	bytesToStr("TO_BASE32", base32.StdEncoding.EncodeToString)
	strToBytes("FROM_HEX", func(s string) ([]byte, error) {
		if len(s)%2 == 1 {
			s = "0" + s // an odd number of digits reads as if led by 0
		}
		return hex.DecodeString(s)
	})
	strToBytes("FROM_BASE64", func(s string) ([]byte, error) {
		return base64.StdEncoding.DecodeString(strings.Join(strings.Fields(s), ""))
	})
	strToBytes("FROM_BASE32", base32.StdEncoding.DecodeString)
	bytesToStr("SAFE_CONVERT_BYTES_TO_STRING", func(b []byte) string { return strings.ToValidUTF8(string(b), "\uFFFD") })
	builtins["EDIT_DISTANCE"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 2, 2); err != nil {
			return nil, err
		}
		t, ok := stringOrBytes(args)
		if !ok {
			return nil, c.noSig(e, args)
		}
		return c.sig(e, args, []typ{t, t}, tInt, func(a []value) (value, error) {
			return value{i: int64(levenshtein(units(t, a[0].s), units(t, a[1].s)))}, nil
		})
	}
}

// unitOffset is the byte offset of the k-th (0-based) unit of s; false if
// s has fewer than k units (k == len is the end, still valid).
func unitOffset(t typ, s string, k int64) (int, bool) {
	if t == tBytes {
		return int(k), k <= int64(len(s))
	}
	n := int64(0)
	for i := range s {
		if n == k {
			return i, true
		}
		n++
	}
	return len(s), n == k
}

// instr is INSTR's search: pos > 0 searches forward from the pos-th unit,
// pos < 0 backward from the -pos-th unit from the end; overlapping
// occurrences count.
func instr(t typ, s, sub string, pos, occ int64) int64 {
	us := units(t, s)
	n := int64(len(us))
	sn := int64(unitCount(t, sub))
	match := func(i int64) bool {
		return i >= 0 && i+sn <= n && strings.Join(us[i:i+sn], "") == sub
	}
	if pos > 0 {
		for i := pos - 1; i <= n-sn; i++ {
			if match(i) {
				if occ--; occ == 0 {
					return i + 1
				}
			}
		}
		return 0
	}
	start := n + pos // the unit -pos from the end
	if start+sn > n {
		start = n - sn
	}
	for i := start; i >= 0; i-- {
		if match(i) {
			if occ--; occ == 0 {
				return i + 1
			}
		}
	}
	return 0
}

// regexpReplace applies GoogleSQL's replacement syntax: \0..\9 name the
// whole match and its groups, \\ is a backslash.
func regexpReplace(re *regexp.Regexp, s, repl string) (value, error) {
	for i := 0; i < len(repl); i++ {
		if repl[i] != '\\' {
			continue
		}
		if i+1 >= len(repl) {
			return value{}, fmt.Errorf("REGEXP_REPLACE: Rewrite string ends with \\")
		}
		i++
		if c := repl[i]; c >= '0' && c <= '9' && int(c-'0') > re.NumSubexp() {
			return value{}, fmt.Errorf("REGEXP_REPLACE: Rewrite string references \\%c, but the regular expression has only %d capturing groups", c, re.NumSubexp())
		} else if c != '\\' && (c < '0' || c > '9') {
			return value{}, fmt.Errorf("REGEXP_REPLACE: Invalid escape sequence \\%c in rewrite string", c)
		}
	}
	var b strings.Builder
	last := 0
	prevEnd := -1
	for _, m := range re.FindAllStringSubmatchIndex(s, -1) {
		if m[0] == m[1] && m[0] == prevEnd {
			continue // an empty match right after a match is not replaced
		}
		b.WriteString(s[last:m[0]])
		for i := 0; i < len(repl); i++ {
			if repl[i] != '\\' {
				b.WriteByte(repl[i])
				continue
			}
			i++
			if repl[i] == '\\' {
				b.WriteByte('\\')
				continue
			}
			g := int(repl[i] - '0')
			if m[2*g] >= 0 {
				b.WriteString(s[m[2*g]:m[2*g+1]])
			}
		}
		last, prevEnd = m[1], m[1]
	}
	b.WriteString(s[last:])
	return value{s: b.String()}, nil
}

// soundex is the American Soundex code of s's Latin letters (non-letters
// skipped); "" when s has none.
func soundex(s string) string {
	code := func(r rune) byte {
		switch unicode.ToLower(r) {
		case 'b', 'f', 'p', 'v':
			return '1'
		case 'c', 'g', 'j', 'k', 'q', 's', 'x', 'z':
			return '2'
		case 'd', 't':
			return '3'
		case 'l':
			return '4'
		case 'm', 'n':
			return '5'
		case 'r':
			return '6'
		case 'h', 'w':
			return 'h'
		}
		return '0' // vowels
	}
	isLetter := func(r rune) bool { return r < utf8.RuneSelf && unicode.IsLetter(r) }
	var out []byte
	var last byte
	for _, r := range s {
		if !isLetter(r) {
			continue
		}
		c := code(r)
		if out == nil {
			out = []byte{byte(unicode.ToUpper(r))}
			last = c
			continue
		}
		switch {
		case c == 'h':
			// H and W do not separate equal codes.
		case c == '0':
			last = '0'
		case c != last:
			out = append(out, c)
			last = c
		}
		if len(out) == 4 {
			break
		}
	}
	if out == nil {
		return ""
	}
	for len(out) < 4 {
		out = append(out, '0')
	}
	return string(out)
}

func levenshtein(a, b []string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
