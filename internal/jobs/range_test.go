package jobs

import (
	"fmt"
	"testing"
)

// TestRangeColumnRoundTrip: RANGE<DATE> values inserted by DML are
// stored (struct<start, end>) and read back by a query, through the
// range functions and CAST to text. Before, INSERT refused the column and
// a query could not read or produce RANGE values ("not supported yet").
func TestRangeColumnRoundTrip(t *testing.T) {
	s, _ := newEngineStore(t)
	mustRun(t, s, "c", "CREATE TABLE d.rt (x INT64, r RANGE<DATE>)")
	mustRun(t, s, "i", "INSERT INTO d.rt VALUES (1, RANGE(DATE '2024-01-01', DATE '2024-02-01')), (2, RANGE<DATE> '[2024-03-01, UNBOUNDED)'), (3, NULL)")
	j := mustRun(t, s, "q", `SELECT x, CAST(r AS STRING), RANGE_START(r), RANGE_CONTAINS(r, DATE '2024-01-15')
		FROM d.rt WHERE r IS NULL OR RANGE_OVERLAPS(r, RANGE<DATE> '[2024-01-20, 2024-04-01)') ORDER BY x`)
	want := "[[1 [2024-01-01, 2024-02-01) 2024-01-01 true] [2 [2024-03-01, UNBOUNDED) 2024-03-01 false] [3  (null) (null)]]"
	if got := fmt.Sprint(readAll(t, s, j)); got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}
