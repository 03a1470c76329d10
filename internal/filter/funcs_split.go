// String functions that return arrays, and their inverses: SPLIT,
// REGEXP_EXTRACT_ALL, TO_CODE_POINTS, CODE_POINTS_TO_STRING and
// CODE_POINTS_TO_BYTES.

package filter

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

func registerSplit() {
	// SPLIT(value [, delimiter]): the delimiter defaults to a comma; an
	// empty delimiter splits a STRING into its characters and BYTES into
	// its bytes; an empty value is one empty element.
	builtins["SPLIT"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 1, 2); err != nil {
			return nil, err
		}
		t, ok := stringOrBytes(args)
		if !ok {
			return nil, c.noSig(e, args)
		}
		at, _ := arrayOf(t)
		return c.sig(e, args, repeatT(t, len(args)), at, func(a []value) (value, error) {
			s, sep := a[0].s, ","
			if len(a) == 2 {
				sep = a[1].s
			}
			var parts []string
			switch {
			case s == "":
				parts = []string{""}
			case sep == "":
				parts = units(t, s)
			default:
				parts = strings.Split(s, sep)
			}
			out := make([]value, len(parts))
			for i, p := range parts {
				out[i] = value{s: p}
			}
			return value{a: out}, nil
		})
	}
	builtins["REGEXP_EXTRACT_ALL"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 2, 2); err != nil {
			return nil, err
		}
		t, ok := stringOrBytes(args)
		if !ok {
			return nil, c.noSig(e, args)
		}
		ra, err := c.regexpArg(e, args, 1, 1, t)
		if err != nil {
			return nil, err
		}
		at, _ := arrayOf(t)
		afters := map[*regexp.Regexp]*regexp.Regexp{} // as ra's cache
		return c.sig(e, args, []typ{t, t}, at, func(a []value) (value, error) {
			re, err := ra.get(a[1].s)
			if err != nil {
				return value{}, err
			}
			after := afters[re]
			if after == nil {
				if after, err = afterRe(re); err != nil {
					return value{}, err
				}
				if len(afters) < 64 {
					afters[re] = after
				}
			}
			if t == tBytes {
				v, err := regexpExtractAll(re, after, toLatin1(a[0].s))
				for i := range v.a {
					v.a[i].s = fromLatin1(v.a[i].s)
				}
				return v, err
			}
			return regexpExtractAll(re, after, a[0].s)
		})
	}
	builtins["TO_CODE_POINTS"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 1, 1); err != nil {
			return nil, err
		}
		t, ok := stringOrBytes(args)
		if !ok {
			return nil, c.noSig(e, args)
		}
		at, _ := arrayOf(tInt)
		return c.sig(e, args, []typ{t}, at, func(a []value) (value, error) {
			s := a[0].s
			out := make([]value, 0, len(s))
			if t == tBytes {
				for i := 0; i < len(s); i++ {
					out = append(out, value{i: int64(s[i])})
				}
				return value{a: out}, nil
			}
			for _, r := range s {
				out = append(out, value{i: int64(r)})
			}
			return value{a: out}, nil
		})
	}
	// CODE_POINTS_TO_STRING and CODE_POINTS_TO_BYTES: a NULL element makes
	// the result NULL.
	fromPoints := func(ret typ) builtin {
		return func(c *checker, e *Call, args []node) (node, error) {
			at, _ := arrayOf(tInt)
			return c.sig(e, args, []typ{at}, ret, func(a []value) (value, error) {
				var b strings.Builder
				for _, x := range a[0].a {
					switch {
					case x.null:
						return nullValue, nil
					case ret == tBytes:
						if x.i < 0 || x.i > 255 {
							return value{}, fmt.Errorf("Invalid ASCII value: %d", x.i)
						}
						b.WriteByte(byte(x.i))
					default:
						if x.i < 0 || x.i > unicode.MaxRune || (x.i >= 0xD800 && x.i <= 0xDFFF) {
							return value{}, fmt.Errorf("Invalid codepoint %d", x.i)
						}
						b.WriteRune(rune(x.i))
					}
					if b.Len() > maxStringResult {
						return value{}, fmt.Errorf("Output of %s exceeds max allowed output size of %d bytes", e.Name, maxStringResult)
					}
				}
				return value{s: b.String()}, nil
			})
		}
	}
	builtins["CODE_POINTS_TO_STRING"] = fromPoints(tString)
	builtins["CODE_POINTS_TO_BYTES"] = fromPoints(tBytes)
}

// regexpExtractAll is REGEXP_EXTRACT_ALL as GoogleSQL's reference
// implementation defines it: search from the end of the previous match,
// keep every match (an empty one included, even right after another),
// step one character past an empty match, and stop once the input is
// consumed. Go's FindAll differs on the empty matches (it drops one right
// after a match and adds one at the end of the input), hence this loop.
// The searches past the start see the character before them (^, \b), as
// RE2's startpos does, through afterRe.
func regexpExtractAll(re, after *regexp.Regexp, s string) (value, error) {
	out := []value{}
	for pos := 0; ; {
		var m []int // [start, end, group start, group end]
		if pos == 0 {
			m = re.FindStringSubmatchIndex(s)
		} else {
			_, w := utf8.DecodeLastRuneInString(s[:pos])
			base := pos - w
			if m = after.FindStringSubmatchIndex(s[base:]); m != nil {
				m = m[2:] // group 1 is the whole match of re
				for i := range m {
					if m[i] >= 0 {
						m[i] += base
					}
				}
			}
		}
		if m == nil {
			break
		}
		g := 0
		if re.NumSubexp() == 1 {
			g = 2
		}
		if m[g] >= 0 {
			out = append(out, value{s: s[m[g]:m[g+1]]})
		} else {
			out = append(out, value{s: ""}) // an unmatched optional group
		}
		if len(out) > maxGenerated {
			return value{}, fmt.Errorf("REGEXP_EXTRACT_ALL would produce more than %d elements", maxGenerated)
		}
		pos = m[1]
		if m[0] == m[1] && pos < len(s) {
			_, w := utf8.DecodeRuneInString(s[pos:])
			pos += w
		}
		if pos >= len(s) {
			break
		}
	}
	return value{a: out}, nil
}

// afterRe matches re's leftmost match after the first character of its
// input, that character being the context of assertions such as ^ (with
// the m flag) and \b.
func afterRe(re *regexp.Regexp) (*regexp.Regexp, error) {
	return regexp.Compile(`\A(?s:.)(?s:.*?)(` + re.String() + `)`)
}
