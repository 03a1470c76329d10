package e2e

import (
	"errors"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/civil"
	"google.golang.org/api/iterator"

	"github.com/bqstore/bqstore/internal/testkit"
)

// TestQueryRangeOfficialClient: RANGE values in a query's result as the
// Go client reads them (*bigquery.RangeValue), through getQueryResults
// and, for a large result, through the Read API; and a RANGE parameter
// as the client sends it (rangeValue {start, end}).
func TestQueryRangeOfficialClient(t *testing.T) {
	e := newEnv(t)
	q := e.bq.Query(`SELECT RANGE(DATE '2024-01-01', DATE '2024-02-01') AS r,
		RANGE<TIMESTAMP> '[2024-01-01 00:00:00, UNBOUNDED)' AS ts,
		RANGE_CONTAINS(@p, DATE '2024-03-15') AS c, RANGE_END(@p) AS e, @p AS p`)
	q.Parameters = []bigquery.QueryParameter{{Name: "p", Value: &bigquery.RangeValue{Start: civil.Date{Year: 2024, Month: 3, Day: 1}}}}
	rows, it := queryRows(t, e, q)
	if len(it.Schema) != 5 || it.Schema[0].Type != bigquery.RangeFieldType || it.Schema[0].RangeElementType == nil ||
		it.Schema[0].RangeElementType.Type != bigquery.DateFieldType || it.Schema[1].RangeElementType.Type != bigquery.TimestampFieldType {
		t.Fatalf("schema %+v", it.Schema)
	}
	if len(rows) != 1 {
		t.Fatalf("rows %v", rows)
	}
	r, ok := rows[0][0].(*bigquery.RangeValue)
	if !ok || r.Start != (civil.Date{Year: 2024, Month: 1, Day: 1}) || r.End != (civil.Date{Year: 2024, Month: 2, Day: 1}) {
		t.Fatalf("r = %#v", rows[0][0])
	}
	ts, ok := rows[0][1].(*bigquery.RangeValue)
	if !ok || !ts.Start.(time.Time).Equal(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)) || ts.End != nil {
		t.Fatalf("ts = %#v", rows[0][1])
	}
	if rows[0][2] != true || rows[0][3] != nil {
		t.Fatalf("RANGE_CONTAINS, RANGE_END of the parameter: %v, %v", rows[0][2], rows[0][3])
	}
	if p, ok := rows[0][4].(*bigquery.RangeValue); !ok || p.Start != (civil.Date{Year: 2024, Month: 3, Day: 1}) || p.End != nil {
		t.Fatalf("p = %#v", rows[0][4])
	}

	// A large result through the Read API.
	const n = 200000
	if err := e.bq.EnableStorageReadClient(e.ctx, testkit.GRPCOptions(e.srv.GRPCAddr())...); err != nil {
		t.Fatal(err)
	}
	before := metricValue(t, e.srv, "bqstore_read_rows_total")
	rit, err := e.bq.Query(`SELECT x, RANGE(DATE_ADD(DATE '2000-01-01', INTERVAL x DAY), IF(MOD(x, 2) = 0, NULL, DATE '2999-01-01')) AS r
		FROM UNNEST(GENERATE_ARRAY(1, 200000)) AS x`).Read(e.ctx)
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
		r, ok := row[1].(*bigquery.RangeValue)
		if !ok || r.Start != (civil.Date{Year: 2000, Month: 1, Day: 1}).AddDays(int(x)) || (x%2 == 0) != (r.End == nil) {
			t.Fatalf("row %d: %#v", x, row[1])
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
