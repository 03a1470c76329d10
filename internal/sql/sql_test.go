package sql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/cockroachdb/datadriven"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/rowjson"
	"github.com/bqstore/bqstore/internal/schema"
)

// memTable is a Table over rows held in memory, served in batches of
// batch rows so that grouping across batches is exercised.
type memTable struct {
	schema *schema.Schema
	rows   [][]any
	batch  int
}

func (t *memTable) Schema() *schema.Schema { return t.schema }

func (t *memTable) Close() {}

func (t *memTable) Scan(ctx context.Context, cols []string, fn func(arrow.RecordBatch) error) error {
	idx := make([]int, len(cols))
	sub := &schema.Schema{}
	for i, c := range cols {
		idx[i] = -1
		for j, f := range t.schema.Fields {
			if strings.EqualFold(f.Name, c) {
				idx[i] = j
				sub.Fields = append(sub.Fields, f)
			}
		}
		if idx[i] < 0 {
			return fmt.Errorf("no column %s", c)
		}
	}
	for lo := 0; lo < len(t.rows); lo += t.batch {
		hi := min(len(t.rows), lo+t.batch)
		if len(cols) == 0 {
			rec := array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, int64(hi-lo))
			if err := fn(rec); err != nil {
				return err
			}
			continue
		}
		rec, err := buildRecord(sub, hi-lo, func(col, row int) any { return t.rows[lo+row][idx[col]] })
		if err != nil {
			return err
		}
		err = fn(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// parseTable reads "name:TYPE ..." then rows of " | "-separated GoogleSQL
// constant expressions.
func parseTable(t *testing.T, input string) *memTable {
	lines := strings.Split(strings.TrimSpace(input), "\n")
	mt := &memTable{schema: &schema.Schema{}, batch: 2}
	for _, col := range headerColumns(lines[0]) {
		name, typ, _ := strings.Cut(col, ":")
		if strings.HasPrefix(typ, "ARRAY<") || strings.HasPrefix(typ, "STRUCT<") {
			// A GoogleSQL type: ARRAY<T> is REPEATED, STRUCT a RECORD.
			f, err := filter.TypeField(name, typ)
			if err != nil {
				t.Fatalf("column %q: %v", col, err)
			}
			mt.schema.Fields = append(mt.schema.Fields, f)
			continue
		}
		typ, mode, ok := strings.Cut(typ, ":")
		if !ok {
			mode = string(schema.Nullable)
		}
		mt.schema.Fields = append(mt.schema.Fields, &schema.Field{Name: name, Type: schema.Type(typ), Mode: schema.Mode(mode)})
	}
	for _, line := range lines[1:] {
		var row []any
		for _, cell := range strings.Split(line, " | ") {
			if c := strings.TrimSpace(cell); strings.HasPrefix(c, "[") && strings.HasSuffix(c, "]") {
				// An ARRAY: comma-separated constants.
				elems := []any{}
				if inner := strings.TrimSpace(c[1 : len(c)-1]); inner != "" {
					for _, e := range strings.Split(inner, ",") {
						x, err := filter.CompileScalar(strings.TrimSpace(e), &schema.Schema{})
						if err != nil {
							t.Fatalf("cell %q: %v", cell, err)
						}
						v, err := x.Values(context.Background(), nil, 1)
						if err != nil {
							t.Fatalf("cell %q: %v", cell, err)
						}
						elems = append(elems, v[0])
					}
				}
				row = append(row, elems)
				continue
			}
			x, err := filter.CompileScalar(strings.TrimSpace(cell), &schema.Schema{})
			if err != nil {
				t.Fatalf("cell %q: %v", cell, err)
			}
			v, err := x.Values(context.Background(), nil, 1)
			if err != nil {
				t.Fatalf("cell %q: %v", cell, err)
			}
			row = append(row, v[0])
		}
		mt.rows = append(mt.rows, row)
	}
	return mt
}

// headerColumns splits a table header at spaces outside <...>.
func headerColumns(line string) []string {
	var out []string
	depth, start := 0, -1
	for i := 0; i <= len(line); i++ {
		switch {
		case i == len(line) || line[i] == ' ' && depth == 0:
			if start >= 0 {
				out = append(out, line[start:i])
				start = -1
			}
			continue
		case line[i] == '<':
			depth++
		case line[i] == '>':
			depth--
		}
		if start < 0 {
			start = i
		}
	}
	return out
}

// fieldHeader renders a result column as name:TYPE, with :REPEATED for
// a REPEATED one and the fields of a RECORD in <...>.
func fieldHeader(f *schema.Field) string {
	s := fmt.Sprintf("%s:%s", f.Name, f.Type)
	if len(f.Fields) > 0 {
		subs := make([]string, len(f.Fields))
		for i, g := range f.Fields {
			subs[i] = fieldHeader(g)
		}
		s += "<" + strings.Join(subs, ",") + ">"
	}
	if f.Mode == schema.Repeated {
		s += ":REPEATED"
	}
	return s
}

// formatCell renders a cell of the REST rows' JSON: arrays as [a, b],
// records as {a: x, b: y}.
func formatCell(f *schema.Field, v any, top bool) string {
	if v == nil {
		return "NULL"
	}
	if f.Mode == schema.Repeated && top {
		elems, _ := v.([]any)
		out := make([]string, len(elems))
		for i, e := range elems {
			out[i] = formatCell(f, e.(map[string]any)["v"], false)
		}
		return "[" + strings.Join(out, ", ") + "]"
	}
	if len(f.Fields) > 0 {
		cells, _ := v.(map[string]any)["f"].([]any)
		out := make([]string, len(cells))
		for i, c := range cells {
			out[i] = f.Fields[i].Name + ": " + formatCell(f.Fields[i], c.(map[string]any)["v"], true)
		}
		return "{" + strings.Join(out, ", ") + "}"
	}
	return fmt.Sprint(v)
}

// formatResult renders a result as its REST rows would carry it: a
// header of name:TYPE, then one line per row, cells " | "-separated.
func formatResult(res *Result) (string, error) {
	var b strings.Builder
	for i, f := range res.Schema.Fields {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(fieldHeader(f))
	}
	b.WriteByte('\n')
	rec, err := res.Record()
	if err != nil {
		return "", err
	}
	defer rec.Release()
	js, err := rowjson.NewFormatter(res.Schema, rowjson.Options{}).AppendRows(nil, rec, 0, int(rec.NumRows()))
	if err != nil {
		return "", err
	}
	var rows []struct {
		F []struct{ V any } `json:"f"`
	}
	if err := json.Unmarshal(append(append([]byte{'['}, js...), ']'), &rows); err != nil {
		return "", err
	}
	for _, r := range rows {
		for i, c := range r.F {
			if i > 0 {
				b.WriteString(" | ")
			}
			b.WriteString(formatCell(res.Schema.Fields[i], c.V, true))
		}
		b.WriteByte('\n')
	}
	return b.String(), nil
}

func TestQueries(t *testing.T) {
	datadriven.Walk(t, "testdata/queries", func(t *testing.T, path string) {
		tables := map[string]*memTable{}
		resolve := func(_ context.Context, n TableName) (Table, error) {
			if mt, ok := tables[strings.ToLower(n.Table)]; ok && (n.Dataset == "" || n.Dataset == "d") {
				return mt, nil
			}
			return nil, errors.New("Not found: Table " + n.Table)
		}
		// Wildcard tables: the tables defined, created in that order.
		created := map[string]time.Time{}
		wildcard := func(_ context.Context, n TableName) ([]WildcardTable, error) {
			var out []WildcardTable
			for name := range tables {
				if strings.HasPrefix(name, strings.ToLower(strings.TrimSuffix(n.Table, "*"))) {
					out = append(out, WildcardTable{Name: TableName{Dataset: "d", Table: name}, Created: created[name]})
				}
			}
			return out, nil
		}
		var params *filter.Params
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "params":
				params = parseParams(t, d.Input)
				return ""
			case "table":
				var name string
				d.ScanArgs(t, "name", &name)
				tables[name] = parseTable(t, d.Input)
				created[name] = time.Unix(int64(len(created)), 0)
				return ""
			case "query":
				if params != nil {
					params.Index(d.Input)
				}
				res, err := Run(context.Background(), d.Input, resolve, Options{Params: params, Wildcard: wildcard})
				if err != nil {
					var fe *filter.Error
					if !errors.As(err, &fe) {
						return "internal error: " + err.Error() + "\n"
					}
					return "error: " + err.Error() + "\n"
				}
				out, err := formatResult(res)
				if err != nil {
					return "format error: " + err.Error() + "\n"
				}
				if d.HasArg("bytes") {
					out += fmt.Sprintf("bytes: %d\n", res.BytesProcessed)
				}
				return out
			}
			t.Fatalf("unknown command %s", d.Cmd)
			return ""
		})
	})
}

// parseParams reads query parameters, one a line as bq's --parameter
// takes them: name:TYPE:value (no name: positional; TYPE ARRAY<T> with
// comma-separated elements; the value NULL is a NULL).
func parseParams(t *testing.T, input string) *filter.Params {
	p := &filter.Params{Mode: filter.ParamsNamed, Named: map[string]filter.ParamValue{}}
	for _, line := range strings.Split(strings.TrimSpace(input), "\n") {
		name, rest, _ := strings.Cut(line, ":")
		typ, val, _ := strings.Cut(rest, ":")
		v := filter.ParamValue{Type: typ}
		texts := []string{val}
		if elem, ok := strings.CutPrefix(typ, "ARRAY<"); ok {
			v.Type, v.Array = strings.TrimSuffix(elem, ">"), true
			texts = strings.Split(val, ",")
		}
		for _, text := range texts {
			if text == "NULL" {
				if !v.Array {
					break
				}
				v.Values = append(v.Values, nil)
				continue
			}
			x, err := filter.ParseParam(v.Type, text)
			if err != nil {
				t.Fatalf("parameter %q: %v", line, err)
			}
			v.Values = append(v.Values, x)
		}
		if name == "" {
			p.Mode = filter.ParamsPositional
			p.Positional = append(p.Positional, v)
		} else {
			p.Named[strings.ToLower(name)] = v
		}
	}
	return p
}
