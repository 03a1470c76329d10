package jobs

import (
	"fmt"
	"testing"
)

// TestIntervalColumnRoundTrip: INTERVAL values inserted by DML are
// stored (month_day_nano_interval) and read back by a query, compared,
// computed on and cast to BigQuery's canonical text. Before, INSERT
// refused the column ("cannot be inserted into column i") and a query
// could not read or produce INTERVAL values.
func TestIntervalColumnRoundTrip(t *testing.T) {
	s, _ := newEngineStore(t)
	mustRun(t, s, "c", "CREATE TABLE d.ivt (x INT64, i INTERVAL)")
	mustRun(t, s, "i", "INSERT INTO d.ivt VALUES (1, INTERVAL '1-2 3 4:5:6.789' YEAR TO SECOND), (2, MAKE_INTERVAL(0, 0, 1)), (3, NULL)")
	j := mustRun(t, s, "q", "SELECT x, CAST(i AS STRING), CAST(i + INTERVAL 1 HOUR AS STRING), i IS NULL FROM d.ivt WHERE i > INTERVAL 2 DAY OR i IS NULL ORDER BY x")
	want := "[[1 1-2 3 4:5:6.789 1-2 3 5:5:6.789 false] [3   true]]" // NULL strings read as ""
	if got := fmt.Sprint(readAll(t, s, j)); got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}
