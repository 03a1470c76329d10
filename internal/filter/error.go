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
	// As ZetaSQL counts: a character (not a byte) is a column, a tab
	// advances to the column after the next multiple of 8, and "\n",
	// "\r\n" and a lone "\r" end a line.
	line, col := 1, 1
	for i := 0; i < pos; {
		r, n := utf8.DecodeRuneInString(src[i:])
		switch {
		case r == '\r' && i+1 < len(src) && src[i+1] == '\n':
			// the "\n" ends the line
		case r == '\n' || r == '\r':
			line++
			col = 1
		case r == '\t':
			col = (col+7)/8*8 + 1
		default:
			col++
		}
		i += n
	}
	return &Error{Pos: pos, Line: line, Column: col, Msg: fmt.Sprintf(format, args...)}
}
