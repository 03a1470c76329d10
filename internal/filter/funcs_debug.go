// The debugging function ERROR(message): it fails the query with the
// message as written, on the rows that evaluate it.

package filter

// userError is ERROR()'s error: the user's message, reported as it is
// (an *Error with Bare set), without the position other runtime errors
// name.
type userError struct{ msg string }

func (e *userError) Error() string { return e.msg }

// nullAsNode gives a NULL-typed expression that is not a constant (an
// ERROR call) the type its context needs: it evaluates x, for x's errors,
// and answers NULLs of type t. GoogleSQL infers ERROR's return type from
// its context.
type nullAsNode struct {
	x node
	t typ
}

func (n *nullAsNode) typ() typ { return n.t }
func (n *nullAsNode) pos() int { return n.x.pos() }

func (n *nullAsNode) eval(ctx *evalCtx) (*vec, error) {
	if _, err := n.x.eval(ctx); err != nil {
		return nil, err
	}
	out := newVec(n.t, ctx.n)
	out.nulls = make([]bool, ctx.n)
	for i := range out.nulls {
		out.nulls[i] = true
	}
	return out, nil
}

func registerDebug() {
	// ERROR(message STRING): GoogleSQL debugging functions. It is never
	// folded at compile time: a constant message must still fail only
	// the rows that reach it (IF(x > 0, x, ERROR('...'))). A NULL message
	// fails with "NULL".
	builtins["ERROR"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 1, 1); err != nil {
			return nil, err
		}
		if t := args[0].typ(); t != tString && t != tNull {
			return nil, c.noSig(e, args)
		}
		msg, err := c.coerce(args[0], tString, "function ERROR")
		if err != nil {
			return nil, err
		}
		return &callNode{name: e.Name, args: []node{msg}, t: tNull, safe: c.safeCall, p: e.P,
			impl: func(a []value) (value, error) {
				if a[0].null {
					return value{}, &userError{msg: "NULL"}
				}
				return value{}, &userError{msg: a[0].s}
			}}, nil
	}
}
