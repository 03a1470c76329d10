package cli

import (
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/bqstore/bqstore/internal/schema"
)

// Habits users bring from Google's bq: parameterized types in inline
// schemas, a suggestion for a mistyped type, show --schema, update of a
// dataset, head -n1, --format csv|prettyjson, wide cells cut in tables.

// splitInlineSchema splits "a:NUMERIC(10,2),b:STRING" at the commas that
// are not inside parentheses.
func splitInlineSchema(s string) []string {
	var parts []string
	depth, from := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth = max(0, depth-1)
		case ',':
			if depth == 0 {
				parts = append(parts, s[from:i])
				from = i + 1
			}
		}
	}
	return append(parts, s[from:])
}

// inlineType parses a column type of an inline schema into f: a scalar
// type, with bq's parameters NUMERIC(P[,S]), BIGNUMERIC(P[,S]), STRING(L),
// BYTES(L).
func inlineType(f *schema.Field, typ string) error {
	typ = strings.TrimSpace(typ)
	name, params, hasParams := strings.Cut(typ, "(")
	ct, ok := schema.CanonicalType(name)
	if !ok || ct == schema.Record || ct == schema.Range {
		if !ok {
			if near := nearestType(name); near != "" {
				return fmt.Errorf("unknown type %q: did you mean %s?", typ, near)
			}
		}
		return fmt.Errorf("unknown or non-scalar type %q; use a JSON schema file for RECORD and RANGE", typ)
	}
	f.Type = ct
	if !hasParams {
		return nil
	}
	params, ok = strings.CutSuffix(strings.TrimSpace(params), ")")
	if !ok {
		return fmt.Errorf("type %q: want %s(...)", typ, name)
	}
	var nums []int64
	for _, p := range strings.Split(params, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("type %q: parameter %q is not a non-negative integer", typ, strings.TrimSpace(p))
		}
		nums = append(nums, n)
	}
	switch {
	case (ct == schema.Numeric || ct == schema.BigNumeric) && len(nums) <= 2:
		f.Precision = schema.Int64(nums[0])
		if len(nums) == 2 {
			f.Scale = schema.Int64(nums[1])
		}
	case (ct == schema.String || ct == schema.Bytes) && len(nums) == 1:
		f.MaxLength = schema.Int64(nums[0])
	default:
		return fmt.Errorf("type %q: parameters are for NUMERIC(P[,S]), BIGNUMERIC(P[,S]), STRING(L) and BYTES(L)", typ)
	}
	return nil
}

// typeNames are the names inline schemas accept, for suggestions.
var typeNames = []string{"STRING", "BYTES", "INTEGER", "INT64", "FLOAT", "FLOAT64", "NUMERIC", "DECIMAL",
	"BIGNUMERIC", "BIGDECIMAL", "BOOLEAN", "BOOL", "TIMESTAMP", "DATE", "TIME", "DATETIME", "GEOGRAPHY", "JSON", "INTERVAL"}

// nearestType is the type name closest to s (at most 2 edits, or a
// third of its length), "" when none is close.
func nearestType(s string) string {
	s = strings.ToUpper(strings.TrimSpace(s))
	best, bestD := "", max(2, len(s)/3)+1
	for _, n := range typeNames {
		if d := editDistance(s, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b (ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// expandShortN turns bq's "-n1" into "-n 1" (Go's flag package would read
// a flag named n1).
func expandShortN(args []string) []string {
	out := make([]string, 0, len(args)+1)
	for _, a := range args {
		if len(a) > 2 && a[0] == '-' && a[1] == 'n' && a[2] >= '0' && a[2] <= '9' {
			out = append(out, "-n", a[2:])
			continue
		}
		out = append(out, a)
	}
	return out
}

// truncateCell cuts s to width runes, the last one an ellipsis (width 0:
// no limit).
func truncateCell(s string, width int) string {
	if width <= 0 || utf8.RuneCountInString(s) <= width {
		return s
	}
	r := []rune(s)
	if width == 1 {
		return "…"
	}
	return string(r[:width-1]) + "…"
}

// printHeadCSV prints rows as bq head --format csv does: a header line,
// then one line per row (NULL as an empty field, nested values as JSON).
func printHeadCSV(w io.Writer, sch *schema.Schema, rows [][]any) error {
	cw := csv.NewWriter(w)
	names := make([]string, len(sch.Fields))
	for i, f := range sch.Fields {
		names[i] = f.Name
	}
	if err := cw.Write(names); err != nil {
		return err
	}
	rec := make([]string, len(sch.Fields))
	for _, cells := range rows {
		for i, c := range cells {
			switch x := c.(type) {
			case nil:
				rec[i] = ""
			case string:
				rec[i] = x
			default:
				rec[i] = cellText(c)
			}
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// runUpdateDataset changes a dataset's description, labels and default
// table expiration, as bq update does.
func runUpdateDataset(ctx context.Context, env *Env, fs *flag.FlagSet, af *apiFlags, r ref, set, clear labelsFlag, expiration int64) error {
	patch := map[string]any{}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "description":
			patch["description"] = f.Value.String()
		case "default_table_expiration":
			if expiration == 0 {
				patch["defaultTableExpirationMs"] = nil
			} else {
				patch["defaultTableExpirationMs"] = strconv.FormatInt(expiration*1000, 10)
			}
		}
	})
	if len(set) > 0 || len(clear) > 0 {
		labels := map[string]any{}
		for k, v := range set {
			labels[k] = v
		}
		for k := range clear {
			labels[k] = nil // PATCH semantics: null removes the label
		}
		patch["labels"] = labels
	}
	if len(patch) == 0 {
		return usagef("nothing to update on dataset %s: give --description, --set_label, --clear_label or --default_table_expiration", r)
	}
	c, err := af.client()
	if err != nil {
		return err
	}
	var cur apiDataset
	if err := c.call(ctx, http.MethodGet, datasetPath(r.project, r.dataset), nil, nil, &cur); err != nil {
		return err
	}
	hdr := http.Header{}
	if cur.ETag != "" {
		hdr.Set("If-Match", cur.ETag)
	}
	var out apiDataset
	if err := c.call(ctx, http.MethodPatch, datasetPath(r.project, r.dataset), hdr, patch, &out); err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.Code == http.StatusPreconditionFailed {
			return fmt.Errorf("dataset %s changed while updating it; run the update again", r)
		}
		return err
	}
	if af.json() {
		return printJSON(env.Stdout, &out)
	}
	fmt.Fprintf(env.Stdout, "Dataset '%s' successfully updated.\n", r)
	return nil
}
