package sql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/bqstore/bqstore/internal/filter"
)

// TestParseScript: scripts split into statements and DDL/DML parsed, as
// datadriven files under testdata/statements print them.
func TestParseScript(t *testing.T) {
	datadriven.Walk(t, "testdata/statements", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd != "parse" {
				t.Fatalf("unknown command %s", d.Cmd)
			}
			sts, err := ParseScript(d.Input)
			if err != nil {
				var fe *filter.Error
				if !errors.As(err, &fe) {
					return "internal error: " + err.Error() + "\n"
				}
				return "error: " + err.Error() + "\n"
			}
			var b strings.Builder
			for _, st := range sts {
				fmt.Fprintf(&b, "%s", st.Type)
				var node any
				switch {
				case st.CreateTable != nil:
					c := *st.CreateTable
					c.Query = strings.TrimSpace(c.Query[c.QueryPos:])
					c.QueryPos = 0
					node = c
				case st.CreateView != nil:
					c := *st.CreateView
					c.QueryText, c.QueryPos = "", 0
					node = c
				case st.Drop != nil:
					node = st.Drop
				case st.AlterTable != nil:
					node = st.AlterTable
				case st.CreateSchema != nil:
					node = st.CreateSchema
				case st.Insert != nil:
					ins := *st.Insert
					ins.Query = strings.TrimSpace(ins.Query[ins.QueryPos:])
					var rows [][]string
					for _, r := range ins.Rows {
						var row []string
						for _, v := range r {
							if v == nil {
								row = append(row, "DEFAULT")
								continue
							}
							x, err := v.Compile(nil)
							if err != nil {
								row = append(row, "error: "+err.Error())
								continue
							}
							val, err := x.Values(context.Background(), nil, 1)
							if err != nil {
								row = append(row, "error: "+err.Error())
								continue
							}
							row = append(row, fmt.Sprintf("%s:%v", x.Type(), val[0]))
						}
						rows = append(rows, row)
					}
					ins.Rows = nil
					out, _ := json.Marshal(ins)
					fmt.Fprintf(&b, " %s rows=%v\n", out, rows)
					continue
				default:
					fmt.Fprintf(&b, " %q\n", strings.TrimSpace(st.Text[st.Pos:]))
					continue
				}
				out, err := json.Marshal(node)
				if err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(&b, " %s\n", out)
			}
			return b.String()
		})
	})
}

// FuzzParseScript: any text either parses or fails with a positioned
// *filter.Error; it never panics.
func FuzzParseScript(f *testing.F) {
	for _, s := range []string{
		"CREATE TABLE d.t (a INT64 NOT NULL DEFAULT 1 OPTIONS(description='x'), b ARRAY<STRUCT<c NUMERIC(5, 2)>>)",
		"CREATE OR REPLACE TABLE d.t OPTIONS(expiration_timestamp='2030-01-01') AS SELECT 1",
		"DROP TABLE IF EXISTS d.t; DROP SCHEMA IF EXISTS d CASCADE", "CREATE SCHEMA d OPTIONS(location='EU')",
		"ALTER TABLE d.t ADD COLUMN IF NOT EXISTS c STRING, SET OPTIONS(description=NULL)",
		"ALTER TABLE d.t ADD PRIMARY KEY (a) NOT ENFORCED", "INSERT INTO d.t (a, b) VALUES (1, DEFAULT), (-2.5, '2024-01-01')",
		"INSERT d.t SELECT * FROM u", "SELECT 1; SELECT ';' -- ;\n; /* ; */", "CREATE TABLE d.t (a STRUCT<b STRUCT<c INT64>>)",
		"CREATE VIEW d.v AS SELECT 1", "'", "`", "/*", "CREATE TABLE d.t (a ARRAY<", "INSERT INTO d.t VALUES (",
		"ALTER SCHEMA d SET OPTIONS(labels=[('a', 'b'), STRUCT('c', 'd')])", "ALTER TABLE t ALTER COLUMN a SET DEFAULT 1",
		"CREATE TABLE d.t (ts TIMESTAMP) PARTITION BY TIMESTAMP_TRUNC(ts, DAY) CLUSTER BY ts",
		"CREATE TABLE d.t PARTITION BY RANGE_BUCKET(a, GENERATE_ARRAY(-1, 10)) AS SELECT 1 AS a",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		_, err := ParseScript(src)
		if err == nil {
			return
		}
		var fe *filter.Error
		if !errors.As(err, &fe) || fe.Line < 1 || fe.Column < 1 {
			t.Fatalf("%q: error without a position: %v", src, err)
		}
	})
}
