// Named arguments: name => value in a function call.
//
// GoogleSQL's built-in functions take some optional arguments by name
// only ("mandatory-named" arguments, FunctionArgumentTypeOptions
// kNamedOnly in ZetaSQL's builtin_function_*.cc): PARSE_JSON's
// wide_number_mode, TO_JSON's stringify_wide_numbers, JSON_KEYS's mode,
// the JSON mutators' create_if_missing, include_arrays, remove_empty,
// insert_each_element and append_each_element. They follow the
// positional arguments; each may be given once; a name the function does
// not take is an error, as is a positional argument after a named one.
//
// The checker places them (call): a function with named parameters gets
// its positional argument nodes followed by one node per named parameter,
// in the order namedParams lists them, the parameter's default where the
// call omits it. The builtin splits them off with namedTail.

package filter

import (
	"fmt"
	"strings"
)

// namedParam is one mandatory-named parameter of a function.
type namedParam struct {
	name string
	t    typ
	def  value // the default when the call omits it
	// konst: the value must be a constant (a literal or query
	// parameter), as ZetaSQL's set_must_be_constant() requires of the
	// JSON mutators' options.
	konst bool
}

// namedParams lists each function's named parameters, in the order the
// builtin receives them after its positional arguments. Signatures:
// GoogleSQL's JSON functions reference and ZetaSQL's
// builtin_function_internal_2.cc (GetJSONFunctions).
var namedParams = map[string][]namedParam{
	"PARSE_JSON":        {{name: "wide_number_mode", t: tString, def: value{s: "exact"}}},
	"FLOAT64":           {{name: "wide_number_mode", t: tString, def: value{s: "round"}}},
	"TO_JSON":           {{name: "stringify_wide_numbers", t: tBool, def: value{b: false}}},
	"JSON_KEYS":         {{name: "mode", t: tString, def: value{s: "strict"}}},
	"JSON_SET":          {{name: "create_if_missing", t: tBool, def: value{b: true}, konst: true}},
	"JSON_ARRAY_INSERT": {{name: "insert_each_element", t: tBool, def: value{b: true}, konst: true}},
	"JSON_ARRAY_APPEND": {{name: "append_each_element", t: tBool, def: value{b: true}, konst: true}},
	"CONTAINS_SUBSTR":   {{name: "json_scope", t: tString, def: value{s: "JSON_VALUES"}, konst: true}},
	"JSON_STRIP_NULLS": {
		{name: "include_arrays", t: tBool, def: value{b: true}, konst: true},
		{name: "remove_empty", t: tBool, def: value{b: false}, konst: true},
	},
}

// namedTail splits the argument nodes of a function with named
// parameters: the positional ones, and one node per named parameter.
func namedTail(name string, args []node) (pos, named []node) {
	k := len(namedParams[name])
	return args[:len(args)-k], args[len(args)-k:]
}

// splitNamed separates e's positional arguments from its named ones and
// checks the latter against the function's named parameters. It returns
// the call with only the positional arguments (e itself when it has no
// named argument) and the named parameters' nodes (nil when the function
// has none), defaults filled in.
func (c *checker) splitNamed(e *Call) (*Call, []node, error) {
	params := namedParams[e.Name]
	first := -1
	for i, a := range e.Args {
		_, isNamed := a.(*NamedArg)
		switch {
		case isNamed && first < 0:
			first = i
		case !isNamed && first >= 0:
			// ZetaSQL's resolver error (analyzer/testdata/named_arguments.test),
			// at the first named argument.
			return nil, nil, c.errf(e.Args[first].Pos(), "Call to function %s must not specify positional arguments after named arguments; named arguments must be specified last in the argument list", e.Name)
		}
	}
	if first < 0 && params == nil {
		return e, nil, nil
	}
	pos := e
	var given []*NamedArg
	if first >= 0 {
		cp := *e
		cp.Args = e.Args[:first]
		pos = &cp
		for _, a := range e.Args[first:] {
			given = append(given, a.(*NamedArg))
		}
	}
	nodes := make([]node, len(params))
	for _, g := range given {
		at := -1
		for j, p := range params {
			if strings.EqualFold(g.Name, p.name) {
				at = j
			}
		}
		if at < 0 {
			return nil, nil, c.namedMismatch(e, fmt.Sprintf("Named argument `%s` does not exist in signature", g.Name))
		}
		if nodes[at] != nil {
			return nil, nil, c.namedMismatch(e, fmt.Sprintf("Named argument `%s` is given more than once", params[at].name))
		}
		n, err := c.check(g.X)
		if err != nil {
			return nil, nil, err
		}
		p := params[at]
		if p.konst && !isConst(n) {
			return nil, nil, c.errf(g.P, "Argument '%s' to %s must be a literal or query parameter", p.name, e.Name)
		}
		cn, err := c.coerce(n, p.t, "function "+e.Name)
		if err != nil {
			return nil, nil, c.namedMismatch(e, fmt.Sprintf("Argument `%s` must be %s, not %s", p.name, p.t, n.typ()))
		}
		nodes[at] = cn
	}
	for j, p := range params {
		if nodes[j] == nil {
			nodes[j] = &constNode{v: constVec(p.t, p.def), p: e.P}
		}
	}
	return pos, nodes, nil
}

// namedMismatch is the no-matching-signature error of a call whose named
// arguments do not fit the function: why, and the named parameters the
// function takes (ZetaSQL's "Named argument `x` does not exist in
// signature").
func (c *checker) namedMismatch(e *Call, why string) *Error {
	var sig []string
	for _, p := range namedParams[e.Name] {
		sig = append(sig, "["+p.name+" => "+p.t.String()+"]")
	}
	if len(sig) == 0 {
		return c.errf(e.P, "No matching signature for function %s. %s", e.Name, why)
	}
	return c.errf(e.P, "No matching signature for function %s. %s %s(..., %s)", e.Name, why, e.Name, strings.Join(sig, ", "))
}
