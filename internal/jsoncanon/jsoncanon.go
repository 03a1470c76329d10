// Package jsoncanon writes JSON in the canonical form BigQuery stores and
// returns a JSON value in: no whitespace, object keys sorted, the first
// of duplicate keys kept, array order kept, numbers normalised (integers
// that fit INT64 or UINT64 exactly, other numbers as the shortest FLOAT64
// text: 1.50 -> 1.5, 2e2 -> 200), strings re-escaped minimally (no HTML
// escaping). It is what the write paths (Storage Write API rows, Arrow
// rows, DML) apply to a JSON column's values, so that tabledata.list,
// getQueryResults and the Read API return the text BigQuery would, and
// what the expression layer's PARSE_JSON produces.
package jsoncanon

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"sort"
	"strconv"
)

// Canonical returns doc, one JSON value, in canonical form. An invalid
// document is an error.
func Canonical(doc []byte) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var b bytes.Buffer
	b.Grow(len(doc))
	if err := value(d, &b); err != nil {
		return nil, err
	}
	if len(bytes.TrimLeft(doc[d.InputOffset():], " \t\r\n")) > 0 {
		return nil, errors.New("jsoncanon: unexpected data after the JSON value")
	}
	return b.Bytes(), nil
}

// member is one key of an object with its value's canonical text.
type member struct {
	key string
	val []byte
}

func value(d *json.Decoder, b *bytes.Buffer) error {
	t, err := d.Token()
	if err != nil {
		return err
	}
	switch t := t.(type) {
	case json.Delim:
		switch t {
		case '{':
			var ms []member
			seen := map[string]bool{}
			for d.More() {
				kt, err := d.Token()
				if err != nil {
					return err
				}
				k, _ := kt.(string)
				var vb bytes.Buffer
				if err := value(d, &vb); err != nil {
					return err
				}
				if !seen[k] {
					seen[k] = true
					ms = append(ms, member{k, vb.Bytes()})
				}
			}
			if _, err := d.Token(); err != nil {
				return err
			}
			sort.Slice(ms, func(i, j int) bool { return ms[i].key < ms[j].key })
			b.WriteByte('{')
			for i, m := range ms {
				if i > 0 {
					b.WriteByte(',')
				}
				String(b, m.key)
				b.WriteByte(':')
				b.Write(m.val)
			}
			b.WriteByte('}')
			return nil
		case '[':
			b.WriteByte('[')
			first := true
			for d.More() {
				if !first {
					b.WriteByte(',')
				}
				first = false
				if err := value(d, b); err != nil {
					return err
				}
			}
			if _, err := d.Token(); err != nil {
				return err
			}
			b.WriteByte(']')
			return nil
		}
		return errors.New("jsoncanon: unexpected delimiter")
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(t))
	case json.Number:
		b.WriteString(Number(string(t)))
	case string:
		String(b, t)
	}
	return nil
}

// String writes s as a JSON string, escaping only what JSON requires
// (and U+2028/U+2029), not HTML characters.
func String(b *bytes.Buffer, s string) {
	var tmp bytes.Buffer
	enc := json.NewEncoder(&tmp)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	b.Write(bytes.TrimSuffix(tmp.Bytes(), []byte("\n")))
}

// Number normalises a JSON number's text: integers that fit INT64 or
// UINT64 stay exact, others are FLOAT64 in their shortest form (Float).
func Number(s string) string {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return strconv.FormatInt(i, 10)
	}
	if u, err := strconv.ParseUint(s, 10, 64); err == nil {
		return strconv.FormatUint(u, 10)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s
	}
	return Float(f)
}

// Float prints a JSON number held as FLOAT64: integral values below 1e15
// without a fraction, magnitudes of 1e15 and more in exponent form
// (9.223372036854776e+20: the 15-digit limit of ZetaSQL's JSON writer,
// as BigQuery prints PARSE_JSON(..., wide_number_mode => 'round')), the
// rest as encoding/json does.
func Float(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	if a := math.Abs(f); a >= 1e15 && a < 1e21 {
		return strconv.FormatFloat(f, 'e', -1, 64)
	}
	out, _ := json.Marshal(f)
	return string(out)
}
