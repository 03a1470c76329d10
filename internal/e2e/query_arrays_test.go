package e2e

import (
	"errors"
	"fmt"
	"math/big"
	"testing"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/civil"
	"google.golang.org/api/iterator"

	"github.com/bqstore/bqstore/internal/testkit"
)

// norm renders a row for comparison: an empty REPEATED value and a nil
// one print alike.
func norm(v bigquery.Value) string {
	if vs, ok := v.([]bigquery.Value); ok {
		out := "["
		for i, x := range vs {
			if i > 0 {
				out += " "
			}
			out += norm(x)
		}
		return out + "]"
	}
	if v == nil {
		return "NULL"
	}
	return fmt.Sprint(v)
}

// TestQueryArraysOfficialClient: REPEATED and RECORD columns and ARRAY
// and STRUCT expressions in a query's result, as the Go client sees
// them: the result schema (Repeated, Record with its fields) and the
// values, through getQueryResults and, for a large result, through the
// Read API (EnableStorageReadClient).
func TestQueryArraysOfficialClient(t *testing.T) {
	e := newEnv(t)
	e.table("arr", insertSchema)
	rows := []*insertRow{
		{ID: 1, Name: "one", Amount: big.NewRat(1, 1), Tags: []string{"a", "b"}, Rec: insertRec{5, "p"}, Day: civil.Date{Year: 2026, Month: 1, Day: 1}},
		{ID: 2, Name: "two", Amount: big.NewRat(2, 1), Day: civil.Date{Year: 2026, Month: 1, Day: 2}},
	}
	if err := e.bq.Dataset("d").Table("arr").Inserter().Put(e.ctx, rows); err != nil {
		t.Fatal(err)
	}
	got, it := queryRows(t, e, e.bq.Query(`SELECT id, tags, rec, tags[SAFE_OFFSET(1)] AS t1, rec.x AS x,
		ARRAY_LENGTH(tags) AS n, [id, id * 10] AS pair, STRUCT(id AS k, 'v' AS s) AS st FROM d.arr ORDER BY id`))
	sch := it.Schema
	if len(sch) != 8 || !sch[1].Repeated || sch[1].Type != bigquery.StringFieldType ||
		sch[2].Type != bigquery.RecordFieldType || len(sch[2].Schema) != 2 || sch[2].Schema[1].Name != "y" ||
		!sch[6].Repeated || sch[6].Type != bigquery.IntegerFieldType ||
		sch[7].Type != bigquery.RecordFieldType || sch[7].Repeated || len(sch[7].Schema) != 2 || sch[7].Schema[0].Name != "k" {
		t.Fatalf("schema %+v", sch)
	}
	want := []string{
		"1 [a b] [5 p] b 5 2 [1 10] [1 v]",
		"2 [] [0 ] NULL 0 0 [2 20] [2 v]", // the Inserter sends a zero struct, not NULL
	}
	if len(got) != len(want) {
		t.Fatalf("rows %v", got)
	}
	for i, r := range got {
		if s := norm(r); s != "["+want[i]+"]" {
			t.Fatalf("row %d: %s, want [%s]", i, s, want[i])
		}
	}

	// ARRAY and STRUCT parameters as the Go client sends them.
	type pt struct {
		Name string `bigquery:"name"`
		N    int64  `bigquery:"n"`
	}
	q := e.bq.Query(`SELECT x, o, @s.name AS name, @s.n + 1 AS n, @s AS s, ARRAY_LENGTH(@ids) AS len
		FROM UNNEST(@ids) AS x WITH OFFSET o ORDER BY o`)
	q.Parameters = []bigquery.QueryParameter{
		{Name: "ids", Value: []int64{3, 1, 2}},
		{Name: "s", Value: pt{Name: "p", N: 41}},
	}
	got, it = queryRows(t, e, q)
	want = []string{"3 0 p 42 [p 41] 3", "1 1 p 42 [p 41] 3", "2 2 p 42 [p 41] 3"}
	if len(got) != len(want) || it.Schema[4].Type != bigquery.RecordFieldType {
		t.Fatalf("parameters: rows %v, schema %+v", got, it.Schema)
	}
	for i, r := range got {
		if s := norm(r); s != "["+want[i]+"]" {
			t.Fatalf("parameters: row %d: %s, want [%s]", i, s, want[i])
		}
	}
	q = e.bq.Query("SELECT id FROM d.arr WHERE id IN UNNEST(@ids) AND 'b' IN UNNEST(@tags)")
	q.Parameters = []bigquery.QueryParameter{{Name: "ids", Value: []int64{2, 9}}, {Name: "tags", Value: []string{"a", "b"}}}
	if got, _ = queryRows(t, e, q); len(got) != 1 || got[0][0] != int64(2) {
		t.Fatalf("IN UNNEST(@ids): %v", got)
	}

	// A large result read through the Read API: ARRAY and STRUCT
	// columns of the anonymous table.
	const n = 30000
	e.fillSimple("t_arrbig", n)
	if err := e.bq.EnableStorageReadClient(e.ctx, testkit.GRPCOptions(e.srv.GRPCAddr())...); err != nil {
		t.Fatal(err)
	}
	before := metricValue(t, e.srv, "bqstore_read_rows_total")
	// 41 elements a row: more than the 10 MB jobs.query sends inline.
	rit, err := e.bq.Query("SELECT id, GENERATE_ARRAY(id, id + 40) AS a, STRUCT(id AS k, name AS s) AS st FROM d.t_arrbig").Read(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	count := 0
	for {
		var row []bigquery.Value
		err := rit.Next(&row)
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		id := row[0].(int64)
		a, _ := row[1].([]bigquery.Value)
		if len(a) != 41 || a[0] != id || a[40] != id+40 || norm(row[2]) != fmt.Sprintf("[%d row]", id) {
			t.Fatalf("row %s", norm(row))
		}
		count++
	}
	if count != n {
		t.Fatalf("%d rows, want %d", count, n)
	}
	if got := metricValue(t, e.srv, "bqstore_read_rows_total") - before; got < n {
		t.Fatalf("the Read API sent %v rows, want the %d of the result", got, n)
	}
}
