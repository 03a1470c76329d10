package e2e

import (
	"errors"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/bigquery/storage/managedwriter"
	"cloud.google.com/go/civil"
	"google.golang.org/api/googleapi"
)

// TestQueryParamsOfficialClient: q.Parameters of every scalar type the Go
// client sends, named and positional, ARRAY through IN UNNEST, against
// rows written through the Storage Write API; and the errors BigQuery
// gives for an undeclared parameter and a type mismatch.
func TestQueryParamsOfficialClient(t *testing.T) {
	e := newEnv(t)
	tp := e.table("t_params", simpleSchema)
	dp, md := descriptor(t, simpleSchema)
	ms, err := e.mw.NewManagedStream(e.ctx, managedwriter.WithDestinationTable(tp), managedwriter.WithSchemaDescriptor(dp))
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	e.appendSimple(tp, md, ms, 0, 50)

	// Every scalar type, echoed back through an expression of its type.
	ts := time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC)
	q := e.bq.Query(`SELECT @i + 1, @f * 2, @n, @bn, @b, @s, @y, @d, @dt, @tm, @ts, TO_JSON_STRING(@j), ST_ASTEXT(@g), @null IS NULL`)
	q.Parameters = []bigquery.QueryParameter{
		{Name: "i", Value: int64(41)},
		{Name: "f", Value: 1.25},
		{Name: "n", Value: big.NewRat(3, 2)},
		{Name: "bn", Value: &bigquery.QueryParameterValue{Type: bigquery.StandardSQLDataType{TypeKind: "BIGNUMERIC"}, Value: "-0.5"}},
		{Name: "b", Value: true},
		{Name: "s", Value: "héllo"},
		{Name: "y", Value: []byte{1, 2, 255}},
		{Name: "d", Value: civil.Date{Year: 2024, Month: 2, Day: 29}},
		{Name: "dt", Value: civil.DateTime{Date: civil.Date{Year: 2024, Month: 1, Day: 2}, Time: civil.Time{Hour: 3, Minute: 4, Second: 5, Nanosecond: 6000}}},
		{Name: "tm", Value: civil.Time{Hour: 23, Minute: 59, Second: 58}},
		{Name: "ts", Value: ts},
		{Name: "j", Value: bigquery.NullJSON{JSONVal: `{"a":[1,2]}`, Valid: true}},
		{Name: "g", Value: bigquery.NullGeography{GeographyVal: "POINT(1 2)", Valid: true}},
		{Name: "null", Value: bigquery.NullInt64{}},
	}
	rows, _ := queryRows(t, e, q)
	if len(rows) != 1 {
		t.Fatalf("rows %v", rows)
	}
	r := rows[0]
	want := []bigquery.Value{int64(42), 2.5, big.NewRat(3, 2), big.NewRat(-1, 2), true, "héllo", []byte{1, 2, 255},
		civil.Date{Year: 2024, Month: 2, Day: 29},
		civil.DateTime{Date: civil.Date{Year: 2024, Month: 1, Day: 2}, Time: civil.Time{Hour: 3, Minute: 4, Second: 5, Nanosecond: 6000}},
		civil.Time{Hour: 23, Minute: 59, Second: 58}, ts, `{"a":[1,2]}`, "POINT(1 2)", true}
	for i, w := range want {
		if !sameValue(r[i], w) {
			t.Errorf("column %d = %#v (%T), want %#v", i, r[i], r[i], w)
		}
	}

	// Named, against the table.
	q = e.bq.Query("SELECT COUNT(*) FROM d.t_params WHERE id >= @lo AND id < @hi")
	q.Parameters = []bigquery.QueryParameter{{Name: "lo", Value: 10}, {Name: "hi", Value: 20}}
	if rows, _ := queryRows(t, e, q); len(rows) != 1 || rows[0][0] != int64(10) {
		t.Fatalf("named: %v, want [[10]]", rows)
	}
	// Positional, through jobs.insert + getQueryResults.
	q = e.bq.Query("SELECT id FROM d.t_params WHERE id > ? AND id <= ? ORDER BY id")
	q.Parameters = []bigquery.QueryParameter{{Value: 45}, {Value: 47}}
	q.JobID = "params_positional"
	if rows, _ := queryRows(t, e, q); len(rows) != 2 || rows[0][0] != int64(46) || rows[1][0] != int64(47) {
		t.Fatalf("positional: %v, want [[46] [47]]", rows)
	}
	// ARRAY through IN UNNEST.
	q = e.bq.Query("SELECT id FROM d.t_params WHERE id IN UNNEST(@ids) ORDER BY id")
	q.Parameters = []bigquery.QueryParameter{{Name: "ids", Value: []int64{3, 7, 99}}}
	if rows, _ := queryRows(t, e, q); len(rows) != 2 || rows[0][0] != int64(3) || rows[1][0] != int64(7) {
		t.Fatalf("IN UNNEST: %v, want [[3] [7]]", rows)
	}

	// Errors: an undeclared parameter and a type mismatch.
	for _, tc := range []struct {
		sql    string
		params []bigquery.QueryParameter
		msg    string
	}{
		{"SELECT @nope", []bigquery.QueryParameter{{Name: "x", Value: 1}}, "Query parameter 'nope' not found at [1:8]"},
		{"SELECT id FROM d.t_params WHERE id = @s", []bigquery.QueryParameter{{Name: "s", Value: "1"}}, "No matching signature for operator = for argument types: INT64, STRING"},
	} {
		q := e.bq.Query(tc.sql)
		q.Parameters = tc.params
		_, err := q.Read(e.ctx)
		var ge *googleapi.Error
		if !errors.As(err, &ge) || ge.Code != http.StatusBadRequest || !strings.Contains(ge.Message, tc.msg) ||
			len(ge.Errors) == 0 || ge.Errors[0].Reason != "invalidQuery" {
			t.Errorf("%s: %v, want 400 invalidQuery %q", tc.sql, err, tc.msg)
		}
	}
}

// sameValue compares the values the Go client returns.
func sameValue(got, want bigquery.Value) bool {
	switch w := want.(type) {
	case *big.Rat:
		g, ok := got.(*big.Rat)
		return ok && g.Cmp(w) == 0
	case []byte:
		g, ok := got.([]byte)
		return ok && string(g) == string(w)
	case time.Time:
		g, ok := got.(time.Time)
		return ok && g.Equal(w)
	}
	return got == want
}

// TestInsertValuesParams: INSERT ... VALUES with parameters (compiled
// while the statement is parsed) through the Go client.
func TestInsertValuesParams(t *testing.T) {
	e := newEnv(t)
	e.table("t_ins_params", simpleSchema)
	q := e.bq.Query("INSERT INTO d.t_ins_params (id, name, score) VALUES (@id, @name, @score), (@id + 1, CONCAT(@name, '!'), NULL)")
	q.Parameters = []bigquery.QueryParameter{{Name: "id", Value: 7}, {Name: "name", Value: "seven"}, {Name: "score", Value: 3.5}}
	if rows, _ := queryRows(t, e, q); len(rows) != 0 {
		t.Fatalf("INSERT returned rows %v", rows)
	}
	rows, _ := queryRows(t, e, e.bq.Query("SELECT id, name, score FROM d.t_ins_params ORDER BY id"))
	if len(rows) != 2 || rows[0][0] != int64(7) || rows[0][1] != "seven" || rows[0][2] != 3.5 ||
		rows[1][0] != int64(8) || rows[1][1] != "seven!" || rows[1][2] != nil {
		t.Fatalf("rows %v, want [[7 seven 3.5] [8 seven! <nil>]]", rows)
	}
}

// TestQueryParamsEchoed: the job resource (jobs.insert's answer, jobs.get)
// carries the query's parameters back, as the Go client reads them in
// job.Config().
func TestQueryParamsEchoed(t *testing.T) {
	e := newEnv(t)
	q := e.bq.Query("SELECT @a + 1 AS x, @b AS y")
	q.Parameters = []bigquery.QueryParameter{{Name: "a", Value: 41}, {Name: "b", Value: []string{"p", "q"}}}
	job, err := q.Run(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{"insert", "get"} {
		if src == "get" {
			if job, err = e.bq.JobFromID(e.ctx, job.ID()); err != nil {
				t.Fatal(err)
			}
		}
		cfg, err := job.Config()
		if err != nil {
			t.Fatal(err)
		}
		ps := cfg.(*bigquery.QueryConfig).Parameters
		if len(ps) != 2 || ps[0].Name != "a" || ps[1].Name != "b" {
			t.Fatalf("%s: parameters %+v, want a and b", src, ps)
		}
		if ps[0].Value != int64(41) {
			t.Fatalf("%s: parameter a = %#v", src, ps[0].Value)
		}
	}
}
