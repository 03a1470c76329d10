package filter

import (
	"fmt"
	"unicode/utf8"
)

// Error is a row_restriction error that names a position in the text, as
// BigQuery's messages do ("Syntax error: Unexpected end of input at [1:17]").
// Pos is a byte offset into the expression; Line and Column are 1-based,
// Column counting characters (code points, a tab to the next multiple
// of 8) as BigQuery does.
type Error struct {
	Pos    int
	Line   int
	Column int
	Msg    string
	// Bare is set for the error of ERROR(message): Msg is the user's
	// message, which Error returns as it is, with no position.
	Bare bool
}

func (e *Error) Error() string {
	if e.Bare {
		return e.Msg
	}
	return fmt.Sprintf("%s at [%d:%d]", e.Msg, e.Line, e.Column)
}

// source is an expression's text and where it sits in a larger text:
// prefix is everything before it (the query engine's statement up to the
// expression, which At passes; "" for a row_restriction). Positions
// (tokens, nodes, errors) are byte offsets in prefix+text, so that the
// query engine's positions are the statement's; only an error's line and
// column read prefix, and nothing copies or lexes it: an expression costs
// its own length, however far into the statement it is.
type source struct {
	prefix, text string
}

// base is the position of text[0].
func (s source) base() int { return len(s.prefix) }

func (s source) errf(pos int, format string, args ...any) *Error {
	return newErrorIn(s.prefix, s.text, pos, format, args...)
}

// newError builds an *Error for byte offset pos of src.
func newError(src string, pos int, format string, args ...any) *Error {
	return newErrorIn("", src, pos, format, args...)
}

// newErrorIn builds an *Error for byte offset pos of prefix+text.
func newErrorIn(prefix, text string, pos int, format string, args ...any) *Error {
	n := len(prefix) + len(text)
	if pos < 0 {
		pos = 0
	}
	if pos > n {
		pos = n
	}
	at := func(i int) string {
		if i < len(prefix) {
			return prefix[i:]
		}
		return text[i-len(prefix):]
	}
	// As ZetaSQL counts: a character (not a byte) is a column, a tab
	// advances to the column after the next multiple of 8, and "\n",
	// "\r\n" and a lone "\r" end a line.
	line, col := 1, 1
	for i := 0; i < pos; {
		r, w := utf8.DecodeRuneInString(at(i))
		switch {
		case r == '\r' && i+1 < n && at(i + 1)[0] == '\n':
			// the "\n" ends the line
		case r == '\n' || r == '\r':
			line++
			col = 1
		case r == '\t':
			col = (col+7)/8*8 + 1
		default:
			col++
		}
		i += w
	}
	return &Error{Pos: pos, Line: line, Column: col, Msg: fmt.Sprintf(format, args...)}
}
