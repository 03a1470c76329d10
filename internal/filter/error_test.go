package filter

import "testing"

// TestErrorColumns: an error's [line:column] is ZetaSQL's: a multibyte
// character is one column, a tab advances to the next multiple of 8
// (plus one), and "\n", "\r\n" and a lone "\r" end a line.
func TestErrorColumns(t *testing.T) {
	for _, tc := range []struct {
		src       string
		line, col int
	}{
		{"ééé x", 1, 5},
		{"\tx", 1, 9},
		{"abc\tx", 1, 9},
		{"abcdefgh\tx", 1, 17},
		{"ab\t\tx", 1, 17},
		{"a\nb x", 2, 3},
		{"a\r\nb x", 2, 3},
		{"a\rb x", 2, 3},
		{"a\r\n\r\nx", 3, 1},
	} {
		pos := len(tc.src) - 1
		e := newError(tc.src, pos, "m")
		if e.Line != tc.line || e.Column != tc.col {
			t.Errorf("%q at byte %d: [%d:%d], want [%d:%d]", tc.src, pos, e.Line, e.Column, tc.line, tc.col)
		}
	}
}
