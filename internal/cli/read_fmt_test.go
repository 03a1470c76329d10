package cli

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// FuzzAppendJSONString: the output is valid JSON that decodes to what
// encoding/json makes of the same bytes (invalid UTF-8 as U+FFFD).
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", "quote \" and \\ backslash", "ctl \x00\x01\x1f\n\r\t", "héllo ☃", "bad \xff\xfe utf8", "<html>&"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<16 {
			return
		}
		out := appendJSONString([]byte("x"), b)
		if out[0] != 'x' {
			t.Fatalf("dst prefix lost")
		}
		var got, want string
		if err := json.Unmarshal(out[1:], &got); err != nil {
			t.Fatalf("invalid JSON %q for %q: %v", out[1:], b, err)
		}
		ref, _ := json.Marshal(string(b))
		if err := json.Unmarshal(ref, &want); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("%q decodes to %q, encoding/json gives %q", b, got, want)
		}
	})
}

// FuzzAppendCSV: a field reads back unchanged through encoding/csv.
func FuzzAppendCSV(f *testing.F) {
	for _, s := range []string{"a", "a,b", `say "hi"`, "two\nlines", " edge ", "x\r\ny"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 1<<16 || strings.ContainsRune(s, '\r') || s == "" {
			// encoding/csv folds \r\n to \n inside quotes, and an empty
			// line is no record: neither is a property of the writer.
			return
		}
		line := appendCSV([]byte("k,"), []byte(s))
		recs, err := csv.NewReader(bytes.NewReader(line)).ReadAll()
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if len(recs) != 1 || len(recs[0]) != 2 || recs[0][1] != s {
			t.Fatalf("%q read back as %q", s, recs)
		}
	})
}

func TestProgressLine(t *testing.T) {
	for _, tc := range []struct {
		rows, est, bytes int64
		want             string
	}{
		{0, 1000, 0, "[..............................]   0%  0/1000 rows  0.0 MB  0 rows/s"},
		{500, 1000, 2_000_000, "[###############...............]  50%  500/1000 rows  2.0 MB  250 rows/s"},
		{1500, 1000, 0, "[##############################] 100%  1500/1000 rows  0.0 MB  750 rows/s"},
		{10, 0, 0, "[..............................]   0%  10/0 rows  0.0 MB  5 rows/s"},
	} {
		if got := progressLine(tc.rows, tc.est, tc.bytes, 2*time.Second); got != tc.want {
			t.Errorf("progressLine(%d, %d, %d) =\n %q, want\n %q", tc.rows, tc.est, tc.bytes, got, tc.want)
		}
	}
}
