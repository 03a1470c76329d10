package filter

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/cockroachdb/datadriven"

	"github.com/bqstore/bqstore/internal/schema"
)

var testNow = time.Date(2024, 6, 15, 12, 30, 0, 0, time.UTC)

// TestEval runs testdata/eval: each "eval" case compiles the expression
// against testSchema, evaluates it over testRecord and prints the indexes of
// the selected rows, or the error.
func TestEval(t *testing.T) {
	rec := testRecord(t)
	defer rec.Release()
	sch := testSchema()
	datadriven.RunTest(t, "testdata/eval", func(t *testing.T, d *datadriven.TestData) string {
		expr := strings.TrimSpace(d.Input)
		switch d.Cmd {
		case "eval":
			f, err := Compile(expr, sch, WithClock(func() time.Time { return testNow }))
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			sel, err := f.Eval(rec)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			defer sel.Release()
			var rows []string
			for i := 0; i < sel.Len(); i++ {
				if sel.IsNull(i) {
					t.Fatalf("selection has a NULL at %d", i)
				}
				if sel.Value(i) {
					rows = append(rows, fmt.Sprint(i))
				}
			}
			if len(rows) == 0 {
				return "none\n"
			}
			return strings.Join(rows, " ") + "\n"
		case "parse":
			e, err := Parse(expr)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return e.String() + "\n"
		case "columns":
			f, err := Compile(expr, sch)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return strings.Join(f.Columns(), " ") + "\n"
		}
		t.Fatalf("unknown command %s", d.Cmd)
		return ""
	})
}

func TestErrorPosition(t *testing.T) {
	sch := testSchema()
	for _, tc := range []struct {
		expr      string
		line, col int
		msg       string
	}{
		{"int_field >", 1, 12, "Syntax error: Unexpected end of input"},
		{"int_field > 5 5", 1, 15, "Syntax error: Expected end of input but got integer literal \"5\""},
		{"nope = 1", 1, 1, "Unrecognized name: nope"},
		{"int_field = 1 AND\n  str = 5", 2, 7, "No matching signature for operator = for argument types: STRING, INT64"},
		{"rec.zz = 1", 1, 1, "Field name zz does not exist in STRUCT rec"},
		{"arr = 1", 1, 1, "REPEATED field arr"},
		{"LENGTH(str, str) > 1", 1, 1, "Number of arguments does not match for function LENGTH"},
		{"date_field = 'x'", 1, 14, "Could not cast literal 'x' to type DATE"},
		{"str = 'abc", 1, 7, "Syntax error: Unclosed string literal"},
		{"str = `abc", 1, 7, "Syntax error: Unclosed identifier literal"},
		{"'é' = x = 1", 1, 9, "Syntax error: Unexpected \"=\""},
		{"int_field / 0 > 1", 1, 11, "division by zero: 1 / 0"},
		{"CAST(str AS INT64) = 1", 1, 1, "Bad int64 value: alpha"},
		{"nosuchfn(1)", 1, 1, "Function not found: nosuchfn"},
		{"COUNT(int_field) > 1", 1, 1, "Aggregate function COUNT not allowed"},
		{"str = '\\q'", 1, 8, "Illegal escape sequence"},
		{"str = r'\\'", 1, 7, "Syntax error: Unclosed string literal"},
		{"9223372036854775808 > int_field", 1, 1, "Invalid integer literal"},
		{"int_field", 1, 1, "row_restriction must be of type BOOL, not INT64"},
		{"geo_field = geo_field", 1, 11, "Equality is not defined for arguments of type GEOGRAPHY"},
		{"select = 'a'", 1, 1, "Syntax error: Unexpected keyword SELECT"},
		{"int_field IN (SELECT 1)", 1, 15, "Subqueries are not supported"},
		{"DATE_ADD(date_field, INTERVAL 1 HOUR) > date_field", 1, 22, "Unsupported date part HOUR"},
	} {
		f, err := Compile(tc.expr, sch)
		if err == nil {
			rec := testRecord(t)
			_, err = f.Eval(rec)
			rec.Release()
		}
		var fe *Error
		if !errors.As(err, &fe) {
			t.Errorf("%q: got %v, want an *Error", tc.expr, err)
			continue
		}
		if fe.Line != tc.line || fe.Column != tc.col || !strings.Contains(fe.Msg, tc.msg) {
			t.Errorf("%q: got %q (line %d col %d), want %q at [%d:%d]", tc.expr, fe.Error(), fe.Line, fe.Column, tc.msg, tc.line, tc.col)
		}
		if want := fmt.Sprintf("at [%d:%d]", tc.line, tc.col); !strings.HasSuffix(fe.Error(), want) {
			t.Errorf("%q: message %q does not end with %q", tc.expr, fe.Error(), want)
		}
	}
}

// exprsForSlicing covers every column kind, nested fields included.
var exprsForSlicing = []string{
	"int_field > 0", "str LIKE '%a%'", "bytes_field = b'abc'", "rec.b.c = 'q'", "rec.a IS NULL",
	"numeric_field > 1", "bignum >= 0", "date_field > '2000-01-01'", "ts IS NOT NULL",
	"time_field > '01:00:00'", "dt < CURRENT_DATETIME()", "bool_field IS NOT FALSE",
	"ST_DWITHIN(geo_field, ST_GEOGPOINT(2, 2), 1000)", "json_field IS NULL", "str = 'beta'",
}

// TestEvalSlicedRecord: evaluating a slice of a batch (Arrow arrays with
// an offset) selects the corresponding part of the whole batch's selection.
func TestEvalSlicedRecord(t *testing.T) {
	rec := testRecord(t)
	defer rec.Release()
	sch := testSchema()
	for _, expr := range exprsForSlicing {
		f, err := Compile(expr, sch)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		whole, err := f.Mask(rec)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		for lo := int64(0); lo <= rec.NumRows(); lo++ {
			for hi := lo; hi <= rec.NumRows(); hi++ {
				sl := rec.NewSlice(lo, hi)
				part, err := f.Mask(sl)
				sl.Release()
				if err != nil {
					t.Fatalf("%s [%d:%d]: %v", expr, lo, hi, err)
				}
				for i, m := range part {
					if m != whole[int(lo)+i] {
						t.Fatalf("%s [%d:%d]: row %d selected %v, whole batch says %v", expr, lo, hi, i, m, whole[int(lo)+i])
					}
				}
			}
		}
	}
}

// TestEvalConcurrent: one Filter serves many goroutines (run with -race).
func TestEvalConcurrent(t *testing.T) {
	rec := testRecord(t)
	defer rec.Release()
	f, err := Compile("str IN ('alpha', 'beta') OR (geo_field IS NOT NULL AND ST_DWITHIN(geo_field, ST_GEOGFROMTEXT('POINT(2 2)'), 10)) OR str LIKE '%mm%'", testSchema())
	if err != nil {
		t.Fatal(err)
	}
	want, err := f.Mask(rec)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 4)
	for g := 0; g < 4; g++ {
		go func() {
			for k := 0; k < 50; k++ {
				got, err := f.Mask(rec)
				if err != nil {
					done <- err
					return
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					done <- fmt.Errorf("got %v, want %v", got, want)
					return
				}
			}
			done <- nil
		}()
	}
	for g := 0; g < 4; g++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

func TestApply(t *testing.T) {
	rec := testRecord(t)
	defer rec.Release()
	for expr, want := range map[string][]string{
		"int_field > 1":       {"s1", "s2"},
		"TRUE":                {"s0", "s1", "s2", "s3", "s4"},
		"str LIKE 'nothing%'": nil,
	} {
		f, err := Compile(expr, testSchema())
		if err != nil {
			t.Fatal(err)
		}
		out, err := f.Apply(context.Background(), rec)
		if err != nil {
			t.Fatal(err)
		}
		col := out.Column(out.Schema().FieldIndices("Select")[0]).(*array.String)
		var got []string
		for i := 0; i < col.Len(); i++ {
			got = append(got, col.Value(i))
		}
		out.Release()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: got rows %v, want %v", expr, got, want)
		}
	}
}

// TestLargeInListMemory: a compiled filter is held by its read session
// for hours, so a 1 MB IN list must not cost tens of MB (it cost 62 bytes
// per byte of text as item nodes plus boxed map keys). The bound is loose
// (16x the text); the figure today is about 6x for INT64, 10x for STRING.
func TestLargeInListMemory(t *testing.T) {
	sch := &schema.Schema{Fields: []*schema.Field{{Name: "id", Type: schema.Integer}, {Name: "s", Type: schema.String}}}
	for _, col := range []string{"id", "s"} {
		var b strings.Builder
		b.WriteString(col + " IN (")
		for i := 0; b.Len() < 1<<20-20; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			if col == "id" {
				fmt.Fprintf(&b, "%d", i)
			} else {
				fmt.Fprintf(&b, "'v%d'", i)
			}
		}
		b.WriteString(")")
		src := b.String()
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		f, err := Compile(src, sch)
		if err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&m1)
		retained := int64(m1.HeapAlloc) - int64(m0.HeapAlloc)
		t.Logf("%s IN: %d bytes of text retain %d bytes", col, len(src), retained)
		if retained > 16*int64(len(src)) {
			t.Errorf("%s IN: %d bytes of text retain %d bytes, want at most %d", col, len(src), retained, 16*len(src))
		}
		runtime.KeepAlive(f)
	}
}
