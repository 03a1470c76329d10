package filter

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// callNode applies a scalar function row by row over the argument vectors.
type callNode struct {
	name   string
	args   []node
	t      typ
	strict bool // NULL if any argument is NULL, without calling impl
	safe   bool // SAFE.name: an error of impl gives NULL
	impl   func(args []value) (value, error)
	p      int
}

func (n *callNode) typ() typ { return n.t }
func (n *callNode) pos() int { return n.p }

func (n *callNode) eval(ctx *evalCtx) (*vec, error) {
	args := make([]*vec, len(n.args))
	for i, a := range n.args {
		v, err := a.eval(ctx)
		if err != nil {
			return nil, err
		}
		args[i] = v
	}
	out := newVec(n.t, ctx.n)
	if n.strict {
		out.nulls = orNulls(ctx.n, args...)
	}
	vals := make([]value, len(args))
	for i := 0; i < ctx.n; i++ {
		if i%checkEvery == 0 {
			if err := ctx.check(); err != nil {
				return nil, err
			}
		}
		if out.nulls != nil && out.nulls[i] {
			continue
		}
		for j, a := range args {
			vals[j] = a.get(i)
		}
		v, err := n.impl(vals)
		if err != nil {
			if n.safe {
				if out.nulls == nil {
					out.nulls = make([]bool, ctx.n)
				}
				out.nulls[i] = true
				continue
			}
			if ue, ok := err.(*userError); ok {
				e := ctx.errf(n.p, "%s", ue.msg)
				e.Bare = true
				return nil, e
			}
			return nil, ctx.errf(n.p, "%s", err.Error())
		}
		out.set(i, v)
	}
	return out, nil
}

type builtin func(c *checker, e *Call, args []node) (node, error)

var builtins map[string]builtin

func (c *checker) call(e *Call) (node, error) {
	b, ok := builtins[e.Name]
	if !ok {
		if isAggregate[e.Name] {
			return nil, c.errf(e.P, "Aggregate function %s not allowed in row_restriction", e.Name)
		}
		return nil, c.errf(e.P, "Function not found: %s", strings.ToLower(e.Name))
	}
	if lazyArgs[e.Name] {
		c.lazy++
		defer func() { c.lazy-- }()
	}
	// Named arguments (funcs_named.go) follow the positional ones.
	e, named, err := c.splitNamed(e)
	if err != nil {
		return nil, err
	}
	// Arguments that are not expressions: INTERVAL and date parts.
	args := make([]node, len(e.Args), len(e.Args)+len(named))
	for i, a := range e.Args {
		switch a.(type) {
		case *Interval:
			_, syntax := intervalArgPos[e.Name]
			if iv := a.(*Interval); iv.To != "" && syntax {
				return nil, c.errf(iv.P, "%s expects INTERVAL n part, not a range of parts", e.Name)
			}
			if syntax || !c.query {
				continue
			}
		case *Ident:
			if isPartArg(e.Name, i) {
				continue
			}
		case *Call:
			if _, ok := datePartArg(a); ok && isPartArg(e.Name, i) {
				continue // WEEK(<weekday>)
			}
		}
		n, err := c.check(a)
		if err != nil {
			return nil, err
		}
		args[i] = n
	}
	// An INTERVAL n part left unchecked above is read as syntax only by
	// the functions of intervalArgPos, at that position; anywhere else it
	// is a signature mismatch, answered here before any builtin sees a
	// nil argument.
	for i, a := range e.Args {
		if _, ok := a.(*Interval); ok && args[i] == nil {
			if p, ok := intervalArgPos[e.Name]; !ok || p != i {
				return nil, c.noSig(e, args)
			}
		}
	}
	if e.Safe {
		if noSafe[e.Name] {
			return nil, c.errf(e.P, "Function %s does not support SAFE error mode", e.Name)
		}
		c.safeCall = true
		defer func() { c.safeCall = false }()
	}
	return b(c, e, append(args, named...))
}

// intervalArgPos is, for the functions that read an INTERVAL n part
// argument as syntax (its count and part), that argument's position.
var intervalArgPos = map[string]int{"DATE_ADD": 1, "DATE_SUB": 1, "DATETIME_ADD": 1, "DATETIME_SUB": 1,
	"TIMESTAMP_ADD": 1, "TIMESTAMP_SUB": 1, "TIME_ADD": 1, "TIME_SUB": 1,
	"DATE_BUCKET": 1, "DATETIME_BUCKET": 1, "TIMESTAMP_BUCKET": 1,
	"GENERATE_DATE_ARRAY": 2, "GENERATE_TIMESTAMP_ARRAY": 2}

// lazyArgs are the functions that evaluate some of their arguments only
// on some rows (see checker.lazy).
var lazyArgs = map[string]bool{"IF": true, "COALESCE": true, "IFNULL": true}

// noSafe are the functions whose SAFE. form GoogleSQL rejects.
var noSafe = map[string]bool{"CURRENT_DATE": true, "CURRENT_DATETIME": true, "CURRENT_TIME": true,
	"CURRENT_TIMESTAMP": true, "GENERATE_UUID": true, "RAND": true}

// callNodes builds a call from already checked arguments (|| is CONCAT).
func (c *checker) callNodes(e *Call, args []node) (node, error) {
	return builtins[e.Name](c, e, args)
}

var isAggregate = map[string]bool{"COUNT": true, "SUM": true, "AVG": true, "MIN": true, "MAX": true,
	"ARRAY_AGG": true, "STRING_AGG": true, "ANY_VALUE": true, "COUNTIF": true, "LOGICAL_AND": true, "LOGICAL_OR": true}

var isDiffFunc = map[string]bool{"DATE_DIFF": true, "DATETIME_DIFF": true, "TIMESTAMP_DIFF": true, "TIME_DIFF": true}

var isTruncFunc = map[string]bool{"DATE_TRUNC": true, "TIMESTAMP_TRUNC": true, "DATETIME_TRUNC": true, "TIME_TRUNC": true}

// isPartArg reports whether argument i of function name is a date part.
func isPartArg(name string, i int) bool {
	return (isDiffFunc[name] && i == 2) || ((isTruncFunc[name] || name == "LAST_DAY" || name == "NORMALIZE" || name == "NORMALIZE_AND_CASEFOLD") && i == 1)
}

func (c *checker) noSig(e *Call, args []node) *Error {
	if k := len(namedParams[e.Name]); k > 0 && len(args) == len(e.Args)+k {
		args = args[:len(e.Args)] // the positional ones (funcs_named.go)
	}
	ts := make([]string, len(args))
	for i, a := range args {
		if a == nil {
			ts[i] = "INTERVAL"
			if id, ok := e.Args[i].(*Ident); ok {
				ts[i] = strings.Join(id.Parts, ".")
			}
			continue
		}
		ts[i] = a.typ().String()
	}
	return c.errf(e.P, "No matching signature for function %s for argument types: %s", e.Name, strings.Join(ts, ", "))
}

func (c *checker) arity(e *Call, args []node, min, max int) error {
	if len(args) < min || (max >= 0 && len(args) > max) {
		want := fmt.Sprint(min)
		if max < 0 {
			want = fmt.Sprintf("at least %d", min)
		} else if max != min {
			want = fmt.Sprintf("%d to %d", min, max)
		}
		return c.errf(e.P, "Number of arguments does not match for function %s. Expected %s arguments but got %d", e.Name, want, len(args))
	}
	for i, a := range args {
		if a == nil {
			return c.errf(e.Args[i].Pos(), "Unexpected %s argument to %s", e.Args[i].String(), e.Name)
		}
	}
	return nil
}

// sig checks a fixed signature: arity, coercion of each argument to want
// (tNull: any type, kept), and builds a strict call returning ret.
func (c *checker) sig(e *Call, args []node, want []typ, ret typ, impl func([]value) (value, error)) (node, error) {
	if err := c.arity(e, args, len(want), len(want)); err != nil {
		return nil, err
	}
	return c.sigStrict(e, args, want, ret, true, impl)
}

func (c *checker) sigStrict(e *Call, args []node, want []typ, ret typ, strict bool, impl func([]value) (value, error)) (node, error) {
	for i := range args {
		w := want[min(i, len(want)-1)]
		if args[i] == nil { // an argument that is syntax, not a value
			return nil, c.noSig(e, args)
		}
		if w == tNull {
			continue
		}
		a, err := c.coerce(args[i], w, "function "+e.Name)
		if err != nil {
			return nil, c.noSig(e, args)
		}
		args[i] = a
	}
	return c.fold(&callNode{name: e.Name, args: args, t: ret, strict: strict, safe: c.safeCall, impl: impl, p: e.P}, args...)
}

// numericOf returns the common numeric type of args (NULLs become INT64).
func numericOf(args []node) (typ, bool) {
	t := tInt
	for _, a := range args {
		at := a.typ()
		if at == tNull {
			continue
		}
		if !isNumeric(at) {
			return 0, false
		}
		if numRank(at) > numRank(t) {
			t = at
		}
	}
	return t, true
}

func stringOrBytes(args []node) (typ, bool) {
	t := tNull
	for _, a := range args {
		switch at := a.typ(); {
		case at == tNull:
		case at != tString && at != tBytes:
			return 0, false
		case t == tNull:
			t = at
		case t != at:
			return 0, false
		}
	}
	if t == tNull {
		t = tString
	}
	return t, true
}

func repeatT(t typ, n int) []typ {
	out := make([]typ, n)
	for i := range out {
		out[i] = t
	}
	return out
}

func init() {
	builtins = map[string]builtin{}
	registerArray()
	builtins["LOWER"] = caseFn(lowerFull, asciiLower)
	builtins["UPPER"] = caseFn(upperFull, asciiUpper)
	builtins["LENGTH"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 1, 1); err != nil {
			return nil, err
		}
		t, ok := stringOrBytes(args)
		if !ok {
			return nil, c.noSig(e, args)
		}
		return c.sig(e, args, []typ{t}, tInt, func(a []value) (value, error) {
			if t == tBytes {
				return value{i: int64(len(a[0].s))}, nil
			}
			return value{i: int64(utf8.RuneCountInString(a[0].s))}, nil
		})
	}
	charLen := func(c *checker, e *Call, args []node) (node, error) {
		return c.sig(e, args, []typ{tString}, tInt, func(a []value) (value, error) {
			return value{i: int64(utf8.RuneCountInString(a[0].s))}, nil
		})
	}
	builtins["CHAR_LENGTH"] = charLen
	builtins["CHARACTER_LENGTH"] = charLen
	builtins["BYTE_LENGTH"] = func(c *checker, e *Call, args []node) (node, error) {
		t, ok := stringOrBytes(args)
		if !ok {
			return nil, c.noSig(e, args)
		}
		return c.sig(e, args, []typ{t}, tInt, func(a []value) (value, error) { return value{i: int64(len(a[0].s))}, nil })
	}
	twoStr := func(f func(a, b string) bool) builtin {
		return func(c *checker, e *Call, args []node) (node, error) {
			if err := c.arity(e, args, 2, 2); err != nil {
				return nil, err
			}
			t, ok := stringOrBytes(args)
			if !ok {
				return nil, c.noSig(e, args)
			}
			return c.sig(e, args, []typ{t, t}, tBool, func(a []value) (value, error) { return value{b: f(a[0].s, a[1].s)}, nil })
		}
	}
	builtins["STARTS_WITH"] = twoStr(strings.HasPrefix)
	builtins["ENDS_WITH"] = twoStr(strings.HasSuffix)
	builtins["CONCAT"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 1, -1); err != nil {
			return nil, err
		}
		t, ok := stringOrBytes(args)
		if !ok {
			// GoogleSQL's STRING signature takes an argument of any type
			// that casts to STRING except BYTES, cast (ZetaSQL's
			// CONCAT_MIXED_TYPES; the CONCAT reference's example is
			// CONCAT('Summer', ' ', 1923)); the BYTES one only BYTES.
			t = tString
			for i, a := range args {
				at := a.typ()
				if at == tString || at == tNull {
					continue
				}
				if at == tBytes || at.comp() != nil || !castable(at, tString) {
					return nil, c.noSig(e, args)
				}
				n, err := c.fold(&castNode{x: a, to: tString, p: a.pos()}, a)
				if err != nil {
					return nil, err
				}
				args[i] = n
			}
		}
		return c.sigStrict(e, args, repeatT(t, len(args)), t, true, func(a []value) (value, error) {
			var b strings.Builder
			for _, v := range a {
				b.WriteString(v.s)
			}
			return value{s: b.String()}, nil
		})
	}
	substr := func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 2, 3); err != nil {
			return nil, err
		}
		t, ok := stringOrBytes(args[:1])
		if !ok {
			return nil, c.noSig(e, args)
		}
		return c.sig(e, args, append([]typ{t}, repeatT(tInt, len(args)-1)...), t, func(a []value) (value, error) {
			return substrImpl(t, a)
		})
	}
	builtins["SUBSTR"] = substr
	builtins["SUBSTRING"] = substr
	trim := func(left, right bool) builtin {
		return func(c *checker, e *Call, args []node) (node, error) {
			if err := c.arity(e, args, 1, 2); err != nil {
				return nil, err
			}
			t, ok := stringOrBytes(args)
			if !ok {
				return nil, c.noSig(e, args)
			}
			return c.sig(e, args, repeatT(t, len(args)), t, func(a []value) (value, error) {
				s := a[0].s
				if len(a) == 1 {
					if t == tBytes {
						return value{s: trimSet(s, " ", left, right, true)}, nil
					}
					if left {
						s = strings.TrimLeftFunc(s, unicode.IsSpace)
					}
					if right {
						s = strings.TrimRightFunc(s, unicode.IsSpace)
					}
					return value{s: s}, nil
				}
				return value{s: trimSet(s, a[1].s, left, right, t == tBytes)}, nil
			})
		}
	}
	builtins["TRIM"] = trim(true, true)
	builtins["LTRIM"] = trim(true, false)
	builtins["RTRIM"] = trim(false, true)
	builtins["REGEXP_CONTAINS"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 2, 2); err != nil {
			return nil, err
		}
		t, ok := stringOrBytes(args)
		if !ok {
			return nil, c.noSig(e, args)
		}
		var fixed *regexp.Regexp
		if v, ok := constValue(args[1]); ok && !v.null {
			re, err := compileRegexp(v.s, t == tBytes)
			if err != nil {
				return nil, c.errf(e.Args[1].Pos(), "%v", err)
			}
			fixed = re
		}
		return c.sig(e, args, []typ{t, t}, tBool, func(a []value) (value, error) {
			re := fixed
			if re == nil {
				var err error
				if re, err = compileRegexp(a[1].s, t == tBytes); err != nil {
					return value{}, err
				}
			}
			if t == tBytes {
				return value{b: re.MatchString(toLatin1(a[0].s))}, nil
			}
			return value{b: re.MatchString(a[0].s)}, nil
		})
	}
	builtins["STRPOS"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 2, 2); err != nil {
			return nil, err
		}
		t, ok := stringOrBytes(args)
		if !ok {
			return nil, c.noSig(e, args)
		}
		return c.sig(e, args, []typ{t, t}, tInt, func(a []value) (value, error) {
			i := strings.Index(a[0].s, a[1].s)
			if i < 0 {
				return value{i: 0}, nil
			}
			if t == tBytes {
				return value{i: int64(i + 1)}, nil
			}
			return value{i: int64(utf8.RuneCountInString(a[0].s[:i]) + 1)}, nil
		})
	}
	builtins["REPLACE"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 3, 3); err != nil {
			return nil, err
		}
		t, ok := stringOrBytes(args)
		if !ok {
			return nil, c.noSig(e, args)
		}
		return c.sig(e, args, []typ{t, t, t}, t, func(a []value) (value, error) {
			if a[1].s == "" {
				return a[0], nil
			}
			return value{s: strings.ReplaceAll(a[0].s, a[1].s, a[2].s)}, nil
		})
	}
	builtins["REVERSE"] = func(c *checker, e *Call, args []node) (node, error) {
		if len(args) == 1 && args[0].typ() == tBytes {
			return c.sig(e, args, []typ{tBytes}, tBytes, func(a []value) (value, error) {
				b := []byte(a[0].s)
				for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
					b[i], b[j] = b[j], b[i]
				}
				return value{s: string(b)}, nil
			})
		}
		return c.sig(e, args, []typ{tString}, tString, func(a []value) (value, error) {
			r := []rune(a[0].s)
			for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
				r[i], r[j] = r[j], r[i]
			}
			return value{s: string(r)}, nil
		})
	}
	registerMath()
	registerConditional()
	registerTime()
	registerInterval()
	registerRange()
	registerGeo()
	registerMore()
	registerContains()
	registerString()
	registerHash()
	registerFormat()
	registerWeeks()
	registerJSON()
	registerMisc()
	registerFmt()
	registerSplit()
	registerJSONArray()
	registerHLL()
	registerJSONMut()
	registerDebug()
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 32
		}
	}
	return string(b)
}

func asciiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 32
		}
	}
	return string(b)
}

func caseFn(str, bytes func(string) string) builtin {
	return func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 1, 1); err != nil {
			return nil, err
		}
		t, ok := stringOrBytes(args)
		if !ok {
			return nil, c.noSig(e, args)
		}
		f := str
		if t == tBytes {
			f = bytes
		}
		return c.sig(e, args, []typ{t}, t, func(a []value) (value, error) { return value{s: f(a[0].s)}, nil })
	}
}

func trimSet(s, set string, left, right, bytes bool) string {
	if bytes {
		in := func(c byte) bool { return strings.IndexByte(set, c) >= 0 }
		i, j := 0, len(s)
		if left {
			for i < j && in(s[i]) {
				i++
			}
		}
		if right {
			for j > i && in(s[j-1]) {
				j--
			}
		}
		return s[i:j]
	}
	if left {
		s = strings.TrimLeft(s, set)
	}
	if right {
		s = strings.TrimRight(s, set)
	}
	return s
}

func substrImpl(t typ, a []value) (value, error) {
	s := a[0].s
	n := len(s)
	var idx []int // byte offset of each unit, plus len(s)
	if t == tString {
		for i := range s {
			idx = append(idx, i)
		}
		n = len(idx)
		idx = append(idx, len(s))
	}
	off := func(k int) int {
		if t == tString {
			return idx[k]
		}
		return k
	}
	pos := a[1].i
	var start int64
	switch {
	case pos > 0:
		start = pos - 1
	case pos == 0:
		start = 0
	default:
		start = int64(n) + pos
		if start < 0 {
			start = 0
		}
	}
	if start > int64(n) {
		start = int64(n)
	}
	end := int64(n)
	if len(a) == 3 {
		if a[2].i < 0 {
			return value{}, fmt.Errorf("Third argument in SUBSTR() cannot be negative")
		}
		if a[2].i < end-start {
			end = start + a[2].i
		}
	}
	return value{s: s[off(int(start)):off(int(end))]}, nil
}

func registerConditional() {
	builtins["IF"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 3, 3); err != nil {
			return nil, err
		}
		cond, err := c.coerce(args[0], tBool, "function IF")
		if err != nil {
			return nil, err
		}
		return c.cond(e.P, []node{cond}, []node{args[1]}, args[2], func() *Error { return c.noSig(e, args) })
	}
	coalesce := func(name string, min, max int) builtin {
		return func(c *checker, e *Call, args []node) (node, error) {
			if err := c.arity(e, args, min, max); err != nil {
				return nil, err
			}
			t, ok := c.commonSupertype(args)
			if !ok {
				return nil, c.noSig(e, args)
			}
			if t == tNull {
				return &constNode{v: constVec(tNull, nullValue), p: e.P}, nil
			}
			for i := range args {
				a, err := c.coerce(args[i], t, "function "+e.Name)
				if err != nil {
					return nil, c.noSig(e, args)
				}
				args[i] = a
			}
			return c.fold(&coalesceNode{args: args, t: t, p: e.P}, args...)
		}
	}
	builtins["IFNULL"] = coalesce("IFNULL", 2, 2)
	builtins["COALESCE"] = coalesce("COALESCE", 1, -1)
	builtins["NULLIF"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 2, 2); err != nil {
			return nil, err
		}
		t, ok := c.supertype(args[0], args[1])
		if !ok {
			return nil, c.noSig(e, args)
		}
		return c.sigStrict(e, args, []typ{t, t}, t, false, func(a []value) (value, error) {
			if a[0].null || a[1].null {
				return a[0], nil
			}
			if compareValues(t, a[0], a[1]) == 0 && !(t == tFloat && math.IsNaN(a[0].f)) {
				return nullValue, nil
			}
			return a[0], nil
		})
	}
}
