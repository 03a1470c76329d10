package sql

import "testing"

// TestRangeOrderUnbounded: RANGE orders by start, then end (BigQuery:
// RANGE is orderable, as every type but ARRAY, STRUCT, GEOGRAPHY and
// JSON is); an unbounded start is the lowest start, an unbounded end the
// highest end, and a NULL RANGE orders as any NULL (first ascending).
func TestRangeOrderUnbounded(t *testing.T) {
	const rs = "[RANGE<DATE> '[2020-01-01, UNBOUNDED)', RANGE<DATE> '[UNBOUNDED, 2020-01-01)', NULL, " +
		"RANGE<DATE> '[2020-01-01, 2020-02-01)', RANGE<DATE> '[UNBOUNDED, UNBOUNDED)', RANGE<DATE> '[2019-01-01, UNBOUNDED)']"
	reviewSCheck(t, nil, "SELECT r FROM UNNEST("+rs+") AS r ORDER BY r",
		"r:RANGE\nNULL\n[UNBOUNDED, 2020-01-01)\n[UNBOUNDED, UNBOUNDED)\n[2019-01-01, UNBOUNDED)\n"+
			"[2020-01-01, 2020-02-01)\n[2020-01-01, UNBOUNDED)\n")
	reviewSCheck(t, nil, "SELECT MIN(r) AS lo, MAX(r) AS hi FROM UNNEST("+rs+") AS r",
		"lo:RANGE hi:RANGE\n[UNBOUNDED, 2020-01-01) | [2020-01-01, UNBOUNDED)\n")
}
