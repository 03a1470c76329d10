package e2e

import (
	"errors"
	"testing"

	"cloud.google.com/go/bigquery"
	"google.golang.org/api/iterator"

	"github.com/bqstore/bqstore/internal/testkit"
)

// TestQueryIntervalOfficialClient: INTERVAL values in a query's result as
// the Go client reads them (*bigquery.IntervalValue, parsed from
// BigQuery's canonical text), through getQueryResults and, for a large
// result, through the Read API (EnableStorageReadClient); and an
// INTERVAL parameter as the client sends it.
func TestQueryIntervalOfficialClient(t *testing.T) {
	e := newEnv(t)
	q := e.bq.Query(`SELECT INTERVAL '1-2 3 4:5:6.789' YEAR TO SECOND AS iv,
		TIMESTAMP '2021-06-01 12:34:56.789' - TIMESTAMP '2021-05-31 00:00:00' AS td,
		@p + INTERVAL 1 DAY AS p, CAST(NULL AS INTERVAL) AS n`)
	q.Parameters = []bigquery.QueryParameter{{Name: "p", Value: &bigquery.IntervalValue{Years: 1, Months: 2, Days: -3, Hours: 5}}}
	rows, it := queryRows(t, e, q)
	if len(it.Schema) != 4 || it.Schema[0].Type != bigquery.IntervalFieldType || it.Schema[2].Type != bigquery.IntervalFieldType {
		t.Fatalf("schema %+v", it.Schema)
	}
	if len(rows) != 1 {
		t.Fatalf("rows %v", rows)
	}
	want := []string{"1-2 3 4:5:6.789", "0-0 0 36:34:56.789", "1-2 -2 5:0:0"}
	for i, w := range want {
		iv, ok := rows[0][i].(*bigquery.IntervalValue)
		if !ok {
			t.Fatalf("column %d = %#v (%T), want an *IntervalValue", i, rows[0][i], rows[0][i])
		}
		if got := iv.String(); got != w {
			t.Errorf("column %d = %s, want %s", i, got, w)
		}
	}
	if rows[0][3] != nil {
		t.Errorf("NULL interval = %#v", rows[0][3])
	}

	// A large result through the Read API.
	const n = 300000
	if err := e.bq.EnableStorageReadClient(e.ctx, testkit.GRPCOptions(e.srv.GRPCAddr())...); err != nil {
		t.Fatal(err)
	}
	before := metricValue(t, e.srv, "bqstore_read_rows_total")
	rit, err := e.bq.Query("SELECT x, MAKE_INTERVAL(0, 1, x, 0, 0, x) AS iv FROM UNNEST(GENERATE_ARRAY(1, 300000)) AS x").Read(e.ctx)
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
		x := row[0].(int64)
		iv, ok := row[1].(*bigquery.IntervalValue)
		if !ok || iv.Months != 1 || iv.Days != int32(x) || iv.Seconds != int32(x%60) || iv.Minutes != int32(x/60%60) {
			t.Fatalf("row %v: %#v", x, row[1])
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
