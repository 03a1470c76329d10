package sql

import (
	"strings"
	"testing"
)

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

// TestRangeComparison: = and < on RANGE agree with its ordering (start,
// then end; unbounded start lowest, unbounded end highest), as ZetaSQL's
// RangeType compares them (ValueContentEquals, ValueContentLess) and
// BigQuery's data types page allows: every type but GEOGRAPHY and JSON is
// comparable. RANGEs of different element types do not compare.
func TestRangeComparison(t *testing.T) {
	reviewSCheck(t, nil, "SELECT RANGE<DATE> '[2020-01-01, 2020-02-01)' = RANGE(DATE '2020-01-01', DATE '2020-02-01') AS eq, "+
		"RANGE<DATE> '[2020-01-01, 2020-02-01)' != RANGE<DATE> '[2020-01-01, UNBOUNDED)' AS ne, "+
		"RANGE<DATE> '[2020-01-01, 2020-02-01)' < RANGE<DATE> '[2020-01-01, UNBOUNDED)' AS lt_end, "+
		"RANGE<DATE> '[UNBOUNDED, 2030-01-01)' < RANGE<DATE> '[2000-01-01, 2000-01-02)' AS lt_start, "+
		"RANGE<DATE> '[2020-01-02, 2020-01-03)' >= RANGE<DATE> '[2020-01-01, 2021-01-01)' AS ge, "+
		"RANGE<DATE> '[UNBOUNDED, UNBOUNDED)' = RANGE<DATE> '[UNBOUNDED, UNBOUNDED)' AS eq_open, "+
		"RANGE<DATE> '[2020-01-01, 2020-02-01)' = CAST(NULL AS RANGE<DATE>) AS eq_null",
		"eq:BOOLEAN ne:BOOLEAN lt_end:BOOLEAN lt_start:BOOLEAN ge:BOOLEAN eq_open:BOOLEAN eq_null:BOOLEAN\n"+
			"true | true | true | true | true | true | NULL\n")
	reviewSCheck(t, nil, "SELECT r FROM UNNEST([RANGE<DATE> '[2020-01-02, 2020-02-01)', RANGE<DATE> '[2020-01-01, UNBOUNDED)', "+
		"RANGE<DATE> '[UNBOUNDED, 2020-01-01)']) AS r WHERE r > RANGE<DATE> '[2020-01-01, 2020-03-01)' ORDER BY r",
		"r:RANGE\n[2020-01-01, UNBOUNDED)\n[2020-01-02, 2020-02-01)\n")
	if got := reviewSQuery(t, nil, "SELECT RANGE<DATE> '[2020-01-01, 2020-02-01)' = "+
		"RANGE<DATETIME> '[2020-01-01 00:00:00, 2020-02-01 00:00:00)'"); !strings.HasPrefix(got, "error: No matching signature") {
		t.Errorf("RANGE<DATE> = RANGE<DATETIME>: %s", got)
	}
}
