package protorows

import (
	"crypto/rand"
	"fmt"
	randv2 "math/rand/v2"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"

	"github.com/bqstore/bqstore/internal/jsoncanon"
	"github.com/bqstore/bqstore/internal/schema"
)

// Default is a compiled column defaultValueExpression. BigQuery allows a
// literal of any type, NULL, CURRENT_TIMESTAMP, CURRENT_DATE,
// CURRENT_DATETIME, CURRENT_TIME, GENERATE_UUID, RAND, SESSION_USER and
// ST_GEOGPOINT, and arrays ([...]) and STRUCT(...) of those; typed literals
// (DATE '...', TIMESTAMP '...', NUMERIC '...', JSON '...', RANGE<T> '...')
// included.
//
// Eval returns the value in the engine's representation, as AppendValue
// takes it: nil (NULL), int64 (INTEGER; TIMESTAMP and DATETIME in
// microseconds since the epoch; TIME in microseconds since midnight),
// float64, bool, string (STRING, JSON, GEOGRAPHY as WKT), []byte, int32
// (DATE, days), decimal128.Num (NUMERIC), decimal256.Num (BIGNUMERIC),
// arrow.MonthDayNanoInterval, []any (REPEATED elements, RECORD fields in
// order, RANGE [start, end]).
type Default struct {
	Expr string
	eval func(now time.Time) (any, error)
}

// Eval evaluates the expression at time now (CURRENT_* functions).
func (d *Default) Eval(now time.Time) (any, error) { return d.eval(now) }

// SessionUser is what SESSION_USER() evaluates to: there are no users in a
// local server.
const SessionUser = "bqstore@localhost"

// CompileDefault compiles f.DefaultValueExpression against f's type and
// mode. An expression BigQuery would not accept for the column is an error.
func CompileDefault(f *schema.Field) (*Default, error) {
	p := &defParser{src: f.DefaultValueExpression}
	p.next()
	e, err := p.expr()
	if err == nil && p.tok.kind != tEOF {
		err = fmt.Errorf("unexpected %q", p.tok.text)
	}
	if err != nil {
		return nil, fmt.Errorf("default value expression %q: %v", f.DefaultValueExpression, err)
	}
	ev, err := typed(e, f, f.EffectiveMode() == schema.Repeated)
	if err != nil {
		return nil, fmt.Errorf("default value expression %q: %v", f.DefaultValueExpression, err)
	}
	return &Default{Expr: f.DefaultValueExpression, eval: ev}, nil
}

// --- lexer ---

type tokKind int

const (
	tEOF tokKind = iota
	tIdent
	tNumber
	tStr
	tBytesLit
	tPunct
)

type token struct {
	kind tokKind
	text string // identifier (upper-cased), number text, punctuation, or decoded string
}

type defParser struct {
	src string
	pos int
	tok token
	err error
}

func (p *defParser) next() {
	s := p.src
	for p.pos < len(s) && strings.IndexByte(" \t\r\n", s[p.pos]) >= 0 {
		p.pos++
	}
	if p.pos >= len(s) {
		p.tok = token{kind: tEOF}
		return
	}
	c := s[p.pos]
	start := p.pos
	switch {
	case (c == 'b' || c == 'B' || c == 'r' || c == 'R') && p.pos+1 < len(s) && (s[p.pos+1] == '\'' || s[p.pos+1] == '"' ||
		(p.pos+2 < len(s) && strings.ContainsRune("bBrR", rune(s[p.pos+1])) && (s[p.pos+2] == '\'' || s[p.pos+2] == '"'))):
		isBytes, raw := false, false
		for s[p.pos] != '\'' && s[p.pos] != '"' {
			switch s[p.pos] {
			case 'b', 'B':
				isBytes = true
			case 'r', 'R':
				raw = true
			}
			p.pos++
		}
		str, err := p.quoted(raw)
		if err != nil {
			p.fail(err)
			return
		}
		p.tok = token{kind: tStr, text: str}
		if isBytes {
			p.tok.kind = tBytesLit
		}
	case c == '\'' || c == '"':
		str, err := p.quoted(false)
		if err != nil {
			p.fail(err)
			return
		}
		p.tok = token{kind: tStr, text: str}
	case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '`':
		if c == '`' {
			end := strings.IndexByte(s[p.pos+1:], '`')
			if end < 0 {
				p.fail(fmt.Errorf("unterminated identifier"))
				return
			}
			p.tok = token{kind: tIdent, text: strings.ToUpper(s[p.pos+1 : p.pos+1+end])}
			p.pos += end + 2
			return
		}
		for p.pos < len(s) && (s[p.pos] == '_' || s[p.pos] == '.' || s[p.pos] >= 'a' && s[p.pos] <= 'z' || s[p.pos] >= 'A' && s[p.pos] <= 'Z' || s[p.pos] >= '0' && s[p.pos] <= '9') {
			p.pos++
		}
		p.tok = token{kind: tIdent, text: strings.ToUpper(s[start:p.pos])}
	case c >= '0' && c <= '9' || c == '.' && p.pos+1 < len(s) && s[p.pos+1] >= '0' && s[p.pos+1] <= '9':
		if strings.HasPrefix(strings.ToLower(s[p.pos:]), "0x") {
			p.pos += 2
			for p.pos < len(s) && isHex(s[p.pos]) {
				p.pos++
			}
		} else {
			for p.pos < len(s) && (s[p.pos] >= '0' && s[p.pos] <= '9' || s[p.pos] == '.' || s[p.pos] == 'e' || s[p.pos] == 'E' ||
				(s[p.pos] == '+' || s[p.pos] == '-') && (s[p.pos-1] == 'e' || s[p.pos-1] == 'E')) {
				p.pos++
			}
		}
		p.tok = token{kind: tNumber, text: s[start:p.pos]}
	default:
		p.pos++
		p.tok = token{kind: tPunct, text: string(c)}
	}
}

func (p *defParser) fail(err error) {
	if p.err == nil {
		p.err = err
	}
	p.tok = token{kind: tEOF}
}

// quoted reads a quoted literal at p.pos ('...', "...", or triple-quoted).
func (p *defParser) quoted(raw bool) (string, error) {
	s := p.src
	q := s[p.pos]
	delim := string(q)
	if strings.HasPrefix(s[p.pos:], strings.Repeat(string(q), 3)) {
		delim = strings.Repeat(string(q), 3)
	}
	p.pos += len(delim)
	var out strings.Builder
	for {
		if p.pos >= len(s) {
			return "", fmt.Errorf("unterminated string")
		}
		if strings.HasPrefix(s[p.pos:], delim) {
			p.pos += len(delim)
			return out.String(), nil
		}
		c := s[p.pos]
		if len(delim) == 1 && c == '\n' {
			return "", fmt.Errorf("newline in string")
		}
		if c != '\\' {
			out.WriteByte(c)
			p.pos++
			continue
		}
		if p.pos+1 >= len(s) {
			return "", fmt.Errorf("unterminated escape")
		}
		if raw {
			out.WriteByte(c)
			out.WriteByte(s[p.pos+1])
			p.pos += 2
			continue
		}
		e := s[p.pos+1]
		p.pos += 2
		switch e {
		case 'n':
			out.WriteByte('\n')
		case 'r':
			out.WriteByte('\r')
		case 't':
			out.WriteByte('\t')
		case 'a':
			out.WriteByte(7)
		case 'b':
			out.WriteByte(8)
		case 'f':
			out.WriteByte(12)
		case 'v':
			out.WriteByte(11)
		case '\\', '\'', '"', '`', '?':
			out.WriteByte(e)
		case 'x', 'X':
			if p.pos+2 > len(s) {
				return "", fmt.Errorf("bad \\x escape")
			}
			v, err := strconv.ParseUint(s[p.pos:p.pos+2], 16, 8)
			if err != nil {
				return "", fmt.Errorf("bad \\x escape")
			}
			out.WriteByte(byte(v))
			p.pos += 2
		case 'u', 'U':
			n := 4
			if e == 'U' {
				n = 8
			}
			if p.pos+n > len(s) {
				return "", fmt.Errorf("bad \\%c escape", e)
			}
			v, err := strconv.ParseUint(s[p.pos:p.pos+n], 16, 32)
			if err != nil || !utf8.ValidRune(rune(v)) {
				return "", fmt.Errorf("bad \\%c escape", e)
			}
			out.WriteRune(rune(v))
			p.pos += n
		default:
			if e >= '0' && e <= '7' && p.pos+2 <= len(s) {
				v, err := strconv.ParseUint(s[p.pos-1:p.pos+2], 8, 8)
				if err != nil {
					return "", fmt.Errorf("bad octal escape")
				}
				out.WriteByte(byte(v))
				p.pos += 2
				continue
			}
			return "", fmt.Errorf("bad escape \\%c", e)
		}
	}
}

// --- parser ---

type node struct {
	kind  string // "null", "bool", "num", "str", "bytes", "typed", "call", "array", "struct"
	text  string // literal text, type name or function name
	str   string // typed literal's string
	args  []*node
	names []string // struct field aliases ("" when none)
	neg   bool
}

func (p *defParser) expect(t string) error {
	if p.tok.kind != tPunct || p.tok.text != t {
		if p.err != nil {
			return p.err
		}
		return fmt.Errorf("expected %q", t)
	}
	p.next()
	return nil
}

func (p *defParser) expr() (*node, error) {
	if p.err != nil {
		return nil, p.err
	}
	t := p.tok
	switch t.kind {
	case tEOF:
		return nil, fmt.Errorf("unexpected end of expression")
	case tNumber:
		p.next()
		return &node{kind: "num", text: t.text}, p.err
	case tStr:
		p.next()
		return &node{kind: "str", str: t.text}, p.err
	case tBytesLit:
		p.next()
		return &node{kind: "bytes", str: t.text}, p.err
	case tPunct:
		switch t.text {
		case "-", "+":
			p.next()
			if p.tok.kind != tNumber {
				return nil, fmt.Errorf("expected a number after %q", t.text)
			}
			n := &node{kind: "num", text: p.tok.text, neg: t.text == "-"}
			p.next()
			return n, p.err
		case "(":
			p.next()
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			if p.tok.kind == tPunct && p.tok.text == "," { // (a, b): a struct
				n := &node{kind: "struct", args: []*node{e}, names: []string{""}}
				for p.tok.kind == tPunct && p.tok.text == "," {
					p.next()
					e, err := p.expr()
					if err != nil {
						return nil, err
					}
					n.args, n.names = append(n.args, e), append(n.names, "")
				}
				return n, p.expect(")")
			}
			return e, p.expect(")")
		case "[":
			p.next()
			n := &node{kind: "array"}
			for !(p.tok.kind == tPunct && p.tok.text == "]") {
				e, err := p.expr()
				if err != nil {
					return nil, err
				}
				n.args = append(n.args, e)
				if p.tok.kind == tPunct && p.tok.text == "," {
					p.next()
					continue
				}
				if !(p.tok.kind == tPunct && p.tok.text == "]") {
					return nil, fmt.Errorf("expected ',' or ']' in array")
				}
			}
			p.next()
			return n, p.err
		}
		return nil, fmt.Errorf("unexpected %q", t.text)
	}
	// Identifier.
	name := t.text
	p.next()
	switch name {
	case "NULL":
		return &node{kind: "null"}, nil
	case "TRUE", "FALSE":
		return &node{kind: "bool", text: name}, nil
	case "ARRAY":
		if p.tok.kind == tPunct && p.tok.text == "<" { // ARRAY<T>[...]: the type is checked against the column
			for p.tok.kind != tEOF && !(p.tok.kind == tPunct && p.tok.text == ">") {
				p.next()
			}
			p.next()
		}
		return p.expr()
	case "STRUCT":
		if p.tok.kind == tPunct && p.tok.text == "<" {
			depth := 0
			for p.tok.kind != tEOF {
				if p.tok.kind == tPunct && p.tok.text == "<" {
					depth++
				}
				if p.tok.kind == tPunct && p.tok.text == ">" {
					depth--
					if depth == 0 {
						p.next()
						break
					}
				}
				p.next()
			}
		}
		if err := p.expect("("); err != nil {
			return nil, err
		}
		n := &node{kind: "struct"}
		for !(p.tok.kind == tPunct && p.tok.text == ")") {
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			alias := ""
			if p.tok.kind == tIdent && p.tok.text == "AS" {
				p.next()
				if p.tok.kind != tIdent {
					return nil, fmt.Errorf("expected a field name after AS")
				}
				alias = p.tok.text
				p.next()
			}
			n.args, n.names = append(n.args, e), append(n.names, alias)
			if p.tok.kind == tPunct && p.tok.text == "," {
				p.next()
				continue
			}
			if !(p.tok.kind == tPunct && p.tok.text == ")") {
				return nil, fmt.Errorf("expected ',' or ')' in STRUCT")
			}
		}
		p.next()
		return n, p.err
	case "DATE", "DATETIME", "TIME", "TIMESTAMP", "NUMERIC", "DECIMAL", "BIGNUMERIC", "BIGDECIMAL", "JSON", "RANGE", "INTERVAL":
		typ := name
		if name == "RANGE" {
			if err := p.expect("<"); err != nil {
				return nil, err
			}
			if p.tok.kind != tIdent {
				return nil, fmt.Errorf("expected RANGE element type")
			}
			typ = "RANGE<" + p.tok.text + ">"
			p.next()
			if err := p.expect(">"); err != nil {
				return nil, err
			}
		}
		if p.tok.kind == tStr {
			s := p.tok.text
			p.next()
			return &node{kind: "typed", text: typ, str: s}, p.err
		}
		if p.tok.kind == tPunct && p.tok.text == "(" && (name == "DATE" || name == "DATETIME" || name == "TIME" || name == "TIMESTAMP") {
			return nil, fmt.Errorf("function %s(...) is not allowed in a default value", name)
		}
		return nil, fmt.Errorf("expected a string literal after %s", typ)
	}
	n := &node{kind: "call", text: name}
	if p.tok.kind == tPunct && p.tok.text == "(" {
		p.next()
		for !(p.tok.kind == tPunct && p.tok.text == ")") {
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			n.args = append(n.args, e)
			if p.tok.kind == tPunct && p.tok.text == "," {
				p.next()
				continue
			}
			if !(p.tok.kind == tPunct && p.tok.text == ")") {
				return nil, fmt.Errorf("expected ',' or ')' in %s(...)", name)
			}
		}
		p.next()
	} else if !strings.HasPrefix(name, "CURRENT_") {
		return nil, fmt.Errorf("unknown name %s", name)
	}
	return n, p.err
}

// --- typing and evaluation ---

type evalFn = func(now time.Time) (any, error)

func constant(v any) evalFn { return func(time.Time) (any, error) { return v, nil } }

// typed checks node e against the column f (its element type when
// elem is false and f is REPEATED... see asArray) and returns its evaluator.
func typed(e *node, f *schema.Field, repeated bool) (evalFn, error) {
	if e.kind == "null" {
		if repeated {
			return constant([]any{}), nil // a NULL array is an empty array
		}
		return constant(nil), nil
	}
	if repeated {
		if e.kind != "array" {
			return nil, fmt.Errorf("REPEATED column %s needs an array default", f.Name)
		}
		elems := make([]evalFn, len(e.args))
		for i, a := range e.args {
			if a.kind == "null" {
				return nil, fmt.Errorf("array elements cannot be NULL")
			}
			ev, err := typed(a, f, false)
			if err != nil {
				return nil, err
			}
			elems[i] = ev
		}
		return func(now time.Time) (any, error) {
			out := make([]any, len(elems))
			for i, ev := range elems {
				v, err := ev(now)
				if err != nil {
					return nil, err
				}
				out[i] = v
			}
			return out, nil
		}, nil
	}
	if e.kind == "array" {
		return nil, fmt.Errorf("an array is not a %s", f.Type)
	}
	switch e.kind {
	case "struct":
		if f.Type != schema.Record {
			return nil, fmt.Errorf("a STRUCT is not a %s", f.Type)
		}
		if len(e.args) != len(f.Fields) {
			return nil, fmt.Errorf("STRUCT has %d fields, the column %d", len(e.args), len(f.Fields))
		}
		fields := make([]evalFn, len(f.Fields))
		for i, a := range e.args {
			sub := f.Fields[i]
			if e.names[i] != "" && !strings.EqualFold(e.names[i], sub.Name) {
				return nil, fmt.Errorf("STRUCT field %d is named %s, the column's %s", i+1, e.names[i], sub.Name)
			}
			ev, err := typed(a, sub, sub.EffectiveMode() == schema.Repeated)
			if err != nil {
				return nil, err
			}
			fields[i] = ev
		}
		return func(now time.Time) (any, error) {
			out := make([]any, len(fields))
			for i, ev := range fields {
				v, err := ev(now)
				if err != nil {
					return nil, err
				}
				out[i] = v
			}
			return out, nil
		}, nil
	case "call":
		return typedCall(e, f)
	}
	v, err := literal(e, f)
	if err != nil {
		return nil, err
	}
	return constant(v), nil
}

func typedCall(e *node, f *schema.Field) (evalFn, error) {
	want := func(t schema.Type, n int) error {
		if f.Type != t {
			return fmt.Errorf("%s returns %s, not %s", e.text, t, f.Type)
		}
		if len(e.args) != n {
			return fmt.Errorf("%s takes %d arguments", e.text, n)
		}
		return nil
	}
	switch e.text {
	case "CURRENT_TIMESTAMP":
		if err := want(schema.Timestamp, 0); err != nil {
			return nil, err
		}
		return func(now time.Time) (any, error) { return now.UnixMicro(), nil }, nil
	case "CURRENT_DATE", "CURRENT_DATETIME", "CURRENT_TIME":
		t := map[string]schema.Type{"CURRENT_DATE": schema.Date, "CURRENT_DATETIME": schema.DateTime, "CURRENT_TIME": schema.Time}[e.text]
		if f.Type != t {
			return nil, fmt.Errorf("%s returns %s, not %s", e.text, t, f.Type)
		}
		var loc *time.Location = time.UTC
		if len(e.args) == 1 && e.args[0].kind == "str" {
			l, err := time.LoadLocation(e.args[0].str)
			if err != nil {
				return nil, fmt.Errorf("%s: unknown time zone %q", e.text, e.args[0].str)
			}
			loc = l
		} else if len(e.args) != 0 {
			return nil, fmt.Errorf("%s takes an optional time zone string", e.text)
		}
		return func(now time.Time) (any, error) {
			w := now.In(loc)
			days := daysFromCivil(int64(w.Year()), int64(w.Month()), int64(w.Day()))
			tod := int64(w.Hour()*3600+w.Minute()*60+w.Second())*1000000 + int64(w.Nanosecond()/1000)
			switch t {
			case schema.Date:
				return int32(days), nil
			case schema.DateTime:
				return days*microsPerDay + tod, nil
			}
			return tod, nil
		}, nil
	case "GENERATE_UUID":
		if err := want(schema.String, 0); err != nil {
			return nil, err
		}
		return func(time.Time) (any, error) { return newUUID(), nil }, nil
	case "RAND":
		if err := want(schema.Float, 0); err != nil {
			return nil, err
		}
		return func(time.Time) (any, error) { return randv2.Float64(), nil }, nil
	case "SESSION_USER":
		if err := want(schema.String, 0); err != nil {
			return nil, err
		}
		return constant(SessionUser), nil
	case "ST_GEOGPOINT":
		if err := want(schema.Geography, 2); err != nil {
			return nil, err
		}
		var xy [2]float64
		for i, a := range e.args {
			if a.kind != "num" {
				return nil, fmt.Errorf("ST_GEOGPOINT takes numbers")
			}
			v, err := strconv.ParseFloat(a.text, 64)
			if err != nil {
				return nil, fmt.Errorf("ST_GEOGPOINT: bad number %s", a.text)
			}
			if a.neg {
				v = -v
			}
			xy[i] = v
		}
		wkt, err := ParseGeography(fmt.Sprintf("POINT(%s %s)", fmtCoord(xy[0]), fmtCoord(xy[1])))
		if err != nil {
			return nil, fmt.Errorf("ST_GEOGPOINT: %v", err)
		}
		return constant(wkt), nil
	case "ST_GEOGFROMTEXT", "ST_GEOGFROMGEOJSON":
		if f.Type != schema.Geography || len(e.args) != 1 || e.args[0].kind != "str" {
			return nil, fmt.Errorf("%s takes one string and returns GEOGRAPHY", e.text)
		}
		wkt, err := ParseGeography(e.args[0].str)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", e.text, err)
		}
		return constant(wkt), nil
	}
	return nil, fmt.Errorf("function %s is not allowed in a default value", e.text)
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	const hex = "0123456789abcdef"
	out := make([]byte, 0, 36)
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out = append(out, '-')
		}
		out = append(out, hex[c>>4], hex[c&15])
	}
	return string(out)
}

// literal converts a literal node to the column's type, with BigQuery's
// literal coercions (an integer literal is a valid FLOAT/NUMERIC default, a
// string literal a valid DATE/TIMESTAMP/... default).
func literal(e *node, f *schema.Field) (any, error) {
	mismatch := func() error {
		what := e.kind
		switch e.kind {
		case "num":
			what = "number " + e.text
		case "str":
			what = "string " + strconv.Quote(e.str)
		case "typed":
			what = e.text + " " + strconv.Quote(e.str)
		case "bool":
			what = e.text
		}
		return fmt.Errorf("%s is not a valid %s", what, f.Type)
	}
	typ := string(f.Type)
	text := e.str
	switch e.kind {
	case "bool":
		if f.Type != schema.Boolean {
			return nil, mismatch()
		}
		return e.text == "TRUE", nil
	case "bytes":
		if f.Type != schema.Bytes {
			return nil, mismatch()
		}
		return []byte(e.str), nil
	case "typed":
		tt := e.text
		switch tt {
		case "DECIMAL":
			tt = "NUMERIC"
		case "BIGDECIMAL":
			tt = "BIGNUMERIC"
		}
		if tt == "NUMERIC" && f.Type == schema.BigNumeric {
			tt = "BIGNUMERIC" // NUMERIC coerces to BIGNUMERIC
		}
		want := typ
		if f.Type == schema.Range {
			et := schema.Timestamp
			if f.RangeElementType != nil {
				et = f.RangeElementType.Type
			}
			want = "RANGE<" + string(et) + ">"
		}
		if tt != want {
			return nil, mismatch()
		}
	case "num":
		num := e.text
		if e.neg {
			num = "-" + num
		}
		switch f.Type {
		case schema.Integer:
			v, err := strconv.ParseInt(num, 0, 64)
			if err != nil {
				return nil, mismatch()
			}
			return v, nil
		case schema.Float:
			if strings.HasPrefix(strings.ToLower(strings.TrimPrefix(num, "-")), "0x") {
				v, err := strconv.ParseInt(num, 0, 64)
				if err != nil {
					return nil, mismatch()
				}
				return float64(v), nil
			}
			v, err := strconv.ParseFloat(num, 64)
			if err != nil {
				return nil, mismatch()
			}
			return v, nil
		case schema.Numeric, schema.BigNumeric:
			if !strings.ContainsAny(num, ".eE") {
				if _, err := strconv.ParseInt(num, 0, 64); err != nil {
					return nil, mismatch() // only INT64 literals coerce
				}
				text = num
			} else {
				return nil, mismatch() // a FLOAT64 literal does not coerce to NUMERIC
			}
		default:
			return nil, mismatch()
		}
	case "str":
		switch f.Type {
		case schema.String:
			if f.MaxLength > 0 && utf8.RuneCountInString(e.str) > int(f.MaxLength) {
				return nil, fmt.Errorf("string %q is longer than the column's maximum length %d", e.str, f.MaxLength)
			}
			return e.str, nil
		case schema.Date, schema.DateTime, schema.Time, schema.Timestamp, schema.Range:
			// String literals coerce to date/time types.
		default:
			return nil, mismatch()
		}
	default:
		return nil, mismatch()
	}
	return parseAs(f, text)
}

// parseAs parses a typed literal's string as the column's type.
func parseAs(f *schema.Field, s string) (any, error) {
	switch f.Type {
	case schema.Date:
		return ParseDate(s)
	case schema.DateTime:
		return ParseDatetime(s)
	case schema.Time:
		return ParseTime(s)
	case schema.Timestamp:
		return ParseTimestamp(s)
	case schema.Numeric:
		return ParseNumeric(s)
	case schema.BigNumeric:
		return ParseBigNumeric(s)
	case schema.JSON:
		canon, err := jsoncanon.Canonical([]byte(s))
		if err != nil {
			return nil, fmt.Errorf("invalid JSON %q", s)
		}
		return string(canon), nil
	case schema.Interval:
		return ParseInterval(s)
	case schema.Range:
		et := schema.Timestamp
		if f.RangeElementType != nil {
			et = f.RangeElementType.Type
		}
		return ParseRange(s, et)
	}
	return nil, fmt.Errorf("no %s literal", f.Type)
}

// ParseRange parses a RANGE literal '[start, end)' where either bound may
// be UNBOUNDED or NULL. It returns []any{start, end} (nil for unbounded).
func ParseRange(s string, elem schema.Type) ([]any, error) {
	t := strings.TrimSpace(s)
	if len(t) < 2 || t[0] != '[' || t[len(t)-1] != ')' {
		return nil, fmt.Errorf("invalid RANGE %q: want [start, end)", s)
	}
	a, b, ok := strings.Cut(t[1:len(t)-1], ",")
	if !ok {
		return nil, fmt.Errorf("invalid RANGE %q: want [start, end)", s)
	}
	out := make([]any, 2)
	for i, part := range []string{a, b} {
		part = strings.TrimSpace(part)
		if strings.EqualFold(part, "UNBOUNDED") || strings.EqualFold(part, "NULL") {
			continue
		}
		v, err := parseAs(&schema.Field{Type: elem}, part)
		if err != nil {
			return nil, fmt.Errorf("invalid RANGE %q: %v", s, err)
		}
		out[i] = v
	}
	if out[0] != nil && out[1] != nil && !lessAny(out[0], out[1]) {
		return nil, fmt.Errorf("invalid RANGE %q: start must be before end", s)
	}
	return out, nil
}

func lessAny(a, b any) bool {
	switch x := a.(type) {
	case int32:
		return x < b.(int32)
	case int64:
		return x < b.(int64)
	}
	return false
}

// AppendValue appends a value in the representation Default.Eval returns
// to a column built for schema.ToArrow's type.
func AppendValue(c *Column, v any) error {
	if v == nil {
		c.AppendNull()
		return nil
	}
	bad := func() error { return fmt.Errorf("value %v (%T) does not fit a %s column", v, v, c.typ) }
	switch c.kind {
	case kInt64:
		x, ok := v.(int64)
		if !ok {
			return bad()
		}
		c.AppendInt64(x)
	case kFloat64:
		x, ok := v.(float64)
		if !ok {
			return bad()
		}
		c.AppendFloat64(x)
	case kBool:
		x, ok := v.(bool)
		if !ok {
			return bad()
		}
		c.AppendBool(x)
	case kInt32:
		x, ok := v.(int32)
		if !ok {
			return bad()
		}
		c.AppendInt32(x)
	case kBinary:
		switch x := v.(type) {
		case string:
			c.AppendString(x)
		case []byte:
			c.AppendBytes(x)
		default:
			return bad()
		}
	case kFixed:
		switch x := v.(type) {
		case decimal128.Num:
			if c.width != 16 || c.typ.ID() != arrow.DECIMAL128 {
				return bad()
			}
			c.AppendDecimal128(x)
		case decimal256.Num:
			if c.typ.ID() != arrow.DECIMAL256 {
				return bad()
			}
			c.AppendDecimal256(x)
		case arrow.MonthDayNanoInterval:
			if c.typ.ID() != arrow.INTERVAL_MONTH_DAY_NANO {
				return bad()
			}
			c.AppendInterval(x)
		default:
			return bad()
		}
	case kStruct:
		x, ok := v.([]any)
		if !ok || len(x) != len(c.child) {
			return bad()
		}
		for i, ch := range c.child {
			if err := AppendValue(ch, x[i]); err != nil {
				return err
			}
		}
		c.AppendValid()
	case kList:
		x, ok := v.([]any)
		if !ok {
			return bad()
		}
		for _, e := range x {
			if err := AppendValue(c.child[0], e); err != nil {
				return err
			}
		}
		c.CloseList()
	}
	return nil
}
