package filter

import (
	"strings"
	"sync/atomic"
	"unicode"
	"unicode/utf8"
)

type tokKind int

const (
	kEOF    tokKind = iota
	kIdent          // unquoted identifier or keyword
	kQIdent         // `quoted identifier`
	kInt            // integer literal (decimal or 0x hex)
	kFloat          // floating point literal
	kString         // string literal, decoded
	kBytes          // bytes literal, decoded
	kOp             // punctuation and operators
	kParam          // query parameter: @name (val: the name) or ? (val: "")
)

type token struct {
	kind tokKind
	pos  int    // byte offset of the first character
	text string // source text (kOp: the operator; kIdent: as written)
	val  string // decoded value: identifier name, string or bytes contents
}

// describe renders the token the way BigQuery's syntax errors do.
func (t token) describe() string {
	switch t.kind {
	case kEOF:
		return "end of input"
	case kIdent:
		if isReserved(t.text) {
			return "keyword " + strings.ToUpper(t.text)
		}
		return "identifier " + quoteIdentForMsg(t.val)
	case kQIdent:
		return "identifier " + quoteIdentForMsg(t.val)
	case kInt:
		return "integer literal \"" + t.text + "\""
	case kFloat:
		return "floating point literal \"" + t.text + "\""
	case kString:
		return "string literal " + quoteString(t.val)
	case kBytes:
		return "bytes literal " + quoteBytes(t.val)
	case kParam:
		if t.val == "" {
			return "\"?\""
		}
		return "query parameter " + quoteIdentForMsg(t.val)
	}
	return "\"" + t.text + "\""
}

func quoteIdentForMsg(s string) string { return "\"" + s + "\"" }

// reserved are GoogleSQL's reserved keywords: they cannot be used as
// unquoted identifiers.
var reserved = map[string]bool{}

func init() {
	for _, k := range strings.Fields(`ALL AND ANY ARRAY AS ASC ASSERT_ROWS_MODIFIED AT BETWEEN BY CASE CAST
		COLLATE CONTAINS CREATE CROSS CUBE CURRENT DEFAULT DEFINE DESC DISTINCT ELSE END ENUM ESCAPE
		EXCEPT EXCLUDE EXISTS EXTRACT FALSE FETCH FOLLOWING FOR FROM FULL GROUP GROUPING GROUPS HASH
		HAVING IF IGNORE IN INNER INTERSECT INTERVAL INTO IS JOIN LATERAL LEFT LIKE LIMIT LOOKUP MERGE
		NATURAL NEW NO NOT NULL NULLS OF ON OR ORDER OUTER OVER PARTITION PRECEDING PROTO QUALIFY
		RANGE RECURSIVE RESPECT RIGHT ROLLUP ROWS SELECT SET SOME STRUCT TABLESAMPLE THEN TO TREAT
		TRUE UNBOUNDED UNION UNNEST USING WHEN WHERE WINDOW WITH WITHIN`) {
		reserved[k] = true
	}
}

func isReserved(s string) bool { return reserved[strings.ToUpper(s)] }

type lexer struct {
	src    string // the text lexed
	prefix string // what precedes src (source.prefix): tokens' positions count it
	// pos is the next byte of src; the positions of the tokens next
	// returns are len(prefix) past theirs in src.
	pos      int
	prev     tokKind // kind of the previous token, to read "a.5" as a path
	prevText string
	// safeDot: the previous tokens are SAFE and "." (SAFE.HLL_COUNT.EXTRACT).
	safeDot   bool
	safeIdent bool // the previous token is SAFE
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentChar(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHex(c byte) bool {
	return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// newLexer lexes src.text, its tokens' positions those of src.
func newLexer(src source) lexer {
	lexedBytes.Add(int64(len(src.text)))
	return lexer{src: src.text, prefix: src.prefix}
}

// lexedBytes counts the bytes lexers were given, for tests that bound the
// work of compiling a query (LexedBytes).
var lexedBytes atomic.Int64

// LexedBytes returns how many bytes of text the expression layer has
// lexed so far, in all goroutines: a test hook for the query engine's
// tests that its compile work grows linearly with the query.
func LexedBytes() int64 { return lexedBytes.Load() }

// errf reports an error at byte pos of l.src.
func (l *lexer) errf(pos int, format string, args ...any) *Error {
	return newErrorIn(l.prefix, l.src, len(l.prefix)+pos, format, args...)
}

// skipSpace skips whitespace and comments (--, # and /* */).
func (l *lexer) skipSpace() *Error {
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			l.pos++
		case c == '#' || (c == '-' && strings.HasPrefix(l.src[l.pos:], "--")):
			for l.pos < len(l.src) && l.src[l.pos] != '\n' {
				l.pos++
			}
		case c == '/' && strings.HasPrefix(l.src[l.pos:], "/*"):
			end := strings.Index(l.src[l.pos+2:], "*/")
			if end < 0 {
				return l.errf(l.pos, "Syntax error: Unclosed comment")
			}
			l.pos += 2 + end + 2
		default:
			if c >= utf8.RuneSelf {
				r, n := utf8.DecodeRuneInString(l.src[l.pos:])
				if unicode.IsSpace(r) {
					l.pos += n
					continue
				}
			}
			return nil
		}
	}
	return nil
}

func (l *lexer) next() (token, *Error) {
	if err := l.skipSpace(); err != nil {
		return token{}, err
	}
	t, err := l.scan()
	if err == nil {
		l.safeDot = l.safeIdent && t.kind == kOp && t.text == "."
		l.safeIdent = t.kind == kIdent && strings.EqualFold(t.text, "SAFE")
		l.prev = t.kind
		l.prevText = t.text
		t.pos += len(l.prefix)
	}
	return t, err
}

func (l *lexer) scan() (token, *Error) {
	start := l.pos
	if l.pos >= len(l.src) {
		return token{kind: kEOF, pos: start}, nil
	}
	c := l.src[l.pos]
	afterDot := l.prev == kOp && l.prevText == "."
	switch {
	case isIdentStart(c):
		// String and bytes literal prefixes: r, b, rb, br (any case).
		j := l.pos
		for j < len(l.src) && j-l.pos < 2 && strings.ContainsRune("rRbB", rune(l.src[j])) {
			j++
		}
		if !afterDot && j > l.pos && j < len(l.src) && (l.src[j] == '\'' || l.src[j] == '"') {
			prefix := strings.ToLower(l.src[l.pos:j])
			if prefix == "r" || prefix == "b" || prefix == "rb" || prefix == "br" {
				l.pos = j
				return l.scanString(start, strings.Contains(prefix, "r"), strings.Contains(prefix, "b"))
			}
		}
		for l.pos < len(l.src) && isIdentChar(l.src[l.pos]) {
			l.pos++
		}
		if !afterDot || l.safeDot {
			l.dottedFunc(start)
		}
		text := l.src[start:l.pos]
		return token{kind: kIdent, pos: start, text: text, val: text}, nil
	case c == '`':
		return l.scanQuotedIdent(start)
	case c == '\'' || c == '"':
		return l.scanString(start, false, false)
	case isDigit(c) || (c == '.' && l.pos+1 < len(l.src) && isDigit(l.src[l.pos+1]) && !afterIdent(l.prev)):
		if afterDot && isDigit(c) {
			// Path components after a dot may start with a digit (a.1b);
			// they are identifiers, never numbers.
			for l.pos < len(l.src) && isIdentChar(l.src[l.pos]) {
				l.pos++
			}
			text := l.src[start:l.pos]
			return token{kind: kIdent, pos: start, text: text, val: text}, nil
		}
		return l.scanNumber(start)
	}
	if c == '?' {
		l.pos++
		return token{kind: kParam, pos: start, text: "?"}, nil
	}
	if c == '@' && l.pos+1 < len(l.src) && isIdentStart(l.src[l.pos+1]) {
		l.pos++
		for l.pos < len(l.src) && isIdentChar(l.src[l.pos]) {
			l.pos++
		}
		return token{kind: kParam, pos: start, text: l.src[start:l.pos], val: l.src[start+1 : l.pos]}, nil
	}
	// Operators.
	for _, op := range []string{"<=", ">=", "<>", "!=", "||", "<<", ">>", "=>"} {
		if strings.HasPrefix(l.src[l.pos:], op) {
			l.pos += 2
			return token{kind: kOp, pos: start, text: op}, nil
		}
	}
	if strings.IndexByte("=<>+-*/(),.[]~&|^", c) >= 0 {
		l.pos++
		return token{kind: kOp, pos: start, text: string(c)}, nil
	}
	r, _ := utf8.DecodeRuneInString(l.src[l.pos:])
	if r == utf8.RuneError {
		return token{}, l.errf(start, "Syntax error: Illegal input character (invalid UTF-8)")
	}
	return token{}, l.errf(start, "Syntax error: Illegal input character %q", string(r))
}

// dottedFuncs are the prefixes of GoogleSQL's dotted function names
// (HLL_COUNT.INIT, ...).
var dottedFuncs = map[string]bool{"HLL_COUNT": true}

// dottedFunc extends the identifier at start to a dotted function name,
// prefix.name, when a call follows (HLL_COUNT.INIT(x)): one identifier
// token, so that callers see one function name as for any other call.
func (l *lexer) dottedFunc(start int) {
	if !dottedFuncs[strings.ToUpper(l.src[start:l.pos])] || l.pos+1 >= len(l.src) ||
		l.src[l.pos] != '.' || !isIdentStart(l.src[l.pos+1]) {
		return
	}
	end := l.pos + 1
	for end < len(l.src) && isIdentChar(l.src[end]) {
		end++
	}
	j := end
	for j < len(l.src) && (l.src[j] == ' ' || l.src[j] == '\t' || l.src[j] == '\n' || l.src[j] == '\r') {
		j++
	}
	if j < len(l.src) && l.src[j] == '(' {
		l.pos = end
	}
}

func afterIdent(k tokKind) bool { return k == kIdent || k == kQIdent }

func (l *lexer) scanNumber(start int) (token, *Error) {
	s := l.src
	if s[l.pos] == '0' && l.pos+1 < len(s) && (s[l.pos+1] == 'x' || s[l.pos+1] == 'X') {
		l.pos += 2
		d := l.pos
		for l.pos < len(s) && isHex(s[l.pos]) {
			l.pos++
		}
		if l.pos == d {
			return token{}, l.errf(start, "Syntax error: Invalid hex integer literal")
		}
		if l.pos < len(s) && isIdentChar(s[l.pos]) {
			return token{}, l.errf(start, "Syntax error: Missing whitespace between literal and alias")
		}
		return token{kind: kInt, pos: start, text: s[start:l.pos]}, nil
	}
	kind := kInt
	for l.pos < len(s) && isDigit(s[l.pos]) {
		l.pos++
	}
	if l.pos < len(s) && s[l.pos] == '.' {
		kind = kFloat
		l.pos++
		for l.pos < len(s) && isDigit(s[l.pos]) {
			l.pos++
		}
	}
	if l.pos < len(s) && (s[l.pos] == 'e' || s[l.pos] == 'E') {
		j := l.pos + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && isDigit(s[j]) {
			kind = kFloat
			for j < len(s) && isDigit(s[j]) {
				j++
			}
			l.pos = j
		} else {
			return token{}, l.errf(start, "Syntax error: Invalid floating point literal %q", s[start:j])
		}
	}
	if l.pos < len(s) && isIdentChar(s[l.pos]) {
		return token{}, l.errf(start, "Syntax error: Missing whitespace between literal and alias")
	}
	return token{kind: kind, pos: start, text: s[start:l.pos]}, nil
}

func (l *lexer) scanQuotedIdent(start int) (token, *Error) {
	l.pos++ // opening backtick
	var b strings.Builder
	for {
		if l.pos >= len(l.src) {
			return token{}, l.errf(start, "Syntax error: Unclosed identifier literal")
		}
		c := l.src[l.pos]
		switch c {
		case '`':
			l.pos++
			if b.Len() == 0 {
				return token{}, l.errf(start, "Syntax error: Invalid empty identifier")
			}
			if !utf8.ValidString(b.String()) {
				return token{}, l.errf(start, "Syntax error: Identifier is not valid UTF-8")
			}
			return token{kind: kQIdent, pos: start, text: l.src[start:l.pos], val: b.String()}, nil
		case '\n', '\r':
			return token{}, l.errf(start, "Syntax error: Unclosed identifier literal")
		case '\\':
			if err := l.escape(&b, false); err != nil {
				return token{}, err
			}
		default:
			b.WriteByte(c)
			l.pos++
		}
	}
}

// scanString scans a quoted literal with l.pos at its opening quote. raw
// and bytes come from the r/b prefix.
func (l *lexer) scanString(start int, raw, bytes bool) (token, *Error) {
	q := l.src[l.pos]
	triple := strings.HasPrefix(l.src[l.pos:], strings.Repeat(string(q), 3))
	var closing string
	if triple {
		closing = strings.Repeat(string(q), 3)
		l.pos += 3
	} else {
		closing = string(q)
		l.pos++
	}
	kindName := "string"
	if bytes {
		kindName = "bytes"
	}
	var b strings.Builder
	for {
		if l.pos >= len(l.src) {
			if triple {
				return token{}, l.errf(start, "Syntax error: Unclosed triple-quoted %s literal", kindName)
			}
			return token{}, l.errf(start, "Syntax error: Unclosed %s literal", kindName)
		}
		if strings.HasPrefix(l.src[l.pos:], closing) {
			l.pos += len(closing)
			break
		}
		c := l.src[l.pos]
		switch {
		case (c == '\n' || c == '\r') && !triple:
			return token{}, l.errf(start, "Syntax error: Unclosed %s literal", kindName)
		case c == '\\' && raw:
			// Raw: a backslash and the next character are both kept; the
			// pair never closes the literal.
			if l.pos+1 >= len(l.src) {
				l.pos++
				continue
			}
			b.WriteByte(c)
			_, n := utf8.DecodeRuneInString(l.src[l.pos+1:])
			b.WriteString(l.src[l.pos+1 : l.pos+1+n])
			l.pos += 1 + n
		case c == '\\':
			if err := l.escape(&b, bytes); err != nil {
				return token{}, err
			}
		default:
			b.WriteByte(c)
			l.pos++
		}
	}
	val := b.String()
	kind := kString
	if bytes {
		kind = kBytes
	} else if !utf8.ValidString(val) {
		return token{}, l.errf(start, "Syntax error: String literal is not valid UTF-8")
	}
	return token{kind: kind, pos: start, text: l.src[start:l.pos], val: val}, nil
}

// escape decodes one escape sequence at l.pos (a backslash) into b. In
// string literals \x, \X and octal escapes name a code point; in bytes
// literals they name a byte, and \u, \U are not allowed.
func (l *lexer) escape(b *strings.Builder, bytes bool) *Error {
	at := l.pos
	if l.pos+1 >= len(l.src) {
		return l.errf(at, "Syntax error: Illegal escape sequence: \\")
	}
	c := l.src[l.pos+1]
	l.pos += 2
	simple := map[byte]byte{'a': 7, 'b': 8, 'f': 12, 'n': 10, 'r': 13, 't': 9, 'v': 11,
		'\\': '\\', '?': '?', '"': '"', '\'': '\'', '`': '`'}
	if v, ok := simple[c]; ok {
		b.WriteByte(v)
		return nil
	}
	hexN := func(n int) (rune, bool) {
		if l.pos+n > len(l.src) {
			return 0, false
		}
		var r rune
		for i := 0; i < n; i++ {
			h := l.src[l.pos+i]
			if !isHex(h) {
				return 0, false
			}
			r = r*16 + rune(hexVal(h))
		}
		l.pos += n
		return r, true
	}
	put := func(r rune) {
		if bytes {
			b.WriteByte(byte(r))
		} else {
			b.WriteRune(r)
		}
	}
	switch {
	case c >= '0' && c <= '7':
		if l.pos+2 > len(l.src) || l.src[l.pos] < '0' || l.src[l.pos] > '7' || l.src[l.pos+1] < '0' || l.src[l.pos+1] > '7' {
			return l.errf(at, "Syntax error: Illegal escape sequence: Octal escape must be followed by 3 octal digits but saw: \\%s", l.src[at+1:min(len(l.src), at+4)])
		}
		r := rune(c-'0')*64 + rune(l.src[l.pos]-'0')*8 + rune(l.src[l.pos+1]-'0')
		l.pos += 2
		if r > 0xff {
			return l.errf(at, "Syntax error: Illegal escape sequence: Octal value out of range")
		}
		put(r)
	case c == 'x' || c == 'X':
		r, ok := hexN(2)
		if !ok {
			return l.errf(at, "Syntax error: Illegal escape sequence: Hex escape must be followed by 2 hex digits")
		}
		put(r)
	case (c == 'u' || c == 'U') && !bytes:
		n := 4
		if c == 'U' {
			n = 8
		}
		r, ok := hexN(n)
		if !ok {
			return l.errf(at, "Syntax error: Illegal escape sequence: \\%c must be followed by %d hex digits", c, n)
		}
		if r > unicode.MaxRune || (r >= 0xD800 && r <= 0xDFFF) {
			return l.errf(at, "Syntax error: Illegal escape sequence: invalid code point")
		}
		b.WriteRune(r)
	default:
		r, _ := utf8.DecodeRuneInString(l.src[at+1:])
		return l.errf(at, "Syntax error: Illegal escape sequence: \\%c", r)
	}
	return nil
}

func hexVal(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}
