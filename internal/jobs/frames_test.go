package jobs

import (
	"strings"
	"testing"

	"github.com/bqstore/bqstore/internal/sql"
)

// refLineColumn is the one-based line and column of byte offset pos of
// src, computed from the start of its line (ScriptStackFrame's rules: a
// multi-byte character is one column, a tab moves to column 8k+1).
func refLineColumn(src string, pos int) (line, col int) {
	start := strings.LastIndexByte(src[:pos], '\n') + 1
	line = strings.Count(src[:start], "\n") + 1
	col = 1
	for _, r := range src[start:pos] {
		if r == '\t' {
			col = (col-1)/8*8 + 9
			continue
		}
		col++
	}
	return line, col
}

// TestScriptFramesLinear: the frames of a script of 2,000 statements
// (one a line, then all on one line) are placed in one pass: scriptFrames
// read each statement's position from the script's start, work quadratic
// in the script (about 2,000 times its length here). Counts bytes read,
// not time; the frames match a from-the-start reference.
func TestScriptFramesLinear(t *testing.T) {
	for _, sep := range []string{"\n", " ", "\t-- é\n\t"} {
		var b strings.Builder
		for i := range 2000 {
			b.WriteString("SELECT 'é', 1 AS x")
			if i%3 == 0 {
				b.WriteString("\t")
			}
			b.WriteString(";" + sep)
		}
		b.WriteString("SELECT 2  -- the end\n")
		src := b.String()
		sts, err := sql.ParseScript(src)
		if err != nil {
			t.Fatal(err)
		}
		before := frameScanned.Load()
		frames := scriptFrames(src, sts)
		if n := frameScanned.Load() - before; n > int64(len(src)) {
			t.Errorf("sep %q: read %d bytes to place the frames of a script of %d", sep, n, len(src))
		}
		for i, st := range sts {
			f := frames[i]
			l, c := refLineColumn(src, st.Pos)
			end := st.Pos + len(f.Text)
			el, ec := refLineColumn(src, max(st.Pos, end-1))
			if f.StartLine != l || f.StartColumn != c || f.EndLine != el || f.EndColumn != ec {
				t.Fatalf("sep %q: statement %d at %d:%d-%d:%d, want %d:%d-%d:%d", sep, i, f.StartLine, f.StartColumn, f.EndLine, f.EndColumn, l, c, el, ec)
			}
		}
	}
}
