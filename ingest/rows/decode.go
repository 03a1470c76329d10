package rows

import (
	"bytes"
	"encoding/base64"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"google.golang.org/protobuf/encoding/protowire"
)

// decoder walks one JSON record and writes proto wire bytes. It validates
// JSON strictly (RFC 8259) for everything it reads, including values of
// ignored keys.
type decoder struct {
	buf     []byte
	pos     int
	unknown UnknownFields
	// insertAll: tabledata.insertAll's time conventions (Options.InsertAll).
	insertAll bool
	path      []pathSeg
	scratch   []byte // unescaped string bytes, reused
	seen      [][]bool
}

type pathSeg struct {
	name  string
	index int // -1 for a named field
}

func (d *decoder) pathString() string {
	var b strings.Builder
	for i, s := range d.path {
		if s.index >= 0 {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.index))
			b.WriteByte(']')
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.name)
	}
	return b.String()
}

func (d *decoder) fail(reason string) error {
	return &RecordError{Path: d.pathString(), Offset: d.pos, Reason: reason}
}

func (d *decoder) failAt(off int, reason string) error {
	return &RecordError{Path: d.pathString(), Offset: off, Reason: reason}
}

func (d *decoder) skipSpace() {
	for d.pos < len(d.buf) {
		switch d.buf[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// kind of the next JSON value, without consuming it.
const (
	kEOF = iota
	kObject
	kArray
	kString
	kNumber
	kTrue
	kFalse
	kNull
	kBad
)

func (d *decoder) peek() int {
	if d.pos >= len(d.buf) {
		return kEOF
	}
	switch c := d.buf[d.pos]; {
	case c == '{':
		return kObject
	case c == '[':
		return kArray
	case c == '"':
		return kString
	case c == '-' || (c >= '0' && c <= '9'):
		return kNumber
	case c == 't':
		return kTrue
	case c == 'f':
		return kFalse
	case c == 'n':
		return kNull
	}
	return kBad
}

func (d *decoder) literal(word string) error {
	if !bytes.HasPrefix(d.buf[d.pos:], []byte(word)) {
		return d.fail("invalid JSON literal")
	}
	d.pos += len(word)
	return nil
}

// number consumes a JSON number and returns its text.
func (d *decoder) number() ([]byte, error) {
	start := d.pos
	b := d.buf
	i := d.pos
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return nil, d.failAt(i, "invalid JSON number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == j {
			return nil, d.failAt(i, "invalid JSON number")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == j {
			return nil, d.failAt(i, "invalid JSON number")
		}
	}
	d.pos = i
	return b[start:i], nil
}

// str consumes a JSON string and returns its unescaped bytes. The result
// aliases the record or d.scratch and is valid until the next call.
func (d *decoder) str() ([]byte, error) {
	b := d.buf
	i := d.pos + 1 // past the quote
	start := i
	for i < len(b) {
		c := b[i]
		if c == '"' {
			d.pos = i + 1
			if !utf8.Valid(b[start:i]) {
				return nil, d.failAt(start, "string is not valid UTF-8")
			}
			return b[start:i], nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return nil, d.failAt(i, "control character in string")
		}
		i++
	}
	// Slow path: escapes.
	out := append(d.scratch[:0], b[start:i]...)
	for {
		if i >= len(b) {
			return nil, d.failAt(i, "unterminated string")
		}
		c := b[i]
		switch {
		case c == '"':
			d.pos = i + 1
			d.scratch = out
			if !utf8.Valid(out) {
				return nil, d.failAt(start, "string is not valid UTF-8")
			}
			return out, nil
		case c < 0x20:
			return nil, d.failAt(i, "control character in string")
		case c != '\\':
			out = append(out, c)
			i++
			continue
		}
		i++
		if i >= len(b) {
			return nil, d.failAt(i, "unterminated string")
		}
		switch b[i] {
		case '"', '\\', '/':
			out = append(out, b[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(b, i+1)
			if !ok {
				return nil, d.failAt(i, "invalid \\u escape")
			}
			i += 4
			if utf16.IsSurrogate(r) {
				r2, ok := rune(0), false
				if i+2 < len(b) && b[i+1] == '\\' && b[i+2] == 'u' {
					r2, ok = hex4(b, i+3)
				}
				if dec := utf16.DecodeRune(r, r2); ok && dec != utf8.RuneError {
					r = dec
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			return nil, d.failAt(i, "invalid escape in string")
		}
		i++
	}
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// skipValue consumes any JSON value, validating it, and returns its raw text.
func (d *decoder) skipValue(depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, d.fail("JSON nested too deeply")
	}
	start := d.pos
	switch d.peek() {
	case kObject:
		d.pos++
		d.skipSpace()
		if d.pos < len(d.buf) && d.buf[d.pos] == '}' {
			d.pos++
			return d.buf[start:d.pos], nil
		}
		for {
			d.skipSpace()
			if d.peek() != kString {
				return nil, d.fail("expected an object key")
			}
			if _, err := d.str(); err != nil {
				return nil, err
			}
			d.skipSpace()
			if d.pos >= len(d.buf) || d.buf[d.pos] != ':' {
				return nil, d.fail("expected ':' after an object key")
			}
			d.pos++
			d.skipSpace()
			if _, err := d.skipValue(depth + 1); err != nil {
				return nil, err
			}
			d.skipSpace()
			if d.pos < len(d.buf) && d.buf[d.pos] == ',' {
				d.pos++
				continue
			}
			if d.pos < len(d.buf) && d.buf[d.pos] == '}' {
				d.pos++
				return d.buf[start:d.pos], nil
			}
			return nil, d.fail("expected ',' or '}' in object")
		}
	case kArray:
		d.pos++
		d.skipSpace()
		if d.pos < len(d.buf) && d.buf[d.pos] == ']' {
			d.pos++
			return d.buf[start:d.pos], nil
		}
		for {
			d.skipSpace()
			if _, err := d.skipValue(depth + 1); err != nil {
				return nil, err
			}
			d.skipSpace()
			if d.pos < len(d.buf) && d.buf[d.pos] == ',' {
				d.pos++
				continue
			}
			if d.pos < len(d.buf) && d.buf[d.pos] == ']' {
				d.pos++
				return d.buf[start:d.pos], nil
			}
			return nil, d.fail("expected ',' or ']' in array")
		}
	case kString:
		_, err := d.str()
		return d.buf[start:d.pos], err
	case kNumber:
		return d.number()
	case kTrue:
		return d.buf[start : start+4], d.literal("true")
	case kFalse:
		return d.buf[start : start+5], d.literal("false")
	case kNull:
		return d.buf[start : start+4], d.literal("null")
	case kEOF:
		return nil, d.fail("unexpected end of record")
	}
	return nil, d.fail("invalid JSON value")
}

// message consumes a JSON object and appends the fields of plan p to dst
// (without a tag or length: the caller frames nested messages).
func (d *decoder) message(dst []byte, p *msgPlan, depth int) ([]byte, error) {
	if depth > maxDepth {
		return dst, d.fail("JSON nested too deeply")
	}
	if d.peek() != kObject {
		return dst, d.fail("expected a JSON object")
	}
	for len(d.seen) <= depth {
		d.seen = append(d.seen, nil)
	}
	seen := d.seen[depth]
	if cap(seen) < len(p.fields) {
		seen = make([]bool, len(p.fields))
	}
	seen = seen[:len(p.fields)]
	clear(seen)
	d.seen[depth] = seen

	d.pos++
	d.skipSpace()
	if d.pos < len(d.buf) && d.buf[d.pos] == '}' {
		d.pos++
	} else {
		for {
			d.skipSpace()
			if d.peek() != kString {
				return dst, d.fail("expected an object key")
			}
			keyAt := d.pos
			key, err := d.str()
			if err != nil {
				return dst, err
			}
			idx, ok := lookup(p, key)
			d.skipSpace()
			if d.pos >= len(d.buf) || d.buf[d.pos] != ':' {
				return dst, d.fail("expected ':' after an object key")
			}
			d.pos++
			d.skipSpace()
			if !ok {
				if d.unknown == UnknownReject {
					d.path = append(d.path, pathSeg{name: string(key), index: -1})
					err := d.failAt(keyAt, "no such column in the table schema")
					err.(*RecordError).UnknownColumn = true
					d.path = d.path[:len(d.path)-1]
					return dst, err
				}
				if _, err := d.skipValue(depth + 1); err != nil {
					return dst, err
				}
			} else {
				f := &p.fields[idx]
				d.path = append(d.path, pathSeg{name: f.name, index: -1})
				if seen[idx] {
					err := d.failAt(keyAt, "column given twice")
					d.path = d.path[:len(d.path)-1]
					return dst, err
				}
				seen[idx] = true
				dst, err = d.field(dst, f, depth)
				if err != nil {
					return dst, err
				}
				d.path = d.path[:len(d.path)-1]
			}
			d.skipSpace()
			if d.pos < len(d.buf) && d.buf[d.pos] == ',' {
				d.pos++
				continue
			}
			if d.pos < len(d.buf) && d.buf[d.pos] == '}' {
				d.pos++
				break
			}
			return dst, d.fail("expected ',' or '}' in object")
		}
	}
	for i := range p.fields {
		// Under insertAll a missing REQUIRED column with a default takes
		// the default (the server fills it in).
		if p.fields[i].required && !seen[i] && !(d.insertAll && p.fields[i].hasDefault) {
			d.path = append(d.path, pathSeg{name: p.fields[i].name, index: -1})
			err := d.failAt(d.pos-1, "REQUIRED column is missing")
			d.path = d.path[:len(d.path)-1]
			return dst, err
		}
	}
	return dst, nil
}

func lookup(p *msgPlan, key []byte) (int, bool) {
	if i, ok := p.byName[string(key)]; ok { // no allocation: map lookup on string(bytes)
		return i, true
	}
	for _, c := range key {
		if c >= 'A' && c <= 'Z' || c >= 0x80 {
			i, ok := p.byName[strings.ToLower(string(key))]
			return i, ok
		}
	}
	return 0, false
}

// field consumes the value of column f (null, a scalar, an object or an array).
func (d *decoder) field(dst []byte, f *fieldPlan, depth int) ([]byte, error) {
	if d.peek() == kNull {
		if err := d.literal("null"); err != nil {
			return dst, err
		}
		// A seen null is "unset": for REQUIRED columns that is an error.
		if f.required {
			return dst, d.fail("REQUIRED column is null")
		}
		return dst, nil
	}
	if !f.repeated {
		return d.single(dst, f, depth)
	}
	if d.peek() != kArray {
		return dst, d.fail("REPEATED column needs a JSON array")
	}
	d.pos++
	d.skipSpace()
	if d.pos < len(d.buf) && d.buf[d.pos] == ']' {
		d.pos++
		return dst, nil
	}
	var packStart int
	if f.packed {
		dst = protowire.AppendTag(dst, f.num, protowire.BytesType)
		packStart = len(dst)
	}
	for i := 0; ; i++ {
		d.skipSpace()
		d.path = append(d.path, pathSeg{index: i})
		if d.peek() == kNull {
			return dst, d.fail("null element in an array")
		}
		var err error
		if f.packed {
			dst, err = d.scalar(dst, f.typ)
		} else {
			dst, err = d.single(dst, f, depth+1)
		}
		if err != nil {
			return dst, err
		}
		d.path = d.path[:len(d.path)-1]
		d.skipSpace()
		if d.pos < len(d.buf) && d.buf[d.pos] == ',' {
			d.pos++
			continue
		}
		if d.pos < len(d.buf) && d.buf[d.pos] == ']' {
			d.pos++
			break
		}
		return dst, d.fail("expected ',' or ']' in array")
	}
	if f.packed {
		dst = frame(dst, packStart)
	}
	return dst, nil
}

// frame turns dst[start:] into a length-delimited payload by inserting its
// varint length at start.
func frame(dst []byte, start int) []byte {
	n := len(dst) - start
	k := protowire.SizeVarint(uint64(n))
	for range k {
		dst = append(dst, 0)
	}
	copy(dst[start+k:], dst[start:start+n])
	protowire.AppendVarint(dst[start:start], uint64(n))
	return dst
}

// single appends one non-null value of f with its tag.
func (d *decoder) single(dst []byte, f *fieldPlan, depth int) ([]byte, error) {
	switch f.typ {
	case storagepb.TableFieldSchema_STRUCT:
		dst = protowire.AppendTag(dst, f.num, protowire.BytesType)
		start := len(dst)
		dst, err := d.message(dst, f.sub, depth+1)
		if err != nil {
			return dst, err
		}
		return frame(dst, start), nil
	case storagepb.TableFieldSchema_RANGE:
		dst = protowire.AppendTag(dst, f.num, protowire.BytesType)
		start := len(dst)
		dst, err := d.rangeValue(dst, f.elem, depth+1)
		if err != nil {
			return dst, err
		}
		return frame(dst, start), nil
	}
	dst = protowire.AppendTag(dst, f.num, wireType(f.typ))
	return d.scalar(dst, f.typ)
}

func wireType(t storagepb.TableFieldSchema_Type) protowire.Type {
	switch t {
	case storagepb.TableFieldSchema_DOUBLE:
		return protowire.Fixed64Type
	case storagepb.TableFieldSchema_INT64, storagepb.TableFieldSchema_BOOL, storagepb.TableFieldSchema_DATE,
		storagepb.TableFieldSchema_DATETIME, storagepb.TableFieldSchema_TIME, storagepb.TableFieldSchema_TIMESTAMP:
		return protowire.VarintType
	}
	return protowire.BytesType
}

// scalar appends the payload (no tag) of one non-null scalar value of type t.
func (d *decoder) scalar(dst []byte, t storagepb.TableFieldSchema_Type) ([]byte, error) {
	at := d.pos
	k := d.peek()
	var text []byte
	var err error
	switch k {
	case kString:
		text, err = d.str()
	case kNumber:
		text, err = d.number()
	case kTrue:
		text, err = d.buf[d.pos:min(d.pos+4, len(d.buf))], d.literal("true")
	case kFalse:
		text, err = d.buf[d.pos:min(d.pos+5, len(d.buf))], d.literal("false")
	case kObject, kArray:
		if t == storagepb.TableFieldSchema_JSON {
			raw, err := d.skipValue(1)
			if err != nil {
				return dst, err
			}
			return protowire.AppendBytes(dst, raw), nil
		}
		return dst, d.failAt(at, "expected a scalar value, not an object or array")
	case kNull:
		return dst, d.failAt(at, "null is not allowed here")
	default:
		return dst, d.failAt(at, "invalid JSON value")
	}
	if err != nil {
		return dst, err
	}
	isStr := k == kString
	isNum := k == kNumber
	isBool := k == kTrue || k == kFalse
	if d.insertAll {
		switch t {
		case storagepb.TableFieldSchema_TIMESTAMP:
			if isNum || isStr && isDecimal(text) {
				v, reason := parseEpochSeconds(text)
				if reason != "" {
					return dst, d.failAt(at, reason)
				}
				return protowire.AppendVarint(dst, uint64(v)), nil
			}
			text = truncateFraction(text)
		case storagepb.TableFieldSchema_DATETIME, storagepb.TableFieldSchema_TIME:
			text = truncateFraction(text)
		}
	}
	switch t {
	case storagepb.TableFieldSchema_INT64:
		if isBool {
			return dst, d.failAt(at, "INT64 needs an integer, not a boolean")
		}
		v, ok := parseInt64(text)
		if !ok {
			return dst, d.failAt(at, "invalid INT64 "+quote(text))
		}
		return protowire.AppendVarint(dst, uint64(v)), nil
	case storagepb.TableFieldSchema_DOUBLE:
		if isBool {
			return dst, d.failAt(at, "FLOAT64 needs a number, not a boolean")
		}
		// The string does not outlive the call (a *NumError holding it is dropped).
		v, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(text), len(text)), 64)
		if err != nil && !(isNum && errIsRange(err)) {
			return dst, d.failAt(at, "invalid FLOAT64 "+quote(text))
		}
		if isNum && (math.IsInf(v, 0)) {
			return dst, d.failAt(at, "FLOAT64 out of range "+quote(text))
		}
		if isStr && !validFloatString(text) {
			return dst, d.failAt(at, "invalid FLOAT64 "+quote(text))
		}
		return protowire.AppendFixed64(dst, math.Float64bits(v)), nil
	case storagepb.TableFieldSchema_BOOL:
		var v bool
		switch {
		case k == kTrue:
			v = true
		case k == kFalse:
		case isStr && strings.EqualFold(string(text), "true"):
			v = true
		case isStr && strings.EqualFold(string(text), "false"):
		default:
			return dst, d.failAt(at, "invalid BOOL "+quote(text))
		}
		return protowire.AppendVarint(dst, protowire.EncodeBool(v)), nil
	case storagepb.TableFieldSchema_STRING:
		return protowire.AppendBytes(dst, text), nil
	case storagepb.TableFieldSchema_GEOGRAPHY:
		if !isStr {
			return dst, d.failAt(at, "GEOGRAPHY needs a string")
		}
		return protowire.AppendBytes(dst, text), nil
	case storagepb.TableFieldSchema_JSON:
		if isStr {
			return protowire.AppendBytes(dst, text), nil
		}
		return protowire.AppendBytes(dst, d.buf[at:d.pos]), nil
	case storagepb.TableFieldSchema_BYTES:
		if !isStr {
			return dst, d.failAt(at, "BYTES needs a base64 string")
		}
		return appendBase64(dst, text, func(reason string) error { return d.failAt(at, reason) })
	case storagepb.TableFieldSchema_TIMESTAMP:
		if isBool {
			return dst, d.failAt(at, "TIMESTAMP needs a string or an integer")
		}
		v, reason := parseTimestamp(text, isNum)
		if reason != "" {
			return dst, d.failAt(at, reason)
		}
		return protowire.AppendVarint(dst, uint64(v)), nil
	case storagepb.TableFieldSchema_DATE:
		if !isStr {
			return dst, d.failAt(at, "DATE needs a string YYYY-MM-DD")
		}
		v, reason := parseDateOnly(text)
		if reason != "" {
			return dst, d.failAt(at, reason)
		}
		return protowire.AppendVarint(dst, uint64(int64(v))), nil
	case storagepb.TableFieldSchema_DATETIME:
		if !isStr {
			return dst, d.failAt(at, "DATETIME needs a string YYYY-MM-DD HH:MM:SS[.ffffff]")
		}
		v, reason := parseDatetime(text)
		if reason != "" {
			return dst, d.failAt(at, reason)
		}
		return protowire.AppendVarint(dst, uint64(v)), nil
	case storagepb.TableFieldSchema_TIME:
		if !isStr {
			return dst, d.failAt(at, "TIME needs a string HH:MM:SS[.ffffff]")
		}
		v, reason := parseTimeOnly(text)
		if reason != "" {
			return dst, d.failAt(at, reason)
		}
		return protowire.AppendVarint(dst, uint64(v)), nil
	case storagepb.TableFieldSchema_NUMERIC, storagepb.TableFieldSchema_BIGNUMERIC:
		if isBool {
			return dst, d.failAt(at, t.String()+" needs a number or a decimal string")
		}
		return appendDecimal(dst, text, t == storagepb.TableFieldSchema_BIGNUMERIC, func(reason string) error { return d.failAt(at, reason) })
	}
	return dst, d.failAt(at, "unsupported type "+t.String())
}

func errIsRange(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// validFloatString accepts decimal numbers and BigQuery's special values.
func validFloatString(s []byte) bool {
	switch string(s) {
	case "NaN", "Infinity", "-Infinity", "inf", "-inf", "+inf":
		return true
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E') {
			return false
		}
	}
	return len(s) > 0
}

func quote(b []byte) string {
	if len(b) > 64 {
		return strconv.Quote(string(b[:64])) + "..."
	}
	return strconv.Quote(string(b))
}

func appendBase64(dst, text []byte, fail func(string) error) ([]byte, error) {
	enc := base64.StdEncoding
	n := 0
	if len(text)%4 != 0 {
		enc = base64.RawStdEncoding
		n = enc.DecodedLen(len(text))
	} else {
		n = enc.DecodedLen(len(text))
		for i := len(text) - 1; i >= 0 && i >= len(text)-2 && text[i] == '='; i-- {
			n--
		}
	}
	lenAt := len(dst)
	dst = protowire.AppendVarint(dst, uint64(n))
	start := len(dst)
	dst = append(dst, make([]byte, enc.DecodedLen(len(text)))...)
	if m, err := enc.Strict().Decode(dst[start:], text); err != nil || m != n {
		return dst[:lenAt], fail("invalid base64 for BYTES")
	}
	return dst[:start+n], nil
}

// rangeValue consumes a RANGE value: {"start":..,"end":..} or "[a, b)".
func (d *decoder) rangeValue(dst []byte, elem storagepb.TableFieldSchema_Type, depth int) ([]byte, error) {
	at := d.pos
	switch d.peek() {
	case kString:
		s, err := d.str()
		if err != nil {
			return dst, err
		}
		str := string(s)
		if len(str) < 4 || str[0] != '[' || str[len(str)-1] != ')' {
			return dst, d.failAt(at, "RANGE string must look like [start, end)")
		}
		parts := strings.Split(str[1:len(str)-1], ",")
		if len(parts) != 2 {
			return dst, d.failAt(at, "RANGE string must look like [start, end)")
		}
		for i, part := range parts {
			part = strings.TrimSpace(part)
			if strings.EqualFold(part, "UNBOUNDED") || strings.EqualFold(part, "NULL") {
				continue
			}
			dst = protowire.AppendTag(dst, protowire.Number(i+1), protowire.VarintType)
			v, reason := parseElem(elem, []byte(part))
			if reason != "" {
				return dst, d.failAt(at, "RANGE "+[]string{"start", "end"}[i]+": "+reason)
			}
			dst = protowire.AppendVarint(dst, uint64(v))
		}
		return dst, nil
	case kObject:
		p := rangePlans[elem]
		return d.message(dst, p, depth)
	}
	return dst, d.failAt(at, "RANGE needs an object {start, end} or a string [start, end)")
}

func parseElem(t storagepb.TableFieldSchema_Type, s []byte) (int64, string) {
	switch t {
	case storagepb.TableFieldSchema_DATE:
		v, r := parseDateOnly(s)
		return int64(v), r
	case storagepb.TableFieldSchema_DATETIME:
		return parseDatetime(s)
	}
	return parseTimestamp(s, false)
}

var rangePlans = map[storagepb.TableFieldSchema_Type]*msgPlan{}

func init() {
	for _, t := range []storagepb.TableFieldSchema_Type{storagepb.TableFieldSchema_DATE, storagepb.TableFieldSchema_DATETIME, storagepb.TableFieldSchema_TIMESTAMP} {
		p, err := planMessage([]*storagepb.TableFieldSchema{
			{Name: "start", Type: t, Mode: storagepb.TableFieldSchema_NULLABLE},
			{Name: "end", Type: t, Mode: storagepb.TableFieldSchema_NULLABLE},
		}, "")
		if err != nil {
			panic(err) // static input
		}
		rangePlans[t] = p
	}
}

// parseInt64 parses an optionally signed decimal integer without allocating.
func parseInt64(s []byte) (int64, bool) {
	neg := false
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if len(s) == 0 || len(s) > 19 {
		return 0, false
	}
	var u uint64
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true
	}
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
}
