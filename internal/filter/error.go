package filter

import (
	"fmt"
	"unicode/utf8"
)

// Error is a row_restriction error that names a position in the text, as
// BigQuery's messages do ("Syntax error: Unexpected end of input at [1:17]").
// Pos is a byte offset into the expression; Line and Column are 1-based,
// Column counting characters (code points) as BigQuery does.
type Error struct {
	Pos    int
	Line   int
	Column int
	Msg    string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s at [%d:%d]", e.Msg, e.Line, e.Column)
}

// newError builds an *Error for byte offset pos of src.
func newError(src string, pos int, format string, args ...any) *Error {
	if pos < 0 {
		pos = 0
	}
	if pos > len(src) {
		pos = len(src)
	}
	line, col := 1, 1
	for i := 0; i < pos; {
		r, n := utf8.DecodeRuneInString(src[i:])
		if r == '\n' {
			line++
			col = 1
		} else {
			col++
		}
		i += n
	}
	return &Error{Pos: pos, Line: line, Column: col, Msg: fmt.Sprintf(format, args...)}
}
